//! MemChannel experiments (NSDI '26 §6) on simulated hosts: isolation of a
//! victim under host-adapter and in-fabric contention (Fig. 9/10),
//! fairness between two applications (Fig. 11), utilization under
//! overload (the 96.1 % sentence) and re-convergence as channels join
//! (Fig. 13). Each runs the control core through [`MemChannel`] and the
//! same fabric without control (the controller only records).
//!
//! The fabric: thread `t<h>_<i>` of host `h` -> the host's adapter switch
//! `a<h>` (unlimited link: a core's path into its adapter) -> the adapter
//! link `a<h> - s0` -> switch `s0` -> the fabric link `s0 - m0` -> memory
//! `m0`. Components are the adapter links and the fabric link.
//!
//! Scaling (see the README): the bottleneck runs at [`SCALE_GBPS`] (1 GB/s)
//! instead of tens of GB/s and K is 1 ms (10 windows of T_W = 100 us)
//! instead of 10 ms; the per-period constants (g, delta, the additive
//! increase per period as a share of capacity, EWMA weight per period)
//! are the kernel's, so the loop's dynamics in periods are unchanged.

use crate::config::{Config, LinkSpec, RequesterOverride, TopologyConfig};
use crate::experiments::par_map;
use crate::memchannel::{link_index, ChannelSpec, ComponentSpec, McParams, MemChannel, Signal};
use crate::sim::Sim;
use crate::topology;
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::Path;

mod bench;
pub use bench::{bench, scale_bench, PAPER_UTILIZATION};

/// Bottleneck bandwidth of the scaled fabric, GB/s (= 1e9 bytes/s).
pub const SCALE_GBPS: f64 = 1.0;

/// The components' configured maximum capacity over the link's payload
/// bandwidth (1: the link's nominal rate, which our links deliver
/// exactly). Note: Algorithm 1 cuts C only while `F <= C`; when a cut
/// leaves C a hair under the saturated F, only alpha moves, by C/F per
/// period, with the queue standing, until F drops below C (seen here as
/// slow phases of the AIMD cycle; 1.25 did not help).
pub const CAPACITY_HEADROOM: f64 = 1.0;

/// Periods before measuring and periods measured.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct McSize {
    pub warmup: u32,
    pub measure: u32,
}

impl McSize {
    pub const FAST: McSize = McSize {
        warmup: 20,
        measure: 10,
    };
    pub const FULL: McSize = McSize {
        warmup: 40,
        measure: 40,
    };
}

/// A thread: requests in flight at most, and the least interval between
/// issues (0: closed loop).
#[derive(Clone, Copy, Debug)]
pub struct ThreadSpec {
    pub queue: u32,
    pub interval_ns: f64,
}

/// A channel of the experiment: host, weight, threads, join time.
#[derive(Clone, Debug)]
pub struct AppSpec {
    pub name: String,
    pub host: usize,
    pub weight: u32,
    pub threads: Vec<ThreadSpec>,
    pub join_ns: u64,
}

/// Result of one run: the controller's per-period records.
pub struct McRun {
    pub ctrl: MemChannel,
    pub names: Vec<String>,
    /// Index of the bottleneck component.
    pub bottleneck: usize,
    pub bottleneck_bps: u64,
}

