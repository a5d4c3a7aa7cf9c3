//! Rate and demand of one channel (Eq. 3).
//!
//! Each window the meter reports the bytes a thread moved and the time it
//! ran. The raw rate is `bytes / T_W` (what the channel used of the
//! fabric) and the raw demand `bytes / T_R` (what it would use unthrottled:
//! it runs at full speed while it runs). Both are smoothed with the weight
//! `e^(-T_W / K)` of the previous value.

use super::fixed::{exp_neg, mul_div, Q32};

const NS_PER_S: u64 = 1_000_000_000;

/// One window's measurement of one thread (or a channel's sum of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Bytes moved over the memory path in the window.
    pub bytes: u64,
    /// On-CPU time in the window.
    pub run_ns: u64,
    /// Length of the window (wall time).
    pub window_ns: u64,
}

impl Sample {
    /// Bytes per second over the window; zero for an empty window.
    pub fn rate(&self) -> u64 {
        mul_div(self.bytes, NS_PER_S, self.window_ns)
    }

    /// Bytes per second while running; `None` if it did not run (no
    /// evidence of its demand either way).
    pub fn demand(&self) -> Option<u64> {
        (self.run_ns > 0).then(|| mul_div(self.bytes, NS_PER_S, self.run_ns))
    }
}

/// Exponentially smoothed value (Eq. 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ewma {
    value: u64,
    primed: bool,
}

impl Ewma {
    /// `new = (1 - keep) * sample + keep * old`. The first sample is taken
    /// as is: a channel starts from what it measures, not from zero.
    pub fn update(&mut self, sample: u64, keep: Q32) -> u64 {
        self.value = if self.primed {
            let keep = keep.min(Q32::ONE);
            keep.complement()
                .mul_u64(sample)
                .saturating_add(keep.mul_u64(self.value))
        } else {
            sample
        };
        self.primed = true;
        self.value
    }

    /// The smoothed value (zero before the first sample).
    pub fn get(&self) -> u64 {
        self.value
    }
}

/// A channel's smoothed rate and demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Estimator {
    /// The rate, bytes per second of the window.
    pub rate: Ewma,
    /// The demand, bytes per second of running; a window in which the
    /// channel did not run leaves it as it was.
    pub demand: Ewma,
}

impl Estimator {
    /// Folds in one window. `k_ns` is the sampling period K.
    pub fn update(&mut self, sample: &Sample, k_ns: u64) {
        let keep = exp_neg(sample.window_ns, k_ns);
        self.rate.update(sample.rate(), keep);
        if let Some(demand) = sample.demand() {
            self.demand.update(demand, keep);
        }
    }

    /// The smoothed rate, bytes per second.
    pub fn rate(&self) -> u64 {
        self.rate.get()
    }

    /// The smoothed demand, bytes per second.
    pub fn demand(&self) -> u64 {
        self.demand.get()
    }
}
