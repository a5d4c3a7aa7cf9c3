//! The run window of a thread (Eq. 5, with weights Eq. 7): of every T_W it
//! runs `T_R = min(w alpha, D) T_W / D`, so that it moves at most its fair
//! share `min(w alpha, D) T_W` bytes per window.
//!
//! A T_R too short to be worth running (below the caller's minimum run)
//! is not raised to the minimum, which would give the channel more than
//! its share (with many threads on one bottleneck, every channel would
//! get the floor, however many there are): the thread skips windows
//! instead, running at least the minimum in one of every `m`, so that
//! T_R / T_W stays its share, up to the caller's longest window. A park
//! too short to be worth it (T_W - T_R below the minimum run: the thread
//! runs 90 % of 100 us) is the mirror case: windows of `m T_W`, parked at
//! least the minimum run, at the same share.

use super::fixed::{div_u128, mul_div};

/// Largest channel weight (weights are integers from 1).
pub const WEIGHT_MAX: u32 = 10_000;

/// A thread's run starts `1 / 2^RUN_LEAD_SHIFT` of its length before its
/// place ([`RunWindow::run_phase`]).
pub const RUN_LEAD_SHIFT: u32 = 3;

/// The most channels on a bottleneck whose runs lead their places
/// ([`RunWindow::run_phase`]): at more, T_W / 16 or less apart, the lead
/// only moves windows.
pub const LEAD_MAX_CHANNELS: u64 = 16;

/// The minimum run callers use unless they pick another: 1 % of T_W (at
/// least 1 ns).
pub fn default_min_run_ns(t_w_ns: u64) -> u64 {
    (t_w_ns / 100).max(1)
}

/// A park may cost a thread at most 1 / `PARK_COST_RUNS` of the run
/// around it (`amortized_min_run`).
pub const PARK_COST_RUNS: u64 = 8;

/// The least run (and park) a window gives when parking a thread costs it
/// `park_cost_ns` of its CPU and the least run is `current_ns` now (0:
/// none yet): `PARK_COST_RUNS` times the cost, rounded down to a power of
/// two microseconds, at most `max_ns`. It goes up as soon as that power
/// does, and down only when it falls to a quarter of the current value or
/// less, so that a cost near a power of two does not switch window
/// lengths (and with them the threads' grids) back and forth.
///
/// Where a park costs a few microseconds (hardware) this stays below the
/// usual minimum run (50 us) and changes nothing; under full emulation a
/// park costs a hundred microseconds and more, and windows of T_W = 100 us
/// would have parks take half of a thread's CPU.
pub fn amortized_min_run(park_cost_ns: u64, current_ns: u64, max_ns: u64) -> u64 {
    let want_us = park_cost_ns.saturating_mul(PARK_COST_RUNS) / 1_000;
    let new = match 63u32.checked_sub(want_us.leading_zeros()) {
        Some(bits) => (1u64 << bits).saturating_mul(1_000).min(max_ns),
        None => 0,
    };
    if new > current_ns || new.saturating_mul(4) <= current_ns {
        new
    } else {
        current_ns
    }
}

/// The share of a channel on its path: the least alpha of the components
/// it crosses (Algorithm 1 lines 5-7, with the erratum fixed: the minimum
/// starts from "unlimited" at every update, not from the last value). No
/// component means no limit.
pub fn path_share(alphas: impl IntoIterator<Item = u64>) -> u64 {
    alphas.into_iter().fold(u64::MAX, u64::min)
}

/// What each thread of a channel may run: `t_r_ns` of every window of
/// `t_w_ns` (`t_r_ns <= t_w_ns`; equal means unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// T_R: on-CPU time allowed per window, ns.
    pub t_r_ns: u64,
    /// T_W: the window's length (wall time), ns.
    pub t_w_ns: u64,
}

/// Per-channel window settings.
///
/// # Invariants
/// `0 < t_w_ns`, `0 < min_run_ns <= max_window_ns`, and `max_window_ns`
/// is a whole number of T_W.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunWindow {
    t_w_ns: u64,
    min_run_ns: u64,
    max_window_ns: u64,
}

