// SPDX-License-Identifier: GPL-2.0

//! An attached thread's state, behind its slot's raw spinlock in the
//! thread table (`threads.rs`): its channel and user (the core's
//! [`Membership`]), its run window, what its meter counted, and its park
//! item (an `I`: `park.rs` gives the type, which refers back to the table)
//! with whether one is queued and how long it was parked.

use crate::control::member::Membership;
use crate::control::seat::Holder;
use crate::control::thread::{OnCpu, RunState};
use kernel::task::Task;
use kernel::types::ARef;

/// An attached thread. Made by [`Attached::new`] (or [`Attached::child`])
/// without a park item: the table gives it its slot's. Dropping one frees
/// nothing but a task reference (the table keeps the item with the slot).
pub(crate) struct Attached<I> {
    /// Holds the task (the probes see it by address only).
    task: ARef<Task>,
    /// Its channel, whether its forks follow, and its user's quota.
    member: Membership,
    run: RunState,
    /// Its rank among its channel's threads (`stagger.rs`): given by the
    /// control loop in the first period it is attached, then kept.
    rank: Option<u64>,
    /// A park item is queued (the timer queues at most one).
    queued: bool,
    /// The next park item, allocated ahead (the timer cannot allocate).
    spare: Option<I>,
    /// Parked now, since when (or since the control loop last counted
    /// it), and the time parked not yet counted (nanoseconds).
    parked: bool,
    parked_since: u64,
    parked_ns: u64,
    /// What its meter counted since the last control period: perf
    /// events, or bytes it reported.
    counted: u64,
    /// A perf counter counts for it (`meter.rs`).
    has_counter: bool,
    /// When its slice on a CPU began, and the scheduler's count of its
    /// on-CPU time then (`switch_out` charges the difference).
    slice: Option<(u64, u64)>,
    /// When its budget timer last queued its park item, and when it first
    /// left its CPU parked after that (what a park costs: `park.rs`).
    fired: Option<u64>,
    left: Option<u64>,
}

impl<I> Holder<I> for Attached<I> {
    fn item(&mut self) -> &mut Option<I> {
        &mut self.spare
    }
}

impl<I> Attached<I> {
    /// `task` on channel `channel` with run window `run`; `follow_forks`:
    /// the threads it creates join too; `user`: the uid whose quota it
    /// counts against (`None`: attached by a caller with `CAP_SYS_NICE`,
    /// and then only such a caller may detach it).
    pub(crate) fn new(
        task: &Task,
        channel: u32,
        follow_forks: bool,
        user: Option<u32>,
        run: RunState,
    ) -> Attached<I> {
        Self::joining(task, Membership::new(channel, follow_forks, user), run)
    }

    fn joining(task: &Task, member: Membership, run: RunState) -> Attached<I> {
        Attached {
            task: task.into(),
            member,
            run,
            rank: None,
            queued: false,
            spare: None,
            parked: false,
            parked_since: 0,
            parked_ns: 0,
            counted: 0,
            has_counter: false,
            slice: None,
            fired: None,
            left: None,
        }
    }

    /// The state of `child`, which this thread just created at `now`, if
    /// its forks are followed: its channel, its user and its next budget.
    pub(crate) fn child(&self, child: &Task, now: u64) -> Option<Attached<I>> {
        let (member, run) = self.member.child(&self.run, now)?;
        Some(Self::joining(child, member, run))
    }

    pub(crate) fn task(&self) -> &ARef<Task> {
        &self.task
    }

    pub(crate) fn channel(&self) -> u32 {
        self.member.channel()
    }

    /// The uid whose quota it counts against (`None`: privileged).
    pub(crate) fn user(&self) -> Option<u32> {
        self.member.user()
    }

    /// Attached by a caller with `CAP_SYS_NICE`.
    pub(crate) fn privileged(&self) -> bool {
        self.member.privileged()
    }

    /// Its run window.
    pub(crate) fn run(&mut self) -> &mut RunState {
        &mut self.run
    }

    /// Its rank among its channel's threads, from `next` if it has none.
    pub(crate) fn rank_or(&mut self, next: impl FnOnce() -> u64) -> u64 {
        *self.rank.get_or_insert_with(next)
    }

    /// It comes on a CPU at `now`, having run `exec_ns` by the scheduler's
    /// count: what its budget says.
    pub(crate) fn switch_in(&mut self, now: u64, exec_ns: u64) -> OnCpu {
        self.slice = Some((now, exec_ns));
        self.run.switch_in(now);
        self.run.check(now)
    }

