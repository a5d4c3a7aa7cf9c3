// SPDX-License-Identifier: GPL-2.0

//! A raw spinlock taken with interrupts off (upstream: `SpinLockIrq`,
//! `kernel::sync::lock::spinlock`, 6.17, which is a `spinlock_t`; 6.12
//! has neither it nor a raw spinlock). For state shared with hard
//! interrupt handlers (hrtimer callbacks) and the scheduler's tracepoints,
//! which run under the runqueue's raw lock: a `spinlock_t` there would be
//! a sleeping lock on PREEMPT_RT. Critical sections must be short and
//! must not wake tasks (waking takes the runqueue lock).
//!
//! It is a [`Backend`] of the kernel's generic [`Lock`], so guards,
//! `lock()` and pin-init work as for `SpinLock`.

use crate::helpers;
use kernel::bindings;
use kernel::ffi::{c_char, c_ulong};
use kernel::sync::lock::{Backend, Lock};

/// A raw spinlock that disables interrupts while held; create one with
/// [`new_raw_spinlock_irq!`](crate::new_raw_spinlock_irq).
pub type RawSpinLockIrq<T> = Lock<T, RawSpinLockIrqBackend>;

/// The [`Backend`] of [`RawSpinLockIrq`]: a `raw_spinlock_t`, locked with
/// `raw_spin_lock_irqsave`; the guard keeps the saved interrupt flags.
pub struct RawSpinLockIrqBackend;

// SAFETY: `raw_spin_lock_irqsave` gives the caller exclusive ownership
// until `raw_spin_unlock_irqrestore` with the flags it returned, and the
// lock is initialised by `init` before use (the trait's contract).
unsafe impl Backend for RawSpinLockIrqBackend {
    type State = bindings::raw_spinlock_t;
    type GuardState = c_ulong;

    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key) {
        // SAFETY: `ptr` is valid for writes, `name` and `key` for ever
        // (this function's contract).
        unsafe { helpers::cxlf_raw_spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: initialised by `init` (this function's contract).
        unsafe { helpers::cxlf_raw_spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        // SAFETY: the caller owns the lock, and `guard_state` holds the
        // flags its `lock` saved.
        unsafe { helpers::cxlf_raw_spin_unlock_irqrestore(ptr, *guard_state) }
    }
}

/// Creates a [`RawSpinLockIrq`] initialiser, with a lock class of its own
/// and an optional name (as `new_spinlock!`).
#[macro_export]
macro_rules! new_raw_spinlock_irq {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::spinlock_irq::RawSpinLockIrq::new(
            $inner,
            ::kernel::optional_name!($($name)?),
            ::kernel::static_lock_class!(),
        )
    };
}
