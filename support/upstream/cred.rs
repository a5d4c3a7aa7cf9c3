// SPDX-License-Identifier: GPL-2.0

//! The credentials of the calling task (upstream: `kernel::cred` and
//! `kernel::task::Task::current`, 6.13+), as much as permission checks
//! need.

use crate::helpers;
use kernel::bindings;
use kernel::ffi::c_int;

/// Whether the calling task may administer the system (`CAP_SYS_ADMIN`).
/// Like `capable()`, this marks the task as having used the capability.
pub fn capable_sys_admin() -> bool {
    // SAFETY: `capable` acts on `current`, which is always valid in
    // process context; any capability number below `CAP_LAST_CAP` is valid.
    unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) }
}

/// Whether the calling task may administer networking (`CAP_NET_ADMIN`),
/// as `capable_sys_admin`.
pub fn capable_net_admin() -> bool {
    // SAFETY: as in `capable_sys_admin`.
    unsafe { bindings::capable(bindings::CAP_NET_ADMIN as c_int) }
}

/// Whether the calling task has `CAP_SYS_NICE` (the scheduler's
/// privilege), as `capable_sys_admin`.
pub fn capable_sys_nice() -> bool {
    // SAFETY: as in `capable_sys_admin`.
    unsafe { bindings::capable(bindings::CAP_SYS_NICE as c_int) }
}

/// Whether the calling task may monitor performance system-wide, as the
/// kernel's `perfmon_capable()` (a static inline): `CAP_PERFMON` or
/// `CAP_SYS_ADMIN`.
pub fn capable_perfmon() -> bool {
    // SAFETY: as in `capable_sys_admin`.
    let perfmon = unsafe { bindings::capable(bindings::CAP_PERFMON as c_int) };
    perfmon || capable_sys_admin()
}

/// The calling task's effective uid, as seen from the initial user
/// namespace (the uid other hosts see in the pool).
pub fn current_euid() -> u32 {
    // SAFETY: the helper reads `current`'s credentials, which are valid
    // for as long as the task runs; it has no preconditions.
    unsafe { helpers::cxlf_current_euid() }
}
