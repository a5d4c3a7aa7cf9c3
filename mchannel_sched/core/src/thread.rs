//! One attached thread's run window: the bookkeeping the scheduler hooks
//! drive (the thread comes on a CPU, leaves it, its budget timer fires, it
//! parks until its window ends), kept apart from the kernel so that it can
//! be tested on the host.
//!
//! A window lasts T_W of wall time and starts when the previous one ends,
//! or, after the thread slept through whole windows, when it next runs:
//! windows are per thread and not aligned. Within a window the thread may
//! be on a CPU for T_R in total (on-CPU time, not wall time); the budget of
//! a window is fixed when it starts. Each finished window yields a
//! [`Sample`] with its on-CPU time (the meter adds the bytes).
//!
//! A window of a new length (a channel whose threads now skip windows, or
//! stop skipping them) starts on the thread's own grid of that length, at
//! a fraction of it drawn from the attach time: threads given the same
//! longer windows by one control period would otherwise all start them
//! within one T_W of each other, and run in the same stretch of every
//! window. The first window of the new length runs on to the grid (more
//! than one length, so that it holds the present), with the budget in
//! proportion.
//!
//! Running past the budget (the budget timer fired late, or the thread ran
//! in the kernel) is debt: it is charged to the windows that follow, so
//! over many windows the thread runs T_R per T_W even when each window
//! overruns. Debt is capped at [`MAX_DEBT_NS`]; a window the thread sleeps
//! through pays T_R of it.

use super::estimator::Sample;
use super::fixed::mul_div;

/// The most on-CPU time carried as debt into later windows. Timer
/// lateness on hardware is microseconds; under full emulation (TCG) it
/// reaches milliseconds, and the debt must cover it for the long-run share
/// to hold. Paid at T_R per window, it parks a thread for at most
/// `MAX_DEBT_NS * T_W / T_R`: 2 s at 1 % of the window, 200 s at the least
/// share the kernel's windows give (1 us per 10 ms: `window::RunWindow`).
pub const MAX_DEBT_NS: u64 = 20_000_000;

/// What the windows closed since the last [`RunState::take_closed`] add
/// up to: the control loop folds it into the channel's estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Closed {
    /// Windows closed (including whole windows skipped).
    pub windows: u64,
    /// Their on-CPU time.
    pub run_ns: u64,
    /// Their budgets: what they allowed (`run_ns` above it is debt still
    /// owed, or forgiven at the cap).
    pub granted_ns: u64,
    /// Their wall time.
    pub window_ns: u64,
    /// The most any of them ran beyond its budget (the budget timer fires
    /// a little late, or the thread ran in the kernel past it).
    pub max_overrun_ns: u64,
    /// Their on-CPU time as charged to budgets: `run_ns` less the debt
    /// it leaves to later windows, plus the earlier debt these windows
    /// paid. A late timer's overrun counts in the windows that pay for it,
    /// not in the period it happened in (under TCG, timers run up to a
    /// millisecond late: periods of overrun and of payback alternate, and
    /// a rate measured from `run_ns` swings with them). Over any run of
    /// periods it adds up to `run_ns` less the debt still owed.
    pub charged_ns: u64,
}

impl Closed {
    /// As a meter sample (bytes are the meter's to add).
    pub fn sample(&self) -> Sample {
        Sample {
            bytes: 0,
            run_ns: self.run_ns,
            window_ns: self.window_ns,
        }
    }
}

/// What the hooks should do when the thread comes on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnCpu {
    /// Arm the budget timer to fire after this much running (the rest of
    /// the budget, or less if the window ends first).
    Budget(u64),
    /// Its whole window is its budget (T_R = T_W), and so is the next
    /// window's: no timer.
    Unlimited,
    /// The budget of this window is spent: park it until `until_ns`, when
    /// the windows it sleeps through have paid its debt down to less than
    /// one budget (if the budgets stay as they are).
    Park {
        /// When to wake it, on the clock of the hooks' `now_ns`.
        until_ns: u64,
    },
}

