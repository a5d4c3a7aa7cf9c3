// SPDX-License-Identifier: GPL-2.0

//! The objects this host holds: allocating, opening, unlinking, letting
//! go, and revoking them. An object's local uses are `HoldRef`s
//! (`mapping.rs`); the holding goes when the last one has and no page is
//! referenced.
//!
//! Lock order: see `mod.rs`. The public entry points take `calls` (through
//! `PoolDevice::lock_calls`), then `inner` for each bookkeeping step;
//! revoking takes each holding's `hooks` (and in it each kernel user's
//! callback runs), then its `revoked`, under `inner`. `adopt_file`
//! takes nothing.

use super::calls::Calls;
use super::state::{Inner, PoolDevice};
use crate::mapping::{HoldRef, Holding};
use crate::pool::engine::{Call, Handle};
use crate::pool::layout::SECTION_SIZE;
use crate::pool::objects::{Name, FLAG_CLEARING};
use crate::support::fs::{File, InodeRef};
use crate::support::kvec::VecExt;
use crate::support::region::provider;
use crate::support::time;
use kernel::prelude::*;
use kernel::sync::Arc;

/// The FREE that unlinks the object of `handle`.
fn unlink_call(handle: &Handle) -> Call {
    Call::Free {
        object: handle.object,
        serial: handle.serial,
        uid: handle.uid,
    }
}

impl PoolDevice {
    /// Every open file calls this from `open`: its mappings join the
    /// device's address space (the dax device's inode). The returned
    /// reference is the file's, for as long as it points there.
    pub(crate) fn adopt_file(&self, file: &File) -> InodeRef {
        let inode = self.inode.clone();
        file.share_mappings_of(&inode);
        inode
    }

    /// Allocates an object; the returned use holds it.
    pub(crate) fn alloc(
        &self,
        size: u64,
        flags: u32,
        mode: u32,
        name: Option<Name>,
        uid: u32,
    ) -> Result<HoldRef> {
        let sections = size
            .checked_add(SECTION_SIZE - 1)
            .map(|s| s / SECTION_SIZE)
            .and_then(|s| u32::try_from(s).ok())
            .filter(|&s| s > 0)
            .ok_or(EINVAL)?;
        let call = Call::Alloc {
            sections,
            flags,
            uid,
            mode,
            name,
        };
        self.lock_calls().alloc(call)
    }

    /// Opens a named object (shared, or private to this host); the
    /// returned use holds it.
    pub(crate) fn open(&self, name: Name, uid: u32, admin: bool) -> Result<HoldRef> {
        let calls = self.lock_calls();
        let handle = calls.call(Call::Open { name, uid }, admin)?;
        calls.hold(handle).inspect_err(|_| {
            self.inner.lock().reconcile.get_or_insert(None);
        })
    }

    /// Unlinks an object (FREE): its name goes at once, its sections when
    /// the last user on every host lets go. Nothing is revoked.
    pub(crate) fn free(&self, object: u32, serial: u64, uid: u32, admin: bool) -> Result {
        let calls = self.lock_calls();
        let call = Call::Free {
            object,
            serial,
            uid,
        };
        calls.call(call, admin)?;
        Ok(())
    }

    /// Lets go of the holding of `(object, serial)` at once if nothing on
    /// this host uses it any more (after FREE dropped the caller's use),
    /// so that a FREE by the only user returns the sections at once.
    pub(crate) fn release_if_idle(&self, object: u32, serial: u64) {
        self.lock_calls().release_if_idle(object, serial);
    }

    /// Revokes the holdings (telling their kernel users first, then
    /// waiting for their access sections) and unmaps them from every
    /// process.
    fn revoke(&self, holdings: &[Arc<Holding>]) {
        for h in holdings {
            h.revoke_kernel_users();
            h.revoke();
        }
        if !holdings.is_empty() {
            provider::wait_for_accesses();
        }
        for h in holdings {
            self.inode.unmap_range(h.offset, h.size);
        }
    }

