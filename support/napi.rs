// SPDX-License-Identifier: GPL-2.0

//! NAPI: a driver's receive (and TX-completion) polling, scheduled from
//! its interrupt, run in softirq context with a budget, and found by the
//! stack's busy polling. Upstream has no Rust NAPI (the 2023 RFC series
//! proposed one with the net_device abstraction): a [`Napi`] owns a C
//! context on an interface and the [`Poll`] implementation's `Arc`;
//! dropping it disables and removes the context, after which no poll
//! runs. A `Napi` in an `Arc` is an [`irq::Handler`] that schedules it.
//!
//! `napi_struct` is opaque to 6.12's bindings: the context lives in a C
//! allocation (`helpers.c`), with the poll trampoline.

use super::coherent::Coherent;
use super::helpers;
use super::irq;
use super::netdev::Netdev;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::types::ForeignOwnable;

/// What a NAPI context does when the stack polls it.
pub(crate) trait Poll: Send + Sync + 'static {
    /// Receives at most `budget` packets through `napi`; returns how
    /// many. Softirq context. When it returns less than `budget` it has
    /// called [`NapiPoll::complete_done`].
    fn poll(this: ArcBorrow<'_, Self>, napi: &NapiPoll<'_>, budget: u32) -> u32;
}

/// A NAPI context on an interface; disabled and removed on drop.
///
/// # Invariants
///
/// `raw` is a live context from `cxlf_napi_add` whose poll gets `data`,
/// the foreign form of an `Arc<T>` this value owns; `enabled` says
/// whether it is enabled.
pub(crate) struct Napi<T: Poll> {
    raw: *mut bindings::napi_struct,
    data: *const c_void,
    enabled: AtomicBool,
    _t: core::marker::PhantomData<Arc<T>>,
}

// SAFETY: the NAPI calls made through `raw` work from any thread (enable
// and disable from process context, which their callers keep to); `T`
// is `Send + Sync`.
unsafe impl<T: Poll> Send for Napi<T> {}
// SAFETY: as above.
unsafe impl<T: Poll> Sync for Napi<T> {}

impl<T: Poll> Napi<T> {
    /// A disabled context on `dev` for `data`, whose frames arrive on
    /// RX queue `rx_queue` (process context).
    pub(crate) fn add(dev: &Netdev<'_>, data: Arc<T>, rx_queue: u16) -> Result<Self> {
        let data = data.into_foreign();
        // SAFETY: `dev` is live (its invariant); `data` stays valid until
        // the context is removed in drop, or below on failure.
        let raw = unsafe {
            helpers::cxlf_napi_add(dev.as_raw(), poll_callback::<T>, data.cast_mut(), rx_queue)
        };
        if raw.is_null() {
            // SAFETY: not kept by C: ours again.
            drop(unsafe { Arc::<T>::from_foreign(data) });
            return Err(ENOMEM);
        }
        // INVARIANT: a live, disabled context with `data`.
        Ok(Napi {
            raw,
            data,
            enabled: AtomicBool::new(false),
            _t: core::marker::PhantomData,
        })
    }

    /// The poll's data.
    pub(crate) fn data(&self) -> ArcBorrow<'_, T> {
        // SAFETY: `data` is a live `Arc<T>` while `self` is (invariant).
        unsafe { Arc::<T>::borrow(self.data) }
    }

    /// Lets the context be scheduled (once; process context).
    /// Records `irq` as the context's interrupt (what netlink's napi-get
    /// reports).
    pub(crate) fn set_irq(&self, irq: u32) {
        let irq = c_int::try_from(irq).unwrap_or(-1);
        // SAFETY: `raw` is live (invariant); C only stores the number.
        unsafe { helpers::cxlf_napi_set_irq(self.raw, irq) };
    }

    pub(crate) fn enable(&self) {
        if !self.enabled.swap(true, Ordering::AcqRel) {
            // SAFETY: live and disabled (invariant, `enabled` was false).
            unsafe { helpers::cxlf_napi_enable(self.raw) };
        }
    }

    /// Waits for a running poll and keeps the context from being
    /// scheduled (process context; may sleep).
    pub(crate) fn disable(&self) {
        if self.enabled.swap(false, Ordering::AcqRel) {
            // SAFETY: live and enabled (invariant, `enabled` was true).
            unsafe { helpers::cxlf_napi_disable(self.raw) };
        }
    }

    /// Schedules a poll (any context; nothing while disabled).
    pub(crate) fn schedule(&self) {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_napi_schedule(self.raw) };
    }
}

