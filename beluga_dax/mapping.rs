// SPDX-License-Identifier: GPL-2.0

//! Objects this host holds, their local users, and their user mappings.
//!
//! The pool records which hosts hold an object; on this host a
//! [`Holding`] stands for that hold, and [`HoldRef`]s count its local
//! users: each open file that allocated or opened the object, each VMA
//! that maps it, each kernel user of the region API. When the last
//! `HoldRef` is gone and no page of the object is referenced any more (a
//! GUP pin from O_DIRECT, io_uring or RDMA), the device lets go of the
//! hold (`device/reap.rs`, the reaper). So an object lives as long as someone
//! uses it, as a file does; FREE only unlinks it.
//!
//! Faults map the object's pages (ZONE_DEVICE, devmap entries, PMDs where
//! a 2 MiB block lies inside both the VMA and the object). When the host
//! loses the object by force (lost lease, FORCE_RECLAIM, unbind) the
//! holding is revoked: faults from then on raise SIGBUS, and the device's
//! address space is unmapped over the object.

use crate::pool::engine::Handle;
use crate::pool::layout::SECTION_SIZE;
use crate::support::kvec::VecExt;
use crate::support::mm::{pmd_order, FaultResult, PfnMapping, VmFault};
use crate::support::region::provider::RevokeHook;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use kernel::new_mutex;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// One object held by this host.
#[pin_data]
pub(crate) struct Holding {
    pub(crate) handle: Handle,
    /// Offset of the object in the pool, also its `mmap` offset.
    pub(crate) offset: u64,
    pub(crate) size: u64,
    /// Physical address of the object.
    phys: u64,
    /// Set once, under the lock, before the object's mappings are torn
    /// down: a fault that sees `false` has inserted its entry before the
    /// teardown, which then removes it.
    #[pin]
    revoked: Mutex<bool>,
    /// Set with `revoked`, read without a lock by kernel users' access
    /// sections (`region.rs`); the revoker waits for the sections that
    /// saw it clear.
    gone: AtomicBool,
    /// The revoke callbacks of the kernel users of the object, fired
    /// before it is revoked. `gone` is set under this lock too, so a user
    /// added later is refused, never missed.
    #[pin]
    hooks: Mutex<KVec<Arc<RevokeHook>>>,
    /// Live [`HoldRef`]s. It rises from zero only in
    /// `Calls::hold` (`device/holdings.rs`), under the device's `inner`
    /// lock, where the reaper also reads it.
    users: AtomicUsize,
}

/// One local use of a [`Holding`] (a file, a mapping, a kernel user).
pub(crate) struct HoldRef(Arc<Holding>);

impl HoldRef {
    /// A new use. Only `Calls::hold` makes the first one.
    pub(crate) fn new(holding: &Arc<Holding>) -> HoldRef {
        holding.users.fetch_add(1, Ordering::AcqRel);
        HoldRef(holding.clone())
    }
}

impl Clone for HoldRef {
    fn clone(&self) -> HoldRef {
        HoldRef::new(&self.0)
    }
}

impl Drop for HoldRef {
    fn drop(&mut self) {
        self.0.users.fetch_sub(1, Ordering::AcqRel);
    }
}

impl core::ops::Deref for HoldRef {
    type Target = Holding;

    fn deref(&self) -> &Holding {
        &self.0
    }
}

/// One VMA's use of its object (each VMA holds one, through `Arc`).
pub(crate) struct MappingRef {
    hold: HoldRef,
}

impl MappingRef {
    pub(crate) fn new(hold: HoldRef) -> Result<Arc<MappingRef>> {
        Ok(Arc::new(MappingRef { hold }, GFP_KERNEL)?)
    }
}

impl PfnMapping for MappingRef {
    fn fault(&self, fault: &VmFault<'_>, order: u32) -> FaultResult {
        self.hold.fault(fault, order)
    }
}

