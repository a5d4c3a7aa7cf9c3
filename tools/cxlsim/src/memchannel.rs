//! MemChannel on simulated hosts: the `no_std` control core that
//! `mchannel_sched` compiles into the kernel (`mchannel-core`, the same
//! source files) driving the simulator's run windows.
//!
//! What is simulated: a channel (an application) is a set of requesters
//! (its threads) with a weight and a path of components. A component is
//! one or more links of the fabric (a host adapter, a switch port, the
//! link into a memory device) with a configured capacity. Every control
//! period K the [`MemChannel`] controller (the simulator's [`Controller`]
//! hook) does what `mchannel_sched/fabric.rs` `Fabric::step` does each K,
//! with the same core calls:
//!
//! 1. per channel, the bytes its threads completed and the time each was
//!    free to run (its run window's open time in the period: the kernel's
//!    `wall - parked`) give the rate `bytes / wall` and the demand (sum
//!    over threads of `bytes / free`), smoothed with the core's `Ewma` and
//!    `keep = exp_neg(wall, K)` ([`Estimator`]; `Fabric::step`);
//! 2. per component, the tree of the joined channels that cross it
//!    (flat: every channel a child of the component; `tree_of`), the
//!    congestion signal `L` (below), `Component::update_load`,
//!    `Component::adjust_capacity`, then `Component::update_shared` with no
//!    remote hosts (Eq. 4 over the tree; `update_components`), each
//!    channel's alpha at the component read back from its node;
//! 3. per channel, `path_share` over its components' alphas and
//!    `RunWindow::budget(weight, alpha, demand)` (Eq. 5/7: T_R of every
//!    T_W, or, when T_R would be under the minimum run, that run in one
//!    window of every `m`, up to `max_window_ns`; the minimum run is the
//!    core's default, 1 % of T_W, as in the kernel; `update_budgets`);
//! 4. every thread of the channel gets that budget and window from the
//!    next period on (`threads.update_each`). Each thread's windows have
//!    their own phase (a thread's windows start when it is attached, and
//!    windows of a new length at a fraction of it drawn from that time:
//!    the core's `RunState`), here the core's `stagger_phase`, set again
//!    when a channel joins: the joined channels evenly spaced over the
//!    window (all together: the experiments share one bottleneck), each
//!    channel's threads stepped from its start so that every slot between
//!    the channels holds each rank at its golden-ratio place, so that
//!    runs overlap as little as they can, and threads that run in one
//!    window of every `m` run in different ones; a thread that runs part
//!    of every T_W starts its run an eighth of it before its place (the
//!    core's `RunWindow::run_phase`, with each period's budget).
//!
//! The congestion signal (a config field, [`Signal`]): `Queue` (default)
//! is the share of the messages offered to the component's links in the
//! period that the links marked, the larger of the two directions (CXL's
//! device-load field marks responses of an overloaded device in the same
//! way). A port marks on its queue (waiting plus in transfer) averaged
//! over `mark_average_ns`, with a probability that rises from 0 at a
//! threshold to 1 at `mark_ramp` times it; the threshold is
//! `mark_threshold` times the square root of the requesters that started
//! a burst at the port in the last interval of `mark_average_ns` (at least
//! one), and only while the averaged queue has stood at
//! `mark_standing_milli` thousandths of a message or more through the
//! current and the previous `mark_standing_ns` (a queue the run windows'
//! overlap builds and their gaps drain is not overload): see
//! `Documentation/cxlfabric/cxlsim.rst`, "The congestion signal". `Model` is the core's `Congestion::Model` of the component's
//! configured capacity at the measured rate, as the kernel uses without
//! hardware signals.
//!
//! Simplified against the kernel: a new budget and window length apply at
//! once (windows are a fixed grid per length), not from the next window;
//! no debt (the simulator's gate is exact: a thread never runs past its
//! budget, but its requests in flight still complete after the window
//! closes), no perf-counter meter (bytes are the simulator's completed
//! payload bytes), no cross-host sharing, no best-effort flag; a channel
//! that joins later starts with an empty estimator, as a newly created one
//! does.

