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

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;

    #[test]
    fn the_window_is_the_share_over_the_demand() {
        assert_eq!(exact_run_ns(100_000, 1, 5 * GB, 10 * GB), 50_000);
        assert_eq!(exact_run_ns(100_000, 2, 5 * GB, 10 * GB), 100_000);
        assert_eq!(exact_run_ns(100_000, 1, 20 * GB, 10 * GB), 100_000);
        assert_eq!(exact_run_ns(100_000, 1, 0, 10 * GB), 0);
        assert_eq!(exact_run_ns(100_000, 1, 1, 0), 100_000);
        assert_eq!(
            exact_run_ns(u64::MAX, WEIGHT_MAX, u64::MAX, u64::MAX),
            u64::MAX
        );
    }

    #[test]
    fn windows_are_clamped_and_checked() {
        assert_eq!(RunWindow::new(100_000, 0), None);
        assert_eq!(RunWindow::new(100_000, 100_001), None);
        let w = RunWindow::new(100_000, 2_000).unwrap();
        assert_eq!(w.run_ns(1, 0, 10 * GB), 2_000);
        assert_eq!(w.run_ns(1, u64::MAX, 10 * GB), 100_000);
    }

    #[test]
    fn the_path_share_is_the_least_alpha() {
        assert_eq!(path_share([7, 3, 9]), 3);
        assert_eq!(path_share([]), u64::MAX);
    }
}
