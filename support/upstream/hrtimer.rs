// SPDX-License-Identifier: GPL-2.0

//! High-resolution timers (upstream: `kernel::time::hrtimer`, 6.15): an
//! [`HrTimer`] embedded in a pinned, [`Arc`]-owned structure, started
//! through the `Arc` ([`HrTimerPointer::start`]) and cancelled through the
//! handle that returns ([`ArcHrTimerHandle`], which cancels on drop). The
//! callback ([`HrTimerCallback::run`]) runs in hard interrupt context.
//!
//! A subset of upstream: `Arc` is the only pointer type, the clock is
//! `CLOCK_MONOTONIC`, expiry times are relative, and there is
//! [`ArcHrTimerHandle::try_cancel`] for callers that must not wait for a
//! running callback (the scheduler's tracepoints). A callback that returns
//! [`HrTimerRestart::Restart`] must have moved the expiry forward
//! ([`HrTimer::forward_now`]), as in C.

use core::marker::PhantomData;
use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::types::Opaque;

/// Whether a callback's timer runs again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HrTimerRestart {
    /// Do not restart the timer.
    NoRestart,
    /// Restart the timer (its expiry was moved forward).
    Restart,
}

impl HrTimerRestart {
    fn into_c(self) -> bindings::hrtimer_restart {
        match self {
            HrTimerRestart::NoRestart => bindings::hrtimer_restart_HRTIMER_NORESTART,
            HrTimerRestart::Restart => bindings::hrtimer_restart_HRTIMER_RESTART,
        }
    }
}

/// How the timer is armed: relative to now, on any CPU (soft callbacks are
/// not offered), or pinned to the CPU that starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HrTimerMode {
    /// Expiry relative to now.
    Relative,
    /// Fires on the CPU that started it: a timer started and cancelled
    /// on one CPU with interrupts off never runs concurrently with either.
    RelativePinned,
}

impl HrTimerMode {
    fn into_c(self) -> bindings::hrtimer_mode {
        match self {
            HrTimerMode::Relative => bindings::hrtimer_mode_HRTIMER_MODE_REL_HARD,
            HrTimerMode::RelativePinned => bindings::hrtimer_mode_HRTIMER_MODE_REL_PINNED_HARD,
        }
    }
}

/// A timer inside a `T`.
///
/// # Invariants
///
/// `timer` was set up by `hrtimer_init` with `mode` and `run::<T>` as its
/// function, and is never moved (it is pinned).
#[pin_data]
pub struct HrTimer<T> {
    #[pin]
    timer: Opaque<bindings::hrtimer>,
    mode: HrTimerMode,
    _t: PhantomData<T>,
}

// SAFETY: the C timer may be started and cancelled from any thread; its
// callback only reaches `T` through `T: Sync` (see `run`).
unsafe impl<T> Send for HrTimer<T> {}
// SAFETY: as above; `&HrTimer` only arms, cancels or forwards it, which C
// serialises with the timer base lock.
unsafe impl<T> Sync for HrTimer<T> {}

impl<T: HrTimerCallback + HasHrTimer<T>> HrTimer<T> {
    /// A timer not yet started, calling `T::run` when it fires.
    pub fn new(mode: HrTimerMode) -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: set up here with `mode` and `run::<T>`.
            timer <- Opaque::ffi_init(move |slot: *mut bindings::hrtimer| {
                // SAFETY: `slot` is valid for writes and will stay pinned;
                // `hrtimer_init` initialises every field.
                unsafe {
                    bindings::hrtimer_init(slot, bindings::CLOCK_MONOTONIC as _, mode.into_c());
                    (*slot).function = Some(run::<T>);
                }
            }),
            mode,
            _t: PhantomData,
        })
    }
}

impl<T> HrTimer<T> {
    fn raw(&self) -> *mut bindings::hrtimer {
        self.timer.get()
    }

    /// Moves the expiry forward by whole `interval_ns` until it is in the
    /// future; returns how many intervals it skipped. For a callback that
    /// returns [`HrTimerRestart::Restart`] (C allows this only there, or
    /// while the timer is not armed).
    pub fn forward_now(&self, interval_ns: u64) -> u64 {
        let interval = i64::try_from(interval_ns).unwrap_or(i64::MAX);
        // SAFETY: `raw()` is an initialised timer (type invariant);
        // `ktime_get` has no preconditions.
        unsafe { bindings::hrtimer_forward(self.raw(), bindings::ktime_get(), interval) }
    }

    /// Whether the timer is armed or its callback is running.
    pub fn is_active(&self) -> bool {
        // SAFETY: `raw()` is an initialised timer (type invariant).
        unsafe { bindings::hrtimer_active(self.raw()) }
    }
}

/// Implemented by types that embed an [`HrTimer`] for themselves; use
/// [`impl_has_hr_timer!`](crate::impl_has_hr_timer).
///
/// # Safety
///
/// `OFFSET` is the byte offset of an `HrTimer<T>` field inside `T`.
pub unsafe trait HasHrTimer<T> {
    /// Byte offset of the `HrTimer<T>` field inside `T`.
    const OFFSET: usize;

    /// The timer of `this`.
    fn hr_timer(this: &T) -> &HrTimer<T> {
        let base = core::ptr::from_ref(this).cast::<u8>();
        // SAFETY: by the trait's contract the field lives `OFFSET` bytes
        // into `*this`, so the pointer is in bounds and valid for the
        // lifetime of `this`.
        unsafe { &*base.add(Self::OFFSET).cast::<HrTimer<T>>() }
    }
}