use crate::event::Ps;
use crate::requester::{Controller, LinkObservation, Marking, Observation, RunWindow};
use crate::topology::Graph;
use anyhow::{bail, Result};
use mchannel_core::component::{Component, Params};
use mchannel_core::congestion::Congestion;
use mchannel_core::estimator::Estimator;
use mchannel_core::fixed::{exp_neg, mul_div, Q32};
use mchannel_core::tree::{self, Node};
use mchannel_core::window::{
    default_min_run_ns, path_share, place, stagger_phase, Budget, RunWindow as CoreWindow,
    WEIGHT_MAX,
};
use serde::{Deserialize, Serialize};

const NS_PER_S: u64 = 1_000_000_000;
const PS_PER_NS: u64 = 1_000;

/// Where a component's congestion signal `L` comes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// Share of messages the component's ports marked (see the module
    /// documentation).
    #[default]
    Queue,
    /// The core's `Congestion::Model` at the component's capacity.
    Model,
}

/// Controller constants (the core's `Params` and the window), scaled in
/// time: see the README's "MemChannel at scale".
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct McParams {
    /// Apply the run windows (false: observe and record only, the
    /// "without MemChannel" baseline).
    pub enabled: bool,
    /// T_W, ns.
    pub t_w_ns: u64,
    /// The longest window a channel's threads skip windows up to (the
    /// core's `RunWindow`), ns: the kernel's, its K (10 ms: the least share
    /// it gives is 1 % of T_W per 10 ms). K here is scaled to 1 ms, so such
    /// a window spans up to 10 periods.
    pub max_window_ns: u64,
    /// Control period K, ns (a multiple of T_W keeps whole windows per
    /// period).
    pub k_ns: u64,
    /// Gain g of Eq. 6, ppm.
    pub g_ppm: u32,
    /// Threshold delta, ppm (below 1,000,000).
    pub delta_ppm: u32,
    /// Additive increase per period at `l = 0`, in ppm of the component's
    /// capacity per `(delta - l)`: lambda = this * capacity / K. The core's
    /// default (lambda = 10 capacity / s at K = 10 ms) is 100,000.
    pub increase_ppm_per_k: u32,
    /// Congestion signal.
    pub signal: Signal,
    /// Queue (messages waiting plus in transfer) at which a port starts
    /// to mark, for at most one burst start per interval (`Queue` signal).
    pub mark_threshold: u32,
    /// Every message is marked from this many times the threshold on,
    /// linearly from 0 in between (1: a step at the threshold).
    pub mark_ramp: u32,
    /// Time constant of the ports' queue average and the interval in which
    /// they count burst starts, ns (0: the queue as each message finds it).
    pub mark_average_ns: u64,
    /// Scale the threshold by the square root of the burst starts (needs
    /// `mark_average_ns`).
    pub mark_burst_scaling: bool,
    /// Mark only a standing queue: one whose average stayed at or above
    /// `mark_standing_milli` thousandths of a message through the current
    /// and the previous interval of this many ns (0: any queue; needs
    /// `mark_average_ns`).
    pub mark_standing_ns: u64,
    pub mark_standing_milli: u32,
}

impl Default for McParams {
    fn default() -> Self {
        McParams {
            enabled: true,
            t_w_ns: 100_000,
            max_window_ns: Params::default_for(0).k_ns,
            k_ns: 1_000_000,
            g_ppm: 500_000,
            delta_ppm: 100_000,
            increase_ppm_per_k: 100_000,
            signal: Signal::Queue,
            mark_threshold: 5,
            mark_ramp: 3,
            mark_average_ns: 3_000,
            mark_burst_scaling: true,
            mark_standing_ns: 50_000,
            mark_standing_milli: 850,
        }
    }
}

impl McParams {
    /// The queue signal and increase before issue #25's fix: a message is
    /// marked when the queue it finds holds 8 or more, and the additive
    /// increase is 30 % of capacity per period (kept for comparison).
    pub fn instantaneous_queue() -> McParams {
        McParams {
            increase_ppm_per_k: 300_000,
            mark_threshold: 8,
            mark_ramp: 1,
            mark_average_ns: 0,
            mark_burst_scaling: false,
            mark_standing_ns: 0,
            ..McParams::default()
        }
    }

