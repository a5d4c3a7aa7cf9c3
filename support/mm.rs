// SPDX-License-Identifier: GPL-2.0

//! Virtual memory areas being set up by `mmap` (upstream:
//! `kernel::mm::virt::VmaNew`, 6.16), as much as the drivers use.

use super::helpers;
use core::marker::PhantomData;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_uint, c_ulong};
use kernel::page::Page;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::{ForeignOwnable, Opaque};

/// VM flag bits, read from C so they cannot drift from the kernel's.
pub(crate) mod flags {
    use super::helpers;

    pub(crate) fn shared() -> usize {
        // SAFETY: returns a constant.
        unsafe { helpers::cxlf_vm_flag_shared() as usize }
    }

    pub(crate) fn mayshare() -> usize {
        // SAFETY: returns a constant.
        unsafe { helpers::cxlf_vm_flag_mayshare() as usize }
    }

    pub(crate) fn write() -> usize {
        // SAFETY: returns a constant.
        unsafe { helpers::cxlf_vm_flag_write() as usize }
    }
}

/// A VMA inside `f_op->mmap`, before it is visible to user space.
///
/// # Invariants
///
/// The wrapped VMA is valid for the lifetime of the reference, and the
/// caller holds the mmap write lock (as `mmap_region` does).
#[repr(transparent)]
pub(crate) struct VmaNew(Opaque<bindings::vm_area_struct>);

impl VmaNew {
    /// # Safety
    ///
    /// `vma` must be the VMA passed to `f_op->mmap`, valid for `'a`.
    pub(crate) unsafe fn from_raw<'a>(vma: *mut bindings::vm_area_struct) -> &'a VmaNew {
        // SAFETY: transparent wrapper; validity is the caller's promise.
        unsafe { &*vma.cast() }
    }

    fn as_ptr(&self) -> *mut bindings::vm_area_struct {
        self.0.get()
    }

    pub(crate) fn start(&self) -> usize {
        // SAFETY: valid VMA (invariant); fixed while mmap runs.
        unsafe { helpers::cxlf_vma_start(self.as_ptr()) as usize }
    }

    pub(crate) fn end(&self) -> usize {
        // SAFETY: valid VMA (invariant); fixed while mmap runs.
        unsafe { helpers::cxlf_vma_end(self.as_ptr()) as usize }
    }

    pub(crate) fn len(&self) -> usize {
        self.end() - self.start()
    }

    /// Offset into the file, in pages.
    pub(crate) fn pgoff(&self) -> usize {
        // SAFETY: valid VMA (invariant); fixed while mmap runs.
        unsafe { (*self.as_ptr()).vm_pgoff }
    }

    pub(crate) fn flags(&self) -> usize {
        // SAFETY: valid VMA (invariant).
        unsafe { helpers::cxlf_vma_flags(self.as_ptr()) as usize }
    }

    /// Whether the mapping was asked for with `MAP_SHARED`.
    pub(crate) fn is_shared(&self) -> bool {
        self.flags() & flags::mayshare() != 0
    }

    /// Maps `page` at user address `address` (inside this VMA).
    pub(crate) fn insert_page(&self, address: usize, page: &Page) -> Result {
        if address < self.start() || address >= self.end() {
            return Err(EINVAL);
        }
        // SAFETY: valid VMA under the mmap lock (invariant); `address` is
        // inside it; `page` is a live page that `vm_insert_page` takes its
        // own reference to.
        to_result(unsafe { bindings::vm_insert_page(self.as_ptr(), address as _, page.as_ptr()) })
    }
}

impl VmaNew {
    /// Makes this a mapping of device memory without struct pages
    /// (`VM_PFNMAP`, never expanded by mremap, not in core dumps) in cache
    /// mode `mode`, whose faults `T` serves; the VMA and every copy of it
    /// (split, fork) hold a reference to `mapping`. Read-only unless
    /// `writable` (then `mprotect` cannot add write access either).
    pub(crate) fn set_pfn_mapping<T: PfnMapping>(
        &self,
        mode: CacheMode,
        writable: bool,
        mapping: Arc<T>,
    ) -> Result {
        if !writable && self.flags() & flags::write() != 0 {
            return Err(EACCES);
        }
        let private = mapping.into_foreign();
        // SAFETY: valid VMA under the mmap write lock (invariant). The
        // vtable is 'static; `private` is an `Arc<T>` that `pfn_close`
        // gives back, once per VMA that `pfn_open` counted.
        unsafe {
            helpers::cxlf_vma_setup_pfnmap(
                self.as_ptr(),
                mode as c_uint,
                writable,
                &PfnVtable::<T>::OPS,
                private.cast_mut(),
            )
        };
        Ok(())
    }
}