/// Builds and runs the fabric: `adapter_gbps` per host adapter,
/// `fabric_gbps` for `s0 - m0`, for `periods` control periods.
pub fn run_apps(
    apps: &[AppSpec],
    adapter_gbps: f64,
    fabric_gbps: f64,
    params: &McParams,
    periods: u32,
    seed: u64,
) -> Result<McRun> {
    let hosts = apps.iter().map(|a| a.host).max().map_or(0, |h| h + 1);
    if hosts == 0 {
        bail!("no application");
    }
    let (mut cfg, thread_ids) = fabric_config(apps, hosts, adapter_gbps, fabric_gbps, seed);
    let k_ns = params.k_ns as f64;
    // Half a period past the last tick.
    cfg.run.max_time_ns = Some(k_ns * (periods as f64 + 0.5));
    let graph = topology::build(&cfg.topology, Path::new("."))?;
    let comps = components(&graph, hosts, adapter_gbps, fabric_gbps)?;
    let chans = apps
        .iter()
        .zip(&thread_ids)
        .map(|(a, ids)| ChannelSpec {
            name: a.name.clone(),
            weight: a.weight,
            threads: ids.clone(),
            path: vec![a.host, hosts],
            join_ns: a.join_ns,
        })
        .collect();
    let (bottleneck, bottleneck_bps) = if adapter_gbps < fabric_gbps {
        (0, gbps_to_bps(adapter_gbps))
    } else {
        (hosts, gbps_to_bps(fabric_gbps))
    };
    let ctrl = MemChannel::new(
        params.clone(),
        comps,
        chans,
        graph.requesters.len(),
        graph.links.len(),
        cfg.requester.line_bytes as u64,
    )?;
    let mut sim = Sim::with_controller(&cfg, Path::new("."), ctrl)?;
    sim.run();
    let ctrl = sim.into_controller();
    Ok(McRun {
        ctrl,
        names: apps.iter().map(|a| a.name.clone()).collect(),
        bottleneck,
        bottleneck_bps,
    })
}

fn gbps_to_bps(g: f64) -> u64 {
    (g * 1e9).round() as u64
}

/// The simulator's configuration of the fabric (see the module's doc) for
/// `apps` on `hosts` hosts, and each application's requester indices.
fn fabric_config(
    apps: &[AppSpec],
    hosts: usize,
    adapter_gbps: f64,
    fabric_gbps: f64,
    seed: u64,
) -> (Config, Vec<Vec<usize>>) {
    let mut requesters = Vec::new();
    let mut links = Vec::new();
    let mut overrides = Vec::new();
    let mut thread_ids = Vec::new();
    for (ai, a) in apps.iter().enumerate() {
        let mut ids = Vec::new();
        for (ti, t) in a.threads.iter().enumerate() {
            let name = format!("t{ai}_{ti}");
            ids.push(requesters.len());
            requesters.push(name.clone());
            links.push(LinkSpec {
                a: name.clone(),
                b: format!("a{}", a.host),
                unlimited: Some(true),
                ..Default::default()
            });
            overrides.push(RequesterOverride {
                name,
                queue_capacity: Some(t.queue),
                issue_interval_ns: Some(t.interval_ns),
                ..Default::default()
            });
        }
        thread_ids.push(ids);
    }
    let mut switches = vec!["s0".to_string()];
    for h in 0..hosts {
        switches.push(format!("a{h}"));
        links.push(LinkSpec {
            a: format!("a{h}"),
            b: "s0".into(),
            bandwidth_gbps: Some(adapter_gbps),
            ..Default::default()
        });
    }
    links.push(LinkSpec {
        a: "s0".into(),
        b: "m0".into(),
        bandwidth_gbps: Some(fabric_gbps),
        ..Default::default()
    });
    let mut cfg = Config {
        topology: TopologyConfig::Custom {
            switches,
            requesters,
            memories: vec!["m0".into()],
            links,
        },
        seed,
        ..Config::default()
    };
    cfg.requester.requests = 1 << 40;
    cfg.requester_override = overrides;
    (cfg, thread_ids)
}

/// The controller's components: each host's adapter link, then the
/// fabric link.
fn components(
    graph: &topology::Graph,
    hosts: usize,
    adapter_gbps: f64,
    fabric_gbps: f64,
) -> Result<Vec<ComponentSpec>> {
    let cap = |g: f64| gbps_to_bps(g * CAPACITY_HEADROOM);
    let mut comps = Vec::new();
    for h in 0..hosts {
        comps.push(ComponentSpec {
            name: format!("adapter{h}"),
            links: vec![link_index(graph, &format!("a{h}"), "s0")?],
            capacity_bps: cap(adapter_gbps),
        });
    }
    comps.push(ComponentSpec {
        name: "fabric".into(),
        links: vec![link_index(graph, "s0", "m0")?],
        capacity_bps: cap(fabric_gbps),
    });
    Ok(comps)
}

