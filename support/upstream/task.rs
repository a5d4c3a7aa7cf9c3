// SPDX-License-Identifier: GPL-2.0

//! What 6.12's `kernel::task::Task` lacks for a module that governs other
//! threads (upstream 6.13-6.15 add `Task::tgid_nr_ns`, `Task::uid`,
//! `Pid`/`PidNamespace` lookups; nothing upstream offers thread-group
//! iteration, a killable sleep to a deadline or the renice rule): the
//! calling CPU and the monotonic clock the hrtimers use.

use crate::helpers;
use kernel::bindings;
use kernel::ffi::c_int;
use kernel::task::Task;
use kernel::types::ARef;

/// RCU read-side critical sections (upstream: `kernel::sync::rcu`, 6.13).
pub mod rcu {
    use crate::helpers;
    use core::marker::PhantomData;

    /// An RCU read-side critical section, ended on drop. Not `Send`: it
    /// ends in the task that began it.
    pub struct Guard(PhantomData<*mut ()>);

    /// Begins an RCU read-side critical section (`rcu_read_lock`): what
    /// RCU protects stays alive until the [`Guard`] is dropped. Nothing
    /// may sleep meanwhile.
    pub fn read_lock() -> Guard {
        // SAFETY: no preconditions; the guard ends the section.
        unsafe { helpers::cxlf_rcu_read_lock() };
        Guard(PhantomData)
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: `read_lock` began this section, in this task (the
            // guard is not `Send`).
            unsafe { helpers::cxlf_rcu_read_unlock() };
        }
    }
}

fn raw(task: &Task) -> *mut bindings::task_struct {
    // `Task` is a transparent wrapper of `task_struct`.
    core::ptr::from_ref(task).cast_mut().cast()
}

/// The CPU this runs on (stable only where preemption is off).
pub fn this_cpu() -> u32 {
    // SAFETY: no preconditions.
    unsafe { helpers::cxlf_this_cpu() }
}

/// How many CPU ids there can be (`nr_cpu_ids`): per-CPU arrays have
/// this many entries.
pub fn possible_cpus() -> usize {
    // SAFETY: the kernel sets `nr_cpu_ids` up before modules load and
    // never changes it afterwards.
    unsafe { bindings::nr_cpu_ids as usize }
}

/// Sleeps (killable, not interruptible) until `CLOCK_MONOTONIC` reaches
/// `until_ns` (give or take `slack_ns`), the task is woken, or a fatal
/// signal arrives. Process context only. Returns whether a fatal signal
/// is pending (the caller should stop waiting).
#[must_use]
pub fn sleep_until_killable(until_ns: u64, slack_ns: u64) -> bool {
    // `ns_to_ktime`.
    let mut expires = until_ns as bindings::ktime_t;
    // SAFETY: process context (this function's contract, as for any
    // sleep): the task sleeps in `schedule_hrtimeout_range`, with the
    // barrier `set_current_state` gives between the state and the wakeup
    // condition, and runs again after it.
    unsafe {
        helpers::cxlf_set_current_state(bindings::TASK_KILLABLE);
        bindings::schedule_hrtimeout_range(
            &mut expires,
            slack_ns,
            bindings::hrtimer_mode_HRTIMER_MODE_ABS,
        );
        helpers::cxlf___set_current_state(bindings::TASK_RUNNING);
    }
    // SAFETY: no preconditions.
    unsafe { helpers::cxlf_fatal_signal_pending() }
}

/// The thread with id `nr` in the caller's pid namespace.
pub fn get_by_vpid(nr: i32) -> Option<ARef<Task>> {
    let _rcu = rcu::read_lock();
    // SAFETY: under RCU (held above), `find_vpid` returns a pid (or NULL,
    // which `pid_task` takes) that stays alive until the guard is
    // dropped, and so does the task `pid_task` returns.
    let ptr =
        unsafe { bindings::pid_task(bindings::find_vpid(nr), bindings::pid_type_PIDTYPE_PID) };
    // SAFETY: a non-NULL task is live until the guard is dropped; `Task`
    // is a transparent wrapper of `task_struct`.
    let task = unsafe { ptr.cast::<Task>().as_ref() }?;
    // Takes a reference (`get_task_struct`) before the guard is dropped.
    Some(ARef::from(task))
}

