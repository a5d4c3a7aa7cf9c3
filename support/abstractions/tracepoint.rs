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

use crate::bindings;
use crate::error;
use crate::helpers;
use core::marker::PhantomData;
use kernel::c_str;
use kernel::error::to_result;
use kernel::ffi::{c_uint, c_void};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::task::Task;
use kernel::types::ForeignOwnable;

/// What a module does on the scheduler's events. Each method has an empty
/// default.
pub trait SchedProbes: Send + Sync {
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

/// A lookup of one tracepoint by name (`for_each_kernel_tracepoint`'s
/// private data).
struct Lookup<'a> {
    name: &'a CStr,
    found: *mut bindings::tracepoint,
}

/// Records `tp` if it is the first tracepoint named as `priv_` asks.
///
/// # Safety
///
/// Called by `for_each_kernel_tracepoint` with a live tracepoint and the
/// `Lookup` that [`find`] passed.
unsafe extern "C" fn match_name(tp: *mut bindings::tracepoint, priv_: *mut c_void) {
    // SAFETY: `priv_` is the `Lookup` of `find`, borrowed for the walk
    // (function contract), and nothing else uses it meanwhile.
    let lookup = unsafe { &mut *priv_.cast::<Lookup<'_>>() };
    if !lookup.found.is_null() {
        return;
    }
    // SAFETY: `tp` is a live tracepoint (function contract); its name is
    // a NUL-terminated string in the kernel image.
    let name = unsafe { CStr::from_char_ptr((*tp).name) };
    if name.as_bytes() == lookup.name.as_bytes() {
        lookup.found = tp;
    }
}

/// The kernel's tracepoint named `name`. The scheduler's tracepoints are
/// not exported as symbols: `for_each_kernel_tracepoint` is the way to
/// reach them.
fn find(name: &CStr) -> Result<*mut bindings::tracepoint> {
    let mut lookup = Lookup {
        name,
        found: core::ptr::null_mut(),
    };
    // SAFETY: `match_name` takes a `Lookup`, which `lookup` is and which
    // outlives the walk.
    unsafe {
        bindings::for_each_kernel_tracepoint(
            Some(match_name),
            core::ptr::from_mut(&mut lookup).cast::<c_void>(),
        )
    };
    if lookup.found.is_null() {
        return Err(ENOENT);
    }
    Ok(lookup.found)
}

/// Probes attached to the scheduler's tracepoints.
///
/// # Invariants
///
/// Each `tps[i]` is the tracepoint `points::<T>()[i]` names, with that
/// probe registered on it and `data` as its data; `data` is an `Arc<T>`
/// given up by `into_foreign`, owned by this value.
pub struct SchedRegistration<T: SchedProbes + 'static> {
    tps: [*mut bindings::tracepoint; 3],
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
    pub fn register(probes: Arc<T>) -> Result<Self> {
        let data = probes.into_foreign();
        let mut tps = [core::ptr::null_mut(); 3];
        for (i, (name, probe)) in points::<T>().into_iter().enumerate() {
            let registered = error::register_with("scheduler tracepoint probe", || {
                let tp = find(name)?;
                // SAFETY: `tp` is a live tracepoint of the kernel's;
                // `probe` has the signature of that tracepoint; `data`
                // stays valid until the probe is unregistered and waited
                // for.
                to_result(unsafe {
                    bindings::tracepoint_probe_register(tp, probe, data.cast_mut())
                })?;
                Ok(tp)
            });
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
unsafe fn unregister<T: SchedProbes + 'static>(
    tps: &[*mut bindings::tracepoint],
    data: *const c_void,
) {
    for (tp, (_, probe)) in tps.iter().zip(points::<T>()) {
        // SAFETY: registered with this probe and data (contract).
        unsafe { helpers::cxlf_tracepoint_unregister(*tp, probe, data.cast_mut()) };
    }
    // SAFETY: no preconditions; waits for every CPU to leave the probes.
    unsafe { helpers::cxlf_tracepoint_synchronize_unregister() };
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
