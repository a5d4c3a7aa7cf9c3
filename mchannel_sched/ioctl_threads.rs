// SPDX-License-Identifier: GPL-2.0

//! The threads' ioctls (`chardev.rs` dispatches them): `ATTACH`, `DETACH`
//! (of a thread, or of a process with the threads it creates later) and
//! `REPORT` (a thread's own count of bytes moved). Who may act on which
//! thread is `ioctl_rights.rs`'s.

#![deny(clippy::arithmetic_side_effects)]

use crate::attached::Attached;
use crate::chardev::Device;
use crate::control::thread::RunState;
use crate::ioctl_rights::{attach_user, may_detach, permitted};
use crate::park::Shared;
use crate::pr_info_ratelimited;
use crate::support::error::edquot;
use crate::support::task;
use crate::support::time::monotonic_ns;
use crate::support::uapi::mchannel as abi;
use kernel::prelude::*;
use kernel::task::Task;
use kernel::types::ARef;
use kernel::uaccess::UserSlice;

impl Device {
    /// The threads an ATTACH or DETACH acts on.
    fn threads_of(&self, t: &Task, process: bool) -> Result<KVec<ARef<Task>>> {
        let mut out = KVec::new();
        if !process {
            out.push(ARef::from(t), GFP_KERNEL)?;
            return Ok(out);
        }
        let mut n = 0usize;
        task::for_each_thread(t, |_| {
            n = n.saturating_add(1);
            true
        });
        // Room for threads created meanwhile; the second pass of an
        // ATTACH catches any more.
        let room = n.saturating_add(16);
        let mut out = KVec::with_capacity(room, GFP_KERNEL)?;
        task::for_each_thread(t, |th| {
            out.len() < room && out.push(ARef::from(th), GFP_NOWAIT).is_ok()
        });
        Ok(out)
    }

    pub(crate) fn attach(&self, user: UserSlice) -> Result {
        let args: abi::AttachArgs = user.reader().read()?;
        let (t, privileged) = permitted(&args, "attach")?;
        let fabric = self.fabric.lock();
        let Some(ch) = fabric.channel(args.channel) else {
            refuse!(ENOENT, "mchannel: no channel {}\n", args.channel);
        };
        if ch.is_group() {
            refuse!(
                EINVAL,
                "mchannel: {} is a group; threads attach to its channels\n",
                args.channel
            );
        }
        // Rights on the channel, and the quota its threads count against.
        let user = attach_user(privileged, args.channel, ch.owner)?;
        let (t_w, t_r) = (ch.window.t_w_ns(), ch.t_r_ns);
        let mut done = KVec::new();
        let result = self.attach_threads(&t, &args, user, (t_w, t_r), &mut done);
        if result.is_err() {
            // All or nothing: the threads this call attached go again.
            self.detach_all(&done);
        }
        drop(fabric);
        result?;
        if done.is_empty() {
            refuse!(
                EBUSY,
                "mchannel: every thread of {} is attached already\n",
                args.pid
            );
        }
        Ok(())
    }

    /// Attaches `t` (or its process) to `args.channel` with budget `t_r`
    /// of windows `t_w`, for `user`'s quota (`None`: privileged); `done`
    /// collects the threads attached.
    fn attach_threads(
        &self,
        t: &Task,
        args: &abi::AttachArgs,
        user: Option<u32>,
        (t_w, t_r): (u64, u64),
        done: &mut KVec<ARef<Task>>,
    ) -> Result {
        let process = args.flags & abi::ATTACH_PROCESS != 0;
        // Two passes: a thread created during the first by one not yet
        // attached is in the list by the second; later ones are followed
        // by the fork probe.
        for pass in 0..2 {
            if pass == 1 && !process {
                break;
            }
            for th in self.threads_of(t, process)?.iter() {
                // Room first: a thread attached is always recorded.
                done.reserve(1, GFP_KERNEL)?;
                let existing_ok = process || pass == 1;
                if self.attach_one(th, args, user, (t_w, t_r), existing_ok)? {
                    done.push(th.clone(), GFP_NOWAIT)?;
                    self.shared.settle(th);
                }
            }
        }
        Ok(())
    }

