// SPDX-License-Identifier: GPL-2.0

//! Enforcing the run windows (see `Documentation/cxlfabric/mchannel.rst`):
//! the `sched_switch` probe accounts each attached thread's time on a CPU
//! and arms that CPU's budget timer when one comes on; the timer (hard
//! interrupt, on the thread's CPU) queues a [`Park`] for the thread, which
//! runs it on its way back to user space and sleeps, killable, until its
//! budget allows it to run: its window's end, or later while it pays back
//! a late timer's overrun. The timer stays armed while an attached thread
//! is on the CPU (every control period for a thread with a whole-window
//! budget). Fork and exit follow threads in and out. A slice counts what
//! the scheduler charged the thread for it (`sum_exec_runtime`), where
//! that exceeds the time between its switches, net of slices it charged
//! less: budgets hold the thread's own CPU clock.
//!
//! Contexts: `switch` runs under the runqueue lock with interrupts off;
//! the timer in hard interrupt context; `fork` and `exit` with preemption
//! off. None of them sleeps, allocates (but `fork`, atomically) or wakes a
//! task. [`Park::run`] is process context.

use crate::control::thread::{OnCpu, RunState};
use crate::impl_has_hr_timer;
use crate::support::hrtimer::{
    ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerMode, HrTimerRestart,
};
use crate::support::task;
use crate::support::task_work::{Notify, Pending, TaskWork, TaskWorkBox};
use crate::support::time::monotonic_ns;
use crate::support::tracepoint::SchedProbes;
use crate::threads::{Attached, Threads};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::task::Task;

/// A parked thread may wake this much after its window's end (timer
/// slack: lets the kernel batch wakeups).
const PARK_SLACK_NS: u64 = 2_000;

/// How long a newly attached thread sleeps so that the scheduler switches
/// it in again (see [`Shared::settle`]).
const SETTLE_NS: u64 = 10_000;

/// A thread with a whole-window budget is checked this often while it
/// keeps its CPU: the control loop may lower its budget, and a thread that
/// never leaves its CPU would otherwise never see it. (One control period:
/// what it runs beyond the new budget before this check is debt.)
const UNLIMITED_RECHECK_NS: u64 = crate::fabric::K_NS;

/// Counters for sysfs and the tests.
#[derive(Default)]
pub(crate) struct Counters {
    /// Park items queued, and those that could not be (no spare item, or
    /// the thread was exiting).
    pub(crate) parks: AtomicU64,
    pub(crate) park_misses: AtomicU64,
    /// Threads a fork added, and those it could not (table full, no
    /// memory).
    pub(crate) forks: AtomicU64,
    pub(crate) fork_misses: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// What the probes, the timers and the park items share.
pub(crate) struct Shared {
    pub(crate) threads: Threads,
    /// Park items queued and not yet finished: unload waits for them.
    pub(crate) pending: Arc<Pending>,
    /// Set first on unload: nothing parks any more.
    pub(crate) shutdown: AtomicBool,
    pub(crate) counters: Counters,
}

impl Shared {
    pub(crate) fn new(max_threads: usize, user_threads: usize) -> Result<Arc<Shared>> {
        Ok(Arc::new(
            Shared {
                threads: Threads::new(max_threads, user_threads)?,
                pending: Arc::new(Pending::new(), GFP_KERNEL)?,
                shutdown: AtomicBool::new(false),
                counters: Counters::default(),
            },
            GFP_KERNEL,
        )?)
    }

    /// A park item for a thread's spare (`flags`: `GFP_ATOMIC` where
    /// sleeping is not allowed).
    pub(crate) fn park_item(
        self: &Arc<Self>,
        flags: kernel::alloc::Flags,
    ) -> Result<TaskWorkBox<Park>> {
        TaskWorkBox::new(
            Park {
                shared: self.clone(),
            },
            &self.pending,
            flags,
        )
    }

    /// A new attached thread's state.
    pub(crate) fn attached(
        task: &Task,
        channel: u32,
        follow_forks: bool,
        user: Option<u32>,
        run: RunState,
        spare: TaskWorkBox<Park>,
    ) -> Attached {
        Attached {
            task: task.into(),
            channel,
            follow_forks,
            user,
            run,
            queued: false,
            spare: Some(spare),
            parked: false,
            parked_since: 0,
            parked_ns: 0,
            counted: 0,
            has_counter: false,
            slice: None,
        }
    }

