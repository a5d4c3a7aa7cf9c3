// SPDX-License-Identifier: GPL-2.0

//! Probes on the scheduler's tracepoints (no upstream Rust counterpart:
//! upstream's `kernel::tracepoint` declares tracepoints, it does not
//! attach to the kernel's). [`SchedProbes`] receives `sched_switch`,
//! `sched_process_fork` and `sched_process_exit`; a [`SchedRegistration`]
//! attaches it to all three and, when dropped, detaches and waits until no
//! CPU can still be inside a probe.
//!
//! Probes run with preemption disabled (tracepoints call them under
//! `rcu_read_lock_sched`), and `switch` also with the runqueue lock held
//! and interrupts off: no sleeping, no allocation but atomic, and no lock
//! that anyone holds while waking a task.

use super::helpers;
use core::marker::PhantomData;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_uint, c_void};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::task::Task;
use kernel::types::ForeignOwnable;

/// What a module does on the scheduler's events. Each method has an empty
/// default.
pub(crate) trait SchedProbes: Send + Sync {
    /// `prev` leaves the CPU, `next` comes on it (`preempt`: `prev` was
    /// preempted rather than blocking).
    fn switch(&self, _preempt: bool, _prev: &Task, _next: &Task) {}
    /// `parent` created `child` (a thread or a process), not yet running.
    fn fork(&self, _parent: &Task, _child: &Task) {}
    /// `task` (the current one) is exiting.
    fn exit(&self, _task: &Task) {}
}

/// A task from a tracepoint's argument.
///
/// # Safety
///
/// `ptr` is a live task for `'a` (the scheduler passes tasks it holds for
/// the duration of the probe).
unsafe fn task<'a>(ptr: *mut bindings::task_struct) -> &'a Task {
    // SAFETY: `Task` is a transparent wrapper of `task_struct`, and `ptr`
    // is live for `'a` (this function's contract).
    unsafe { &*ptr.cast::<Task>() }
}

/// Recovers the probes from a tracepoint's data pointer.
///
/// # Safety
///
/// `data` is the pointer a live [`SchedRegistration<T>`] registered.
unsafe fn probes<'a, T: SchedProbes + 'static>(data: *mut c_void) -> ArcBorrow<'a, T> {
    // SAFETY: `data` came from `Arc::<T>::into_foreign`, and the
    // registration keeps it until every probe has returned (drop waits).
    unsafe { <Arc<T> as ForeignOwnable>::borrow(data) }
}

/// The `sched_switch` probe of `T`.
///
/// # Safety
///
/// Called by the tracepoint only: `data` is the data of a live
/// [`SchedRegistration<T>`] and the tasks are the tracepoint's arguments.
unsafe extern "C" fn switch_probe<T: SchedProbes + 'static>(
    data: *mut c_void,
    preempt: bool,
    prev: *mut bindings::task_struct,
    next: *mut bindings::task_struct,
    _prev_state: c_uint,
) {
    // SAFETY: registered with this registration's data; the scheduler
    // holds both tasks during the switch.
    unsafe { probes::<T>(data).switch(preempt, task(prev), task(next)) }
}

/// The `sched_process_fork` probe of `T`.
///
/// # Safety
///
/// Called by the tracepoint only: `data` is the data of a live
/// [`SchedRegistration<T>`] and the tasks are the tracepoint's arguments.
unsafe extern "C" fn fork_probe<T: SchedProbes + 'static>(
    data: *mut c_void,
    parent: *mut bindings::task_struct,
    child: *mut bindings::task_struct,
) {
    // SAFETY: as in `switch_probe`; the parent is current and the child is
    // held by the fork in progress.
    unsafe { probes::<T>(data).fork(task(parent), task(child)) }
}

/// The `sched_process_exit` probe of `T`.
///
/// # Safety
///
/// Called by the tracepoint only: `data` is the data of a live
/// [`SchedRegistration<T>`] and the tasks are the tracepoint's arguments.
unsafe extern "C" fn exit_probe<T: SchedProbes + 'static>(
    data: *mut c_void,
    p: *mut bindings::task_struct,
) {
    // SAFETY: as in `switch_probe`; `p` is the current task.
    unsafe { probes::<T>(data).exit(task(p)) }
}