    /// Attaches `th`, one of the threads `args` names, as
    /// [`attach_threads`](Self::attach_threads) does; whether it did (not
    /// if it exits, or if it is attached already and `existing_ok`).
    fn attach_one(
        &self,
        th: &Task,
        args: &abi::AttachArgs,
        user: Option<u32>,
        (t_w, t_r): (u64, u64),
        existing_ok: bool,
    ) -> Result<bool> {
        let process = args.flags & abi::ATTACH_PROCESS != 0;
        // A park item in case its slot has none (slots keep theirs),
        // allocated before any lock; freed on return if not needed.
        let mut spare = Some(self.shared.park_item(GFP_KERNEL)?);
        let run = RunState::new(monotonic_ns(), t_w, t_r);
        let added = self
            .shared
            .threads
            .insert(th, Attached::new(th, args.channel, process, user, run));
        match added {
            Ok(()) if task::is_exiting(th) => {
                // Its exit probe may have run already and would never
                // remove it: PF_EXITING is set before it.
                drop(self.shared.threads.remove(th));
                Ok(false)
            }
            Ok(()) => {
                let _ = self.shared.threads.with(th, |a| a.refill(&mut spare));
                drop(spare);
                Ok(true)
            }
            Err(e) if e == EEXIST && existing_ok => Ok(false),
            Err(e) if e == EEXIST => {
                refuse!(EBUSY, "mchannel: thread {} is attached already\n", args.pid)
            }
            Err(e) => Err(Self::not_attached(e, user, &self.shared)),
        }
    }

    /// Detaches `threads` (an ATTACH that failed part-way), waking those
    /// parked.
    fn detach_all(&self, threads: &[ARef<Task>]) {
        for th in threads.iter() {
            if let Some(a) = self.shared.threads.remove(th) {
                if a.is_parked() {
                    a.task().wake_up();
                }
            }
        }
    }

    /// Logs why a thread could not be attached; returns the error.
    fn not_attached(e: Error, user: Option<u32>, shared: &Shared) -> Error {
        match (user, e) {
            (Some(_), e) if e == ENOSPC => pr_info_ratelimited!(
                "mchannel: the thread table's part for callers without CAP_SYS_NICE is full\n"
            ),
            (None, e) if e == ENOSPC => pr_info_ratelimited!("mchannel: thread table full\n"),
            (Some(uid), e) if e == edquot() => pr_info_ratelimited!(
                "mchannel: uid {} has {} threads attached, its quota (user_threads)\n",
                uid,
                shared.threads.user_threads(uid)
            ),
            _ => {}
        }
        e
    }

    pub(crate) fn detach(&self, user: UserSlice) -> Result {
        let args: abi::AttachArgs = user.reader().read()?;
        let (t, privileged) = permitted(&args, "detach")?;
        let process = args.flags & abi::ATTACH_PROCESS != 0;
        let _fabric = self.fabric.lock();
        let mut detached = 0usize;
        for th in self.threads_of(&t, process)?.iter() {
            if !privileged {
                let by_admin = self.shared.threads.with(th, |a| a.privileged());
                may_detach(privileged, by_admin == Some(true))?;
            }
            if let Some(a) = self.shared.threads.remove(th) {
                detached = detached.saturating_add(1);
                if a.is_parked() {
                    a.task().wake_up();
                }
            }
        }
        if detached == 0 {
            refuse!(ENOENT, "mchannel: thread {} is not attached\n", args.pid);
        }
        Ok(())
    }

    /// The caller's own count of bytes moved, for a reported meter.
    pub(crate) fn report(&self, user: UserSlice) -> Result {
        let bytes: u64 = user.reader().read()?;
        let me = kernel::current!();
        let fabric = self.fabric.lock();
        let Some(id) = self.shared.threads.with(me, |a| a.channel()) else {
            refuse!(
                EINVAL,
                "mchannel: REPORT from a thread that is not attached\n"
            );
        };
        if fabric.channel(id).map(|c| c.meter.kind()) != Some(abi::METER_REPORTED) {
            refuse!(
                EINVAL,
                "mchannel: REPORT to channel {}, whose meter is not reported\n",
                id
            );
        }
        self.shared.threads.with(me, |a| a.count(bytes));
        Ok(())
    }
}