    /// Makes `task`, just attached, known to the switch probe: until the
    /// scheduler next switches it in, nothing counts its time or arms a
    /// budget timer for it, and a thread alone on its CPU may not be
    /// switched for seconds. Its park item makes it sleep for
    /// [`SETTLE_NS`] on its way back to user space. The item is queued
    /// outside the thread's lock: signalling another task takes its
    /// scheduler locks, which the switch probe holds while it takes ours.
    pub(crate) fn settle(&self, task: &Task) {
        // One that is not running is seen when it next comes on a CPU;
        // signalling it would only cut its sleep short (EINTR from some
        // calls) or wait, queued, while it is stopped.
        if !task::is_on_cpu(task) {
            return;
        }
        let taken = self.threads.with(task, |a| {
            if a.queued {
                return None;
            }
            let item = a.spare.take()?;
            a.queued = true;
            Some(item)
        });
        let Some(Some(item)) = taken else {
            return;
        };
        match item.queue(task, Notify::Signal) {
            Ok(()) => bump(&self.counters.parks),
            Err((_, item)) => {
                // Exiting: nothing to settle; the item goes back (or, if
                // it was detached meanwhile, is dropped here).
                let _ = self.threads.with(task, |a| {
                    a.queued = false;
                    if a.spare.is_none() {
                        a.spare = Some(item);
                    }
                });
                bump(&self.counters.park_misses);
            }
        }
    }

    /// Until when `me` parks now, if it does; otherwise it is no longer
    /// queued. Refills its spare item from `spare`. Its running since
    /// `entered`, when its park item started, was the module's work, not
    /// its own: the budget does not count it.
    fn park_until(
        &self,
        me: &Task,
        spare: &mut Option<TaskWorkBox<Park>>,
        entered: u64,
    ) -> Option<u64> {
        self.threads
            .with(me, |a| {
                if a.spare.is_none() {
                    a.spare = spare.take();
                }
                let stop = self.shutdown.load(Ordering::Acquire) || task::is_exiting(me);
                let now = monotonic_ns();
                a.run.exempt(now, entered);
                if !a.run.on_cpu() && !stop {
                    // Running, but not switched in since it was attached:
                    // a short sleep has the switch probe see it.
                    return Some(now.saturating_add(SETTLE_NS));
                }
                match a.run.check(now) {
                    OnCpu::Park { until_ns } if !stop => {
                        a.parked = true;
                        a.parked_since = now;
                        Some(until_ns)
                    }
                    _ => {
                        a.queued = false;
                        None
                    }
                }
            })
            .flatten()
    }
}

/// Sleeps the thread that runs it until its budget allows it to run again:
/// to its window's end, and through the windows its debt takes after
/// that (a late timer's overrun, see the core's `thread` module).
pub(crate) struct Park {
    shared: Arc<Shared>,
}

impl TaskWork for Park {
    fn run(self) {
        let entered = monotonic_ns();
        let shared = self.shared;
        let me = kernel::current!();
        // The next item, allocated here where sleeping is allowed; the
        // timer only takes spares.
        let mut spare = shared.park_item(GFP_KERNEL).ok();
        // Still queued while it sleeps: the timer that fires when it wakes
        // in debt does not queue a second item.
        while let Some(until) = shared.park_until(me, &mut spare, entered) {
            let killed = task::sleep_until_killable(until, PARK_SLACK_NS);
            let now = monotonic_ns();
            shared.threads.with(me, |a| {
                // What the control loop has not counted yet (none if it
                // was detached, and attached again, while it slept).
                if a.parked {
                    let slept = now.saturating_sub(a.parked_since);
                    a.parked_ns = a.parked_ns.saturating_add(slept);
                }
                a.parked = false;
                if killed {
                    a.queued = false;
                }
            });
            if killed {
                break;
            }
        }
    }
}

/// One CPU's budget timer: it fires for the attached thread running on
/// that CPU.
#[pin_data]
pub(crate) struct CpuTimer {
    #[pin]
    timer: HrTimer<CpuTimer>,
    shared: Arc<Shared>,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for CpuTimer { self.timer }
}

impl HrTimerCallback for CpuTimer {
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart {
        // The interrupted task is the one the timer was armed for, unless
        // it left the CPU in between (then the switch cancelled it, or
        // this finds it not attached or not on a CPU: harmless).
        let me = kernel::current!();
        let now = monotonic_ns();
        this.shared
            .threads
            .with(me, |a| {
                if !a.run.on_cpu() {
                    return HrTimerRestart::NoRestart;
                }
                let check = a.run.check(now);
                this.budget_fired(me, a, check, now)
            })
            .unwrap_or(HrTimerRestart::NoRestart)
    }
}

impl CpuTimer {
    /// What the timer does for `me`, on this CPU, when `check` says so.
    fn budget_fired(&self, me: &Task, a: &mut Attached, check: OnCpu, now: u64) -> HrTimerRestart {
        let shared = &self.shared;
        match check {
            OnCpu::Budget(ns) => {
                self.timer.forward_now(ns.max(1));
                HrTimerRestart::Restart
            }
            OnCpu::Unlimited => {
                self.timer.forward_now(UNLIMITED_RECHECK_NS);
                HrTimerRestart::Restart
            }
            OnCpu::Park { until_ns } => {
                if shared.shutdown.load(Ordering::Acquire) {
                    return HrTimerRestart::NoRestart;
                }
                if !a.queued {
                    queue_park(shared, me, a);
                }
                // Armed while it stays on this CPU: if the window ends
                // before the park runs, the next budget counts from there.
                let to_end = until_ns.saturating_sub(now);
                self.timer.forward_now(to_end.max(1));
                HrTimerRestart::Restart
            }
        }
    }
}

/// Queues `a`'s spare park item on `me` (the thread running here).
fn queue_park(shared: &Shared, me: &Task, a: &mut Attached) {
    match a.spare.take() {
        Some(item) => match item.queue(me, Notify::Signal) {
            Ok(()) => {
                a.queued = true;
                bump(&shared.counters.parks);
            }
            Err((_, item)) => {
                a.spare = Some(item);
                bump(&shared.counters.park_misses);
            }
        },
        None => bump(&shared.counters.park_misses),
    }
}

/// The probes: the shared state and one budget timer per possible CPU.
pub(crate) struct Enforcer {
    shared: Arc<Shared>,
    timers: KVec<ArcHrTimerHandle<CpuTimer>>,
}

impl Enforcer {
    pub(crate) fn new(shared: Arc<Shared>) -> Result<Arc<Enforcer>> {
        let cpus = task::possible_cpus();
        let mut timers = KVec::with_capacity(cpus, GFP_KERNEL)?;
        for _ in 0..cpus {
            let mine = shared.clone();
            let t = Arc::pin_init(
                pin_init!(CpuTimer {
                    timer <- HrTimer::new(HrTimerMode::RelativePinned),
                    shared: mine,
                }),
                GFP_KERNEL,
            )?;
            timers.push(ArcHrTimerHandle::idle(t), GFP_KERNEL)?;
        }
        Ok(Arc::new(Enforcer { shared, timers }, GFP_KERNEL)?)
    }

