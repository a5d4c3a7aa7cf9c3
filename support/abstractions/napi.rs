// SPDX-License-Identifier: GPL-2.0

//! NAPI: a driver's receive (and TX-completion) polling, scheduled from
//! its interrupt, run in softirq context with a budget, and found by the
//! stack's busy polling. Upstream has no Rust NAPI (the 2023 RFC series
//! proposed one with the net_device abstraction): a [`Napi`] owns a C
//! context on an interface and the [`Poll`] implementation's `Arc`;
//! dropping it disables and removes the context, after which no poll
//! runs. A `Napi` in an `Arc` is an [`irq::Handler`] that schedules it.
//!
//! The context lives in a [`KBox`] with the poll's data (`napi_struct` is
//! opaque to 6.12's bindings; `support::bindings` generates it), and the
//! poll trampoline finds them from the context by its offset.

use crate::bindings;
use crate::coherent::Coherent;
use crate::helpers;
use crate::irq;
use crate::netdev::Netdev;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::types::ForeignOwnable;
use kernel::types::Opaque;

/// What a NAPI context does when the stack polls it.
pub trait Poll: Send + Sync + 'static {
    /// Receives at most `budget` packets through `napi`; returns how
    /// many. Softirq context. When it returns less than `budget` it has
    /// called [`NapiPoll::complete_done`].
    fn poll(this: ArcBorrow<'_, Self>, napi: &NapiPoll<'_>, budget: u32) -> u32;
}

/// A NAPI context on an interface; disabled and removed on drop.
///
/// # Invariants
///
/// `ctx.napi` is added to an interface with [`poll_callback::<T>`] as its
/// poll, until `drop`; `ctx.data` is the foreign form of an `Arc<T>` this
/// value owns; `enabled` says whether the context is enabled.
pub struct Napi<T: Poll> {
    ctx: KBox<Context>,
    enabled: AtomicBool,
    _t: core::marker::PhantomData<Arc<T>>,
}

// SAFETY: the NAPI calls made through `raw` work from any thread (enable
// and disable from process context, which their callers keep to); `T`
// is `Send + Sync`.
unsafe impl<T: Poll> Send for Napi<T> {}
// SAFETY: as above.
unsafe impl<T: Poll> Sync for Napi<T> {}

/// A context and what its poll needs, at a fixed address (the net core
/// keeps a pointer to `napi` from `add` until removal).
struct Context {
    napi: Opaque<bindings::napi_struct>,
    data: *const c_void,
    rx_queue: u16,
}

impl Context {
    /// # Safety
    ///
    /// `napi` is the `napi` field of a live `Context`.
    unsafe fn of<'a>(napi: *mut bindings::napi_struct) -> &'a Context {
        // SAFETY: stepping back by the field's offset stays in the
        // `Context` (function contract); `Opaque` has its inner layout.
        unsafe {
            &*napi
                .cast::<u8>()
                .sub(core::mem::offset_of!(Context, napi))
                .cast::<Context>()
        }
    }
}

impl<T: Poll> Napi<T> {
    /// A disabled context on `dev` for `data`, whose frames arrive on
    /// RX queue `rx_queue` (process context).
    pub fn add(dev: &Netdev<'_>, data: Arc<T>, rx_queue: u16) -> Result<Self> {
        let mut ctx = KBox::new(
            Context {
                napi: Opaque::uninit(),
                data: core::ptr::null(),
                rx_queue,
            },
            GFP_KERNEL,
        )?;
        ctx.data = data.into_foreign();
        // SAFETY: `dev` is live (its invariant); the context is zeroed
        // here, as `netif_napi_add` expects, and stays at this address,
        // with `data`, until drop removes it.
        unsafe {
            ctx.napi.get().write_bytes(0, 1);
            bindings::netif_napi_add_weight(
                dev.as_raw(),
                ctx.napi.get(),
                Some(poll_callback::<T>),
                bindings::CXLF_NAPI_POLL_WEIGHT,
            )
        };
        // INVARIANT: added, disabled, with `data`.
        Ok(Napi {
            ctx,
            enabled: AtomicBool::new(false),
            _t: core::marker::PhantomData,
        })
    }

