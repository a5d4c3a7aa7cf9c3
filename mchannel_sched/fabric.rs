// SPDX-License-Identifier: GPL-2.0

//! Fabric components and channels, and the control loop that turns what
//! the threads ran into each channel's run budget every K (Eq. 3-7,
//! Algorithm 1: `control.rs`). Everything here comes from user space and
//! is checked before it is stored; arithmetic saturates.

#![deny(clippy::arithmetic_side_effects)]

use crate::control::component::{Component, Params};
use crate::control::congestion::Congestion;
use crate::control::estimator::Estimator;
use crate::control::fixed::{exp_neg, mul_div, Q32};
use crate::control::shared::Remote;
use crate::control::tree::{self, Node};
use crate::control::window::{default_min_run_ns, path_share, Budget, RunWindow};
use crate::cross::{CrossHost, PeerSlots};
use crate::meter::{ChannelMeter, PerfCounters};
use crate::stagger::Places;
use crate::support::kvec::VecExt;
use crate::support::pr_info_ratelimited;
use crate::support::sysfs::Dir;
use crate::support::uapi::mchannel as abi;
use crate::sysfs::{self, ChannelAttrs, ComponentAttrs, Root};
use crate::threads::Threads;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Limits on what user space may create.
pub(crate) const MAX_COMPONENTS: usize = 64;
// Each component has one slot per host in shared memory (`cross.rs`).
const _: () = assert!(crate::control::shared::SLOTS_PER_HOST == MAX_COMPONENTS);
pub(crate) const MAX_CHANNELS: usize = 256;
/// Levels of a hierarchy: tenant, application, channel.
pub(crate) const MAX_DEPTH: usize = 3;
/// The control period K (the core's default).
pub(crate) const K_NS: u64 = 10_000_000;
const NS_PER_S: u64 = 1_000_000_000;

/// The longest window of a thread that skips windows for a short T_R
/// (`RunWindow::budget`): a budget changes only when a window ends, so at
/// most one control period late.
pub(crate) const MAX_WINDOW_NS: u64 = K_NS;

pub(crate) struct ComponentEntry {
    pub(crate) name: [u8; abi::NAME_BYTES],
    pub(crate) kind: u32,
    pub(crate) core: Component,
    /// Where its congestion signal comes from, and the last one.
    pub(crate) signal: Congestion,
    last_signal: Q32,
    attrs: Arc<ComponentAttrs>,
    dir: Option<Dir<ComponentAttrs>>,
    /// The other hosts' slots for it, when the fabric is shared.
    peers: Option<KBox<PeerSlots>>,
}

pub(crate) struct Channel {
    pub(crate) name: [u8; abi::NAME_BYTES],
    pub(crate) flags: u32,
    pub(crate) weight: u32,
    /// The uid that may attach threads without `CAP_SYS_NICE`.
    pub(crate) owner: u32,
    /// A group's id, or `NO_PARENT`; a parent outlives its children.
    pub(crate) parent: u32,
    /// Groups above it (0: under the components), below `MAX_DEPTH`.
    pub(crate) depth: u8,
    /// The components it crosses (a child's are its parent's).
    pub(crate) path: KVec<u32>,
    /// Per component on the path: a group's share per unit of weight
    /// among its children (Eq. 4 is iterative, so it is kept); a channel's
    /// alpha from that component's tree.
    pub(crate) alphas: [u64; abi::PATH_MAX],
    /// A group's rate and demand: its children's sums.
    pub(crate) sums: (u64, u64),
    pub(crate) window: RunWindow,
    pub(crate) meter: ChannelMeter,
    pub(crate) estimator: Estimator,
    pub(crate) alpha: u64,
    pub(crate) t_r_ns: u64,
    pub(crate) windows: u64,
    pub(crate) throttled_ns: u64,
    pub(crate) run_ns: u64,
    pub(crate) granted_ns: u64,
    pub(crate) max_overrun_ns: u64,
    /// Attached threads at the last control period.
    pub(crate) threads: u64,
    /// Ranks handed out to its threads (`stagger.rs`).
    pub(crate) next_rank: u64,
    /// Its place among the channels sharing its bottleneck, and their
    /// number (`stagger.rs`).
    pub(crate) place: (u64, u64),
    pub(crate) attrs: Arc<ChannelAttrs>,
    pub(crate) dir: Option<Dir<ChannelAttrs>>,
}

