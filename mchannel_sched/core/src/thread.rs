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

use super::estimator::Sample;

/// What the windows closed since the last [`RunState::take_closed`] add
/// up to: the control loop folds it into the channel's estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Closed {
    /// Windows closed (including whole windows skipped).
    pub windows: u64,
    /// Their on-CPU time.
    pub run_ns: u64,
    /// Their wall time.
    pub window_ns: u64,
    /// The most any of them ran beyond its budget (the budget timer fires
    /// a little late, or the thread ran in the kernel past it).
    pub max_overrun_ns: u64,
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
    /// The budget of this window is spent: park it until `until_ns`.
    Park { until_ns: u64 },
}

/// # Invariants
/// `t_r_ns <= t_w_ns`; `ran_ns` counts on-CPU time since `start_ns`
/// (excluding the slice in progress since `on_cpu_since`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunState {
    start_ns: u64,
    t_w_ns: u64,
    t_r_ns: u64,
    ran_ns: u64,
    on_cpu_since: Option<u64>,
    /// Budget and length of the next window (take effect when it starts).
    next_t_r_ns: u64,
    next_t_w_ns: u64,
    closed: Closed,
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
            on_cpu_since: None,
            next_t_r_ns: t_r_ns,
            next_t_w_ns: t_w_ns,
            closed: Closed::default(),
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
        let c = &mut self.closed;
        c.windows = c.windows.saturating_add(1).saturating_add(skipped);
        let skipped_ns = skipped.saturating_mul(next_w);
        c.run_ns = c.run_ns.saturating_add(ran);
        c.max_overrun_ns = c.max_overrun_ns.max(ran.saturating_sub(self.t_r_ns));
        if on_cpu && skipped > 0 {
            c.run_ns = c.run_ns.saturating_add(skipped_ns);
            let over = next_w.saturating_sub(self.next_t_r_ns);
            c.max_overrun_ns = c.max_overrun_ns.max(over);
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
        // INVARIANT: the new window's budget is clamped to its length by
        // `set_budget` and `set_window`; the slice in progress restarts at
        // the window's start.
        self.start_ns = start;
        self.t_w_ns = self.next_t_w_ns;
        self.t_r_ns = self.next_t_r_ns;
        self.ran_ns = 0;
        if on_cpu {
            self.on_cpu_since = Some(start);
        }
        true
    }

    /// Takes what the windows closed since the last call add up to.
    pub fn take_closed(&mut self) -> Closed {
        core::mem::take(&mut self.closed)
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
        let ran = self.ran_ns(now_ns);
        if ran >= self.t_r_ns {
            OnCpu::Park {
                until_ns: self.window_end_ns(),
            }
        } else {
            // The timer also fires at the window's end: the next window's
            // budget (it may have changed) counts from there.
            let to_end = self.window_end_ns().saturating_sub(now_ns);
            OnCpu::Budget(self.t_r_ns.saturating_sub(ran).min(to_end))
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

    pub fn on_cpu(&self) -> bool {
        self.on_cpu_since.is_some()
    }
}