    /// Revokes every holding (a new incarnation of this host, or unbind).
    pub(super) fn revoke_all(&self, inner: &mut Inner) {
        let held = core::mem::replace(&mut inner.held, KVec::new());
        // A new incarnation holds nothing: nothing left to reconcile.
        inner.reconcile = None;
        self.revoke(&held);
        if let Some(mem) = inner.mem.as_ref() {
            let pinned: u64 = held
                .iter()
                .filter_map(|h| mem.pages.referenced(h.offset, h.size))
                .sum();
            if pinned > 0 {
                // Documented limit: pins (io_uring, RDMA) cannot be taken
                // back; once the lease is gone, another host may reuse
                // the sections.
                pr_warn!(
                    "{}: {} pinned pages of revoked objects are still referenced\n",
                    self.name(),
                    pinned
                );
            }
        }
    }
}

impl Calls<'_> {
    /// Runs an ALLOC and records its holding; clears and publishes the
    /// object when the manager asks for it.
    fn alloc(&self, call: Call) -> Result<HoldRef> {
        let handle = self.call(call, false)?;
        let hold = match self.hold(handle) {
            Ok(hold) => hold,
            Err(e) => {
                // Not recorded: undo the allocation (unlink; the pool
                // frees it with its last holder, which the reconciliation
                // lets go).
                let _ = self.call(unlink_call(&handle), true);
                self.dev().inner.lock().reconcile.get_or_insert(None);
                return Err(e);
            }
        };
        if handle.flags & FLAG_CLEARING != 0 {
            if let Err(e) = self.clear_and_publish(&hold) {
                // Unpublished, it goes with this host's hold.
                drop(hold);
                self.release_if_idle(handle.object, handle.serial);
                return Err(e);
            }
        }
        Ok(hold)
    }

    /// Clears a new object's sections (they may hold an earlier owner's
    /// bytes) and publishes it. Only `calls` is held: a long clear holds
    /// up no lease and no other host.
    fn clear_and_publish(&self, hold: &HoldRef) -> Result {
        let dev = self.dev();
        let pages = {
            let inner = dev.inner.lock();
            inner.mem.as_ref().map(|m| m.pages.clone()).ok_or(ENODEV)?
        };
        let start = time::boottime_ns();
        hold.while_held(|| pages.clear(hold.offset, hold.size))?;
        drop(pages);
        dev.cleared_since(start, hold.size);
        let publish = Call::Publish {
            object: hold.handle.object,
            serial: hold.handle.serial,
        };
        self.call(publish, false)?;
        Ok(())
    }

    /// Records the hold the manager granted.
    fn hold(&self, handle: Handle) -> Result<HoldRef> {
        let dev = self.dev();
        let mut inner = dev.inner.lock();
        if let Some(h) = inner
            .held
            .iter()
            .find(|h| h.same_object(handle.object, handle.serial) && !h.is_revoked())
        {
            return Ok(HoldRef::new(h));
        }
        let data_off = match inner.engine.as_ref() {
            Some(e) => e.geometry().data_off,
            None => return Err(ENODEV),
        };
        let holding = Holding::new(handle, data_off, dev.phys)?;
        if holding
            .offset
            .checked_add(holding.size)
            .map_or(true, |end| end > dev.size)
        {
            return Err(EIO);
        }
        inner.held.push(holding.clone(), GFP_KERNEL)?;
        Ok(HoldRef::new(&holding))
    }

    /// Lets go of the holding of `(object, serial)` if it is idle.
    fn release_if_idle(&self, object: u32, serial: u64) {
        let Some(idle) = self.take_if_idle(object, serial) else {
            return;
        };
        idle.revoke();
        self.release(&idle);
    }

    /// Takes the holding of `(object, serial)` out of `held` if nothing
    /// uses it and no page of it is referenced.
    fn take_if_idle(&self, object: u32, serial: u64) -> Option<Arc<Holding>> {
        let mut inner = self.dev().inner.lock();
        let mem = inner.mem.as_ref()?;
        let at = inner.held.iter().position(|h| {
            h.same_object(object, serial)
                && h.unused()
                && mem.pages.referenced(h.offset, h.size) == Some(0)
        })?;
        inner.held.swap_remove(at)
    }

    /// Tells the manager this host no longer holds `h`.
    pub(super) fn release(&self, h: &Holding) -> bool {
        let call = Call::Release {
            object: h.handle.object,
            serial: h.handle.serial,
        };
        match self.call(call, false) {
            Ok(_) => true,
            // Someone else already took it (reclaim): nothing to do.
            Err(e) if e == ENOENT => false,
            Err(_) => {
                self.dev().inner.lock().reconcile.get_or_insert(None);
                false
            }
        }
    }
}
