// SPDX-License-Identifier: GPL-2.0

//! Who may do what through `/dev/mchannel` (`chardev.rs`): configuring the
//! fabric needs `CAP_SYS_NICE`; attaching or detaching a thread needs the
//! right to renice it, attaching without `CAP_SYS_NICE` also the
//! channel's owner uid, and detaching a thread a privileged caller
//! attached needs `CAP_SYS_NICE` too.

use crate::support::cred;
use crate::support::task;
use crate::support::uapi::mchannel as abi;
use kernel::prelude::*;
use kernel::task::Task;
use kernel::types::ARef;

/// `what` needs `CAP_SYS_NICE`.
pub(crate) fn require_nice(what: &str) -> Result {
    if !cred::capable_sys_nice() {
        refuse!(EPERM, "mchannel: {} needs CAP_SYS_NICE\n", what);
    }
    Ok(())
}

/// The target of ATTACH or DETACH (the caller for pid 0).
fn target(args: &abi::AttachArgs) -> Result<ARef<Task>> {
    if args.flags & !abi::ATTACH_PROCESS != 0 || args._pad != 0 {
        refuse!(EINVAL, "mchannel: unknown attach flags {:#x}\n", args.flags);
    }
    if args.pid < 0 {
        refuse!(EINVAL, "mchannel: pid {} is negative\n", args.pid);
    }
    let found = if args.pid == 0 {
        Some(ARef::from(kernel::current!()))
    } else {
        task::get_by_vpid(args.pid)
    };
    let Some(t) = found else {
        refuse!(ESRCH, "mchannel: no thread {}\n", args.pid);
    };
    if !task::is_live_user(&t) {
        refuse!(
            EINVAL,
            "mchannel: thread {} is a kernel thread or exiting\n",
            args.pid
        );
    }
    Ok(t)
}

/// The target and whether the caller is privileged, if it may act on
/// the target at all (the renice rule).
pub(crate) fn permitted(args: &abi::AttachArgs, verb: &str) -> Result<(ARef<Task>, bool)> {
    let t = target(args)?;
    let privileged = cred::capable_sys_nice();
    if !privileged && !task::may_renice(&t) {
        refuse!(
            EPERM,
            "mchannel: may not {} thread {} (could not renice it)\n",
            verb,
            args.pid
        );
    }
    Ok((t, privileged))
}

/// The quota an attach to channel `id`, owned by `owner`, counts against:
/// the caller's euid, or `None` for a `privileged` caller. A user may not
/// crowd a channel it does not own (its threads would share that
/// channel's budget).
pub(crate) fn attach_user(privileged: bool, id: u32, owner: u32) -> Result<Option<u32>> {
    let user = (!privileged).then(cred::current_euid);
    if let Some(uid) = user.filter(|&uid| uid != owner) {
        refuse!(
            EPERM,
            "mchannel: channel {} belongs to uid {}; uid {} needs CAP_SYS_NICE to attach to it\n",
            id,
            owner,
            uid
        );
    }
    Ok(user)
}

/// Only the privileged may undo what the privileged did: a thread a
/// privileged caller attached (`by_admin`) is detached by one only.
pub(crate) fn may_detach(privileged: bool, by_admin: bool) -> Result {
    if by_admin && !privileged {
        refuse!(
            EPERM,
            "mchannel: thread attached with CAP_SYS_NICE; detaching needs it\n"
        );
    }
    Ok(())
}
