//! The run window of a thread (Eq. 5, with weights Eq. 7): of every T_W it
//! runs `T_R = min(w alpha, D) T_W / D`, so that it moves at most its fair
//! share `min(w alpha, D) T_W` bytes per window.

use super::fixed::mul_div;

/// Largest channel weight (weights are integers from 1).
pub const WEIGHT_MAX: u32 = 10_000;

/// The share of a channel on its path: the least alpha of the components
/// it crosses (Algorithm 1 lines 5-7, with the erratum fixed: the minimum
/// starts from "unlimited" at every update, not from the last value). No
/// component means no limit.
pub fn path_share(alphas: impl IntoIterator<Item = u64>) -> u64 {
    alphas.into_iter().fold(u64::MAX, u64::min)
}

/// Per-channel window settings.
///
/// # Invariants
/// `0 < min_run_ns <= t_w_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunWindow {
    t_w_ns: u64,
    min_run_ns: u64,
}

impl RunWindow {
    /// `t_w_ns` is T_W; `min_run_ns` is the least a thread runs per window
    /// however small its share (it must still reach its exit and signal
    /// paths). `None` unless `0 < min_run_ns <= t_w_ns`.
    pub fn new(t_w_ns: u64, min_run_ns: u64) -> Option<RunWindow> {
        // INVARIANT: checked here.
        (min_run_ns > 0 && min_run_ns <= t_w_ns).then_some(RunWindow { t_w_ns, min_run_ns })
    }

    pub fn t_w_ns(&self) -> u64 {
        self.t_w_ns
    }

    pub fn min_run_ns(&self) -> u64 {
        self.min_run_ns
    }

    /// T_R for a channel of weight `weight` with fair share `alpha` and
    /// demand `demand` (bytes per second), within `[min_run, T_W]`.
    pub fn run_ns(&self, weight: u32, alpha: u64, demand: u64) -> u64 {
        exact_run_ns(self.t_w_ns, weight, alpha, demand).clamp(self.min_run_ns, self.t_w_ns)
    }
}

/// Eq. 7 as written, rounded down: with no measured demand the thread runs
/// the whole window (it has not been seen to use the fabric).
pub fn exact_run_ns(t_w_ns: u64, weight: u32, alpha: u64, demand: u64) -> u64 {
    if demand == 0 {
        return t_w_ns;
    }
    let share = alpha.saturating_mul(u64::from(weight)).min(demand);
    mul_div(share, t_w_ns, demand)
}