impl Channel {
    pub(crate) fn is_group(&self) -> bool {
        self.flags & abi::CHANNEL_GROUP != 0
    }

    /// Its rate and demand (a group's: its children's).
    fn rate_demand(&self) -> (u64, u64) {
        if self.is_group() {
            self.sums
        } else {
            (self.estimator.rate(), self.estimator.demand())
        }
    }

    /// Publishes what sysfs shows of channel `id`.
    pub(crate) fn publish(&self, id: usize) {
        let (rate, demand) = self.rate_demand();
        self.attrs.publish(&[
            id as u64,
            u64::from(self.weight),
            u64::from(self.parent),
            u64::from(self.meter.kind()),
            self.threads,
            rate,
            demand,
            self.alpha,
            self.t_r_ns,
            self.window.t_w_ns(),
            self.windows,
            self.throttled_ns,
            self.run_ns,
            self.granted_ns,
            self.max_overrun_ns,
            u64::from(self.owner),
        ]);
    }

    /// Its threads' budget and window: whole windows when not metered
    /// (or a group), else Eq. 7 with runs and parks of `min_run_ns` or more.
    fn budget(&self, min_run_ns: u64) -> Budget {
        if !self.meter.meter.metered() || self.is_group() {
            let t_w_ns = self.window.t_w_ns();
            return Budget {
                t_r_ns: t_w_ns,
                t_w_ns,
            };
        }
        let w = self.window.with_min_run(min_run_ns);
        w.budget(self.effective_weight(), self.alpha, self.estimator.demand())
    }

    /// The weight its share is computed with (best effort: the least).
    fn effective_weight(&self) -> u32 {
        if self.flags & abi::CHANNEL_BEST_EFFORT != 0 {
            1
        } else {
            self.weight
        }
    }
}

/// What the control loop gathers from one channel's threads in a period.
#[derive(Clone, Copy, Default)]
struct Gathered {
    windows: u64,
    run_ns: u64,
    granted_ns: u64,
    max_overrun_ns: u64,
    /// Bytes that count towards its rate (`Meter::rate_bytes`).
    bytes: u64,
    /// The sum of its threads' demands: each thread's bytes over the time
    /// it was free to run (the period less the time it was parked), so a
    /// thread that sleeps by itself is not taken for one held back.
    demand: u64,
    ran: bool,
    parked_ns: u64,
    threads: u64,
}
/// Components and channels; ids are indexes.
///
/// # Invariants
///
/// Every channel and component has its sysfs directory while `sysfs` is
/// set; `sysfs` is dropped last, after the directories inside it.
pub(crate) struct Fabric {
    pub(crate) components: KVec<ComponentEntry>,
    pub(crate) channels: KVec<Option<Channel>>,
    /// The perf meter's counters.
    pub(crate) perf: PerfCounters,
    last_ns: u64,
    /// Other hosts' view of the components, when the fabric is shared.
    cross: Option<CrossHost>,
    /// The channels' places among those sharing a bottleneck.
    places: Places,
    sysfs: Option<Root>,
}

impl Fabric {
    pub(crate) fn new(now_ns: u64) -> Fabric {
        Fabric {
            components: KVec::new(),
            channels: KVec::new(),
            perf: PerfCounters::default(),
            last_ns: now_ns,
            cross: None,
            places: Places::new(),
            sysfs: None,
        }
    }