impl RunWindow {
    /// `t_w_ns` is T_W. `min_run_ns` is the least a thread runs in a
    /// window when it runs less than the whole window: enough to reach its
    /// exit and signal paths, and to amortize parking it (tens of
    /// microseconds under emulation); it may exceed T_W. `max_window_ns`,
    /// rounded down to whole T_W, bounds the windows a thread skips (a
    /// budget changes only when a window ends: the kernel uses its control
    /// period K): below a share of `min_run_ns / max_window_ns` a thread
    /// gets that share. `None` unless `0 < t_w_ns` and `0 < min_run_ns <=
    /// max_window_ns` after rounding.
    pub fn new(t_w_ns: u64, min_run_ns: u64, max_window_ns: u64) -> Option<RunWindow> {
        let whole = max_window_ns.checked_div(t_w_ns)?.saturating_mul(t_w_ns);
        let ok = min_run_ns > 0 && min_run_ns <= whole && t_w_ns <= whole;
        // INVARIANT: checked here; `whole` is a multiple of T_W.
        ok.then_some(RunWindow {
            t_w_ns,
            min_run_ns,
            max_window_ns: whole,
        })
    }

    /// T_W, ns.
    pub fn t_w_ns(&self) -> u64 {
        self.t_w_ns
    }

    /// The minimum run, ns.
    pub fn min_run_ns(&self) -> u64 {
        self.min_run_ns
    }

    /// The longest window, ns: a whole number of T_W.
    pub fn max_window_ns(&self) -> u64 {
        self.max_window_ns
    }

    /// The same windows with a minimum run of at least `min_run_ns`
    /// (unchanged if that exceeds the longest window).
    pub fn with_min_run(self, min_run_ns: u64) -> RunWindow {
        if min_run_ns <= self.min_run_ns {
            return self;
        }
        RunWindow::new(self.t_w_ns, min_run_ns, self.max_window_ns).unwrap_or(self)
    }

    /// The budget of a channel of weight `weight` with fair share `alpha`
    /// and demand `demand` (bytes per second): T_R of Eq. 7 in windows of
    /// T_W when T_R is at least the minimum run (or the whole window);
    /// otherwise the thread runs in one window of every `m`: a window of
    /// `m T_W`, the least that holds the minimum run at the share
    /// `min(w alpha, D) / D` (at most the longest window), and T_R its
    /// share of it, rounded down (never more than the share, at most twice
    /// the minimum run). Likewise when the park `T_W - T_R` is below the
    /// minimum run: the least window of `m T_W` whose park is at least the
    /// minimum (at most the longest window), T_R its share of it. Whole
    /// windows: the length changes only when `m` does, not with every new
    /// demand (a new length moves a thread's windows onto a new grid:
    /// `thread::RunState`).
    pub fn budget(&self, weight: u32, alpha: u64, demand: u64) -> Budget {
        let exact = exact_run_ns(self.t_w_ns, weight, alpha, demand);
        if exact >= self.t_w_ns {
            return Budget {
                t_r_ns: self.t_w_ns,
                t_w_ns: self.t_w_ns,
            };
        }
        // From the share itself, not from the rounded `exact`: a T_R of a
        // few nanoseconds would be off by tens of percent. Below T_W, the
        // share is below the demand (and the demand is not zero).
        let share = alpha.saturating_mul(u64::from(weight)).min(demand);
        if exact < self.min_run_ns {
            // Too short a run: one window of `m`, holding the minimum run.
            let needed = if share == 0 {
                u64::MAX
            } else {
                mul_div_ceil(self.min_run_ns, demand, share)
            };
            let t_w_ns = self.whole_windows(needed);
            return Budget {
                // Below the least share (the longest window), the minimum run.
                t_r_ns: mul_div(share, t_w_ns, demand).max(self.min_run_ns),
                t_w_ns,
            };
        }
        if self.t_w_ns.saturating_sub(exact) < self.min_run_ns {
            // Too short a park (parking costs the same however short it
            // is): windows of `m T_W` whose park is at least the minimum
            // run, at the same share.
            let gap = demand.saturating_sub(share);
            let t_w_ns = self.whole_windows(mul_div_ceil(self.min_run_ns, demand, gap));
            return Budget {
                t_r_ns: mul_div(share, t_w_ns, demand),
                t_w_ns,
            };
        }
        Budget {
            t_r_ns: exact,
            t_w_ns: self.t_w_ns,
        }
    }