/// The three tracepoints, with their probe trampolines for `T`.
fn points<T: SchedProbes + 'static>() -> [(&'static CStr, *mut c_void); 3] {
    [
        (c_str!("sched_switch"), switch_probe::<T> as *mut c_void),
        (c_str!("sched_process_fork"), fork_probe::<T> as *mut c_void),
        (c_str!("sched_process_exit"), exit_probe::<T> as *mut c_void),
    ]
}

/// Probes attached to the scheduler's tracepoints.
///
/// # Invariants
///
/// Each `tps[i]` is the tracepoint `points::<T>()[i]` names, with that
/// probe registered on it and `data` as its data; `data` is an `Arc<T>`
/// given up by `into_foreign`, owned by this value.
pub(crate) struct SchedRegistration<T: SchedProbes + 'static> {
    tps: [*mut c_void; 3],
    data: *const c_void,
    _t: PhantomData<Arc<T>>,
}

// SAFETY: the registration is only dropped, which C allows from any
// process context; `T` is `Send + Sync`.
unsafe impl<T: SchedProbes> Send for SchedRegistration<T> {}
// SAFETY: `&self` exposes nothing.
unsafe impl<T: SchedProbes> Sync for SchedRegistration<T> {}

impl<T: SchedProbes + 'static> SchedRegistration<T> {
    /// Attaches `probes` to the three tracepoints (all or none).
    pub(crate) fn register(probes: Arc<T>) -> Result<Self> {
        let data = probes.into_foreign();
        let mut tps = [core::ptr::null_mut(); 3];
        for (i, (name, probe)) in points::<T>().into_iter().enumerate() {
            let registered = helpers::register_err_ptr(
                "scheduler tracepoint probe",
                // SAFETY: `name` is NUL-terminated; `probe` has the
                // signature of that tracepoint; `data` stays valid until
                // the probe is unregistered and waited for.
                unsafe {
                    helpers::cxlf_tracepoint_register(name.as_char_ptr(), probe, data.cast_mut())
                },
            );
            match registered {
                Ok(tp) => tps[i] = tp,
                Err(e) => {
                    // SAFETY: `tps[..i]` are registered with `data`.
                    unsafe { unregister::<T>(&tps[..i], data) };
                    return Err(e);
                }
            }
        }
        // INVARIANT: all three registered with `data`, which came from
        // `into_foreign` above.
        Ok(SchedRegistration {
            tps,
            data,
            _t: PhantomData,
        })
    }
}

/// Unregisters the probes of `points::<T>()` from `tps`, waits until none
/// can be running, and gives `data` back to its `Arc`.
///
/// # Safety
///
/// `tps` are the first tracepoints of `points::<T>()`, each with its probe
/// registered with `data`, an `Arc<T>` given up by `into_foreign` that
/// nothing else will reclaim.
unsafe fn unregister<T: SchedProbes + 'static>(tps: &[*mut c_void], data: *const c_void) {
    for (tp, (_, probe)) in tps.iter().zip(points::<T>()) {
        // SAFETY: registered with this probe and data (contract).
        unsafe { helpers::cxlf_tracepoint_unregister(*tp, probe, data.cast_mut()) };
    }
    // SAFETY: no preconditions; waits for every CPU to leave the probes.
    unsafe { helpers::cxlf_tracepoint_sync() };
    // SAFETY: `data` came from `into_foreign` and no probe can use it any
    // more (synchronised above).
    drop(unsafe { Arc::<T>::from_foreign(data) });
}

impl<T: SchedProbes + 'static> Drop for SchedRegistration<T> {
    fn drop(&mut self) {
        // SAFETY: by the type invariant, all three are registered with
        // `data`, which only this value owns.
        unsafe { unregister::<T>(&self.tps, self.data) };
    }
}
