//! One fabric component (host port, switch, endpoint device): its capacity
//! C, aggregate rate F, load factor l and fair share alpha (Eq. 4, Eq. 6
//! and Algorithm 1 lines 10-26, errata fixed).

use super::fixed::{mul_div, Q32};
use super::shared::Remote;
use super::tree::{self, Node};

/// The capacity never drops below `max_capacity >> MIN_CAPACITY_SHIFT`
/// (about 0.1 %), so that repeated decreases cannot reach zero and stall
/// every channel on the path for good.
pub const MIN_CAPACITY_SHIFT: u32 = 10;

/// Per-component constants. The paper gives none of K, g, delta, lambda;
/// `Params::default_for` documents ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Configured maximum capacity, bytes per second (> 0).
    pub max_capacity: u64,
    /// Sampling period K, nanoseconds (> 0).
    pub k_ns: u64,
    /// Gain g of the load factor average (Eq. 6), at most one.
    pub g: Q32,
    /// Load threshold delta between additive increase and multiplicative
    /// decrease, below one.
    pub delta: Q32,
    /// Additive increase lambda, in bytes per second per second: each
    /// period below the threshold adds `lambda * (delta - l) * K`.
    pub lambda: u64,
}

/// Why a parameter set was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamError {
    /// `max_capacity` is zero.
    Capacity,
    /// `k_ns` is zero.
    Period,
    /// `g` is above one.
    Gain,
    /// `delta` is one or above.
    Threshold,
}

impl Params {
    /// Defaults for a component of `max_capacity` bytes per second: K = 10
    /// ms (100 windows of 100 us: Eq. 3 then keeps 99 % of the old value per
    /// window), g = 1/2, delta = 0.1, and lambda such that a component with
    /// no load regains its full capacity from the minimum in about one
    /// second.
    ///
    /// g is not DCTCP's 1/16: the signal is already a whole period's
    /// average. With 1/16 the load factor outlived an overload by about 35
    /// periods, and the cuts Algorithm 1 made all that time compounded
    /// until the component carried a tenth of what it could (found with
    /// `tools/cxlsim`; `tests/congestion.rs` checks it no longer does).
    pub fn default_for(max_capacity: u64) -> Params {
        Params {
            max_capacity,
            k_ns: 10_000_000,
            g: Q32::from_ppm(500_000),
            delta: Q32::from_ppm(100_000),
            lambda: mul_div(max_capacity, 10, 1),
        }
    }

    /// Whether the set is usable: a capacity and a period above zero, g
    /// at most one and delta below one.
    pub fn check(&self) -> Result<(), ParamError> {
        if self.max_capacity == 0 {
            return Err(ParamError::Capacity);
        }
        if self.k_ns == 0 {
            return Err(ParamError::Period);
        }
        if self.g > Q32::ONE {
            return Err(ParamError::Gain);
        }
        if self.delta >= Q32::ONE {
            return Err(ParamError::Threshold);
        }
        Ok(())
    }
}

/// Eq. 4: `alpha_new = min(alpha_old * C / F, cap)`, where `cap` is the
/// largest per-weight demand of the flows through the node. With no
/// traffic (F = 0) nothing is congested: alpha is the cap, or C when no
/// demand is known yet. Never zero (a multiplicative update could not
/// leave zero again).
pub fn fair_share(alpha_old: u64, capacity: u64, f: u64, cap: u64) -> u64 {
    let alpha = if f == 0 {
        if cap == 0 {
            capacity
        } else {
            cap
        }
    } else {
        let scaled = mul_div(alpha_old.max(1), capacity, f);
        if cap == 0 {
            scaled
        } else {
            scaled.min(cap)
        }
    };
    alpha.max(1)
}

/// One component's state: its capacity estimate C, aggregate rate F,
/// fair share alpha and load factor l, under its parameters.
///
/// # Invariants
/// `params.check()` holds; `capacity` is within
/// `[params.max_capacity >> MIN_CAPACITY_SHIFT, params.max_capacity]`;
/// `load` and `signal` are at most one; `alpha` is at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    params: Params,
    capacity: u64,
    rate: u64,
    alpha: u64,
    load: Q32,
    /// The last period's signal L, before smoothing.
    signal: Q32,
}

impl Component {
    /// A component at its full capacity (`max_capacity`, which is also its
    /// first alpha) with no load; refuses what [`Params::check`] refuses.
    pub fn new(params: Params) -> Result<Component, ParamError> {
        params.check()?;
        // INVARIANT: checked parameters; full capacity; no load.
        Ok(Component {
            params,
            capacity: params.max_capacity,
            rate: 0,
            alpha: params.max_capacity,
            load: Q32::ZERO,
            signal: Q32::ZERO,
        })
    }

    /// Its parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// C: the current capacity estimate.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// F: the aggregate rate last reported.
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// alpha: the fair share per unit of weight.
    pub fn alpha(&self) -> u64 {
        self.alpha
    }

