// SPDX-License-Identifier: GPL-2.0

//! Clocks and sleeping (upstream: `kernel::time`, `kernel::delay`).

use super::helpers;
use kernel::bindings;
use kernel::prelude::*;

/// Nanoseconds since boot, counting time suspended: a monotonic clock
/// that also advances while a VM is paused, which lease expiry relies on.
pub(crate) fn boottime_ns() -> u64 {
    // SAFETY: no preconditions.
    unsafe { helpers::cxlf_ktime_boottime_ns() }
}

/// Sleeps about `ms` milliseconds; `ERESTARTSYS` if a signal arrives.
pub(crate) fn sleep_ms_interruptible(ms: u32) -> Result {
    // SAFETY: sleeps in process context, which callers are in.
    unsafe { bindings::msleep_interruptible(ms) };
    // SAFETY: no preconditions; reads `current`.
    if unsafe { helpers::cxlf_signal_pending() } {
        return Err(ERESTARTSYS);
    }
    Ok(())
}

/// Sleeps `us` to twice `us` microseconds (hrtimer based); `ERESTARTSYS`
/// if a signal arrives.
pub(crate) fn sleep_us_interruptible(us: u32) -> Result {
    // SAFETY: sleeps in process context, which callers are in.
    unsafe { bindings::usleep_range_state(us as _, (2 * us) as _, bindings::TASK_INTERRUPTIBLE) };
    // SAFETY: no preconditions; reads `current`.
    if unsafe { helpers::cxlf_signal_pending() } {
        return Err(ERESTARTSYS);
    }
    Ok(())
}

/// Sleeps about `ms` milliseconds; signals do not wake it.
pub(crate) fn sleep_ms(ms: u32) {
    // SAFETY: sleeps in process context, which callers are in.
    unsafe { bindings::msleep(ms) };
}

/// Fills `buf` from the kernel's random number generator.
pub(crate) fn random_bytes(buf: &mut [u8]) {
    // SAFETY: `buf` is valid for writes of its length.
    unsafe { bindings::get_random_bytes(buf.as_mut_ptr().cast(), buf.len()) };
}