impl McRun {
    /// Mean raw rate of channel `c` over periods `from..` (bytes/s).
    pub fn mean_rate(&self, c: usize, from: usize) -> f64 {
        let r = &self.ctrl.records;
        let n = r.len().saturating_sub(from).max(1);
        r.iter().skip(from).map(|p| p.rate[c] as f64).sum::<f64>() / n as f64
    }

    /// Mean share of the bottleneck carried over periods `from..`.
    pub fn utilization(&self, from: usize) -> f64 {
        let r = &self.ctrl.records;
        let n = r.len().saturating_sub(from).max(1);
        r.iter()
            .skip(from)
            .map(|p| p.carried[self.bottleneck] as f64)
            .sum::<f64>()
            / n as f64
            / self.bottleneck_bps as f64
    }

    /// The least utilization of the bottleneck in any one period.
    pub fn min_utilization(&self) -> f64 {
        self.ctrl
            .records
            .iter()
            .map(|p| p.carried[self.bottleneck] as f64)
            .fold(f64::INFINITY, f64::min)
            / self.bottleneck_bps as f64
    }
}

fn params(enabled: bool) -> McParams {
    McParams {
        enabled,
        ..McParams::default()
    }
}

fn closed(queue: u32) -> ThreadSpec {
    ThreadSpec {
        queue,
        interval_ns: 0.0,
    }
}

// ---------------------------------------------------------------- isolation

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Contention {
    /// Victim and contender on one host; the adapter is the bottleneck
    /// (Fig. 9).
    HostAdapter,
    /// Victim and contender on two hosts; the fabric link into the memory
    /// is the bottleneck (Fig. 10).
    InFabric,
}

impl Contention {
    pub fn name(self) -> &'static str {
        match self {
            Contention::HostAdapter => "host-adapter",
            Contention::InFabric => "in-fabric",
        }
    }
}

/// Victim: one closed-loop thread with 3 requests in flight (about 42 % of
/// the bottleneck alone). Contender: 4 threads, 8 in flight each, rate
/// limited so that together they offer `load_pct` % of the bottleneck
/// (thread rates spread by -4.5..+4.5 % so that they do not issue in
/// lockstep).
fn isolation_apps(kind: Contention, load_pct: u32) -> Vec<AppSpec> {
    let mut apps = vec![AppSpec {
        name: "victim".into(),
        host: 0,
        weight: 1,
        threads: vec![closed(3)],
        join_ns: 0,
    }];
    if load_pct > 0 {
        let per_thread = SCALE_GBPS * load_pct as f64 / 100.0 / 4.0; // GB/s
        apps.push(AppSpec {
            name: "contender".into(),
            host: match kind {
                Contention::HostAdapter => 0,
                Contention::InFabric => 1,
            },
            weight: 1,
            threads: [-0.045, -0.015, 0.015, 0.045]
                .iter()
                .map(|e| ThreadSpec {
                    queue: 8,
                    interval_ns: 64.0 / (per_thread * (1.0 + e)),
                })
                .collect(),
            join_ns: 0,
        });
    }
    apps
}

fn isolation_fabric(kind: Contention) -> (f64, f64) {
    match kind {
        Contention::HostAdapter => (SCALE_GBPS, 2.0 * SCALE_GBPS),
        Contention::InFabric => (2.0 * SCALE_GBPS, SCALE_GBPS),
    }
}

#[derive(Serialize, Clone, Debug)]
pub struct IsolationPoint {
    pub contention: Contention,
    pub load_pct: u32,
    pub control: bool,
    /// Victim bandwidth, GB/s, and alone.
    pub victim_gbps: f64,
    pub alone_gbps: f64,
    /// alone / with contention (completion time of a fixed amount of work).
    pub slowdown: f64,
    pub contender_gbps: f64,
    /// Bottleneck utilization.
    pub utilization: f64,
}