/// One attached thread's run window and debt, driven by the scheduler
/// hooks (see the module's documentation).
///
/// # Invariants
/// `t_r_ns <= t_w_ns`; `ran_ns` counts on-CPU time since `start_ns`
/// (excluding the slice in progress since `on_cpu_since`); `debt_ns <=
/// MAX_DEBT_NS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunState {
    start_ns: u64,
    t_w_ns: u64,
    t_r_ns: u64,
    ran_ns: u64,
    /// Earlier windows' overrun, charged to this one's budget.
    debt_ns: u64,
    on_cpu_since: Option<u64>,
    /// Budget and length of the next window (take effect when it starts).
    next_t_r_ns: u64,
    next_t_w_ns: u64,
    closed: Closed,
    /// The debt at the last `take_closed`.
    taken_debt_ns: u64,
    /// What the scheduler charged less than the switch times spanned, not
    /// yet set against slices it charged more (see [`RunState::reconcile`]).
    credit_ns: u64,
    /// Where windows of a new length start: at this fraction (of 2^32) of
    /// the length, past multiples of it.
    phase: u32,
    /// The next window moves onto the grid of `phase` even at the same
    /// length (set by [`RunState::set_phase`]).
    realign: bool,
}

impl RunState {
    /// A thread attached at `now_ns`, with window `t_w_ns` and budget
    /// `t_r_ns` (clamped to the window).
    pub fn new(now_ns: u64, t_w_ns: u64, t_r_ns: u64) -> RunState {
        let t_r_ns = t_r_ns.min(t_w_ns);
        // INVARIANT: clamped; nothing ran yet.
        RunState {
            start_ns: now_ns,
            t_w_ns,
            t_r_ns,
            ran_ns: 0,
            debt_ns: 0,
            on_cpu_since: None,
            next_t_r_ns: t_r_ns,
            next_t_w_ns: t_w_ns,
            closed: Closed::default(),
            taken_debt_ns: 0,
            credit_ns: 0,
            // Golden-ratio hashing: attaches microseconds apart land far
            // apart.
            phase: (now_ns.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32,
            realign: false,
        }
    }

    /// When the current window ends.
    pub fn window_end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.t_w_ns)
    }

    /// On-CPU time in the current window up to `now_ns`.
    pub fn ran_ns(&self, now_ns: u64) -> u64 {
        let slice = self
            .on_cpu_since
            .map_or(0, |since| now_ns.saturating_sub(since));
        self.ran_ns.saturating_add(slice)
    }

    /// The debt charged to the current window.
    pub fn debt_ns(&self) -> u64 {
        self.debt_ns
    }

    /// The budget of the current window.
    pub fn budget_ns(&self) -> u64 {
        self.t_r_ns
    }

    /// The length of the current window.
    pub fn t_w_ns(&self) -> u64 {
        self.t_w_ns
    }

    /// The budget and length the next window will have.
    pub fn next_ns(&self) -> (u64, u64) {
        (self.next_t_r_ns, self.next_t_w_ns)
    }

    /// Sets the budget of the windows that start from now on.
    pub fn set_budget(&mut self, t_r_ns: u64) {
        self.next_t_r_ns = t_r_ns.min(self.next_t_w_ns);
    }

    /// Sets the length of the windows that start from now on (a zero
    /// length is ignored); the next budget is clamped to it.
    pub fn set_window(&mut self, t_w_ns: u64) {
        if t_w_ns > 0 {
            self.next_t_w_ns = t_w_ns;
            self.next_t_r_ns = self.next_t_r_ns.min(t_w_ns);
        }
    }

    /// Sets where windows start: at `phase` (a fraction of 2^32, as
    /// `window::stagger_phase` gives) of their length past multiples of
    /// it. The next window that starts moves onto that grid (running on,
    /// with its budget in proportion, up to the grid's next start), and
    /// windows of a new length start on it. The same phase again changes
    /// nothing.
    pub fn set_phase(&mut self, phase: u32) {
        if phase != self.phase {
            self.phase = phase;
            self.realign = true;
        }
    }

    /// Closes every window that ended by `now_ns` into [`Closed`]. A slice
    /// in progress is split at the window's end. Every hook calls it; a
    /// parked thread calls it when it wakes. Returns whether one closed.
    pub fn roll(&mut self, now_ns: u64) -> bool {
        let end = self.window_end_ns();
        if now_ns < end || self.t_w_ns == 0 {
            return false;
        }
        let on_cpu = self.on_cpu_since.is_some();
        let mut ran = self.ran_ns;
        if let Some(since) = self.on_cpu_since {
            ran = ran.saturating_add(end.saturating_sub(since));
        }
        // Whole windows after it, of the next windows' length: on a CPU
        // throughout (a budget of the whole window) or idle.
        let next_w = self.next_t_w_ns;
        let skipped = now_ns.saturating_sub(end).checked_div(next_w).unwrap_or(0);
        let skipped_ns = skipped.saturating_mul(next_w);
        // What this window ran beyond its budget, and the skipped windows
        // beyond theirs (on a CPU) or what they paid back (asleep).
        let mut debt = self.debt_ns.saturating_add(ran).saturating_sub(self.t_r_ns);
        let per_skipped = next_w.saturating_sub(self.next_t_r_ns);
        debt = if on_cpu {
            debt.saturating_add(skipped.saturating_mul(per_skipped))
        } else {
            debt.saturating_sub(skipped.saturating_mul(self.next_t_r_ns))
        };
        let c = &mut self.closed;
        c.windows = c.windows.saturating_add(1).saturating_add(skipped);
        c.run_ns = c.run_ns.saturating_add(ran);
        c.granted_ns = c
            .granted_ns
            .saturating_add(self.t_r_ns)
            .saturating_add(skipped.saturating_mul(self.next_t_r_ns));
        c.max_overrun_ns = c.max_overrun_ns.max(ran.saturating_sub(self.t_r_ns));
        if on_cpu && skipped > 0 {
            c.run_ns = c.run_ns.saturating_add(skipped_ns);
            c.max_overrun_ns = c.max_overrun_ns.max(per_skipped);
        }
        c.window_ns = c
            .window_ns
            .saturating_add(self.t_w_ns)
            .saturating_add(skipped_ns);
        // Windows follow each other while the thread runs; after a sleep
        // through whole windows, the next starts now.
        let start = if on_cpu || skipped == 0 {
            end.saturating_add(skipped_ns)
        } else {
            now_ns
        };
        // A new length: on to this thread's grid of it (`phase`).
        let (mut t_w, mut t_r) = (self.next_t_w_ns, self.next_t_r_ns);
        if t_w != self.t_w_ns || self.realign {
            self.realign = false;
            let grid = (u128::from(self.phase).saturating_mul(u128::from(t_w)) >> 32) as u64;
            let into = start
                .checked_rem(t_w)
                .unwrap_or(0)
                .saturating_add(t_w)
                .saturating_sub(grid)
                .checked_rem(t_w)
                .unwrap_or(0);
            if into > 0 {
                // Past one length: `now` is within one of `start`.
                t_w = t_w.saturating_mul(2).saturating_sub(into);
                t_r = mul_div(t_r, t_w, self.next_t_w_ns);
            }
        }
        // INVARIANT: the new window's budget is clamped to its length by
        // `set_budget` and `set_window` (and kept in proportion when it
        // runs up to the grid); the slice in progress restarts at the
        // window's start; the debt is capped.
        self.start_ns = start;
        self.t_w_ns = t_w;
        self.t_r_ns = t_r;
        self.ran_ns = 0;
        // A thread whose whole window is its budget owes nothing.
        self.debt_ns = if self.t_r_ns >= self.t_w_ns {
            0
        } else {
            debt.min(MAX_DEBT_NS)
        };
        if on_cpu {
            self.on_cpu_since = Some(start);
        }
        true
    }

    /// Takes what the windows closed since the last call add up to.
    pub fn take_closed(&mut self) -> Closed {
        let mut c = core::mem::take(&mut self.closed);
        // Debt forgiven (at the cap, or by a whole-window budget) was run
        // all the same: it counts here.
        c.charged_ns = c
            .run_ns
            .saturating_add(self.taken_debt_ns)
            .saturating_sub(self.debt_ns);
        self.taken_debt_ns = self.debt_ns;
        c
    }

    /// The thread comes on a CPU at `now_ns`: closes the windows that
    /// ended while it was off; then [`RunState::check`] says what to do.
    pub fn switch_in(&mut self, now_ns: u64) {
        self.roll(now_ns);
        self.on_cpu_since = Some(now_ns);
    }

    /// What the budget says at `now_ns` while the thread is on a CPU: the
    /// hooks ask when it comes on a CPU and when its budget timer fires
    /// (a little early or late).
    pub fn check(&mut self, now_ns: u64) -> OnCpu {
        self.roll(now_ns);
        // No timer only while this window and the next are whole-window
        // budgets: a smaller next budget must start counting at the end.
        if self.t_r_ns >= self.t_w_ns && self.next_t_r_ns >= self.next_t_w_ns {
            return OnCpu::Unlimited;
        }
        let ran = self.ran_ns(now_ns).saturating_add(self.debt_ns);
        if ran >= self.t_r_ns {
            // Windows slept through pay the next budget each; what is
            // left of the debt after whole windows is charged to the
            // window it wakes in.
            let owed = ran.saturating_sub(self.t_r_ns).min(MAX_DEBT_NS);
            let windows = owed.checked_div(self.next_t_r_ns).unwrap_or(0);
            let until_ns = self
                .window_end_ns()
                .saturating_add(windows.saturating_mul(self.next_t_w_ns));
            OnCpu::Park { until_ns }
        } else {
            // The timer also fires at the window's end: the next window's
            // budget (it may have changed) counts from there.
            let to_end = self.window_end_ns().saturating_sub(now_ns);
            OnCpu::Budget(self.t_r_ns.saturating_sub(ran).min(to_end))
        }
    }

    /// Sets the slice that just ended, `span_ns` between its switches,
    /// against what the scheduler charged the thread for it,
    /// `charged_ns`: the scheduler stamps both ends earlier than the
    /// switch is traced (at its clock update), by amounts that differ
    /// per switch (tens of microseconds on a debug kernel). What it
    /// charged beyond the spans, summed over slices, is added to the
    /// current window's on-CPU time, so budgets hold the thread's own CPU
    /// clock; what it charged less is kept as credit against later excess
    /// rather than dropped (dropping it would bias the sum up).
    pub fn reconcile(&mut self, span_ns: u64, charged_ns: u64) {
        if charged_ns >= span_ns {
            let extra = charged_ns.saturating_sub(span_ns);
            let offset = extra.min(self.credit_ns);
            self.credit_ns = self.credit_ns.saturating_sub(offset);
            // INVARIANT: on-CPU time of this window, as `ran_ns` counts.
            self.ran_ns = self.ran_ns.saturating_add(extra.saturating_sub(offset));
        } else {
            let less = span_ns.saturating_sub(charged_ns);
            self.credit_ns = self.credit_ns.saturating_add(less);
        }
    }

    /// The thread leaves its CPU at `now_ns`: first closes the windows its
    /// slice ran past (their share of the slice goes to them).
    pub fn switch_out(&mut self, now_ns: u64) {
        self.roll(now_ns);
        if let Some(since) = self.on_cpu_since.take() {
            // INVARIANT: the slice joins the window's on-CPU time.
            self.ran_ns = self.ran_ns.saturating_add(now_ns.saturating_sub(since));
        }
    }

    /// The thread's on-CPU time from `since_ns` to `now_ns` was not its
    /// own work but the enforcement's (parking it, and the way back from
    /// its sleep): the current window does not count it. Only time in
    /// the slice in progress, and in the current window, is taken off.
    pub fn exempt(&mut self, now_ns: u64, since_ns: u64) {
        self.roll(now_ns);
        if let Some(slice) = self.on_cpu_since {
            let from = slice.max(since_ns).max(self.start_ns).min(now_ns);
            // INVARIANT: the slice's time before `from` joins the window;
            // the slice restarts at `now_ns`.
            self.ran_ns = self.ran_ns.saturating_add(from.saturating_sub(slice));
            self.on_cpu_since = Some(now_ns.max(slice));
        }
    }

    /// Whether the thread is on a CPU (since `switch_in`, until
    /// `switch_out`).
    pub fn on_cpu(&self) -> bool {
        self.on_cpu_since.is_some()
    }
}