impl Holding {
    /// The holding of `handle`, whose sections the caller checked against
    /// the pool (`data_off` is where sections start).
    pub(crate) fn new(handle: Handle, data_off: u64, pool_phys: u64) -> Result<Arc<Holding>> {
        let offset = u64::from(handle.extent.first)
            .checked_mul(SECTION_SIZE)
            .and_then(|o| o.checked_add(data_off))
            .ok_or(EINVAL)?;
        let size = u64::from(handle.extent.count)
            .checked_mul(SECTION_SIZE)
            .ok_or(EINVAL)?;
        let phys = pool_phys.checked_add(offset).ok_or(EINVAL)?;
        Arc::pin_init(
            pin_init!(Holding {
                handle,
                offset,
                size,
                phys,
                revoked <- new_mutex!(false, "beluga:revoked"),
                gone: AtomicBool::new(false),
                hooks <- new_mutex!(KVec::new(), "beluga:hooks"),
                users: AtomicUsize::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// Whether `[offset, offset + len)` of the pool lies inside the object.
    pub(crate) fn covers(&self, offset: u64, len: u64) -> bool {
        let end = self.offset.saturating_add(self.size);
        matches!(offset.checked_add(len), Some(e) if offset >= self.offset && e <= end)
    }

    pub(crate) fn same_object(&self, object: u32, serial: u64) -> bool {
        self.handle.object == object && self.handle.serial == serial
    }

    /// Whether nothing on this host uses the holding any more.
    pub(crate) fn unused(&self) -> bool {
        self.users.load(Ordering::Acquire) == 0
    }

    /// Runs `access` unless the holding is revoked (`ENODEV`); revocation
    /// waits for it.
    pub(crate) fn while_held<R>(&self, access: impl FnOnce() -> Result<R>) -> Result<R> {
        let revoked = self.revoked.lock();
        if *revoked {
            return Err(ENODEV);
        }
        access()
    }

    pub(crate) fn phys(&self) -> u64 {
        self.phys
    }

    pub(crate) fn is_revoked(&self) -> bool {
        *self.revoked.lock()
    }

    /// Faults from now on raise SIGBUS, and access sections fail. The
    /// caller then waits for sections in progress
    /// (`provider::wait_for_accesses`) and unmaps the range.
    pub(crate) fn revoke(&self) {
        *self.revoked.lock() = true;
        self.gone.store(true, Ordering::Release);
    }

    /// Whether kernel users' access sections may begin.
    pub(crate) fn accessible(&self) -> bool {
        !self.gone.load(Ordering::Acquire)
    }

    /// Adds a kernel user's revoke callback; `ENODEV` once revoked.
    pub(crate) fn add_hook(&self, hook: Arc<RevokeHook>) -> Result {
        let mut hooks = self.hooks.lock();
        if !self.accessible() {
            return Err(ENODEV);
        }
        hooks.push(hook, GFP_KERNEL)?;
        Ok(())
    }

    /// Removes a kernel user's revoke callback.
    pub(crate) fn remove_hook(&self, hook: &RevokeHook) {
        let mut hooks = self.hooks.lock();
        if let Some(at) = hooks.iter().position(|h| core::ptr::eq(&**h, hook)) {
            hooks.swap_remove(at);
        }
    }

    /// Tells the kernel users (their callbacks run, in process context)
    /// and makes access sections fail from now on.
    pub(crate) fn revoke_kernel_users(&self) {
        let hooks = self.hooks.lock();
        for h in hooks.iter() {
            h.fire();
        }
        self.gone.store(true, Ordering::Release);
    }

    /// Offset in the object of the user address `address` of the fault's
    /// VMA, or `None` outside the object.
    fn object_offset(&self, fault: &VmFault<'_>, address: usize) -> Option<u64> {
        let vma_offset = (fault.vma_pgoff() as u64).checked_mul(PAGE_SIZE as u64)?;
        let in_vma = address.checked_sub(fault.vma_start())? as u64;
        let pool_offset = vma_offset.checked_add(in_vma)?;
        let offset = pool_offset.checked_sub(self.offset)?;
        (offset < self.size).then_some(offset)
    }

    /// The page frame at `offset` into the object.
    fn pfn(&self, offset: u64) -> Option<usize> {
        let phys = self.phys.checked_add(offset)?;
        usize::try_from(phys / PAGE_SIZE as u64).ok()
    }

    fn fault(&self, fault: &VmFault<'_>, order: u32) -> FaultResult {
        let pmd = order == pmd_order();
        if order != 0 && !pmd {
            return FaultResult::FALLBACK;
        }
        let revoked = self.revoked.lock();
        if *revoked {
            return FaultResult::SIGBUS;
        }
        if pmd {
            let block = PAGE_SIZE << order;
            let start = fault.address() & !(block - 1);
            let inside = self.object_offset(fault, start).filter(|o| {
                o.checked_add(block as u64)
                    .is_some_and(|end| end <= self.size)
            });
            return match inside.and_then(|o| self.pfn(o)) {
                Some(pfn) => fault.insert_devmap_pmd(pfn),
                None => FaultResult::FALLBACK,
            };
        }
        let page = fault.address() & !(PAGE_SIZE - 1);
        match self.object_offset(fault, page).and_then(|o| self.pfn(o)) {
            Some(pfn) => fault.insert_devmap(pfn),
            None => FaultResult::SIGBUS,
        }
    }
}