/// Victim slowdown vs the contender's offered load, with and without
/// control.
pub fn isolation_sweep(
    kind: Contention,
    loads: &[u32],
    size: McSize,
    seed: u64,
    threads: usize,
) -> Result<Vec<IsolationPoint>> {
    let (ad, fa) = isolation_fabric(kind);
    let periods = size.warmup + size.measure;
    let from = size.warmup as usize;
    let alone = run_apps(
        &isolation_apps(kind, 0),
        ad,
        fa,
        &params(false),
        periods,
        seed,
    )?
    .mean_rate(0, from);
    let mut items = Vec::new();
    for &l in loads {
        for c in [false, true] {
            items.push((l, c));
        }
    }
    let res = par_map(&items, threads, |&(l, c)| -> Result<IsolationPoint> {
        let r = run_apps(&isolation_apps(kind, l), ad, fa, &params(c), periods, seed)?;
        let v = r.mean_rate(0, from);
        Ok(IsolationPoint {
            contention: kind,
            load_pct: l,
            control: c,
            victim_gbps: v / 1e9,
            alone_gbps: alone / 1e9,
            slowdown: alone / v.max(1.0),
            contender_gbps: if l > 0 {
                r.mean_rate(1, from) / 1e9
            } else {
                0.0
            },
            utilization: r.utilization(from),
        })
    });
    res.into_iter().collect()
}

// ---------------------------------------------------------------- fairness

#[derive(Serialize, Clone, Debug)]
pub struct FairnessPoint {
    /// Threads per application.
    pub threads: u32,
    /// Weights of the hungry (A) and the light (B) application.
    pub weight_a: u32,
    pub weight_b: u32,
    pub control: bool,
    pub a_gbps: f64,
    pub b_gbps: f64,
    /// |A - B| in GB/s, and B/A relative to weight_b/weight_a.
    pub gap_gbps: f64,
    pub ratio_vs_weights: f64,
    pub utilization: f64,
}

/// Two applications on one host sharing its adapter (the bottleneck): A's
/// threads keep 4 requests in flight, B's 1 (A is the memory-hungry one);
/// `n` threads each, weights `wa:wb`.
pub fn fairness_apps(n: u32, wa: u32, wb: u32) -> Vec<AppSpec> {
    vec![
        AppSpec {
            name: "A".into(),
            host: 0,
            weight: wa,
            threads: vec![closed(4); n as usize],
            join_ns: 0,
        },
        AppSpec {
            name: "B".into(),
            host: 0,
            weight: wb,
            threads: vec![closed(1); n as usize],
            join_ns: 0,
        },
    ]
}

pub fn fairness_sweep(
    ns: &[u32],
    weights: &[(u32, u32)],
    size: McSize,
    seed: u64,
    threads: usize,
) -> Result<Vec<FairnessPoint>> {
    let mut items = Vec::new();
    for &(wa, wb) in weights {
        for &n in ns {
            for c in [false, true] {
                items.push((n, wa, wb, c));
            }
        }
    }
    let periods = size.warmup + size.measure;
    let from = size.warmup as usize;
    let res = par_map(
        &items,
        threads,
        |&(n, wa, wb, c)| -> Result<FairnessPoint> {
            let r = run_apps(
                &fairness_apps(n, wa, wb),
                SCALE_GBPS,
                2.0 * SCALE_GBPS,
                &params(c),
                periods,
                seed,
            )?;
            let (a, b) = (r.mean_rate(0, from) / 1e9, r.mean_rate(1, from) / 1e9);
            Ok(FairnessPoint {
                threads: n,
                weight_a: wa,
                weight_b: wb,
                control: c,
                a_gbps: a,
                b_gbps: b,
                gap_gbps: (a - b).abs(),
                ratio_vs_weights: if a > 0.0 {
                    (b / a) / (wb as f64 / wa as f64)
                } else {
                    0.0
                },
                utilization: r.utilization(from),
            })
        },
    );
    res.into_iter().collect()
}

// ---------------------------------------------------------------- utilization

/// The congestion signal of a utilization point.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SignalVariant {
    /// The `Queue` signal as the simulator now marks (averaged queue,
    /// threshold scaled with the burst starts: `McParams::default()`).
    Queue,
    /// The `Queue` signal as the simulator marked until issue #25's fix:
    /// the queue a message finds, at 8 or more
    /// (`McParams::instantaneous_queue()`).
    QueueInstant,
    /// The core's own `Congestion::Model`.
    Model,
}