    fn this_timer(&self) -> Option<&ArcHrTimerHandle<CpuTimer>> {
        self.timers.get(task::this_cpu() as usize)
    }

    /// `prev` leaves the CPU; whether it is attached. What the scheduler
    /// charged its slice beyond the slice's span counts too, so budgets
    /// hold the thread's own CPU clock.
    fn leave(&self, prev: &Task, now: u64) -> bool {
        self.shared
            .threads
            .with(prev, |a| {
                a.run.switch_out(now);
                if let Some((since, exec_then)) = a.slice.take() {
                    let charged = task::exec_runtime_ns(prev).saturating_sub(exec_then);
                    a.run.reconcile(now.saturating_sub(since), charged);
                }
            })
            .is_some()
    }

    /// `next` comes on the CPU: what its budget says.
    fn enter(&self, next: &Task, now: u64) -> Option<OnCpu> {
        self.shared.threads.with(next, |a| {
            a.slice = Some((now, task::exec_runtime_ns(next)));
            a.run.switch_in(now);
            a.run.check(now)
        })
    }
}

impl SchedProbes for Enforcer {
    fn switch(&self, _preempt: bool, prev: &Task, next: &Task) {
        if self.shared.threads.live() == 0 {
            return;
        }
        let now = monotonic_ns();
        let left = self.leave(prev, now);
        let Some(timer) = self.this_timer() else {
            return;
        };
        match self.enter(next, now) {
            Some(OnCpu::Budget(ns)) => timer.restart(ns.max(1)),
            // Spent already (it ran in the kernel past its budget, or woke
            // early): the timer parks it as soon as interrupts are on.
            Some(OnCpu::Park { .. }) => timer.restart(1),
            Some(OnCpu::Unlimited) => timer.restart(UNLIMITED_RECHECK_NS),
            None => {
                if left {
                    // Pinned to this CPU and interrupts are off here: it
                    // cannot be running, so this never fails.
                    let _ = timer.try_cancel();
                }
            }
        }
    }

    fn fork(&self, parent: &Task, child: &Task) {
        if self.shared.threads.live() == 0 {
            return;
        }
        let inherited = self.shared.threads.with(parent, |a| {
            a.follow_forks.then(|| (a.channel, a.user, a.run.next_ns()))
        });
        // A child counts against its parent's user's quota too: past it,
        // the child is not attached (a fork miss).
        let Some(Some((channel, user, (t_r, t_w)))) = inherited else {
            return;
        };
        let Ok(spare) = self.shared.park_item(GFP_ATOMIC) else {
            bump(&self.shared.counters.fork_misses);
            return;
        };
        let run = RunState::new(monotonic_ns(), t_w, t_r);
        let added = self.shared.threads.insert(child, || {
            Shared::attached(child, channel, true, user, run, spare)
        });
        match added {
            Ok(()) => bump(&self.shared.counters.forks),
            Err(_) => bump(&self.shared.counters.fork_misses),
        }
    }

    fn exit(&self, task: &Task) {
        if self.shared.threads.live() == 0 {
            return;
        }
        // Dropped here: the task's own reference outlives this one, and
        // the spare is freed with preemption off (allowed).
        drop(self.shared.threads.remove(task));
    }
}