    /// Shares the components with other hosts; before any exists.
    pub(crate) fn set_cross(&mut self, cross: CrossHost) -> Result {
        if !self.components.is_empty() {
            return Err(EBUSY);
        }
        self.cross = Some(cross);
        Ok(())
    }

    /// Gives the fabric its sysfs root; before any component or channel
    /// exists.
    pub(crate) fn set_sysfs(&mut self, root: Root) -> Result {
        if !self.components.is_empty() || !self.channels.is_empty() {
            return Err(EBUSY);
        }
        self.sysfs = Some(root);
        Ok(())
    }

    /// Removes every sysfs directory, children first (before the device
    /// they live under goes away).
    pub(crate) fn remove_sysfs(&mut self) {
        for ch in self.channels.iter_mut().flatten() {
            ch.dir = None;
        }
        for c in self.components.iter_mut() {
            c.dir = None;
        }
        self.sysfs = None;
    }

    /// Publishes what sysfs shows.
    fn publish(&self) {
        for (id, ch) in self.channels.iter().enumerate() {
            if let Some(ch) = ch {
                ch.publish(id);
            }
        }
        let host = self.cross.as_ref().map(CrossHost::host);
        for (id, c) in self.components.iter().enumerate() {
            let remote = c.peers.as_ref().map(|p| p.last);
            let model = match c.signal {
                Congestion::Model { capacity } => capacity,
                Congestion::Injected(_) => 0,
            };
            c.attrs.publish(&[
                id as u64,
                u64::from(c.kind),
                c.core.params().max_capacity,
                c.core.capacity(),
                c.core.rate(),
                c.core.load().to_ppm(),
                c.core.alpha(),
                c.last_signal.to_ppm(),
                model,
                remote.map_or(0, |r| r.peers as u64),
                remote.map_or(host.unwrap_or(0), |r| r.owner_host) as u64,
            ]);
        }
    }

    pub(crate) fn channel(&self, id: u32) -> Option<&Channel> {
        self.channels.get(id as usize)?.as_ref()
    }

    pub(crate) fn channel_mut(&mut self, id: u32) -> Option<&mut Channel> {
        self.channels.get_mut(id as usize)?.as_mut()
    }

    pub(crate) fn new_component(
        &mut self,
        name: [u8; abi::NAME_BYTES],
        kind: u32,
        max: u64,
    ) -> Result<u32> {
        if self.components.iter().any(|c| c.name == name) {
            return Err(EEXIST);
        }
        if self.components.len() >= MAX_COMPONENTS {
            return Err(ENOSPC);
        }
        let core = Component::new(Params::default_for(max)).map_err(|_| EINVAL)?;
        let id = u32::try_from(self.components.len()).map_err(|_| ENOSPC)?;
        let attrs = ComponentAttrs::new()?;
        let root = self.sysfs.as_ref().ok_or(ENODEV)?;
        let dir = sysfs::dir_of(root.components.as_parent(), &name, &attrs)?;
        let peers = match self.cross {
            Some(_) => Some(PeerSlots::new()?),
            None => None,
        };
        self.components.reserve(1, GFP_KERNEL)?;
        // INVARIANT: the component has its directory.
        self.components.push(
            ComponentEntry {
                name,
                kind,
                core,
                signal: Congestion::default(),
                last_signal: Q32::ZERO,
                attrs,
                dir: Some(dir),
                peers,
            },
            GFP_KERNEL,
        )?;
        self.publish();
        Ok(id)
    }