impl SignalVariant {
    pub fn params(self, control: bool) -> McParams {
        let base = match self {
            SignalVariant::Queue => McParams::default(),
            SignalVariant::QueueInstant => McParams::instantaneous_queue(),
            SignalVariant::Model => McParams {
                signal: Signal::Model,
                ..McParams::default()
            },
        };
        McParams {
            enabled: control,
            ..base
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SignalVariant::Queue => "queue",
            SignalVariant::QueueInstant => "queue, instantaneous",
            SignalVariant::Model => "Model",
        }
    }
}

#[derive(Serialize, Clone, Debug)]
pub struct UtilizationPoint {
    pub channels: u32,
    pub threads_per_channel: u32,
    /// All threads.
    pub threads: u32,
    pub signal: SignalVariant,
    pub control: bool,
    pub utilization: f64,
    /// Jain's index of the channels' raw bandwidths.
    pub jain_raw: f64,
    /// Jain's index of each channel's bandwidth over its max-min fair
    /// share ([`fair_shares`]), as Jain, Chiu and Hawe define it (1984):
    /// the fairness figure the goals are checked on.
    pub jain_fair: f64,
}

/// Requests a thread keeps in flight when it is the only one: 8, about the
/// bottleneck's bandwidth-delay product (one thread with 4 fills 56 % of
/// it), so that alone it can fill the link.
pub const SOLO_QUEUE: u32 = 8;

/// Overload: `n` channels on `n` hosts, `threads` closed-loop threads
/// each (4, 3, 6, 5, ... in flight per thread: unequal, so that without
/// control they get unequal bandwidth), all through the fabric link (the
/// bottleneck; adapters at twice its bandwidth). A single thread keeps
/// [`SOLO_QUEUE`] in flight.
pub fn overload_apps(n: u32, threads: u32) -> Vec<AppSpec> {
    if n.saturating_mul(threads) == 1 {
        return overload_apps_q(1, 1, 0, &[SOLO_QUEUE]);
    }
    overload_apps_q(n, threads, 0, &[4, 3, 6, 5])
}

/// [`overload_apps`] with `q[i % q.len()]` requests in flight per thread
/// of channel `i`, which joins at `i * join_every_ns`.
pub fn overload_apps_q(n: u32, threads: u32, join_every_ns: u64, q: &[u32]) -> Vec<AppSpec> {
    let q = if q.is_empty() { &[4u32][..] } else { q };
    (0..n as usize)
        .map(|i| AppSpec {
            name: format!("ch{i}"),
            host: i,
            weight: 1,
            threads: vec![closed(q[i % q.len()]); threads as usize],
            join_ns: join_every_ns.saturating_mul(i as u64),
        })
        .collect()
}

/// Jain's index of `x`: `(sum x)^2 / (n sum x^2)`, 1 when all are equal.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * s2)
    }
}

/// Jain's index over normalized throughputs `x[i] / fair[i]` (Jain, Chiu
/// and Hawe 1984: `fair` the optimal allocation); a channel with no fair
/// share counts as 1.
pub fn jain_normalized(x: &[f64], fair: &[f64]) -> f64 {
    let r: Vec<f64> = x
        .iter()
        .zip(fair)
        .map(|(&v, &o)| if o > 0.0 { v / o } else { 1.0 })
        .collect();
    jain(&r)
}

/// Weighted max-min fair shares of `capacity` among channels with demand
/// ceilings `ceiling` and weights `weight` (water-filling): every channel
/// gets `min(ceiling, weight * level)`, the level rising until the shares
/// fill the capacity or every channel has its ceiling.
pub fn fair_shares(capacity: f64, ceiling: &[f64], weight: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..ceiling.len()).collect();
    let per_weight = |i: usize| ceiling[i] / weight[i].max(f64::MIN_POSITIVE);
    order.sort_by(|&a, &b| per_weight(a).total_cmp(&per_weight(b)));
    let mut out = vec![0.0; ceiling.len()];
    let (mut left, mut w_left) = (capacity, order.iter().map(|&i| weight[i]).sum::<f64>());
    for &i in &order {
        let level = if w_left > 0.0 { left / w_left } else { 0.0 };
        out[i] = ceiling[i].min(weight[i] * level).max(0.0);
        left -= out[i];
        w_left -= weight[i];
    }
    out
}