    /// The link marking the `Queue` signal asks for.
    pub fn marking(&self) -> Marking {
        Marking {
            threshold: self.mark_threshold,
            ramp: self.mark_ramp,
            average_ps: self.mark_average_ns.saturating_mul(PS_PER_NS),
            burst_scaling: self.mark_burst_scaling,
            standing_ps: self.mark_standing_ns.saturating_mul(PS_PER_NS),
            standing_level: f64::from(self.mark_standing_milli) / 1000.0,
        }
    }
}

/// A component: links of the graph (indices into `Graph::links`) and its
/// capacity in payload bytes per second.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentSpec {
    pub name: String,
    pub links: Vec<usize>,
    pub capacity_bps: u64,
}

/// A channel: its threads (requester indices), weight, path (component
/// indices) and the time it joins.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelSpec {
    pub name: String,
    pub weight: u32,
    pub threads: Vec<usize>,
    pub path: Vec<usize>,
    pub join_ns: u64,
}

/// One control period's record.
#[derive(Clone, Debug, Serialize)]
pub struct PeriodRecord {
    /// End of the period, ns.
    pub t_ns: u64,
    /// Per channel: raw rate in the period (bytes/s), smoothed demand,
    /// alpha, and the budget for the next: T_R of every window of T_W (ns).
    pub rate: Vec<u64>,
    pub demand: Vec<u64>,
    pub alpha: Vec<u64>,
    pub t_r_ns: Vec<u64>,
    pub t_w_ns: Vec<u64>,
    /// Per component: capacity estimate C, aggregate smoothed rate F, load
    /// factor l and signal L (ppm), and the payload bytes/s the busier
    /// direction of its links carried.
    pub capacity: Vec<u64>,
    pub f: Vec<u64>,
    pub load_ppm: Vec<u64>,
    pub signal_ppm: Vec<u64>,
    pub carried: Vec<u64>,
}

struct Chan {
    spec: ChannelSpec,
    window: CoreWindow,
    estimator: Estimator,
    alphas: Vec<u64>,
    alpha: u64,
    budget: Budget,
    joined: bool,
}

struct Comp {
    spec: ComponentSpec,
    core: Component,
    signal: Congestion,
}

/// The controller (see the module documentation).
pub struct MemChannel {
    params: McParams,
    chans: Vec<Chan>,
    comps: Vec<Comp>,
    /// Per requester: its channel, and where its windows start, as a
    /// fraction (of 2^32) of their length.
    thread_of: Vec<Option<(usize, u32)>>,
    last_ps: Ps,
    line_bytes: u64,
    pub records: Vec<PeriodRecord>,
}

/// Index of the link between nodes named `a` and `b` in `graph`.
pub fn link_index(graph: &Graph, a: &str, b: &str) -> Result<usize> {
    let id = |n: &str| graph.nodes.iter().position(|x| x.name == n);
    let (Some(x), Some(y)) = (id(a), id(b)) else {
        bail!("memchannel: no node {a:?} or {b:?}");
    };
    match graph.links.iter().position(|l| {
        (l.a as usize == x && l.b as usize == y) || (l.a as usize == y && l.b as usize == x)
    }) {
        Some(i) => Ok(i),
        None => bail!("memchannel: no link between {a} and {b}"),
    }
}

