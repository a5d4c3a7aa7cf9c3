// SPDX-License-Identifier: GPL-2.0

//! Interrupt handlers, shaped like upstream's `kernel::irq::Registration`
//! (6.17): a [`Handler`] in an [`Arc`] is called in hard interrupt
//! context for one IRQ while the [`Registration`] lives; dropping it
//! frees the IRQ (waiting for a running handler) before the handler's
//! reference goes.

use kernel::bindings;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{Arc, ArcBorrow};
use kernel::types::ForeignOwnable;

/// What an interrupt does. Hard interrupt context: no sleeping, no
/// allocation but atomic.
pub trait Handler: Send + Sync + 'static {
    /// Whether the interrupt was this handler's.
    fn handle(this: ArcBorrow<'_, Self>) -> bool;
}

/// A requested IRQ; freed on drop.
///
/// # Invariants
///
/// `irq` was requested with `data`, the foreign form of an `Arc<T>` this
/// value owns, as its `dev_id`.
pub struct Registration<T: Handler> {
    irq: u32,
    data: *const c_void,
    _t: core::marker::PhantomData<Arc<T>>,
}

// SAFETY: freeing an IRQ works from any thread; `T` is `Send + Sync`.
unsafe impl<T: Handler> Send for Registration<T> {}
// SAFETY: `&Registration` gives no access to `T`.
unsafe impl<T: Handler> Sync for Registration<T> {}

impl<T: Handler> Registration<T> {
    /// Requests `irq` (not shared) for `handler`, named `name` in
    /// `/proc/interrupts`.
    pub fn request(irq: u32, name: &'static CStr, handler: Arc<T>) -> Result<Self> {
        let data = handler.into_foreign();
        // SAFETY: `name` is 'static, as the IRQ keeps the pointer; `data`
        // stays valid until `free_irq` in drop (or below, on failure).
        let err = unsafe {
            bindings::request_threaded_irq(
                irq,
                Some(handle_callback::<T>),
                None,
                0,
                name.as_char_ptr(),
                data.cast_mut(),
            )
        };
        if err != 0 {
            // SAFETY: not requested: `data` is ours again.
            drop(unsafe { Arc::<T>::from_foreign(data) });
            return Err(Error::from_errno(err));
        }
        // INVARIANT: requested with `data`.
        Ok(Registration {
            irq,
            data,
            _t: core::marker::PhantomData,
        })
    }
}

impl<T: Handler> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: requested with `data` (invariant); `free_irq` waits for a
        // running handler, after which none runs.
        unsafe { bindings::free_irq(self.irq, self.data.cast_mut()) };
        // SAFETY: no handler uses `data` any more; it came from
        // `into_foreign`.
        drop(unsafe { Arc::<T>::from_foreign(self.data) });
    }
}

/// # Safety
///
/// Called by the IRQ core for an IRQ requested by [`Registration::request`]
/// for `T`, with `data` its live `Arc<T>`.
unsafe extern "C" fn handle_callback<T: Handler>(_irq: c_int, data: *mut c_void) -> u32 {
    // SAFETY: `data` is a live `Arc<T>`'s foreign form until `free_irq`
    // returns, which waits for this call (function contract).
    let this = unsafe { Arc::<T>::borrow(data) };
    if T::handle(this) {
        bindings::irqreturn_IRQ_HANDLED
    } else {
        bindings::irqreturn_IRQ_NONE
    }
}