    /// Stores `channel` under a free id, with its sysfs directory.
    pub(crate) fn new_channel(&mut self, mut channel: Channel) -> Result<u32> {
        let taken = |c: &Option<Channel>| c.as_ref().is_some_and(|c| c.name == channel.name);
        if self.channels.iter().any(taken) {
            return Err(EEXIST);
        }
        let free = self.channels.iter().position(Option::is_none);
        if free.is_none() && self.channels.len() >= MAX_CHANNELS {
            return Err(ENOSPC);
        }
        let i = free.unwrap_or(self.channels.len());
        let id = u32::try_from(i).map_err(|_| ENOSPC)?;
        let root = self.sysfs.as_ref().ok_or(ENODEV)?;
        // INVARIANT: the channel has its directory.
        channel.dir = Some(sysfs::dir_of(
            root.channels.as_parent(),
            &channel.name,
            &channel.attrs,
        )?);
        channel.publish(i);
        match self.channels.get_mut(i) {
            Some(slot) => *slot = Some(channel),
            None => self.channels.push(Some(channel), GFP_KERNEL)?,
        }
        Ok(id)
    }

    /// Reads the perf meter's counters into their threads' counts (and
    /// makes and drops counters), before a [`Fabric::step`].
    pub(crate) fn collect_counters<I>(&mut self, threads: &Threads<I>) {
        let channels = &self.channels;
        let event_of = |id: u32| channels.get(id as usize)?.as_ref()?.meter.event;
        let any_event = channels.iter().flatten().any(|c| c.meter.event.is_some());
        self.perf.collect(threads, event_of, any_event);
    }

    /// One control period: fold each channel's closed windows into its
    /// estimator, update every component's load, capacity and share, and
    /// give each thread its channel's budget and window.
    pub(crate) fn step<I>(&mut self, threads: &Threads<I>, now_ns: u64, min_run_ns: u64) -> Result {
        let wall = now_ns.saturating_sub(self.last_ns);
        if wall == 0 {
            return Ok(());
        }
        self.last_ns = now_ns;
        let mut gathered = KVec::with_capacity(self.channels.len(), GFP_KERNEL)?;
        for _ in 0..self.channels.len() {
            gathered.push(Gathered::default(), GFP_KERNEL)?;
        }
        let (channels, components) = (&self.channels, &self.components);
        threads.for_each(|a| {
            // A thread that keeps its CPU (no switch, no timer: a budget
            // of the whole window) closes no windows by itself.
            a.run().roll(now_ns);
            let closed = a.run().take_closed();
            // A park in progress counts in the periods it spans, as the
            // run time does: a sleep counted only when it ends would make
            // one period's demand look low and the next one's high.
            let parked = a.take_parked_ns(now_ns);
            let counted = a.take_counted();
            let i = a.channel() as usize;
            let (Some(g), Some(Some(ch))) = (gathered.get_mut(i), channels.get(i)) else {
                return;
            };
            g.threads = g.threads.saturating_add(1);
            let meter = &ch.meter.meter;
            let cap = path_capacity(components, ch);
            let bytes = meter.bytes(closed.run_ns, counted, cap);
            a.count(meter.left(closed.run_ns, counted, cap));
            g.windows = g.windows.saturating_add(closed.windows);
            g.run_ns = g.run_ns.saturating_add(closed.run_ns);
            g.granted_ns = g.granted_ns.saturating_add(closed.granted_ns);
            g.max_overrun_ns = g.max_overrun_ns.max(closed.max_overrun_ns);
            g.bytes = g
                .bytes
                .saturating_add(meter.rate_bytes(bytes, closed.charged_ns));
            g.parked_ns = g.parked_ns.saturating_add(parked);
            if closed.run_ns > 0 {
                let free = wall.saturating_sub(parked).max(closed.run_ns);
                g.demand = g.demand.saturating_add(mul_div(bytes, NS_PER_S, free));
                g.ran = true;
            }
        });
        let keep = exp_neg(wall, K_NS);
        for (ch, g) in self.channels.iter_mut().zip(gathered.iter()) {
            let Some(ch) = ch else { continue };
            ch.windows = ch.windows.saturating_add(g.windows);
            ch.throttled_ns = ch.throttled_ns.saturating_add(g.parked_ns);
            ch.run_ns = ch.run_ns.saturating_add(g.run_ns);
            ch.granted_ns = ch.granted_ns.saturating_add(g.granted_ns);
            ch.max_overrun_ns = g.max_overrun_ns;
            ch.threads = g.threads;
            ch.estimator
                .rate
                .update(mul_div(g.bytes, NS_PER_S, wall), keep);
            // No thread ran: no evidence of its demand either way.
            if g.ran {
                ch.estimator.demand.update(g.demand, keep);
            }
        }
        if let Err(e) = self.update_components(now_ns) {
            pr_warn!(
                "control step: components not updated: error {}\n",
                e.to_errno()
            );
        }
        self.update_budgets(min_run_ns);
        if let Err(e) = self.places.update(&mut self.channels, &self.components) {
            pr_warn!("control step: places kept: error {}\n", e.to_errno());
        }
        let channels = &mut self.channels;
        threads.update_each(|a| {
            let Some(Some(ch)) = channels.get_mut(a.channel() as usize) else {
                return false;
            };
            let (t_r, t_w) = a.run().next_ns();
            let b = ch.budget(min_run_ns);
            a.run().set_window(b.t_w_ns);
            a.run().set_budget(b.t_r_ns);
            ch.stagger(a, b);
            // A parked thread sleeps off its debt at the old budget: with
            // a larger one, or shorter windows, it may run sooner, and
            // wakes to recount.
            a.is_parked() && (b.t_r_ns > t_r || b.t_w_ns < t_w)
        });
        self.publish();
        Ok(())
    }