/// `task->flags` (`PF_*`), as `READ_ONCE` reads them.
fn flags(task: &Task) -> u32 {
    // SAFETY: `task` is a live task, so its `flags` field is valid to
    // read; other tasks may change them (with `WRITE_ONCE`, or on their
    // own task), and an aligned int read is not torn.
    unsafe { core::ptr::addr_of!((*raw(task)).flags).read_volatile() }
}

/// Whether `task` is a user thread that is not exiting.
pub fn is_live_user(task: &Task) -> bool {
    flags(task) & (bindings::PF_KTHREAD | bindings::PF_EXITING) == 0
}

/// The on-CPU time the scheduler has charged `task` (`se.sum_exec_runtime`,
/// what `CLOCK_THREAD_CPUTIME_ID` reports, less a slice in progress). Up
/// to date for the task leaving the CPU in a `sched_switch` probe: the
/// scheduler charges it before the tracepoint.
pub fn exec_runtime_ns(task: &Task) -> u64 {
    // SAFETY: `task` is a live task, so its `se` field is valid to read;
    // the scheduler updates it under the runqueue lock, and a racing read
    // of an aligned u64 on a 64-bit machine is not torn (what `READ_ONCE`
    // in C gives).
    unsafe { core::ptr::addr_of!((*raw(task)).se.sum_exec_runtime).read_volatile() }
}

/// Whether `task` is on a CPU now (`task_struct::on_cpu`: a snapshot,
/// true from its switch-in to its switch-out).
pub fn is_on_cpu(task: &Task) -> bool {
    // SAFETY: `task` is a live task, so its `on_cpu` field is valid to
    // read; the scheduler writes it with `WRITE_ONCE`/release, and an
    // aligned int read is not torn.
    unsafe { core::ptr::addr_of!((*raw(task)).on_cpu).read_volatile() != 0 }
}

/// Whether `task` has started to exit.
pub fn is_exiting(task: &Task) -> bool {
    flags(task) & bindings::PF_EXITING != 0
}

/// Whether the caller may change `task`'s nice value: setpriority(2)'s
/// rule (`set_one_prio`), the caller's effective uid is `task`'s real or
/// effective uid, or the caller has `CAP_SYS_NICE` over `task`'s user
/// namespace.
pub fn may_renice(task: &Task) -> bool {
    let current = kernel::current!();
    // `current_cred()`: the caller's subjective credentials, which only
    // the caller itself replaces.
    // SAFETY: `current` is live, and so is the `cred` it holds while it
    // runs.
    let euid = unsafe { (*(*raw(current)).cred).euid.val };
    let _rcu = rcu::read_lock();
    // SAFETY: `task` is a live task; under RCU (held above) its
    // credentials stay alive until the guard is dropped, and a `cred` is
    // not changed once published. Fields are read in place: no reference
    // to the shared structure is made.
    unsafe {
        let pcred = helpers::cxlf_task_cred(raw(task));
        (*pcred).uid.val == euid
            || (*pcred).euid.val == euid
            || bindings::ns_capable((*pcred).user_ns, bindings::CAP_SYS_NICE as c_int)
    }
}

/// Calls `f` for each thread of `task`'s thread group under
/// `rcu_read_lock` (`f` must not sleep), until it returns `false`.
pub fn for_each_thread<F: FnMut(&Task) -> bool>(task: &Task, mut f: F) {
    let _rcu = rcu::read_lock();
    // `for_each_thread`: the group's RCU list of threads, from its first.
    // SAFETY: `task` is live; RCU is held (above).
    let mut t = unsafe { helpers::cxlf_first_thread(raw(task)) };
    // SAFETY: a non-NULL thread from the list stays alive until the guard
    // is dropped; `Task` is a transparent wrapper of `task_struct`.
    while let Some(thread) = unsafe { t.cast::<Task>().as_ref() } {
        if !f(thread) {
            break;
        }
        // SAFETY: `t` is a thread of the group, live under RCU (held).
        t = unsafe { helpers::cxlf_next_thread(t) };
    }
}