    /// Where the windows of a thread with budget `budget` start, given its
    /// place `phase` (a fraction of 2^32 of the window, as
    /// [`stagger_phase`] gives) among `channels` on its bottleneck:
    /// `1 / 2^RUN_LEAD_SHIFT` of its run before the place while it runs
    /// part of every T_W, so that its run starts shortly before the place
    /// rather than at it. At the place itself when it runs the whole
    /// window or skips windows (`budget.t_w_ns` other than T_W: its run is
    /// short against the spacing, and a lead would only move its windows
    /// with every new budget), and with more than [`LEAD_MAX_CHANNELS`]
    /// channels.
    ///
    /// Why: the places are the same for every budget, so with runs
    /// starting at them the channels' runs overlap by their lengths' whole
    /// difference at one end of each run. With three channels of four
    /// threads (T_R 24, 25 and 17 us of 100) that overlap is the same in
    /// every window, and the link's marks reached delta at 95.5 % of it;
    /// leading each run by an eighth of its length moves the channels
    /// against each other by an eighth of their runs' differences: 96.4 %.
    /// A quarter gave 97.4 % and centering the runs (a half) 97.7 %, but
    /// both cost other sizes up to a point. With many channels the starts
    /// are closer than the lead, which then only moves windows with every
    /// budget: 1024 channels of one thread pass through every T_R in
    /// their first periods, and any lead there (even 1 / 1024 of the run)
    /// changed which of their chaotic courses they took (`Documentation/
    /// cxlfabric/cxlsim.rst`, "3 x 4"). The budget changes every control
    /// period, so the windows move by a little with it
    /// (`RunState::set_phase`).
    pub fn run_phase(&self, phase: u32, channels: u64, budget: Budget) -> u32 {
        let whole = budget.t_r_ns >= budget.t_w_ns;
        if whole || budget.t_w_ns != self.t_w_ns || channels > LEAD_MAX_CHANNELS {
            return phase;
        }
        // T_R < T_W: below 2^(32 - RUN_LEAD_SHIFT), it fits.
        let lead = mul_div(budget.t_r_ns, 1 << (32 - RUN_LEAD_SHIFT), budget.t_w_ns);
        phase.wrapping_sub(u32::try_from(lead).unwrap_or(0))
    }

    /// The least whole number of T_W at least `ns` long, at most the
    /// longest window.
    fn whole_windows(&self, ns: u64) -> u64 {
        ns.div_ceil(self.t_w_ns)
            .saturating_mul(self.t_w_ns)
            .clamp(self.t_w_ns, self.max_window_ns)
    }
}

/// Where the run windows of thread `rank` of channel `channel` of
/// `channels` start, as a fraction (of 2^32) of the window's length:
/// `channel / n + rank s_n`, modulo 1, with `n = channels` (no channels
/// count as one; `channel` is taken modulo `n`) and the step
/// `s_n = (floor(n / phi^2) + 1 / phi) / n` (phi the golden ratio): for
/// one channel `s_1 = 1 / phi`, the golden-ratio sequence `frac(rank phi)`.
///
/// Each thread runs at the start of its window, so the threads that share
/// a bottleneck should not start their windows together. The channels
/// that share it are spaced evenly, by `T_W / n`, which overlaps their
/// runs the least (pacing); a channel's threads, which get the same
/// budget and come and go, step by `s_n`. Modulo a slot of `T_W / n` the
/// channels coincide, so how all threads interleave is set by
/// `frac(n s_n)`, the step within a slot: `s_n` makes it `1 / phi`, so
/// every slot holds one thread of each rank, at the golden-ratio
/// sequence's places in the slot, which spaces any number of ranks
/// without knowing it, for any `n`. With the golden ratio itself as the
/// step (`s_n = 1 / phi` for every `n`) the step within a slot is
/// `frac(n phi)`, near 0 or 1 when `n` is a Fibonacci number (3, 5, 8,
/// 13: `n phi` is near an integer), and every channel's threads landed
/// within a few percent of the window of its start and of each other
/// channel's: runs that coincide, a queue the marks answer, and a link
/// idle between the groups (3 channels of 5 threads at 91.7 % of the
/// link, 5 of 5 at 76 %, 8 of 5 at 67.5 %). Of the steps with that
/// property the one near `1 / phi^2` (within `1 / n`) keeps a channel's
/// own threads spread over the window as the golden-ratio sequence does
/// (channels whose windows differ in length do not interleave by slots);
/// it is also the step nearest `1 / phi` (mirrored) for one channel.
/// Phases from attach times, or the golden-ratio sequence over all
/// threads, overlap the same way in every window: four single-thread
/// channels on one link at 0, 0.24, 0.62, 0.85 all run for 11 us of every
/// 100 (a queue the link's marks answer) and leave one running for 18
/// (94.8 % of the link, against 99.6 % spaced evenly). Spacing every
/// thread evenly instead (the channels' threads interleaved) packs a
/// lone channel's threads so tightly that it runs below its capacity
/// estimate, which a later join then cuts (the link at 48-85 % for 20
/// periods after it). `Documentation/cxlfabric/cxlsim.rst`, "Many
/// threads on one link".
///
/// The phase does not depend on the budget: a new T_R does not move the
/// place; a channel joining or leaving moves the others'. Where a run
/// starts relative to its place is [`RunWindow::run_phase`]'s.
pub fn stagger_phase(channel: u64, channels: u64, rank: u64) -> u32 {
    let n = channels.max(1);
    // rank / phi = whole + frac (frac in 64 bits): golden-ratio hashing.
    let golden = u128::from(rank).saturating_mul(u128::from(GOLDEN_64));
    // Truncations intended: the two halves of the product.
    let (whole, frac) = ((golden >> 64) as u64, golden as u64);
    // floor(n / phi^2) < n, with 1 / phi^2 = 1 - 1 / phi.
    let k = (u128::from(n).saturating_mul(u128::from(GOLDEN_64.wrapping_neg())) >> 64) as u64;
    // rank s_n = (rank k + whole + frac) / n: only the whole part modulo
    // n matters.
    let slot = mul_mod(rank, k, n)
        .saturating_add(whole.checked_rem(n).unwrap_or(0))
        .checked_rem(n)
        .unwrap_or(0);
    // (slot + frac) / n < 1, in 32 bits (the quotient fits 64 bits).
    let within = div_u128((u128::from(slot) << 64) | u128::from(frac), n);
    let spread = (within >> 32) as u32;
    // < 2^32: `channel % n < n`.
    let at = channel.checked_rem(n).unwrap_or(0);
    let base = u32::try_from(mul_div(at, 1 << 32, n)).unwrap_or(u32::MAX);
    base.wrapping_add(spread)
}