    /// Eq. 4 at every component, over the tree of the groups and
    /// channels that cross it (HCSFQ; flat when no channel has a parent).
    fn update_components(&mut self, now_ns: u64) -> Result {
        // Parents before children, as the tree wants.
        let mut order = KVec::with_capacity(self.channels.len(), GFP_KERNEL)?;
        for depth in 0..MAX_DEPTH {
            for (i, ch) in self.channels.iter().enumerate() {
                if ch.as_ref().is_some_and(|c| usize::from(c.depth) == depth) {
                    order.push(i, GFP_KERNEL)?;
                }
            }
        }
        let mut nodes = KVec::with_capacity(order.len(), GFP_KERNEL)?;
        let mut ids = KVec::with_capacity(order.len(), GFP_KERNEL)?;
        // Each channel's node in the tree being built, by channel id.
        let mut node_of = KVec::with_capacity(self.channels.len(), GFP_KERNEL)?;
        for _ in 0..self.channels.len() {
            node_of.push(None, GFP_KERNEL)?;
        }
        for ch in self.channels.iter_mut().flatten() {
            ch.sums = (0, 0);
        }
        if let Some(cross) = self.cross.as_mut() {
            cross.beat();
        }
        for (id, comp) in self.components.iter_mut().enumerate() {
            // One component's trouble leaves the others (and every
            // budget) to be updated.
            if let Err(e) = tree_of(
                &self.channels,
                &order,
                id,
                &mut nodes,
                &mut ids,
                &mut node_of,
            ) {
                pr_warn!(
                    "component {}: no tree this period: error {}\n",
                    id,
                    e.to_errno()
                );
                continue;
            }
            comp.last_signal = comp.signal.signal(comp.core.rate());
            comp.core.update_load(comp.last_signal);
            comp.core.adjust_capacity();
            let remote = match (self.cross.as_ref(), comp.peers.as_mut()) {
                (Some(cross), Some(peers)) => cross.peers(peers, &comp.name, now_ns),
                _ => Remote::default(),
            };
            let local = comp.core.update_shared(&mut nodes, remote);
            if let (Some(cross), Some(peers)) = (self.cross.as_mut(), comp.peers.as_mut()) {
                if let Err(e) = cross.publish(peers, &comp.name, local, comp.core.alpha()) {
                    pr_info_ratelimited!(
                        "mchannel: cannot publish a slot: error {}\n",
                        e.to_errno()
                    );
                }
            }
            for (n, &(i, pos)) in nodes.iter().zip(ids.iter()) {
                if let Some(Some(ch)) = self.channels.get_mut(i) {
                    if let Some(a) = ch.alphas.get_mut(pos) {
                        *a = n.alpha;
                    }
                    if ch.is_group() {
                        // The same children on every component of its path.
                        ch.sums = (n.rate, n.demand);
                    }
                }
            }
        }
        Ok(())
    }