impl MemChannel {
    /// Checks everything: `requesters` and `links` are the fabric's counts.
    pub fn new(
        params: McParams,
        components: Vec<ComponentSpec>,
        channels: Vec<ChannelSpec>,
        requesters: usize,
        links: usize,
        line_bytes: u64,
    ) -> Result<MemChannel> {
        if params.t_w_ns == 0 || params.t_w_ns > 1_000_000_000 {
            bail!("memchannel t_w_ns = {}: 1 ns to 1 s", params.t_w_ns);
        }
        if params.k_ns < params.t_w_ns || params.k_ns > 10_000_000_000 {
            bail!("memchannel k_ns = {}: from t_w_ns to 10 s", params.k_ns);
        }
        if params.g_ppm > 1_000_000 || params.delta_ppm >= 1_000_000 {
            bail!("memchannel g_ppm <= 1e6 and delta_ppm < 1e6");
        }
        if params.mark_threshold == 0 || params.mark_ramp == 0 {
            bail!("memchannel mark_threshold and mark_ramp must be at least 1");
        }
        if params.mark_average_ns > 1_000_000_000 {
            bail!(
                "memchannel mark_average_ns = {}: at most 1 s",
                params.mark_average_ns
            );
        }
        if params.mark_standing_ns > 1_000_000_000 {
            bail!(
                "memchannel mark_standing_ns = {}: at most 1 s",
                params.mark_standing_ns
            );
        }
        if params.mark_standing_ns > 0 && params.mark_average_ns == 0 {
            bail!("memchannel mark_standing_ns needs mark_average_ns");
        }
        if params.mark_burst_scaling && params.mark_average_ns == 0 {
            bail!("memchannel mark_burst_scaling needs mark_average_ns (its interval)");
        }
        let Some(window) = CoreWindow::new(
            params.t_w_ns,
            default_min_run_ns(params.t_w_ns),
            params.max_window_ns,
        ) else {
            bail!(
                "memchannel max_window_ns = {}: at least t_w_ns",
                params.max_window_ns
            );
        };
        let mut comps = Vec::new();
        for c in components {
            if c.links.is_empty() || c.links.iter().any(|&l| l >= links) {
                bail!("memchannel component {}: bad or no links", c.name);
            }
            // lambda such that one period at l = 0 adds `increase` * delta
            // of the capacity.
            let per_k = mul_div(
                c.capacity_bps,
                u64::from(params.increase_ppm_per_k),
                1_000_000,
            );
            let p = Params {
                max_capacity: c.capacity_bps,
                k_ns: params.k_ns,
                g: Q32::from_ppm(params.g_ppm),
                delta: Q32::from_ppm(params.delta_ppm),
                lambda: mul_div(per_k, NS_PER_S, params.k_ns),
            };
            let Ok(core) = Component::new(p) else {
                bail!("memchannel component {}: bad parameters", c.name);
            };
            comps.push(Comp {
                signal: Congestion::Model {
                    capacity: c.capacity_bps,
                },
                spec: c,
                core,
            });
        }
        let mut thread_of = vec![None; requesters];
        let mut chans = Vec::new();
        for (ci, c) in channels.into_iter().enumerate() {
            if !(1..=WEIGHT_MAX).contains(&c.weight) {
                bail!("memchannel channel {}: weight 1..={WEIGHT_MAX}", c.name);
            }
            if c.path.is_empty() || c.path.iter().any(|&p| p >= comps.len()) {
                bail!("memchannel channel {}: bad or empty path", c.name);
            }
            for &t in &c.threads {
                match thread_of.get_mut(t) {
                    // The phase is set below, once every thread is known.
                    Some(slot @ None) => *slot = Some((ci, 0)),
                    _ => bail!("memchannel channel {}: thread {t} bad or taken", c.name),
                }
            }
            chans.push(Chan {
                window,
                estimator: Estimator::default(),
                alphas: vec![u64::MAX; c.path.len()],
                alpha: u64::MAX,
                budget: Budget {
                    t_r_ns: params.t_w_ns,
                    t_w_ns: params.t_w_ns,
                },
                joined: c.join_ns == 0,
                spec: c,
            });
        }
        stagger(&mut thread_of, &chans);
        Ok(MemChannel {
            params,
            chans,
            comps,
            thread_of,
            last_ps: 0,
            line_bytes,
            records: Vec::new(),
        })
    }

    pub fn params(&self) -> &McParams {
        &self.params
    }