impl<T: Poll> Drop for Napi<T> {
    fn drop(&mut self) {
        self.disable();
        // SAFETY: live and disabled; removed and freed once, here (after
        // an RCU grace period, so no poll or busy-poller uses it).
        unsafe { helpers::cxlf_napi_del(self.raw) };
        // SAFETY: no poll can use `data` any more; it came from
        // `into_foreign` in `add`.
        drop(unsafe { Arc::<T>::from_foreign(self.data) });
    }
}

/// An interrupt that schedules the context's poll.
impl<T: Poll> irq::Handler for Napi<T> {
    fn handle(this: ArcBorrow<'_, Self>) -> bool {
        this.schedule();
        true
    }
}

/// The context a poll runs in.
///
/// # Invariants
///
/// `raw` is the live context being polled, for `'a`.
pub(crate) struct NapiPoll<'a> {
    raw: *mut bindings::napi_struct,
    _life: core::marker::PhantomData<&'a ()>,
}

impl NapiPoll<'_> {
    /// Hands the `len`-byte Ethernet frame at `offset` in `mem` to the
    /// stack (copied into a new buffer, through GRO); `ENOMEM` if no
    /// buffer could be had (the caller counts a drop).
    pub(crate) fn receive(
        &self,
        mem: &(impl Coherent + ?Sized),
        offset: usize,
        len: u32,
    ) -> Result {
        let w = mem.window();
        let src = w.range(offset, len as usize)?;
        // SAFETY: polling (invariant), so in the context's softirq; `src`
        // has `len` readable bytes (checked by `range`) for the window's
        // life.
        to_result(unsafe { helpers::cxlf_napi_receive(self.raw, src.cast(), len) })
    }

    /// Ends the poll having done `work` (less than the budget); whether
    /// the driver should ask for interrupts again (false: the stack polls
    /// on, busy polling or a reschedule).
    pub(crate) fn complete_done(&self, work: u32) -> bool {
        let work = c_int::try_from(work).unwrap_or(c_int::MAX);
        // SAFETY: the context being polled (invariant).
        unsafe { helpers::cxlf_napi_complete_done(self.raw, work) }
    }

    /// Polls again soon (work arrived after `complete_done`).
    pub(crate) fn schedule(&self) {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_napi_schedule(self.raw) };
    }

    /// The interface polled for (its TX queues, from the poll).
    pub(crate) fn netdev(&self) -> Netdev<'_> {
        // SAFETY: a context's interface outlives it; the poll runs on a
        // live context (invariant).
        unsafe { Netdev::from_raw(helpers::cxlf_napi_dev(self.raw)) }
    }
}

/// # Safety
///
/// Called by the net core (through `helpers.c`) for a context added by
/// [`Napi::add`] for `T`, whose data is a live `Arc<T>`.
unsafe extern "C" fn poll_callback<T: Poll>(
    data: *mut c_void,
    napi: *mut bindings::napi_struct,
    budget: c_int,
) -> c_int {
    // SAFETY: the context's data is a live `Arc<T>` until the context is
    // removed, which waits for polls (function contract).
    let this = unsafe { Arc::<T>::borrow(data) };
    // INVARIANT: the live context being polled.
    let poll = NapiPoll {
        raw: napi,
        _life: core::marker::PhantomData,
    };
    let budget = u32::try_from(budget).unwrap_or(0);
    let work = T::poll(this, &poll, budget).min(budget);
    // At most the budget, which came from a c_int.
    c_int::try_from(work).unwrap_or(0)
}