/// Implements [`HasHrTimer`] for a struct from the name of its timer field.
#[macro_export]
macro_rules! impl_has_hr_timer {
    (impl HasHrTimer<Self> for $ty:ty { self.$field:ident }) => {
        // SAFETY: `OFFSET` is computed from the field itself.
        unsafe impl $crate::hrtimer::HasHrTimer<$ty> for $ty {
            const OFFSET: usize = ::core::mem::offset_of!($ty, $field);
        }
    };
}

/// The callback of a timer embedded in `Self`.
pub trait HrTimerCallback: Send + Sync + Sized {
    /// Runs in hard interrupt context: no sleeping, no sleeping locks.
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart;
}

/// Pointers through which a timer is started (upstream has `Arc`,
/// `Pin<Box>` and `Pin<&>`; here `Arc` only).
pub trait HrTimerPointer: Sized {
    /// What starting the timer returns, to cancel it with.
    type TimerHandle;
    /// Arms the timer to fire in `expires_ns`.
    fn start(self, expires_ns: u64) -> Self::TimerHandle;
}

/// A started timer; keeps its `T` alive and cancels the timer (waiting for
/// a running callback) when dropped.
///
/// # Invariants
///
/// `inner`'s timer is armed only through handles (`start`, `restart`),
/// each of which keeps `inner` alive and cancels the timer when dropped:
/// the timer's callback never outlives the last handle.
pub struct ArcHrTimerHandle<T: HasHrTimer<T>> {
    inner: Arc<T>,
}

impl<T: HasHrTimer<T>> ArcHrTimerHandle<T> {
    /// Cancels the timer, waiting for a running callback to return;
    /// whether it was armed.
    pub fn cancel(&self) -> bool {
        let timer = T::hr_timer(&self.inner);
        // SAFETY: an initialised timer (`HrTimer` invariant), alive as long
        // as `inner`.
        unsafe { bindings::hrtimer_cancel(timer.raw()) != 0 }
    }

    /// Cancels the timer unless its callback is running now; `None` if it
    /// is (then the callback may still be running after this returns).
    pub fn try_cancel(&self) -> Option<bool> {
        let timer = T::hr_timer(&self.inner);
        // SAFETY: as in `cancel`.
        match unsafe { bindings::hrtimer_try_to_cancel(timer.raw()) } {
            -1 => None,
            0 => Some(false),
            _ => Some(true),
        }
    }

    /// Re-arms the timer to fire in `expires_ns` (whether or not it is
    /// armed now; an armed timer moves). Callable with interrupts off.
    pub fn restart(&self, expires_ns: u64)
    where
        T: HrTimerCallback,
    {
        let timer = T::hr_timer(&self.inner);
        let expires = i64::try_from(expires_ns).unwrap_or(i64::MAX);
        // SAFETY: an initialised timer (`HrTimer` invariant) inside
        // `inner`, which this handle keeps alive until it has cancelled
        // the timer.
        unsafe { bindings::hrtimer_start_range_ns(timer.raw(), expires, 0, timer.mode.into_c()) };
    }

    /// The object whose timer this is.
    pub fn get(&self) -> &Arc<T> {
        &self.inner
    }
}

impl<T: HasHrTimer<T>> Drop for ArcHrTimerHandle<T> {
    fn drop(&mut self) {
        self.cancel();
    }
}

impl<T: HrTimerCallback + HasHrTimer<T>> ArcHrTimerHandle<T> {
    /// A handle for `inner`'s timer without arming it (for a timer that
    /// is armed again and again through [`ArcHrTimerHandle::restart`]).
    pub fn idle(inner: Arc<T>) -> Self {
        // INVARIANT: the timer is not armed; only this handle's `restart`
        // (or another handle's) will arm it, and every handle cancels
        // when dropped.
        ArcHrTimerHandle { inner }
    }
}

impl<T: HrTimerCallback + HasHrTimer<T>> HrTimerPointer for Arc<T> {
    type TimerHandle = ArcHrTimerHandle<T>;

    fn start(self, expires_ns: u64) -> ArcHrTimerHandle<T> {
        let handle = ArcHrTimerHandle::idle(self);
        handle.restart(expires_ns);
        handle
    }
}

/// The C callback of `HrTimer<T>`.
///
/// # Safety
///
/// `ptr` is the timer of an `HrTimer<T>` inside a `T` that an
/// [`ArcHrTimerHandle`] keeps alive (the only way to start one).
unsafe extern "C" fn run<T: HrTimerCallback + HasHrTimer<T>>(
    ptr: *mut bindings::hrtimer,
) -> bindings::hrtimer_restart {
    // `HrTimer` is `repr(Rust)` with the `Opaque` first in declaration,
    // not necessarily first in memory: go from the field to the struct by
    // the field's own offset.
    let field = core::mem::offset_of!(HrTimer<T>, timer);
    // SAFETY: `ptr` points `field` bytes into an `HrTimer<T>`, which lies
    // `T::OFFSET` bytes into a live `T` (this function's contract).
    let this = unsafe { ptr.cast::<u8>().sub(field).sub(T::OFFSET).cast::<T>() };
    // SAFETY: `this` is a live `T` in an `Arc` that the handle holds until
    // the timer is cancelled, which waits for this callback.
    let borrow = unsafe { ArcBorrow::from_raw(this) };
    T::run(borrow).into_c()
}