    /// The poll's data.
    pub fn data(&self) -> ArcBorrow<'_, T> {
        // SAFETY: `data` is a live `Arc<T>` while `self` is (invariant).
        unsafe { Arc::<T>::borrow(self.ctx.data) }
    }

    /// Records `irq` as the context's interrupt (what netlink's napi-get
    /// reports).
    pub fn set_irq(&self, irq: u32) {
        let irq = c_int::try_from(irq).unwrap_or(-1);
        // SAFETY: the context is added (invariant); the field is only a
        // number the net core reports (`netif_napi_set_irq` stores it).
        unsafe { (*self.ctx.napi.get()).irq = irq };
    }

    /// Lets the context be scheduled (once; process context).
    pub fn enable(&self) {
        if !self.enabled.swap(true, Ordering::AcqRel) {
            // SAFETY: added and disabled (invariant, `enabled` was false).
            unsafe { bindings::napi_enable(self.ctx.napi.get()) };
        }
    }

    /// Waits for a running poll and keeps the context from being
    /// scheduled (process context; may sleep).
    pub fn disable(&self) {
        if self.enabled.swap(false, Ordering::AcqRel) {
            // SAFETY: added and enabled (invariant, `enabled` was true).
            unsafe { bindings::napi_disable(self.ctx.napi.get()) };
        }
    }

    /// Schedules a poll (from any context).
    pub fn schedule(&self) {
        // SAFETY: the context is added (invariant).
        unsafe { schedule(self.ctx.napi.get()) };
    }

    /// Schedules a poll on every online CPU in turn (an IPI to each;
    /// process context, waits until every CPU ran it). Each CPU then runs
    /// its NET_RX softirq, which first frees the skbs that other CPUs
    /// deferred to it: a socket frees a received skb on the CPU that
    /// allocated it (`skb_attempt_defer_free`), at that CPU's next
    /// NET_RX, and sends no IPI for fewer than half of
    /// `net.core.skb_defer_max` (64) of them, so a driver whose pages
    /// come back by their reference count may otherwise wait
    /// indefinitely. A CPU finds nothing to do if the poll is scheduled
    /// (elsewhere) already: call again later.
    pub fn schedule_on_each_cpu(&self) {
        let napi = self.ctx.napi.get();
        // SAFETY: `schedule_here` gets this added context, which stays
        // added until the call returns: it waits for every CPU (`true`).
        // The online mask is the kernel's, live forever.
        unsafe {
            bindings::on_each_cpu_cond_mask(
                None,
                Some(schedule_here),
                napi.cast(),
                true,
                &raw const bindings::__cpu_online_mask,
            )
        };
    }
}

/// `napi_schedule` on the CPU this runs on, from `on_each_cpu`: in an
/// IPI, or locally with interrupts off (where [`schedule`]'s bottom-half
/// dance would warn).
///
/// # Safety
///
/// `info` is an added `napi_struct`.
unsafe extern "C" fn schedule_here(info: *mut c_void) {
    let napi = info.cast::<bindings::napi_struct>();
    // SAFETY: added (function contract); both run with interrupts off,
    // which they allow; the softirq raised runs at the interrupt's exit
    // or from ksoftirqd.
    unsafe {
        if bindings::napi_schedule_prep(napi) {
            bindings::__napi_schedule(napi);
        }
    }
}

/// `napi_schedule`, from any context: in process context with bottom
/// halves off, so that the NET_RX softirq runs when they come back on
/// rather than being left pending (which the idle path warns about).
///
/// # Safety
///
/// `napi` is an added context.
unsafe fn schedule(napi: *mut bindings::napi_struct) {
    // SAFETY: no preconditions.
    let in_irq = unsafe { helpers::cxlf_in_interrupt() };
    // SAFETY: `napi` is added (function contract); bottom halves are
    // disabled and enabled in pairs on this CPU.
    unsafe {
        if !in_irq {
            helpers::cxlf_local_bh_disable();
        }
        if bindings::napi_schedule_prep(napi) {
            bindings::__napi_schedule(napi);
        }
        if !in_irq {
            helpers::cxlf_local_bh_enable();
        }
    }
}

