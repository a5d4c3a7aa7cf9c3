// SPDX-License-Identifier: GPL-2.0

//! The credentials of the calling task (upstream: `kernel::cred` and
//! `kernel::task::Task::current`, 6.13+), as much as permission checks
//! need.

use super::helpers;

/// Whether the calling task may administer the system (`CAP_SYS_ADMIN`).
/// Like `capable()`, this marks the task as having used the capability.
pub(crate) fn capable_sys_admin() -> bool {
    // SAFETY: no preconditions; acts on `current`.
    unsafe { helpers::cxlf_capable_sys_admin() }
}

/// The calling task's effective uid, as seen from the initial user
/// namespace (the uid other hosts see in the pool).
pub(crate) fn current_euid() -> u32 {
    // SAFETY: no preconditions; reads `current`'s credentials.
    unsafe { helpers::cxlf_current_euid() }
}