impl VmaNew {
    /// Makes this a mapping of ZONE_DEVICE pages ([`super::pagemap`]) with
    /// devmap entries, as device-dax maps (never expanded by mremap, not
    /// in core dumps, write-back), whose faults `T` serves with
    /// [`VmFault::insert_devmap`] and [`VmFault::insert_devmap_pmd`]. The
    /// VMA and every copy of it (split, fork) hold a reference to
    /// `mapping`. Read-only unless `writable` (then `mprotect` cannot add
    /// write access either).
    pub(crate) fn set_devmap_mapping<T: PfnMapping>(
        &self,
        writable: bool,
        mapping: Arc<T>,
    ) -> Result {
        if !writable && self.flags() & flags::write() != 0 {
            return Err(EACCES);
        }
        let private = mapping.into_foreign();
        // SAFETY: valid VMA under the mmap write lock (invariant). The
        // vtable is 'static; `private` is an `Arc<T>` that `pfn_close`
        // gives back, once per VMA that `pfn_open` counted.
        unsafe {
            helpers::cxlf_vma_setup_devmap(
                self.as_ptr(),
                writable,
                &PfnVtable::<T>::OPS,
                private.cast_mut(),
            )
        };
        Ok(())
    }
}

/// Cache mode of a mapping (the values of the beluga ABI).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CacheMode {
    WriteBack = 0,
    Uncached = 1,
    WriteCombining = 2,
}

/// The fault handler of a [`VmaNew::set_pfn_mapping`] mapping.
pub(crate) trait PfnMapping: Send + Sync + Sized + 'static {
    /// A fault at `fault.address()` of a page (`order == 0`) or of a whole
    /// PMD (`order == pmd_order()`); other orders should fall back.
    fn fault(&self, fault: &VmFault<'_>, order: u32) -> FaultResult;
}

/// The outcome of a fault (`vm_fault_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FaultResult(u32);

impl FaultResult {
    /// The access is not allowed: the process gets SIGBUS.
    pub(crate) const SIGBUS: FaultResult = FaultResult(bindings::vm_fault_reason_VM_FAULT_SIGBUS);
    /// Retry with a smaller page size.
    pub(crate) const FALLBACK: FaultResult =
        FaultResult(bindings::vm_fault_reason_VM_FAULT_FALLBACK);

    pub(crate) fn is_mapped(self) -> bool {
        self.0 == bindings::vm_fault_reason_VM_FAULT_NOPAGE
    }
}

/// The order of a PMD mapping (9 on x86-64: 2 MiB).
pub(crate) fn pmd_order() -> u32 {
    // SAFETY: returns a constant.
    unsafe { helpers::cxlf_pmd_order() }
}

/// A page fault being handled.
///
/// # Invariants
///
/// `raw` is the fault passed to a fault callback, valid for `'a`, on a VMA
/// set up by [`VmaNew::set_pfn_mapping`].
pub(crate) struct VmFault<'a> {
    raw: *mut bindings::vm_fault,
    vma: *mut bindings::vm_area_struct,
    _p: PhantomData<&'a ()>,
}

impl VmFault<'_> {
    pub(crate) fn address(&self) -> usize {
        // SAFETY: valid fault (invariant).
        unsafe { helpers::cxlf_vmf_address(self.raw) as usize }
    }

    pub(crate) fn is_write(&self) -> bool {
        // SAFETY: valid fault (invariant).
        unsafe { helpers::cxlf_vmf_is_write(self.raw) }
    }

    pub(crate) fn vma_start(&self) -> usize {
        // SAFETY: the faulting VMA is valid and stable under the mmap
        // (or VMA) read lock held during the fault.
        unsafe { helpers::cxlf_vma_start(self.vma) as usize }
    }

    pub(crate) fn vma_end(&self) -> usize {
        // SAFETY: as in `vma_start`.
        unsafe { helpers::cxlf_vma_end(self.vma) as usize }
    }

    /// The VMA's offset into the file, in pages.
    pub(crate) fn vma_pgoff(&self) -> usize {
        // SAFETY: as in `vma_start`.
        unsafe { (*self.vma).vm_pgoff }
    }

    /// Maps page frame `pfn` at the faulting page.
    pub(crate) fn insert_pfn(&self, pfn: usize) -> FaultResult {
        // SAFETY: valid fault on a `VM_PFNMAP` VMA (invariant); the caller
        // (the mapping's owner) vouches that `pfn` is its memory.
        FaultResult(unsafe { helpers::cxlf_vmf_insert_pfn(self.raw, pfn as c_ulong) })
    }

    /// Maps the PMD-sized, PMD-aligned block at page frame `pfn` over the
    /// faulting PMD.
    pub(crate) fn insert_pfn_pmd(&self, pfn: usize) -> FaultResult {
        if !self.pmd_fits(pfn) {
            return FaultResult::FALLBACK;
        }
        // SAFETY: as in `insert_pfn`; the block lies inside the VMA.
        FaultResult(unsafe { helpers::cxlf_vmf_insert_pfn_pmd(self.raw, pfn as c_ulong) })
    }
}

