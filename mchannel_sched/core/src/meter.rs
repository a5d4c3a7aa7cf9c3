//! Rate measurement, behind one interface: what a thread's bytes in a
//! control period are, from what its meter counted.
//!
//! - Emulated: the channel declares bytes per microsecond of running; the
//!   bytes are that times the thread's run time (deterministic, for
//!   testbeds with no usable PMU such as TCG).
//! - Perf: a per-thread perf event counts (LLC misses, an offcore-response
//!   raw event for remote memory, ...), each worth a declared number of
//!   bytes (64 for a cache line).
//! - Reported: the workload reports the bytes it moved.
//!
//! Counted and reported bytes are not trusted: a thread cannot have moved
//! more than its path's slowest component carries while it ran, so they
//! are capped at that. (A raw event that counts more than memory traffic,
//! or a workload that over-reports, would otherwise inflate F and shrink
//! every other channel's share on the component.)

use super::fixed::mul_div;

const NS_PER_US: u64 = 1_000;
const NS_PER_S: u64 = 1_000_000_000;

/// A channel's meter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Meter {
    /// Not metered: its threads run unthrottled.
    #[default]
    None,
    /// Bytes per microsecond of running.
    Emulated {
        /// Bytes the channel declares it moves per microsecond of running.
        bytes_per_us: u64,
    },
    /// Bytes per counted event.
    Perf {
        /// Bytes each counted event stands for (64 for a cache line).
        bytes_per_event: u64,
    },
    /// Bytes as reported.
    Reported,
}

impl Meter {
    /// Whether its channel's threads are held to a run budget.
    pub fn metered(&self) -> bool {
        !matches!(self, Meter::None)
    }

    /// A thread's bytes in a period in which it ran `run_ns` and its meter
    /// counted `counted` (events, or reported bytes); `path_capacity` is
    /// the smallest configured capacity on its path, bytes per second.
    pub fn bytes(&self, run_ns: u64, counted: u64, path_capacity: u64) -> u64 {
        let most = mul_div(path_capacity, run_ns, NS_PER_S);
        match *self {
            Meter::None => 0,
            Meter::Emulated { bytes_per_us } => mul_div(bytes_per_us, run_ns, NS_PER_US),
            Meter::Perf { bytes_per_event } => counted.saturating_mul(bytes_per_event).min(most),
            Meter::Reported => counted.min(most),
        }
    }

    /// What of `counted` the cap in [`Meter::bytes`] held back, to count
    /// in the next period: counters are read and reports arrive after the
    /// running they count, often in a period the thread spent parked.
    /// At most one second of the path's capacity is carried (an
    /// over-reporting thread gains nothing from it: what it carries is
    /// still capped by its running).
    pub fn left(&self, run_ns: u64, counted: u64, path_capacity: u64) -> u64 {
        let most = mul_div(path_capacity, run_ns, NS_PER_S);
        match *self {
            Meter::None | Meter::Emulated { .. } => 0,
            Meter::Perf { bytes_per_event } => {
                let per = bytes_per_event.max(1);
                let used = counted.min(most.checked_div(per).unwrap_or(0));
                counted
                    .saturating_sub(used)
                    .min(path_capacity.checked_div(per).unwrap_or(0))
            }
            Meter::Reported => counted.saturating_sub(most).min(path_capacity),
        }
    }

    /// The bytes that count towards a thread's rate (F), of the `moved`
    /// bytes that [`Meter::bytes`] gave for its demand: for the emulated
    /// meter, the bytes of the time charged to its budgets
    /// (`thread::Closed::charged_ns`), so that a late timer's overrun
    /// counts in the windows that pay it back and F does not swing with
    /// the timer (Eq. 4's `C / F` would turn the swing into a bias:
    /// the mean of `C / F` exceeds `C` over the mean of F). Counted and
    /// reported bytes are what hardware and the workload saw, when they
    /// saw it.
    pub fn rate_bytes(&self, moved: u64, charged_ns: u64) -> u64 {
        match *self {
            Meter::Emulated { bytes_per_us } => mul_div(bytes_per_us, charged_ns, NS_PER_US),
            _ => moved,
        }
    }
}
