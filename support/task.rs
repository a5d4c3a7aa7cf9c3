// SPDX-License-Identifier: GPL-2.0

//! What 6.12's `kernel::task::Task` lacks for a module that governs other
//! threads (upstream 6.13-6.15 add `Task::tgid_nr_ns`, `Task::uid`,
//! `Pid`/`PidNamespace` lookups; nothing upstream offers thread-group
//! iteration, a killable sleep to a deadline or the renice rule): the
//! calling CPU and the monotonic clock the hrtimers use.

use super::helpers;
use kernel::bindings;
use kernel::ffi::c_void;
use kernel::task::Task;
use kernel::types::ARef;

fn raw(task: &Task) -> *mut bindings::task_struct {
    // `Task` is a transparent wrapper of `task_struct`.
    core::ptr::from_ref(task).cast_mut().cast()
}

/// The CPU this runs on (stable only where preemption is off).
pub(crate) fn this_cpu() -> u32 {
    // SAFETY: no preconditions.
    unsafe { helpers::cxlf_this_cpu() }
}

/// How many CPU ids there can be (`nr_cpu_ids`): per-CPU arrays have
/// this many entries.
pub(crate) fn possible_cpus() -> usize {
    // SAFETY: the kernel sets `nr_cpu_ids` up before modules load and
    // never changes it afterwards.
    unsafe { bindings::nr_cpu_ids as usize }
}

/// Sleeps (killable, not interruptible) until `CLOCK_MONOTONIC` reaches
/// `until_ns` (give or take `slack_ns`), the task is woken, or a fatal
/// signal arrives. Process context only. Returns whether a fatal signal
/// is pending (the caller should stop waiting).
#[must_use]
pub(crate) fn sleep_until_killable(until_ns: u64, slack_ns: u64) -> bool {
    // SAFETY: process context (this function's contract, as for any
    // sleep); no other preconditions.
    unsafe { helpers::cxlf_sleep_until_killable(until_ns, slack_ns) }
}

/// The thread with id `nr` in the caller's pid namespace.
pub(crate) fn get_by_vpid(nr: i32) -> Option<ARef<Task>> {
    // SAFETY: no preconditions; returns a counted reference or NULL.
    let ptr = unsafe { helpers::cxlf_get_task_by_vpid(nr) };
    let ptr = core::ptr::NonNull::new(ptr.cast::<Task>())?;
    // SAFETY: the helper took a reference for us (`get_task_struct`).
    Some(unsafe { ARef::from_raw(ptr) })
}

/// Whether `task` is a user thread that is not exiting.
pub(crate) fn is_live_user(task: &Task) -> bool {
    // SAFETY: `task` is a live task.
    unsafe { helpers::cxlf_task_is_user(raw(task)) }
}

/// The on-CPU time the scheduler has charged `task` (`se.sum_exec_runtime`,
/// what `CLOCK_THREAD_CPUTIME_ID` reports, less a slice in progress). Up
/// to date for the task leaving the CPU in a `sched_switch` probe: the
/// scheduler charges it before the tracepoint.
pub(crate) fn exec_runtime_ns(task: &Task) -> u64 {
    // SAFETY: `task` is a live task, so its `se` field is valid to read;
    // the scheduler updates it under the runqueue lock, and a racing read
    // of an aligned u64 on a 64-bit machine is not torn (what `READ_ONCE`
    // in C gives).
    unsafe { core::ptr::addr_of!((*raw(task)).se.sum_exec_runtime).read_volatile() }
}

/// Whether `task` is on a CPU now (`task_struct::on_cpu`: a snapshot,
/// true from its switch-in to its switch-out).
pub(crate) fn is_on_cpu(task: &Task) -> bool {
    // SAFETY: `task` is a live task, so its `on_cpu` field is valid to
    // read; the scheduler writes it with `WRITE_ONCE`/release, and an
    // aligned int read is not torn.
    unsafe { core::ptr::addr_of!((*raw(task)).on_cpu).read_volatile() != 0 }
}

/// Whether `task` has started to exit.
pub(crate) fn is_exiting(task: &Task) -> bool {
    // SAFETY: `task` is a live task.
    unsafe { helpers::cxlf_task_exiting(raw(task)) }
}

/// Thread id and process id of `task` in the caller's pid namespace (0
/// where it is not visible).
pub(crate) fn vpid_tgid(task: &Task) -> (i32, i32) {
    // SAFETY: `task` is a live task.
    unsafe {
        (
            helpers::cxlf_task_vpid(raw(task)),
            helpers::cxlf_task_tgid(raw(task)),
        )
    }
}

/// Whether the caller may change `task`'s nice value (setpriority(2)'s
/// rule: same uid or euid, or `CAP_SYS_NICE` over its user namespace).
pub(crate) fn may_renice(task: &Task) -> bool {
    // SAFETY: `task` is a live task.
    unsafe { helpers::cxlf_may_renice(raw(task)) }
}

/// Calls `f` for each thread of `task`'s thread group under
/// `rcu_read_lock` (`f` must not sleep), until it returns `false`.
pub(crate) fn for_each_thread<F: FnMut(&Task) -> bool>(task: &Task, mut f: F) {
    /// # Safety
    ///
    /// `ctx` is a live `F`, `t` a live task.
    unsafe extern "C" fn trampoline<F: FnMut(&Task) -> bool>(
        ctx: *mut c_void,
        t: *mut bindings::task_struct,
    ) -> bool {
        // SAFETY: `ctx` is the `F` below, borrowed for the call; `t` is a
        // thread that RCU keeps alive during the callback.
        unsafe { (*ctx.cast::<F>())(&*t.cast::<Task>()) }
    }
    // SAFETY: `task` is live; `f` outlives the call, and the trampoline
    // matches its type.
    unsafe {
        helpers::cxlf_for_each_thread(
            raw(task),
            trampoline::<F>,
            core::ptr::from_mut(&mut f).cast::<c_void>(),
        )
    }
}
