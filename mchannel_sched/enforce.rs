// SPDX-License-Identifier: GPL-2.0

//! Enforcing the run windows (see `Documentation/cxlfabric/mchannel.rst`):
//! the `sched_switch` probe accounts each attached thread's time on a CPU
//! and arms that CPU's budget timer when one comes on; the timer (hard
//! interrupt, on the thread's CPU) queues a park item for the thread, which
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
//! off. None of them sleeps, allocates or frees memory, or wakes a task,
//! and the only locks they take are the thread table's raw spinlocks
//! (`threads.rs`): they behave alike on every preemption model, PREEMPT_RT
//! included (where a `spinlock_t` and the allocator may sleep). The park
//! item they queue ([`Park`](crate::park::Park)) runs in process context.

use crate::attached::Attached;
use crate::control::thread::OnCpu;
use crate::park::{bump, Shared, Spare};
use crate::support::hrtimer::{
    ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerMode, HrTimerRestart,
};
use crate::support::impl_has_hr_timer;
use crate::support::task;
use crate::support::task_work::Notify;
use crate::support::time::monotonic_ns;
use crate::support::tracepoint::SchedProbes;
use core::sync::atomic::Ordering;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::task::Task;

/// A thread with a whole-window budget is checked this often while it
/// keeps its CPU: the control loop may lower its budget, and a thread that
/// never leaves its CPU would otherwise never see it. (One control period:
/// what it runs beyond the new budget before this check is debt.)
const UNLIMITED_RECHECK_NS: u64 = crate::fabric::K_NS;

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
                if !a.run().on_cpu() {
                    return HrTimerRestart::NoRestart;
                }
                let check = a.run().check(now);
                this.budget_fired(me, a, check, now)
            })
            .unwrap_or(HrTimerRestart::NoRestart)
    }
}

impl CpuTimer {
    /// What the timer does for `me`, on this CPU, when `check` says so.
    fn budget_fired(
        &self,
        me: &Task,
        a: &mut Attached<Spare>,
        check: OnCpu,
        now: u64,
    ) -> HrTimerRestart {
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
                if !a.is_queued() {
                    a.set_fired(now);
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

/// Queues `a`'s park item on `me` (the thread running here).
fn queue_park(shared: &Shared, me: &Task, a: &mut Attached<Spare>) {
    match a.take_park() {
        Some(item) => match item.queue(me, Notify::Signal) {
            Ok(()) => bump(&shared.counters.parks),
            Err((_, item)) => {
                // Its spare again (it has none: the item was it, so
                // nothing is freed here).
                a.park_failed(&mut Some(item));
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

    /// `prev` leaves the CPU; whether it is attached.
    fn leave(&self, prev: &Task, now: u64) -> bool {
        self.shared
            .threads
            .with(prev, |a| a.switch_out(now, task::exec_runtime_ns(prev)))
            .is_some()
    }

    /// `next` comes on the CPU: what its budget says.
    fn enter(&self, next: &Task, now: u64) -> Option<OnCpu> {
        self.shared
            .threads
            .with(next, |a| a.switch_in(now, task::exec_runtime_ns(next)))
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
        let now = monotonic_ns();
        let Some(Some(attached)) = self.shared.threads.with(parent, |a| a.child(child, now)) else {
            return;
        };
        // The child takes its slot's park item: nothing is allocated here.
        // A child counts against its parent's user's quota too: past it,
        // the child is not attached (a fork miss).
        match self.shared.threads.insert(child, attached) {
            Ok(()) => bump(&self.shared.counters.forks),
            Err(_) => bump(&self.shared.counters.fork_misses),
        }
    }

    fn exit(&self, task: &Task) {
        if self.shared.threads.live() == 0 {
            return;
        }
        // Constant time, nothing freed: the slot keeps the park item and
        // becomes a tombstone for the control loop's sweep; the state
        // dropped here holds only a task reference, not the task's last
        // (it is running).
        drop(self.shared.threads.remove(task));
    }
}