/// `a b mod n` (zero when `n` is zero), without 128-bit division.
fn mul_mod(a: u64, b: u64, n: u64) -> u64 {
    let p = u128::from(a).saturating_mul(u128::from(b));
    let q = div_u128(p, n).saturating_mul(u128::from(n));
    // `q <= p`: the remainder is below `n`.
    p.saturating_sub(q) as u64
}

/// The component a channel's windows are staggered on, given the
/// configured capacities of the components on its path in path order: the
/// index of the least (the first of equal ones; `None` for an empty path).
///
/// The configured capacity, not the measured share: a channel's place
/// must not move with every control period's alphas, only when channels
/// come and go.
pub fn bottleneck(capacities: impl IntoIterator<Item = u64>) -> Option<usize> {
    let mut least: Option<(usize, u64)> = None;
    for (i, c) in capacities.into_iter().enumerate() {
        if least.map_or(true, |(_, l)| c < l) {
            least = Some((i, c));
        }
    }
    least.map(|(i, _)| i)
}

/// Where channel `i` is staggered, given each channel's key (its
/// bottleneck component while it has threads, else `None`): its place
/// among the channels with the same key, in order, and how many have it
/// (`stagger_phase`'s `channel` and `channels`). `(0, 1)` for a channel
/// without a key (or `i` out of range). Quadratic in the channels: for
/// when one joins or leaves, not for every period.
pub fn place(keys: &[Option<u32>], i: usize) -> (u64, u64) {
    let Some(&Some(key)) = keys.get(i) else {
        return (0, 1);
    };
    let same = |k: &&Option<u32>| **k == Some(key);
    let before = keys.iter().take(i).filter(same).count();
    let all = keys.iter().filter(same).count();
    (before as u64, all as u64)
}

/// 2^64 / phi, odd: `k * GOLDEN_64`, top 32 bits, is `frac(k / phi)`
/// (= `frac(k phi)`) in 32 bits.
const GOLDEN_64: u64 = 0x9E37_79B9_7F4A_7C15;

/// Eq. 7 as written, rounded down: with no measured demand the thread runs
/// the whole window (it has not been seen to use the fabric).
pub fn exact_run_ns(t_w_ns: u64, weight: u32, alpha: u64, demand: u64) -> u64 {
    if demand == 0 {
        return t_w_ns;
    }
    let share = alpha.saturating_mul(u64::from(weight)).min(demand);
    mul_div(share, t_w_ns, demand)
}

/// `value * num / den` rounded up, saturating; zero when `den` is zero.
fn mul_div_ceil(value: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        return 0;
    }
    let p = u128::from(value).saturating_mul(u128::from(num));
    let q = div_u128(p, den);
    // The product is exact in 128 bits; `q * den` does not exceed it.
    let q = if q.saturating_mul(u128::from(den)) < p {
        q.saturating_add(1)
    } else {
        q
    };
    u64::try_from(q).unwrap_or(u64::MAX)
}