    /// `channels`: how many share the bottleneck (every joined one).
    fn window_of(&self, ch: &Chan, phase: u32, channels: u64) -> RunWindow {
        if !ch.joined {
            return RunWindow::CLOSED;
        }
        let tw = ch.budget.t_w_ns.saturating_mul(PS_PER_NS);
        let tr = if self.params.enabled {
            ch.budget.t_r_ns.saturating_mul(PS_PER_NS).min(tw)
        } else {
            tw
        };
        // The run leads its place by an eighth of its length (the core's
        // `run_phase`, as the kernel's `stagger.rs`); an open window none.
        let phase = if self.params.enabled {
            ch.window.run_phase(phase, channels, ch.budget)
        } else {
            phase
        };
        RunWindow {
            run_ps: tr,
            window_ps: tw,
            offset_ps: ((u128::from(phase) * u128::from(tw)) >> 32) as Ps,
        }
    }

    fn apply(&self, windows: &mut [RunWindow]) {
        let channels = self.chans.iter().filter(|c| c.joined).count() as u64;
        for (t, w) in windows.iter_mut().enumerate() {
            if let Some(Some((c, phase))) = self.thread_of.get(t) {
                *w = self.window_of(&self.chans[*c], *phase, channels);
            }
        }
    }

    /// `L` of component `c` from the links' counters.
    fn queue_signal(&self, c: &Comp, links: &[LinkObservation]) -> Q32 {
        let mut best = Q32::ZERO;
        for &l in &c.spec.links {
            for d in 0..2 {
                if let Some(o) = links.get(2 * l + d) {
                    let offered = o.offered.saturating_mul(1_000_000);
                    best = best.max(Q32::ratio(o.marked_ppm, offered).min(Q32::ONE));
                }
            }
        }
        best
    }

    fn carried(&self, c: &Comp, links: &[LinkObservation], wall_ns: u64) -> u64 {
        let mut best = 0;
        for &l in &c.spec.links {
            for d in 0..2 {
                if let Some(o) = links.get(2 * l + d) {
                    let b = o.data_messages.saturating_mul(self.line_bytes);
                    best = best.max(mul_div(b, NS_PER_S, wall_ns));
                }
            }
        }
        best
    }
}

impl Controller for MemChannel {
    fn period_ps(&self) -> Option<Ps> {
        Some(self.params.k_ns.saturating_mul(PS_PER_NS))
    }

    fn on_tick(&mut self, now: Ps, obs: &[Observation], windows: &mut [RunWindow]) {
        self.on_tick_links(now, obs, &[], windows)
    }

    fn marking(&self) -> Option<Marking> {
        (self.params.signal == Signal::Queue).then(|| self.params.marking())
    }

    fn on_start(&mut self, windows: &mut [RunWindow]) {
        self.apply(windows);
    }