impl VmFault<'_> {
    /// Maps the ZONE_DEVICE page `pfn` at the faulting page (a devmap
    /// entry: GUP finds the page).
    pub(crate) fn insert_devmap(&self, pfn: usize) -> FaultResult {
        // SAFETY: valid fault on a VMA set up by `set_devmap_mapping`
        // (invariant); the caller (the mapping's owner) vouches that `pfn`
        // is a page of its pagemap.
        FaultResult(unsafe { helpers::cxlf_vmf_insert_devmap(self.raw, pfn as c_ulong) })
    }

    /// Maps the PMD-sized, PMD-aligned block of ZONE_DEVICE pages at `pfn`
    /// over the faulting PMD.
    pub(crate) fn insert_devmap_pmd(&self, pfn: usize) -> FaultResult {
        if !self.pmd_fits(pfn) {
            return FaultResult::FALLBACK;
        }
        // SAFETY: as in `insert_devmap`; the block lies inside the VMA.
        FaultResult(unsafe { helpers::cxlf_vmf_insert_devmap_pmd(self.raw, pfn as c_ulong) })
    }

    /// Whether a PMD of pages at `pfn` can map the faulting PMD: `pfn` is
    /// PMD aligned and the block lies inside the VMA.
    fn pmd_fits(&self, pfn: usize) -> bool {
        let pmd = (1usize << pmd_order()) * kernel::page::PAGE_SIZE;
        let start = self.address() & !(pmd - 1);
        pfn & ((1 << pmd_order()) - 1) == 0
            && start >= self.vma_start()
            && start
                .checked_add(pmd)
                .is_some_and(|end| end <= self.vma_end())
    }
}

struct PfnVtable<T: PfnMapping>(PhantomData<T>);

impl<T: PfnMapping> PfnVtable<T> {
    const OPS: bindings::vm_operations_struct = bindings::vm_operations_struct {
        open: Some(pfn_open::<T>),
        close: Some(pfn_close::<T>),
        fault: Some(pfn_fault::<T>),
        huge_fault: Some(pfn_huge_fault::<T>),
        // SAFETY: every other field is an optional callback for which zero
        // means "not provided".
        ..unsafe { core::mem::zeroed() }
    };
}

/// # Safety
///
/// Called by the mm for a new copy (split, fork) of a VMA set up by
/// `set_pfn_mapping::<T>`; its private data is that VMA's `Arc<T>`.
unsafe extern "C" fn pfn_open<T: PfnMapping>(vma: *mut bindings::vm_area_struct) {
    // SAFETY: the private data is a live `Arc<T>` (the original VMA's).
    let borrowed = unsafe { Arc::<T>::borrow(helpers::cxlf_vma_private(vma)) };
    // The copy holds its own reference; `pfn_close` drops it.
    let _ = Arc::<T>::from(borrowed).into_foreign();
}

/// # Safety
///
/// Called once per VMA when it goes away.
unsafe extern "C" fn pfn_close<T: PfnMapping>(vma: *mut bindings::vm_area_struct) {
    // SAFETY: this VMA's reference, taken in `set_pfn_mapping` or
    // `pfn_open`, released once.
    drop(unsafe { Arc::<T>::from_foreign(helpers::cxlf_vma_private(vma)) });
}

/// # Safety
///
/// Called by the mm with a valid fault on a VMA set up by
/// `set_pfn_mapping::<T>`.
unsafe extern "C" fn pfn_huge_fault<T: PfnMapping>(
    vmf: *mut bindings::vm_fault,
    order: c_uint,
) -> bindings::vm_fault_t {
    // SAFETY: valid fault (caller).
    let vma = unsafe { helpers::cxlf_vmf_vma(vmf) };
    // SAFETY: the VMA holds its `Arc<T>` for as long as it exists.
    let mapping = unsafe { Arc::<T>::borrow(helpers::cxlf_vma_private(vma)) };
    let fault = VmFault {
        raw: vmf,
        vma,
        _p: PhantomData,
    };
    mapping.fault(&fault, order).0 as bindings::vm_fault_t
}

/// # Safety
///
/// As for `pfn_huge_fault`.
unsafe extern "C" fn pfn_fault<T: PfnMapping>(
    vmf: *mut bindings::vm_fault,
) -> bindings::vm_fault_t {
    // SAFETY: forwarded as is.
    unsafe { pfn_huge_fault::<T>(vmf, 0) }
}