    /// It leaves its CPU at `now`, having run `exec_ns` by the scheduler's
    /// count: what the scheduler charged its slice beyond the slice's span
    /// counts too, so budgets hold the thread's own CPU clock.
    pub(crate) fn switch_out(&mut self, now: u64, exec_ns: u64) {
        if self.parked && self.fired.is_some() && self.left.is_none() {
            self.left = Some(now);
        }
        self.run.switch_out(now);
        if let Some((since, exec_then)) = self.slice.take() {
            let charged = exec_ns.saturating_sub(exec_then);
            self.run.reconcile(now.saturating_sub(since), charged);
        }
    }

    /// When its slice on a CPU began (`None`: not on a CPU).
    pub(crate) fn slice_start(&self) -> Option<u64> {
        self.slice.map(|(since, _)| since)
    }

    /// Its budget timer queued its park item at `now`.
    pub(crate) fn set_fired(&mut self, now: u64) {
        self.fired = Some(now);
    }

    /// When its budget timer last queued its park item and when it then
    /// left its CPU parked, once.
    pub(crate) fn take_park_span(&mut self) -> Option<(u64, u64)> {
        let span = self.fired.zip(self.left);
        self.fired = None;
        self.left = None;
        span
    }

    /// A park item is queued for it.
    pub(crate) fn is_queued(&self) -> bool {
        self.queued
    }

    /// Its park item to queue (then it counts as queued), unless one is
    /// queued already or it has none.
    pub(crate) fn take_park(&mut self) -> Option<I> {
        if self.queued {
            return None;
        }
        let item = self.spare.take()?;
        self.queued = true;
        Some(item)
    }

    /// The item [`take_park`](Self::take_park) gave could not be queued:
    /// not queued, and the item is its spare again if it has none (else it
    /// stays in `item`, for the caller to drop outside any lock).
    pub(crate) fn park_failed(&mut self, item: &mut Option<I>) {
        self.queued = false;
        self.refill(item);
    }

    /// Takes `spare` as its park item if it has none.
    pub(crate) fn refill(&mut self, spare: &mut Option<I>) {
        if self.spare.is_none() {
            self.spare = spare.take();
        }
    }

    pub(crate) fn has_spare(&self) -> bool {
        self.spare.is_some()
    }

    /// Its park item ran and it parks from `now`.
    pub(crate) fn park_from(&mut self, now: u64) {
        self.parked = true;
        self.parked_since = now;
    }

    /// Its park item ran and it does not park: no item is queued.
    pub(crate) fn unqueue(&mut self) {
        self.queued = false;
    }

    /// It woke at `now` from a park (`killed`: by a fatal signal, and its
    /// item is done); what the control loop has not counted yet counts
    /// (nothing if it was detached, and attached again, while it slept).
    pub(crate) fn woke(&mut self, now: u64, killed: bool) {
        if self.parked {
            let slept = now.saturating_sub(self.parked_since);
            self.parked_ns = self.parked_ns.saturating_add(slept);
        }
        self.parked = false;
        if killed {
            self.queued = false;
        }
    }

    /// Parked now.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked
    }

    /// The time it was parked since the last call, counting a park still
    /// in progress up to `now` (a park counts in the periods it spans).
    pub(crate) fn take_parked_ns(&mut self, now: u64) -> u64 {
        if self.parked {
            let so_far = now.saturating_sub(self.parked_since);
            self.parked_ns = self.parked_ns.saturating_add(so_far);
            self.parked_since = self.parked_since.max(now);
        }
        core::mem::take(&mut self.parked_ns)
    }

    /// Adds `n` to what its meter counted (perf events, or bytes).
    pub(crate) fn count(&mut self, n: u64) {
        self.counted = self.counted.saturating_add(n);
    }

    /// What its meter counted since the last call.
    pub(crate) fn take_counted(&mut self) -> u64 {
        core::mem::take(&mut self.counted)
    }

    /// A perf counter counts for it.
    pub(crate) fn has_counter(&self) -> bool {
        self.has_counter
    }

    pub(crate) fn set_counter(&mut self, has: bool) {
        self.has_counter = has;
    }

    /// Its channel's meter changed: counts in the old units go, and so
    /// does its counter (one for the new event is made next period).
    pub(crate) fn reset_meter(&mut self) {
        self.counted = 0;
        self.has_counter = false;
    }
}
