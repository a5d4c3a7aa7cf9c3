// SPDX-License-Identifier: GPL-2.0

//! Periodic work (upstream: `kernel::workqueue` with delayed work, 6.16):
//! `T::run` again and again on the high-priority system workqueue, or on
//! an ordered queue of its own for work that may wait long, each run
//! choosing the delay until the next, until the [`Periodic`] is dropped.

use crate::bindings;
use crate::error;
use crate::helpers;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::c_str;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::time::msecs_to_jiffies;
use kernel::types::Opaque;

/// Work run every period by [`Periodic`].
pub trait PeriodicWork: Send + Sync {
    /// One run; returns the milliseconds until the next.
    fn run(&self) -> u32;
}

/// A running periodic work item; stops (and waits for a running `run` to
/// return) on drop.
///
/// # Invariants
///
/// `inner.dwork` is initialised with [`run_work::<T>`] and queued on
/// `inner.wq` (or running, and then queueing itself again unless
/// `stopping` is set) until `drop` cancels it; `inner` stays at its
/// address until then. `inner.wq` is the system's high-priority queue, or
/// (`own_wq`) a queue this value allocated and destroys.
pub struct Periodic<T: PeriodicWork + 'static> {
    inner: KBox<Inner<T>>,
}

/// The delayed work and what it runs.
struct Inner<T: PeriodicWork + 'static> {
    dwork: Opaque<bindings::delayed_work>,
    item: Arc<T>,
    /// The system's high-priority queue, or one of the work's own.
    wq: *mut bindings::workqueue_struct,
    own_wq: bool,
    stopping: AtomicBool,
}

// SAFETY: the handle only stops the work, which the workqueue allows from
// any thread; `T` is `Send + Sync`.
unsafe impl<T: PeriodicWork> Send for Periodic<T> {}
// SAFETY: `&self` exposes nothing.
unsafe impl<T: PeriodicWork> Sync for Periodic<T> {}

impl<T: PeriodicWork + 'static> Periodic<T> {
    /// Runs `item.run()` in `first_ms`, then as often as it asks, on the
    /// system's high-priority workqueue.
    pub fn start(item: Arc<T>, first_ms: u32) -> Result<Self> {
        Self::start_on(item, first_ms, None)
    }

    /// As [`Periodic::start`], on an ordered high-priority workqueue of
    /// its own named `name` (destroyed on drop), for runs that may sleep
    /// long enough to hold up a shared worker.
    pub fn start_own_queue(item: Arc<T>, first_ms: u32, name: &'static CStr) -> Result<Self> {
        Self::start_on(item, first_ms, Some(name))
    }

    fn start_on(item: Arc<T>, first_ms: u32, name: Option<&'static CStr>) -> Result<Self> {
        error::register_with("periodic work", || {
            let mut inner = KBox::new(
                Inner {
                    dwork: Opaque::uninit(),
                    item,
                    wq: core::ptr::null_mut(),
                    own_wq: false,
                    stopping: AtomicBool::new(false),
                },
                GFP_KERNEL,
            )?;
            match name {
                // SAFETY: the system queues are set up before modules load
                // and never change.
                None => inner.wq = unsafe { bindings::system_highpri_wq },
                Some(name) => {
                    // `alloc_ordered_workqueue("%s", WQ_HIGHPRI, name)`, a
                    // macro.
                    let flags = bindings::wq_flags_WQ_UNBOUND
                        | bindings::wq_flags___WQ_ORDERED
                        | bindings::wq_flags_WQ_HIGHPRI;
                    // SAFETY: the format takes one string, `name`, which
                    // is NUL-terminated (and copied).
                    let wq = unsafe {
                        bindings::alloc_workqueue(
                            c_str!("%s").as_char_ptr(),
                            flags,
                            1,
                            name.as_char_ptr(),
                        )
                    };
                    if wq.is_null() {
                        return Err(ENOMEM);
                    }
                    inner.wq = wq;
                    inner.own_wq = true;
                }
            }
            let dwork = inner.dwork.get();
            // SAFETY: `dwork` is not queued yet and lives in `inner`, which
            // the `Periodic` keeps at its address until the work is
            // cancelled; `run_work::<T>` expects an `Inner<T>` around it.
            unsafe { helpers::cxlf_init_delayed_work(dwork, Some(run_work::<T>)) };
            // SAFETY: `dwork` is initialised above and `wq` is live.
            unsafe { queue(inner.wq, dwork, msecs_to_jiffies(first_ms)) };
            // INVARIANT: the work is initialised with `run_work::<T>` and
            // queued on `wq`, which is the system's or this value's own.
            Ok(Periodic { inner })
        })
    }
}

/// `queue_delayed_work` (a static inline).
///
/// # Safety
///
/// `dwork` is an initialised delayed work that stays live until it is
/// cancelled; `wq` is a live workqueue.
unsafe fn queue(
    wq: *mut bindings::workqueue_struct,
    dwork: *mut bindings::delayed_work,
    delay: kernel::time::Jiffies,
) {
    // SAFETY: as the function's contract.
    unsafe {
        bindings::queue_delayed_work_on(
            bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int,
            wq,
            dwork,
            delay,
        )
    };
}

impl<T: PeriodicWork + 'static> Drop for Periodic<T> {
    fn drop(&mut self) {
        let inner = &*self.inner;
        inner.stopping.store(true, Ordering::Relaxed);
        // Returns after the last run has finished; a run that re-queues
        // the work is what `cancel_delayed_work_sync` is documented to
        // handle, and `stopping` ends the re-queueing.
        // SAFETY: the work is initialised (invariant).
        unsafe { bindings::cancel_delayed_work_sync(inner.dwork.get()) };
        if inner.own_wq {
            // SAFETY: the queue is this value's own (invariant) and empty.
            unsafe { bindings::destroy_workqueue(inner.wq) };
        }
        // `inner`, with its reference to the item, goes after this.
    }
}

/// The work function of a [`Periodic<T>`].
///
/// # Safety
///
/// Called by the workqueue with the `work` of the `dwork` of a live
/// `Inner<T>` (the `Periodic` cancels the work before it lets go).
unsafe extern "C" fn run_work<T: PeriodicWork + 'static>(work: *mut bindings::work_struct) {
    // SAFETY: `work` is the `work` field of the `dwork` of an `Inner<T>`
    // (`to_delayed_work`, then `container_of`), live while this runs
    // (function contract).
    let inner = unsafe {
        let dwork = kernel::container_of!(work, bindings::delayed_work, work);
        &*kernel::container_of!(dwork, Inner<T>, dwork)
    };
    let next_ms = inner.item.run();
    if !inner.stopping.load(Ordering::Relaxed) {
        // SAFETY: the work is initialised and live (function contract),
        // and its queue lives until after the work is cancelled.
        unsafe {
            queue(
                inner.wq,
                inner.dwork.get(),
                msecs_to_jiffies(next_ms).max(1),
            )
        };
    }
}
