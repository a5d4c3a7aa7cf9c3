// SPDX-License-Identifier: GPL-2.0

//! Objects this host holds, and their user mappings.
//!
//! Every `mmap` of an object holds an `Arc<Holding>`. Faults map the
//! object's physical memory, with a PMD where the 2 MiB block lies inside
//! both the VMA and the object. When the host lets go of the object (free,
//! lost lease, unbind) the holding is revoked: faults from then on raise
//! SIGBUS, and the device's address space is unmapped over the object, so
//! no mapping can reach the sections once another owner may get them.

use crate::pool::engine::Handle;
use crate::pool::layout::SECTION_SIZE;
use crate::support::mm::{pmd_order, CacheMode, FaultResult, PfnMapping, VmFault};
use crate::support::sharedmem::MemtypeReservation;
use core::sync::atomic::AtomicU32;
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
    /// Kernel users (`beluga_region_get`) of this holding; the last one to
    /// let go releases the host's hold.
    pub(crate) kernel_users: AtomicU32,
    /// The memory type of the object's current mappings: all must agree.
    #[pin]
    cache: Mutex<CacheUse>,
}

/// Which memory type the object's mappings use, and how many there are.
struct CacheUse {
    mode: CacheMode,
    users: usize,
    reservation: Option<MemtypeReservation>,
}

/// One mapping's use of its object (held by each VMA, through `Arc`).
pub(crate) struct MappingRef {
    holding: Arc<Holding>,
}

impl Drop for MappingRef {
    fn drop(&mut self) {
        let mut cache = self.holding.cache.lock();
        cache.users -= 1;
        if cache.users == 0 {
            cache.reservation = None;
        }
    }
}

impl PfnMapping for MappingRef {
    fn fault(&self, fault: &VmFault<'_>, order: u32) -> FaultResult {
        self.holding.fault(fault, order)
    }
}

impl Holding {
    pub(crate) fn new(handle: Handle, data_off: u64, pool_phys: u64) -> Result<Arc<Holding>> {
        let offset = (handle.extent.first as u64)
            .checked_mul(SECTION_SIZE)
            .and_then(|o| o.checked_add(data_off))
            .ok_or(EINVAL)?;
        let size = handle.extent.count as u64 * SECTION_SIZE;
        let phys = pool_phys.checked_add(offset).ok_or(EINVAL)?;
        Arc::pin_init(
            pin_init!(Holding {
                handle,
                offset,
                size,
                phys,
                revoked <- new_mutex!(false),
                kernel_users: AtomicU32::new(0),
                cache <- new_mutex!(CacheUse {
                    mode: CacheMode::WriteBack,
                    users: 0,
                    reservation: None,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Whether `[offset, offset + len)` of the pool lies inside the object.
    pub(crate) fn covers(&self, offset: u64, len: u64) -> bool {
        matches!(offset.checked_add(len), Some(end) if offset >= self.offset && end <= self.offset + self.size)
    }

    pub(crate) fn same_object(&self, handle: &Handle) -> bool {
        self.handle.object == handle.object && self.handle.serial == handle.serial
    }

    /// A new mapping of the object in memory type `mode`. x86 allows one
    /// type per physical range, so while the object is mapped in one mode,
    /// another is refused (`EBUSY`).
    pub(crate) fn map_in(self: &Arc<Self>, mode: CacheMode) -> Result<Arc<MappingRef>> {
        {
            let mut cache = self.cache.lock();
            if cache.users > 0 && cache.mode != mode {
                pr_info!(
                    "object {}: mapped {:?} already, {:?} refused\n",
                    self.handle.object,
                    cache.mode,
                    mode
                );
                return Err(EBUSY);
            }
            if cache.users == 0 {
                let len = usize::try_from(self.size).map_err(|_| EINVAL)?;
                cache.reservation = Some(MemtypeReservation::new(self.phys, len, mode)?);
                cache.mode = mode;
            }
            cache.users += 1;
        }
        // On failure the new reference's drop gives the use back.
        Ok(Arc::new(
            MappingRef {
                holding: self.clone(),
            },
            GFP_KERNEL,
        )?)
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

    /// Faults from now on raise SIGBUS. The caller then unmaps the range.
    pub(crate) fn revoke(&self) {
        *self.revoked.lock() = true;
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
}

impl Holding {
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
            let end_ok = self
                .object_offset(fault, start)
                .and_then(|o| o.checked_add(block as u64))
                .is_some_and(|end| end <= self.size);
            let Some(offset) = self.object_offset(fault, start).filter(|_| end_ok) else {
                return FaultResult::FALLBACK;
            };
            return fault.insert_pfn_pmd(((self.phys + offset) / PAGE_SIZE as u64) as usize);
        }
        match self.object_offset(fault, fault.address() & !(PAGE_SIZE - 1)) {
            Some(offset) => fault.insert_pfn(((self.phys + offset) / PAGE_SIZE as u64) as usize),
            None => FaultResult::SIGBUS,
        }
    }
}
