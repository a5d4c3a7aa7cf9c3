// SPDX-License-Identifier: GPL-2.0

//! Periodic work (upstream: `kernel::workqueue` with delayed work, 6.16):
//! `T::run` again and again on the high-priority system workqueue, or on
//! an ordered queue of its own for work that may wait long, each run
//! choosing the delay until the next, until the [`Periodic`] is dropped.

use super::helpers::{self, CxlfPeriodic};
use core::marker::PhantomData;
use kernel::ffi::{c_uint, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

pub(crate) trait PeriodicWork: Send + Sync {
    /// One run; returns the milliseconds until the next.
    fn run(&self) -> u32;
}

/// A running periodic work item; stops (and waits for a running `run` to
/// return) on drop.
///
/// # Invariants
///
/// `raw` is a live `cxlf_periodic` whose context is an `Arc<T>` turned
/// into a foreign pointer, owned by this value.
pub(crate) struct Periodic<T: PeriodicWork + 'static> {
    raw: *mut CxlfPeriodic,
    ctx: *const c_void,
    _t: PhantomData<Arc<T>>,
}

// SAFETY: the handle only stops the work, which C allows from any thread;
// `T` is `Send + Sync`.
unsafe impl<T: PeriodicWork> Send for Periodic<T> {}
// SAFETY: `&self` exposes nothing.
unsafe impl<T: PeriodicWork> Sync for Periodic<T> {}

impl<T: PeriodicWork + 'static> Periodic<T> {
    /// Runs `item.run()` in `first_ms`, then as often as it asks, on the
    /// system's high-priority workqueue.
    pub(crate) fn start(item: Arc<T>, first_ms: u32) -> Result<Self> {
        Self::start_on(item, first_ms, None)
    }

    /// As [`Periodic::start`], on an ordered high-priority workqueue of
    /// its own named `name` (destroyed on drop), for runs that may sleep
    /// long enough to hold up a shared worker.
    pub(crate) fn start_own_queue(
        item: Arc<T>,
        first_ms: u32,
        name: &'static CStr,
    ) -> Result<Self> {
        Self::start_on(item, first_ms, Some(name))
    }

    fn start_on(item: Arc<T>, first_ms: u32, name: Option<&'static CStr>) -> Result<Self> {
        let name = name.map_or(core::ptr::null(), |n| n.as_char_ptr());
        let ctx = item.into_foreign();
        let raw = helpers::register_err_ptr(
            "periodic work",
            // SAFETY: `run_trampoline::<T>` expects an `Arc<T>` context,
            // which `ctx` is; it stays valid until `cxlf_periodic_stop`
            // returns in `drop` (or, on failure, C did not keep it). `name`
            // is null or a static C string (C copies it).
            unsafe {
                helpers::cxlf_periodic_start(run_trampoline::<T>, ctx.cast_mut(), first_ms, name)
            },
        );
        match raw {
            // INVARIANT: a live `cxlf_periodic` whose context is `ctx`, an
            // `Arc<T>` given up by `into_foreign` above.
            Ok(raw) => Ok(Periodic {
                raw,
                ctx,
                _t: PhantomData,
            }),
            Err(e) => {
                // SAFETY: `ctx` came from `into_foreign` above and C did
                // not keep it.
                drop(unsafe { Arc::<T>::from_foreign(ctx) });
                Err(e)
            }
        }
    }
}

impl<T: PeriodicWork + 'static> Drop for Periodic<T> {
    fn drop(&mut self) {
        // SAFETY: `raw` is live (invariant); after this returns no run is
        // in progress or queued.
        unsafe { helpers::cxlf_periodic_stop(self.raw) };
        // SAFETY: the context came from `into_foreign` in `start`, and C no
        // longer uses it.
        drop(unsafe { Arc::<T>::from_foreign(self.ctx) });
    }
}

/// # Safety
///
/// Called by the C work function with `ctx`, the context of a live
/// [`Periodic<T>`].
unsafe extern "C" fn run_trampoline<T: PeriodicWork + 'static>(ctx: *mut c_void) -> c_uint {
    // SAFETY: `ctx` is a `Periodic<T>`'s context (function contract): an
    // `Arc<T>` that lives until the work is stopped, which waits for this
    // call to return.
    let item = unsafe { Arc::<T>::borrow(ctx) };
    item.run()
}