/// Periods of a channel's run alone (10 to settle, 20 measured; without
/// control nothing needs to converge).
const ALONE_SIZE: McSize = McSize {
    warmup: 10,
    measure: 20,
};

/// Requests in flight of the lone thread that measures the link's
/// achievable bandwidth (twice [`SOLO_QUEUE`], which fills it).
const FILL_QUEUE: u32 = 2 * SOLO_QUEUE;

/// A channel's demand ceiling: the bandwidth its threads take alone on
/// the fabric of [`utilization_runs`], without control (bytes/s).
/// Measured, not modelled: the closed loops' latency is the simulator's
/// (links, switches, memory banks). No allocation that shares the link
/// can give the channel more than it takes alone, and the ceiling does
/// not depend on the others: the water-filling neither credits a channel
/// with more than it could use nor excuses what the others' queue takes
/// from it.
fn alone_rate(threads: &[ThreadSpec], seed: u64) -> Result<f64> {
    let app = AppSpec {
        name: "alone".into(),
        host: 0,
        weight: 1,
        threads: threads.to_vec(),
        join_ns: 0,
    };
    let r = run_apps(
        &[app],
        2.0 * SCALE_GBPS,
        SCALE_GBPS,
        &params(false),
        ALONE_SIZE.warmup + ALONE_SIZE.measure,
        seed,
    )?;
    Ok(r.mean_rate(0, ALONE_SIZE.warmup as usize))
}

/// A channel's threads as a key of the alone runs.
type ThreadsKey = Vec<(u32, u64)>;

fn threads_key(t: &[ThreadSpec]) -> ThreadsKey {
    t.iter()
        .map(|t| (t.queue, t.interval_ns.to_bits()))
        .collect()
}

/// The alone rate of every distinct channel of `apps_of_points`, and the
/// link's achievable bandwidth (a lone thread with [`FILL_QUEUE`] in
/// flight), in parallel.
fn ceilings(
    apps_of_points: &[Vec<AppSpec>],
    seed: u64,
    threads: usize,
) -> Result<(Vec<(ThreadsKey, f64)>, f64)> {
    let mut distinct: Vec<Vec<ThreadSpec>> = vec![vec![closed(FILL_QUEUE)]];
    for a in apps_of_points.iter().flatten() {
        let k = threads_key(&a.threads);
        if !distinct.iter().any(|d| threads_key(d) == k) {
            distinct.push(a.threads.clone());
        }
    }
    let rates = par_map(&distinct, threads, |t| alone_rate(t, seed))
        .into_iter()
        .collect::<Result<Vec<f64>>>()?;
    let link = rates[0];
    let table = distinct.iter().map(|d| threads_key(d)).zip(rates).collect();
    Ok((table, link))
}

/// Utilization and fairness of [`overload_apps`] at each `((channels,
/// threads per channel), signal, control)`, in parallel.
pub fn utilization_runs(
    points: &[((u32, u32), SignalVariant, bool)],
    size: McSize,
    seed: u64,
    threads: usize,
) -> Result<Vec<UtilizationPoint>> {
    let periods = size.warmup + size.measure;
    let from = size.warmup as usize;
    let apps: Vec<Vec<AppSpec>> = points
        .iter()
        .map(|&((n, t), _, _)| overload_apps(n, t))
        .collect();
    let (table, link) = ceilings(&apps, seed, threads)?;
    let items: Vec<_> = points.iter().zip(&apps).collect();
    let res = par_map(
        &items,
        threads,
        |&(&((n, t), signal, c), apps)| -> Result<UtilizationPoint> {
            let r = run_apps(
                apps,
                2.0 * SCALE_GBPS,
                SCALE_GBPS,
                &signal.params(c),
                periods,
                seed,
            )?;
            let rates: Vec<f64> = (0..n as usize).map(|i| r.mean_rate(i, from)).collect();
            let ceiling: Vec<f64> = apps
                .iter()
                .map(|a| {
                    let k = threads_key(&a.threads);
                    table
                        .iter()
                        .find(|(d, _)| *d == k)
                        .map_or(link, |(_, r)| *r)
                })
                .collect();
            let weight: Vec<f64> = apps.iter().map(|a| f64::from(a.weight)).collect();
            let fair = fair_shares(link, &ceiling, &weight);
            Ok(UtilizationPoint {
                channels: n,
                threads_per_channel: t,
                threads: n * t,
                signal,
                control: c,
                utilization: r.utilization(from),
                jain_raw: jain(&rates),
                jain_fair: jain_normalized(&rates, &fair),
            })
        },
    );
    res.into_iter().collect()
}

