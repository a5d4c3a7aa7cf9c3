//! Hierarchical sharing of one component (HCSFQ, §4.4): tenants,
//! applications and channels form a tree under the component. A parent's
//! demand and rate are the sums of its children's; Eq. 4 runs from the
//! root down, each node dividing what it was granted among its children.
//! A single-level tree (channels directly under the component) is plain
//! MemChannel.
//!
//! Nodes live in storage the caller lends, parents before children, so an
//! update is two linear passes with no allocation and no recursion.

use super::component::fair_share;
use super::fixed::Q32;
use super::window::WEIGHT_MAX;

/// No parent: a child of the component itself.
pub const ROOT: u16 = u16::MAX;

/// One node of the tree: a tenant, an application or (as a leaf) a
/// channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Index of the parent node, below this node's own; [`ROOT`] for a
    /// child of the component.
    pub parent: u16,
    /// Weight among its siblings, `1..=WEIGHT_MAX`.
    pub weight: u32,
    /// Leaf: the channel's smoothed demand (bytes per second). Inner node:
    /// computed, the sum of its children's.
    pub demand: u64,
    /// Leaf: the channel's smoothed rate. Inner node: computed, the sum.
    pub rate: u64,
    /// Computed: what this node was granted, `min(weight * alpha of its
    /// parent, demand)`.
    pub granted: u64,
    /// Inner node: its fair share per unit of weight among its children
    /// (kept between updates, Eq. 4 is iterative). Leaf: its parent's, the
    /// alpha its run window uses.
    pub alpha: u64,
    /// Computed: whether any node names this one as parent.
    pub inner: bool,
    /// Computed, inner node: the largest per-weight demand of its
    /// children (the cap of its Eq. 4).
    pub child_cap: u64,
    /// Computed: the rate its parent's Eq. 4 counts for it (the sum of
    /// its children's for an inner node). A leaf's rate, or its share
    /// when the component's queue holds it back (`counted_rate`).
    pub counted: u64,
}

impl Node {
    /// A node under `parent` ([`ROOT`]: the component) with weight
    /// `weight`; its demand and rate (a leaf's for the caller to set) and
    /// every computed field start at zero.
    pub fn new(parent: u16, weight: u32) -> Node {
        Node {
            parent,
            weight,
            demand: 0,
            rate: 0,
            granted: 0,
            alpha: 0,
            inner: false,
            child_cap: 0,
            counted: 0,
        }
    }
}

/// Why a tree was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeError {
    /// A parent index at or after its child, or out of range.
    Parent(usize),
    /// A weight outside `1..=WEIGHT_MAX`, at this node's index.
    Weight(usize),
}

/// Checks the shape (parents first, weights in range) and marks inner
/// nodes.
pub fn check(nodes: &mut [Node]) -> Result<(), TreeError> {
    for node in nodes.iter_mut() {
        node.inner = false;
    }
    for i in 0..nodes.len() {
        let (parent, weight) = match nodes.get(i) {
            Some(n) => (n.parent, n.weight),
            None => break,
        };
        if !(1..=WEIGHT_MAX).contains(&weight) {
            return Err(TreeError::Weight(i));
        }
        if parent != ROOT {
            let p = usize::from(parent);
            match nodes.get_mut(p) {
                Some(pn) if p < i => pn.inner = true,
                _ => return Err(TreeError::Parent(i)),
            }
        }
    }
    Ok(())
}

/// Per-weight demand, rounded up so that `weight * cap >= demand`.
fn per_weight(demand: u64, weight: u32) -> u64 {
    let w = u64::from(weight.max(1));
    demand.div_ceil(w)
}

/// A leaf the component's queue holds back runs within 1 / `HELD_BACK_DIV`
/// under its share (`counted_rate`).
pub const HELD_BACK_DIV: u64 = 4;

/// The rate Eq. 4 counts for a leaf: its rate, except while the
/// component is congested (its last signal above zero) for a leaf that
/// its share here does not throttle (demand below `weight * alpha`) yet
/// whose rate is within 1 / [`HELD_BACK_DIV`] under that share: then the
/// share. Such a leaf is held back by the component's queue, not by its
/// own demand: a thread keeping requests in flight moves fewer bytes
/// while a queue stands, and its demand (bytes over the time it ran)
/// falls with it. Counted at its rate, it would not set the fair share
/// (CSFQ counts a flow at the fair rate unless it sends less), Eq. 4
/// would hand what the queue took from it to the throttled leaves, whose
/// longer runs deepen the queue: three channels on one link settled with
/// the unthrottled one 18 % under the others
/// (`Documentation/cxlfabric/cxlsim.rst`, "3 x 1"). A leaf that sends
/// well under its share counts at its rate, as does every leaf of a
/// component that reports no congestion, and one throttled elsewhere on
/// its path unless that share is within a quarter under this one (the
/// most it is over-counted).
pub fn counted_rate(node: &Node, congested: bool) -> u64 {
    if !congested || node.inner {
        return node.rate;
    }
    let share = node.alpha.saturating_mul(u64::from(node.weight));
    let near = share.saturating_sub(share / HELD_BACK_DIV);
    if node.demand < share && node.rate >= near {
        share
    } else {
        node.rate
    }
}