    /// l: the load factor.
    pub fn load(&self) -> Q32 {
        self.load
    }

    fn min_capacity(&self) -> u64 {
        (self.params.max_capacity >> MIN_CAPACITY_SHIFT).max(1)
    }

    /// End of a sampling period: the aggregate rate `f` of every flow
    /// through the component (all hosts) and the largest per-weight demand
    /// `cap` among them (Algorithm 1 line 18, Eq. 4).
    pub fn update_share(&mut self, f: u64, cap: u64) -> u64 {
        self.rate = f;
        // INVARIANT: `fair_share` never returns zero.
        self.alpha = fair_share(self.alpha, self.capacity, f, cap);
        self.alpha
    }

    /// End of a sampling period with a hierarchy (HCSFQ, `tree.rs`): the
    /// flows through the component are the leaves of `nodes`, a tree that
    /// `tree::check` accepted. Eq. 4 runs at the component on the top-level
    /// nodes' rates and demands, then down the tree. A flat tree (every
    /// node a child of the component) is `update_share`.
    pub fn update_tree(&mut self, nodes: &mut [Node]) -> u64 {
        self.update_shared(nodes, Remote::default());
        self.alpha
    }

    /// `update_tree` for a component other hosts use too (`shared.rs`):
    /// their rates add to F and their demands to the cap, and a peer that
    /// owns the component sets alpha for everyone. Returns this host's own
    /// aggregate rate and largest per-weight demand, for its slot.
    ///
    /// Eq. 4 divides by the rate it counts (`tree::counted_rate`: a leaf
    /// this component's queue holds back counts at its share while the
    /// component is congested; `tree::eq4_rate`: while F <= C), F
    /// (`rate`, and Algorithm 1's `F <= C`) is the rate measured. The slot
    /// carries the counted rate: every host's Eq. 4 counts the same.
    /// With groups, the component's alpha moves half-way
    /// (`tree::damped`).
    pub fn update_shared(&mut self, nodes: &mut [Node], remote: Remote) -> (u64, u64) {
        let sums = tree::sum_up(nodes, self.signal > Q32::ZERO);
        self.rate = sums.rate.saturating_add(remote.rate);
        let counted = tree::eq4_rate(
            self.rate,
            sums.counted.saturating_add(remote.rate),
            self.capacity,
        );
        // INVARIANT: `fair_share` never returns zero; neither does `max(1)`.
        self.alpha = match remote.owner_alpha {
            Some(a) => a.max(1),
            None => {
                let a = fair_share(self.alpha, self.capacity, counted, sums.cap.max(remote.cap));
                if sums.grouped {
                    tree::damped(self.alpha, a)
                } else {
                    a
                }
            }
        };
        tree::divide_down(nodes, self.alpha);
        (sums.counted, sums.cap)
    }

    /// Eq. 6: `l = (1 - g) l + g L` for the congestion signal `L` (the
    /// share of overloaded responses, or backpressure), capped at one.
    pub fn update_load(&mut self, signal: Q32) {
        let g = self.params.g;
        let signal = signal.min(Q32::ONE);
        // INVARIANT: capped at one above.
        self.signal = signal;
        // INVARIANT: a convex combination of two values of at most one.
        self.load = Q32(g
            .complement()
            .mul_q(self.load)
            .0
            .saturating_add(g.mul_q(signal).0)
            .min(Q32::ONE.0));
    }

    /// Algorithm 1 lines 21-26, with line 26 as the text means it (`min`):
    /// multiplicative decrease by `(l - delta) / (2 (1 - delta))` when the
    /// component carries less than its capacity yet reports load above
    /// delta; additive increase by `lambda (delta - l) K` when the load is
    /// at most delta.
    ///
    /// One departure: a decrease also needs this period's own signal above
    /// delta. The smoothed load outlives the congestion that raised it, and
    /// cuts in the periods after it compounded (as DCTCP cuts only in a
    /// window that saw marks).
    pub fn adjust_capacity(&mut self) {
        let (delta, l) = (self.params.delta, self.load);
        let c = if self.rate <= self.capacity && l > delta && self.signal > delta {
            let over = Q32(l.0.saturating_sub(delta.0));
            let room = delta.complement();
            // (l - delta) / (2 (1 - delta)) is at most 1/2: l <= 1.
            let cut = Q32::ratio(over.0, room.0.saturating_mul(2));
            cut.min(Q32::ONE).complement().mul_u64(self.capacity)
        } else if l <= delta {
            let below = Q32(delta.0.saturating_sub(l.0));
            let per_k = mul_div(self.params.lambda, self.params.k_ns, 1_000_000_000);
            self.capacity.saturating_add(below.mul_u64(per_k))
        } else {
            self.capacity
        };
        // INVARIANT: clamped into the documented range.
        self.capacity = c.clamp(self.min_capacity(), self.params.max_capacity);
    }
}