impl<T: Poll> Drop for Napi<T> {
    fn drop(&mut self) {
        self.disable();
        // SAFETY: added and now disabled (invariant); `netif_napi_del`
        // is `__netif_napi_del` and the grace period it waits for, after
        // which no poll runs or is referenced.
        unsafe {
            bindings::__netif_napi_del(self.ctx.napi.get());
            bindings::synchronize_net();
        }
        // SAFETY: no poll can use `data` any more; it came from
        // `into_foreign` in `add`.
        drop(unsafe { Arc::<T>::from_foreign(self.ctx.data) });
    }
}

impl<T: Poll> irq::Handler for Napi<T> {
    fn handle(this: ArcBorrow<'_, Self>) -> bool {
        this.schedule();
        true
    }
}

/// The context, during its poll.
///
/// # Invariants
///
/// `raw` is the `napi` field of a live [`Context`], being polled.
pub struct NapiPoll<'a> {
    raw: *mut bindings::napi_struct,
    _life: core::marker::PhantomData<&'a ()>,
}

impl NapiPoll<'_> {
    /// Hands the `len` bytes at `offset` of `mem` (a frame the device
    /// wrote) to the stack as a received Ethernet frame, through GRO.
    /// `ENOMEM` if no buffer.
    pub fn receive(&self, mem: &(impl Coherent + ?Sized), offset: usize, len: u32) -> Result {
        let w = mem.window();
        let src = w.range(offset, len as usize)?;
        // SAFETY: `raw` is being polled (invariant), in softirq context.
        let skb = unsafe { bindings::napi_alloc_skb(self.raw, len) };
        if skb.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `raw` is a live context (invariant); `skb` is a fresh
        // buffer this function owns until GRO takes it, with room for
        // `len` bytes (`skb_put` returns them); `src` has `len` readable
        // bytes for the window's life.
        unsafe {
            let ctx = Context::of(self.raw);
            let dst = bindings::skb_put(skb, len).cast::<u8>();
            core::ptr::copy_nonoverlapping(src.cast::<u8>(), dst, len as usize);
            helpers::cxlf_skb_record_rx_queue(skb, ctx.rx_queue);
            let dev = (*self.raw).dev;
            helpers::cxlf_skb_set_protocol(skb, bindings::eth_type_trans(skb, dev));
            bindings::napi_gro_receive(self.raw, skb);
        }
        Ok(())
    }

    /// Ends the poll after `work` frames (fewer than the budget); false
    /// if the context must keep polling (busy polling owns it).
    pub fn complete_done(&self, work: u32) -> bool {
        let work = c_int::try_from(work).unwrap_or(c_int::MAX);
        // SAFETY: `raw` is being polled (invariant).
        unsafe { bindings::napi_complete_done(self.raw, work) }
    }

    /// Schedules another poll.
    pub fn schedule(&self) {
        // SAFETY: `raw` is an added context (invariant).
        unsafe { schedule(self.raw) };
    }

    /// The context being polled.
    #[cfg(cxlf_support = "rxfrag")]
    pub(crate) fn as_raw(&self) -> *mut bindings::napi_struct {
        self.raw
    }

    /// The interface the context is on.
    pub fn netdev(&self) -> Netdev<'_> {
        // SAFETY: the interface outlives its contexts, and `self`.
        unsafe { Netdev::from_raw((*self.raw).dev) }
    }
}

/// # Safety
///
/// Called by the net core in softirq context for a context added by
/// [`Napi::<T>::add`].
unsafe extern "C" fn poll_callback<T: Poll>(
    napi: *mut bindings::napi_struct,
    budget: c_int,
) -> c_int {
    // SAFETY: the context is a live `Context` (function contract) whose
    // `data` is a live `Arc<T>` until the context is removed.
    let this = unsafe { Arc::<T>::borrow(Context::of(napi).data) };
    // INVARIANT: the context being polled.
    let poll = NapiPoll {
        raw: napi,
        _life: core::marker::PhantomData,
    };
    let budget = u32::try_from(budget).unwrap_or(0);
    let work = T::poll(this, &poll, budget).min(budget);
    c_int::try_from(work).unwrap_or(0)
}