/// The rate Eq. 4 divides by, given the measured aggregate `rate`, the
/// `counted` one (`counted_rate`) and the capacity: the counted rate
/// while the measured one is at most the capacity (where Eq. 4 would
/// raise alpha past the held-back leaves), else the measured one (Eq. 4
/// cuts anyway; at the start of an overload every leaf runs unthrottled
/// and is held back, and counting each at its share there cut alpha
/// deeper than Eq. 4 and left 256 x 4 and 1024 x 1 at 94-96 % at some
/// seeds).
pub fn eq4_rate(rate: u64, counted: u64, capacity: u64) -> u64 {
    if rate > capacity {
        rate
    } else {
        rate.max(counted)
    }
}

/// One sampling period over a checked tree (`check` returned `Ok`): sums
/// demand and rate upward, then applies Eq. 4 downward from the component
/// with capacity `capacity` and share `alpha` (the component's own, kept
/// by the caller). Returns the component's new alpha. No congestion
/// signal: every leaf counts at its rate (`counted_rate`).
pub fn update(nodes: &mut [Node], capacity: u64, alpha: u64) -> u64 {
    let sums = sum_up(nodes, false);
    let root_alpha = fair_share(
        alpha,
        capacity,
        eq4_rate(sums.rate, sums.counted, capacity),
        sums.cap,
    );
    divide_down(nodes, root_alpha);
    root_alpha
}

/// What [`sum_up`] returns: the top level's aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sums {
    /// The aggregate rate, as measured (the component's F).
    pub rate: u64,
    /// The aggregate of what Eq. 4 counts (`counted_rate`).
    pub counted: u64,
    /// The largest per-weight demand (the cap of Eq. 4).
    pub cap: u64,
    /// Whether the tree has groups (inner nodes): [`damped`] applies.
    pub grouped: bool,
}

/// Sums demand, rate and counted rate upward; returns the top level's
/// aggregates (what Eq. 4 at the component needs). `congested`: the
/// component's last signal was above zero (`counted_rate`).
pub fn sum_up(nodes: &mut [Node], congested: bool) -> Sums {
    // Children come after parents, so a reverse pass has every child
    // added before its parent is added to the grandparent.
    for node in nodes.iter_mut().filter(|n| n.inner) {
        node.demand = 0;
        node.rate = 0;
        node.counted = 0;
        node.child_cap = 0;
    }
    let mut top = Sums::default();
    for i in (0..nodes.len()).rev() {
        let Some(node) = nodes.get_mut(i) else {
            continue;
        };
        if node.inner {
            top.grouped = true;
        } else {
            node.counted = counted_rate(node, congested);
        }
        let node = *node;
        let cap = per_weight(node.demand, node.weight);
        if node.parent == ROOT {
            top.rate = top.rate.saturating_add(node.rate);
            top.counted = top.counted.saturating_add(node.counted);
            top.cap = top.cap.max(cap);
        } else if let Some(p) = nodes.get_mut(usize::from(node.parent)) {
            p.demand = p.demand.saturating_add(node.demand);
            p.rate = p.rate.saturating_add(node.rate);
            p.counted = p.counted.saturating_add(node.counted);
            p.child_cap = p.child_cap.max(cap);
        }
    }
    top
}

/// The component's new alpha over a tree with groups: half-way from
/// `old` to Eq. 4's `eq4`. A group's own Eq. 4 answers a shortfall of
/// its children first (their unused share goes to their siblings), and
/// the component's Eq. 4 answers the same shortfall again; both at full
/// gain over rates smoothed across periods, the two loops overshoot
/// together (tenants A (a1, a2) and B (b1) of one component, one thread
/// each, carried 1.10-1.12 of its capacity under the emulator where
/// three channels with the same shares in one level carry 1.03-1.04;
/// with half the gain at the top, 1.05-1.08). The inner loop is the
/// fast one, as in any cascade.
pub fn damped(old: u64, eq4: u64) -> u64 {
    (old / 2).saturating_add(eq4 / 2).max(1)
}

/// Eq. 4 downward from the component's share `root_alpha`: each inner
/// node divides its grant among its children. No node's share exceeds
/// its parent's grant, and a group's alpha (per unit of its children's
/// weight) is at most its own grant: a group whose children leave their
/// shares unused raises its alpha (Eq. 4) up to the grant and no
/// further, where before it rose to its children's largest demand, each
/// child then allowed more than the whole group, and the next period's
/// traffic paid for the windup as an overshoot.
pub fn divide_down(nodes: &mut [Node], root_alpha: u64) {
    for i in 0..nodes.len() {
        let Some(&node) = nodes.get(i) else { continue };
        let (parent_alpha, parent_granted) = if node.parent == ROOT {
            (root_alpha, u64::MAX)
        } else {
            nodes
                .get(usize::from(node.parent))
                .map_or((root_alpha, u64::MAX), |p| (p.alpha, p.granted))
        };
        let weight = u64::from(node.weight.max(1));
        let above = parent_alpha.min(parent_granted.checked_div(weight).unwrap_or(0));
        let granted = above.saturating_mul(weight).min(node.demand);
        let alpha = if node.inner {
            let f = eq4_rate(node.rate, node.counted, granted);
            fair_share(node.alpha, granted, f, node.child_cap).min(granted.max(1))
        } else {
            above
        };
        if let Some(n) = nodes.get_mut(i) {
            n.granted = granted;
            n.alpha = alpha;
        }
    }
}

/// What a leaf may use: its weight times its alpha, as a fraction of its
/// demand (the run fraction `T_R / T_W` before clamping).
pub fn leaf_fraction(node: &Node) -> Q32 {
    if node.demand == 0 {
        return Q32::ONE;
    }
    let share = node
        .alpha
        .saturating_mul(u64::from(node.weight))
        .min(node.demand);
    Q32::ratio(share, node.demand)
}
