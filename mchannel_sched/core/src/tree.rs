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

/// One sampling period over a checked tree (`check` returned `Ok`): sums
/// demand and rate upward, then applies Eq. 4 downward from the component
/// with capacity `capacity` and share `alpha` (the component's own, kept
/// by the caller). Returns the component's new alpha.
pub fn update(nodes: &mut [Node], capacity: u64, alpha: u64) -> u64 {
    let (top_rate, top_cap) = sum_up(nodes);
    let root_alpha = fair_share(alpha, capacity, top_rate, top_cap);
    divide_down(nodes, root_alpha);
    root_alpha
}

/// Sums demand and rate upward; returns the top level's aggregate rate
/// and largest per-weight demand (what Eq. 4 at the component needs).
pub fn sum_up(nodes: &mut [Node]) -> (u64, u64) {
    // Children come after parents, so a reverse pass has every child
    // added before its parent is added to the grandparent.
    for node in nodes.iter_mut().filter(|n| n.inner) {
        node.demand = 0;
        node.rate = 0;
        node.child_cap = 0;
    }
    let (mut top_rate, mut top_cap) = (0u64, 0u64);
    for i in (0..nodes.len()).rev() {
        let Some(&node) = nodes.get(i) else { continue };
        let cap = per_weight(node.demand, node.weight);
        if node.parent == ROOT {
            top_rate = top_rate.saturating_add(node.rate);
            top_cap = top_cap.max(cap);
        } else if let Some(p) = nodes.get_mut(usize::from(node.parent)) {
            p.demand = p.demand.saturating_add(node.demand);
            p.rate = p.rate.saturating_add(node.rate);
            p.child_cap = p.child_cap.max(cap);
        }
    }
    (top_rate, top_cap)
}

/// Eq. 4 downward from the component's share `root_alpha`: each inner
/// node divides its grant among its children.
pub fn divide_down(nodes: &mut [Node], root_alpha: u64) {
    for i in 0..nodes.len() {
        let Some(&node) = nodes.get(i) else { continue };
        let parent_alpha = if node.parent == ROOT {
            root_alpha
        } else {
            nodes
                .get(usize::from(node.parent))
                .map_or(root_alpha, |p| p.alpha)
        };
        let granted = parent_alpha
            .saturating_mul(u64::from(node.weight))
            .min(node.demand);
        let alpha = if node.inner {
            fair_share(node.alpha, granted, node.rate, node.child_cap)
        } else {
            parent_alpha
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