/// [`utilization_runs`] with and without control at each point.
pub fn utilization_sweep(
    points: &[(u32, u32)],
    signal: SignalVariant,
    size: McSize,
    seed: u64,
    threads: usize,
) -> Result<Vec<UtilizationPoint>> {
    let items: Vec<_> = points
        .iter()
        .flat_map(|&p| [(p, signal, false), (p, signal, true)])
        .collect();
    utilization_runs(&items, size, seed, threads)
}

// ---------------------------------------------------------------- re-convergence

#[derive(Serialize, Clone, Debug)]
pub struct ConvergenceTrace {
    pub control: bool,
    /// Period length (ns) and join interval (periods).
    pub k_ns: u64,
    pub join_every: u32,
    /// Per period: end time (ms) and each channel's bandwidth (GB/s; 0
    /// before it joins).
    pub t_ms: Vec<f64>,
    pub gbps: Vec<Vec<f64>>,
    /// Per join: periods until every joined channel stays within `tol` of
    /// the equal share of what the bottleneck carried (2-period averages),
    /// `None` if not within the interval.
    pub converge_periods: Vec<Option<u32>>,
    /// Per join: the least bottleneck utilization in its interval, and the
    /// periods until utilization is back at 90 % or more for good.
    pub min_utilization: Vec<f64>,
    pub util_recover_periods: Vec<Option<u32>>,
    pub tolerance: f64,
    pub utilization: f64,
}

/// `n` identical channels (4 threads, 4 in flight each, as the paper's
/// copies of one synthetic workload) join every `join_every` periods; the
/// run lasts `n * join_every` periods.
pub fn convergence(
    n: u32,
    join_every: u32,
    control: bool,
    tol: f64,
    seed: u64,
) -> Result<ConvergenceTrace> {
    let p = params(control);
    let every_ns = p.k_ns.saturating_mul(join_every as u64);
    let periods = n.saturating_mul(join_every);
    let r = run_apps(
        &overload_apps_q(n, 4, every_ns, &[4]),
        2.0 * SCALE_GBPS,
        SCALE_GBPS,
        &p,
        periods,
        seed,
    )?;
    let recs = &r.ctrl.records;
    let t_ms: Vec<f64> = recs.iter().map(|x| x.t_ns as f64 / 1e6).collect();
    let gbps: Vec<Vec<f64>> = (0..n as usize)
        .map(|c| recs.iter().map(|x| x.rate[c] as f64 / 1e9).collect())
        .collect();
    let mut converge = Vec::new();
    let (mut min_util, mut recover) = (Vec::new(), Vec::new());
    for j in 0..n as usize {
        let start = j * join_every as usize;
        let end = ((j + 1) * join_every as usize).min(recs.len());
        let active = j + 1;
        let ok = |i: usize| -> bool {
            if i < 1 {
                return false;
            }
            let avg = |c: usize| (gbps[c][i] + gbps[c][i - 1]) / 2.0;
            let total: f64 = (0..active).map(avg).sum();
            let fair = total / active as f64;
            fair > 0.0 && (0..active).all(|c| (avg(c) - fair).abs() <= tol * fair)
        };
        // The first period from which every later one in the interval is
        // within the tolerance (the joiner's first period is the one
        // after its join tick).
        let mut first = None;
        for i in (start + 2..end).rev() {
            if ok(i) {
                first = Some(i);
            } else {
                break;
            }
        }
        converge.push(first.map(|i| (i - start) as u32));
        let util = |i: usize| recs[i].carried[r.bottleneck] as f64 / r.bottleneck_bps as f64;
        min_util.push((start..end).map(util).fold(1.0, f64::min));
        let mut back = None;
        for i in (start..end).rev() {
            if util(i) >= 0.9 {
                back = Some(i);
            } else {
                break;
            }
        }
        recover.push(back.map(|i| (i - start) as u32));
    }
    let from = recs.len().saturating_sub(join_every as usize / 2);
    Ok(ConvergenceTrace {
        control,
        k_ns: p.k_ns,
        join_every,
        t_ms,
        gbps,
        converge_periods: converge,
        min_utilization: min_util,
        util_recover_periods: recover,
        tolerance: tol,
        utilization: r.utilization(from),
    })
}