    fn on_tick_links(
        &mut self,
        now: Ps,
        obs: &[Observation],
        links: &[LinkObservation],
        windows: &mut [RunWindow],
    ) {
        let wall_ns = now.saturating_sub(self.last_ps) / PS_PER_NS;
        if wall_ns == 0 {
            return;
        }
        let keep = exp_neg(wall_ns, self.params.k_ns);
        let mut raw = vec![0u64; self.chans.len()];
        // 1. Estimators (Fabric::step).
        for (ci, ch) in self.chans.iter_mut().enumerate() {
            if !ch.joined {
                continue;
            }
            let (mut bytes, mut demand, mut ran) = (0u64, 0u64, false);
            for &t in &ch.spec.threads {
                let Some(o) = obs.get(t) else { continue };
                let w = windows.get(t).copied().unwrap_or(RunWindow::OPEN);
                let free_ns = w.open_ps(self.last_ps, now) / PS_PER_NS;
                bytes = bytes.saturating_add(o.bytes_since_last);
                if free_ns > 0 {
                    demand = demand.saturating_add(mul_div(o.bytes_since_last, NS_PER_S, free_ns));
                    ran = true;
                }
            }
            let rate = mul_div(bytes, NS_PER_S, wall_ns);
            raw[ci] = rate;
            ch.estimator.rate.update(rate, keep);
            if ran {
                ch.estimator.demand.update(demand, keep);
            }
        }
        // 2. Components (update_components, tree_of).
        let mut signals = Vec::with_capacity(self.comps.len());
        let mut carried = Vec::with_capacity(self.comps.len());
        for ci in 0..self.comps.len() {
            let mut nodes: Vec<Node> = Vec::new();
            let mut ids: Vec<(usize, usize)> = Vec::new();
            for (i, ch) in self.chans.iter().enumerate() {
                if !ch.joined {
                    continue;
                }
                let Some(pos) = ch.spec.path.iter().position(|&c| c == ci) else {
                    continue;
                };
                let mut node = Node::new(tree::ROOT, ch.spec.weight);
                node.rate = ch.estimator.rate();
                node.demand = ch.estimator.demand();
                node.alpha = ch.alphas[pos];
                nodes.push(node);
                ids.push((i, pos));
            }
            let comp = &self.comps[ci];
            let signal = match self.params.signal {
                Signal::Queue => self.queue_signal(comp, links),
                Signal::Model => comp.signal.signal(comp.core.rate()),
            };
            carried.push(self.carried(comp, links, wall_ns));
            signals.push(signal);
            if tree::check(&mut nodes).is_err() {
                continue;
            }
            let comp = &mut self.comps[ci];
            comp.core.update_load(signal);
            comp.core.adjust_capacity();
            comp.core.update_tree(&mut nodes);
            for (n, &(i, pos)) in nodes.iter().zip(&ids) {
                self.chans[i].alphas[pos] = n.alpha;
            }
        }
        // 3. Budgets (update_budgets), then joins.
        let join_now = now / PS_PER_NS;
        let mut joins = false;
        for ch in &mut self.chans {
            if !ch.joined {
                ch.joined = ch.spec.join_ns <= join_now;
                joins |= ch.joined;
                continue;
            }
            ch.alpha = path_share(ch.alphas.iter().copied());
            ch.budget = ch
                .window
                .budget(ch.spec.weight, ch.alpha, ch.estimator.demand());
        }
        if joins {
            stagger(&mut self.thread_of, &self.chans);
        }
        self.records.push(PeriodRecord {
            t_ns: join_now,
            rate: raw,
            demand: self.chans.iter().map(|c| c.estimator.demand()).collect(),
            alpha: self.chans.iter().map(|c| c.alpha).collect(),
            t_r_ns: self.chans.iter().map(|c| c.budget.t_r_ns).collect(),
            t_w_ns: self.chans.iter().map(|c| c.budget.t_w_ns).collect(),
            capacity: self.comps.iter().map(|c| c.core.capacity()).collect(),
            f: self.comps.iter().map(|c| c.core.rate()).collect(),
            load_ppm: self.comps.iter().map(|c| c.core.load().to_ppm()).collect(),
            signal_ppm: signals.iter().map(|s| s.to_ppm()).collect(),
            carried,
        });
        self.last_ps = now;
        // 4. Windows.
        self.apply(windows);
    }
}

/// Sets every joined thread's phase (`thread_of`: channel and phase per
/// requester) to the core's `stagger_phase`: its channel's place among
/// the joined channels (the core's `place`; all of them share the
/// experiments' bottleneck) and its rank in its channel. Threads of
/// channels not yet joined keep theirs.
fn stagger(thread_of: &mut [Option<(usize, u32)>], chans: &[Chan]) {
    // The module's keys (`mchannel_sched/stagger.rs`): one bottleneck,
    // component 0, for every joined channel.
    let keys: Vec<Option<u32>> = chans.iter().map(|c| c.joined.then_some(0)).collect();
    let places: Vec<(u64, u64)> = (0..chans.len()).map(|c| place(&keys, c)).collect();
    let mut ranks = vec![0u64; chans.len()];
    for (c, phase) in thread_of.iter_mut().flatten() {
        if chans[*c].joined {
            let (at, n) = places[*c];
            *phase = stagger_phase(at, n, ranks[*c]);
            ranks[*c] += 1;
        }
    }
}
