// SPDX-License-Identifier: GPL-2.0

//! Clocks and sleeping (upstream: `kernel::time`, `kernel::delay`): the
//! boot-time and monotonic clocks, interruptible sleeps, random bytes. The sleeps are for
//! process context, as the kernel's are (sleeping in atomic context is a
//! bug that `might_sleep` reports, not undefined behaviour).

use crate::helpers;
use kernel::bindings;
use kernel::prelude::*;

/// Nanoseconds since boot, counting time suspended: a monotonic clock
/// that also advances while a VM is paused, which lease expiry relies on.
pub fn boottime_ns() -> u64 {
    // SAFETY: the helper reads the clock; it has no preconditions.
    unsafe { helpers::cxlf_ktime_boottime_ns() }
}

/// `CLOCK_MONOTONIC` in nanoseconds (the hrtimers' clock).
pub fn monotonic_ns() -> u64 {
    // SAFETY: the helper reads the clock; it has no preconditions.
    unsafe { helpers::cxlf_ktime_ns() }
}

/// `ERESTARTSYS` if a signal is pending for the calling task.
fn interrupted() -> Result {
    if kernel::current!().signal_pending() {
        return Err(ERESTARTSYS);
    }
    Ok(())
}

/// Sleeps about `ms` milliseconds; `ERESTARTSYS` if a signal arrives.
pub fn sleep_ms_interruptible(ms: u32) -> Result {
    // SAFETY: `msleep_interruptible` has no memory-safety preconditions;
    // callers are in process context (see the module documentation).
    unsafe { bindings::msleep_interruptible(ms) };
    interrupted()
}

/// The latest a sleep of `us` may end: a quarter late at most, as
/// upstream's `fsleep` allows since 6.13. An idle system has no other
/// timer to end a sleep early, so a range's upper end is when it ends: a
/// wider one (6.12's `fsleep` doubles) makes a poll loop that much slower.
fn latest_us(us: u32) -> u32 {
    us.saturating_add(us / 4)
}

/// Sleeps `us` to `us` + 25% microseconds (hrtimer based); `ERESTARTSYS`
/// if a signal arrives.
pub fn sleep_us_interruptible(us: u32) -> Result {
    // SAFETY: as in `sleep_ms_interruptible`.
    unsafe {
        bindings::usleep_range_state(us as _, latest_us(us) as _, bindings::TASK_INTERRUPTIBLE)
    };
    interrupted()
}

/// Sleeps about `ms` milliseconds; signals do not wake it.
pub fn sleep_ms(ms: u32) {
    // SAFETY: as in `sleep_ms_interruptible`.
    unsafe { bindings::msleep(ms) };
}

/// Sleeps `us` to `us` + 25% microseconds (hrtimer based); signals do
/// not wake it.
pub fn sleep_us(us: u32) {
    // SAFETY: as in `sleep_ms_interruptible`.
    unsafe {
        bindings::usleep_range_state(us as _, latest_us(us) as _, bindings::TASK_UNINTERRUPTIBLE)
    };
}

/// Fills `buf` from the kernel's random number generator.
pub fn random_bytes(buf: &mut [u8]) {
    // SAFETY: `buf` is a live `&mut` slice, valid for writes of its length;
    // `get_random_bytes` writes no more.
    unsafe { bindings::get_random_bytes(buf.as_mut_ptr().cast(), buf.len()) };
}