    fn update_budgets(&mut self, min_run_ns: u64) {
        for ch in self.channels.iter_mut().flatten() {
            let len = ch.path.len();
            ch.alpha = path_share(ch.alphas.iter().take(len).copied());
            // Reported (and given to threads attached before the next
            // period) per T_W: the share of time, whatever windows the
            // threads skip.
            let b = ch.budget(min_run_ns);
            ch.t_r_ns = mul_div(b.t_r_ns, ch.window.t_w_ns(), b.t_w_ns);
        }
    }
}

/// The smallest configured capacity on `ch`'s path (what counted bytes
/// are capped at: `control::meter`).
fn path_capacity(components: &KVec<ComponentEntry>, ch: &Channel) -> u64 {
    ch.path
        .iter()
        .filter_map(|&c| components.get(c as usize))
        .map(|c| c.core.params().max_capacity)
        .min()
        // Crossing nothing, it is not regulated: nothing to count.
        .unwrap_or(0)
}

/// The tree of the groups and channels (in `order`, parents first) that
/// cross component `id`: `nodes`, and for each node its channel and its
/// component's position on the channel's path (`ids`). `node_of` (one
/// entry per channel id) finds a parent's node without a search.
fn tree_of(
    channels: &KVec<Option<Channel>>,
    order: &KVec<usize>,
    id: usize,
    nodes: &mut KVec<Node>,
    ids: &mut KVec<(usize, usize)>,
    node_of: &mut KVec<Option<u16>>,
) -> Result {
    for &(i, _) in ids.iter() {
        if let Some(n) = node_of.get_mut(i) {
            *n = None;
        }
    }
    nodes.clear();
    ids.clear();
    for &i in order.iter() {
        let Some(Some(ch)) = channels.get(i) else {
            continue;
        };
        let Some(pos) = ch.path.iter().position(|&c| c as usize == id) else {
            continue;
        };
        let parent = match node_of.get(ch.parent as usize) {
            _ if ch.parent == abi::NO_PARENT => tree::ROOT,
            // Parents cross the components their children do.
            Some(&Some(k)) => k,
            _ => return Err(EINVAL),
        };
        let k = u16::try_from(nodes.len()).map_err(|_| EINVAL)?;
        let (rate, demand) = ch.rate_demand();
        let mut node = Node::new(parent, ch.effective_weight());
        node.rate = rate;
        node.demand = demand;
        node.alpha = ch.alphas.get(pos).copied().unwrap_or(u64::MAX);
        nodes.push(node, GFP_KERNEL)?;
        ids.push((i, pos), GFP_KERNEL)?;
        if let Some(n) = node_of.get_mut(i) {
            *n = Some(k);
        }
    }
    tree::check(nodes).map_err(|_| EINVAL)
}

/// A new channel's window settings (`t_w_ns` checked by the caller): a
/// run is at least the core's default (1 % of T_W) or the `min_run_us`
/// module parameter, whichever is longer (shorter runs skip windows to
/// keep their share: fewer parks, each costing tens of microseconds under
/// emulation), in windows up to K.
pub(crate) fn run_window(t_w_ns: u64) -> Result<RunWindow> {
    let floor = u64::from(crate::min_run_us()).saturating_mul(1_000);
    let min_run = default_min_run_ns(t_w_ns).max(floor);
    RunWindow::new(t_w_ns, min_run, MAX_WINDOW_NS).ok_or(EINVAL)
}