// ---------------------------------------------------------------- scale

/// Measurement of the many-thread sweep: 40 periods to settle, 60
/// measured (the loop's cycles at 1024 threads are about 10 periods long;
/// 60 keep their phase out of the mean).
pub const SCALE_SIZE: McSize = McSize {
    warmup: 40,
    measure: 60,
};

/// The sizes `tests/memchannel.rs` holds to issue #25's goal and `cargo
/// xtask bench` reports, (channels, threads per channel): 1, 3, 4, 7, 16,
/// 160 and 1024 threads in channels of one thread, 160 and 1024 in
/// channels of four, and odd counts of channels of three (9, 15 and 21
/// threads).
pub const SCALE_TESTED: [(u32, u32); 12] = [
    (1, 1),
    (3, 1),
    (4, 1),
    (7, 1),
    (16, 1),
    (160, 1),
    (1024, 1),
    (40, 4),
    (256, 4),
    (3, 3),
    (5, 3),
    (7, 3),
];

/// The sizes of [`SCALE_TESTED`] `tests/memchannel.rs` also runs with
/// seeds 2 and 3 (few threads, quick).
pub const SCALE_TESTED_SEEDS: [(u32, u32); 4] = [(3, 1), (3, 3), (5, 3), (7, 3)];

/// Sizes nobody tuned the controller for, which `tests/memchannel.rs`
/// holds to the goal with seeds 1 to 3 (2 x 1 is at its ceilings: 98.2 %
/// of the link is all its two channels take alone), and 3, 5 and 8
/// channels of five threads (67-92 % before the core's `stagger_phase`
/// interleaved every slot: `Documentation/cxlfabric/cxlsim.rst`,
/// "Fibonacci numbers of channels"), and 3 x 4 (95.5-95.7 % until each
/// run led its place by an eighth of its length, the core's
/// `RunWindow::run_phase`: 96.4-96.5 %; same document, "3 x 4").
pub const SCALE_UNTUNED: [(u32, u32); 11] = [
    (2, 1),
    (5, 1),
    (6, 1),
    (9, 1),
    (6, 2),
    (11, 2),
    (2, 4),
    (3, 5),
    (5, 5),
    (8, 5),
    (3, 4),
];

/// The points of `cxlsim bench --only memchannel-scale`.
pub fn scale_points(full: bool) -> Vec<(u32, u32)> {
    if full {
        vec![
            (1, 1),
            (2, 1),
            (3, 1),
            (4, 1),
            (5, 1),
            (7, 1),
            (10, 1),
            (16, 1),
            (32, 1),
            (64, 1),
            (160, 1),
            (1024, 1),
            (1, 4),
            (2, 4),
            (4, 4),
            (16, 4),
            (32, 4),
            (40, 4),
            (64, 4),
            (128, 4),
            (256, 4),
            (3, 3),
            (5, 3),
            (7, 3),
            (13, 3),
            (5, 2),
            (111, 3),
        ]
    } else {
        vec![(1, 1), (7, 1)]
    }
}
