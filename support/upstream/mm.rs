// SPDX-License-Identifier: GPL-2.0

//! Virtual memory areas (upstream: `kernel::mm::virt`, 6.16): [`VmaRef`]
//! and [`VmaNew`] as upstream has them, as much as the drivers use, and the
//! VM flags as constants in [`flags`].
//!
//! No upstream counterpart (6.16 has no Rust fault handlers): the fault
//! side of `vm_operations_struct` ([`PfnMapping`], [`VmFault`],
//! [`FaultResult`]) and mappings of device memory by page frame
//! ([`VmaNew::set_pfn_mapping`], [`VmaNew::set_devmap_mapping`],
//! [`CacheMode`]).

use crate::helpers;
use core::marker::PhantomData;
use core::ops::Deref;
use cxlf_uapi::beluga;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_uint, c_void};
use kernel::page::{Page, PAGE_MASK, PAGE_SIZE};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::{ForeignOwnable, Opaque};

/// The integer type of VM flags.
pub use bindings::vm_flags_t;

/// VM flag bits (upstream: `kernel::mm::virt::flags`), the ones in use.
pub mod flags {
    use super::vm_flags_t;
    use kernel::bindings;

    /// Mapping allows writes.
    pub const WRITE: vm_flags_t = bindings::VM_WRITE as vm_flags_t;
    /// Mapping is shared.
    pub const SHARED: vm_flags_t = bindings::VM_SHARED as vm_flags_t;
    /// Mapping may be updated to allow writes.
    pub const MAYWRITE: vm_flags_t = bindings::VM_MAYWRITE as vm_flags_t;
    /// Mapping may be shared (asked for with `MAP_SHARED`).
    pub const MAYSHARE: vm_flags_t = bindings::VM_MAYSHARE as vm_flags_t;
    /// Page frames without `struct page`.
    pub const PFNMAP: vm_flags_t = bindings::VM_PFNMAP as vm_flags_t;
    /// Cannot be expanded with `mremap()`.
    pub const DONTEXPAND: vm_flags_t = bindings::VM_DONTEXPAND as vm_flags_t;
    /// Not included in core dumps.
    pub const DONTDUMP: vm_flags_t = bindings::VM_DONTDUMP as vm_flags_t;
    /// Huge pages wanted (`MADV_HUGEPAGE`): faults ask `huge_fault` for PMDs.
    pub const HUGEPAGE: vm_flags_t = bindings::VM_HUGEPAGE as vm_flags_t;
}

/// A VMA the caller may read: it holds the mmap or the VMA read lock (or
/// stronger).
///
/// # Invariants
///
/// The VMA is valid, and its mmap or VMA read lock (or stronger) held, for
/// as long as the reference is used.
#[repr(transparent)]
pub struct VmaRef {
    vma: Opaque<bindings::vm_area_struct>,
}

impl VmaRef {
    /// # Safety
    ///
    /// `vma` must be valid for `'a`, and the mmap or VMA read lock (or
    /// stronger) held for `'a`.
    pub unsafe fn from_raw<'a>(vma: *const bindings::vm_area_struct) -> &'a VmaRef {
        // INVARIANT: the caller guarantees validity and the lock for `'a`.
        // SAFETY: `VmaRef` is a transparent wrapper of `vm_area_struct`,
        // and the caller guarantees that `vma` is valid for `'a`.
        unsafe { &*vma.cast() }
    }

    /// The raw `struct vm_area_struct`.
    pub fn as_ptr(&self) -> *mut bindings::vm_area_struct {
        self.vma.get()
    }

    /// The VMA's flags (a combination of [`flags`]).
    pub fn flags(&self) -> vm_flags_t {
        // SAFETY: the VMA is valid and read-locked (invariant): writers of
        // `vm_flags` hold the write lock, so this read is not a data race.
        unsafe { (*self.as_ptr()).__bindgen_anon_2.vm_flags }
    }

    /// The (inclusive) start address.
    pub fn start(&self) -> usize {
        // SAFETY: as in `flags`: the bounds change only under the write lock.
        unsafe { (*self.as_ptr()).__bindgen_anon_1.__bindgen_anon_1.vm_start }
    }

    /// The (exclusive) end address.
    pub fn end(&self) -> usize {
        // SAFETY: as in `start`.
        unsafe { (*self.as_ptr()).__bindgen_anon_1.__bindgen_anon_1.vm_end }
    }

    /// Not upstream: `end() - start()`.
    pub fn len(&self) -> usize {
        self.end() - self.start()
    }

    /// Not upstream: the VMA's offset into the file, in pages.
    pub fn pgoff(&self) -> usize {
        // SAFETY: as in `start`: `vm_pgoff` changes only with the bounds.
        unsafe { (*self.as_ptr()).vm_pgoff }
    }

    /// Not upstream: whether the mapping was asked for with `MAP_SHARED`.
    pub fn is_shared(&self) -> bool {
        self.flags() & flags::MAYSHARE != 0
    }

    /// The private data of a VMA set up by `VmaNew::set_mapping`.
    fn private_data(&self) -> *const c_void {
        // SAFETY: as in `start`: `set_mapping` wrote `vm_private_data`
        // before the VMA became visible, and nothing changes it after.
        unsafe { (*self.as_ptr()).vm_private_data }
    }
}

/// A VMA inside `f_op->mmap`, before it is visible to user space
/// (upstream: `VmaNew`); it reads as a [`VmaRef`].
///
/// # Invariants
///
/// For the lifetime of the reference the VMA is being set up by an
/// `f_op->mmap` call, which holds the mmap write lock (as `mmap_region`
/// does).
#[repr(transparent)]
pub struct VmaNew {
    vma: VmaRef,
}

impl Deref for VmaNew {
    type Target = VmaRef;

    fn deref(&self) -> &VmaRef {
        &self.vma
    }
}

impl VmaNew {
    /// # Safety
    ///
    /// `vma` must be the VMA passed to `f_op->mmap`, being set up there
    /// for all of `'a`.
    pub unsafe fn from_raw<'a>(vma: *mut bindings::vm_area_struct) -> &'a VmaNew {
        // INVARIANT: the caller guarantees that `vma` is being set up by
        // `f_op->mmap` (under the mmap write lock) for `'a`.
        // SAFETY: `VmaNew` is a transparent wrapper of `VmaRef`, itself one
        // of `vm_area_struct`; the caller guarantees validity for `'a`.
        unsafe { &*vma.cast() }
    }

    /// Maps `page` at user address `address` (inside this VMA).
    pub fn insert_page(&self, address: usize, page: &Page) -> Result {
        if address < self.start() || address >= self.end() {
            return Err(EINVAL);
        }
        // SAFETY: the VMA is valid and its mmap write lock held (invariant),
        // which `vm_insert_page` needs to set `VM_MIXEDMAP`; `address` is
        // inside it (checked); `page` is a live page, to which
        // `vm_insert_page` takes its own reference.
        to_result(unsafe { bindings::vm_insert_page(self.as_ptr(), address, page.as_ptr()) })
    }

    /// Makes this a mapping of device memory without struct pages
    /// (`VM_PFNMAP`, never expanded by mremap, not in core dumps) in cache
    /// mode `mode`, whose faults `T` serves with [`VmFault::insert_pfn`]
    /// and [`VmFault::insert_pfn_pmd`]; the VMA and every copy of it
    /// (split, fork) hold a reference to `mapping`. Read-only unless
    /// `writable` (then `mprotect` cannot add write access either).
    pub fn set_pfn_mapping<T: PfnMapping>(
        &self,
        mode: CacheMode,
        writable: bool,
        mapping: Arc<T>,
    ) -> Result {
        let set = flags::PFNMAP | flags::DONTEXPAND | flags::DONTDUMP;
        self.set_mapping(set, mode, writable, mapping)
    }

    /// Makes this a mapping of ZONE_DEVICE pages ([`crate::pagemap`]) with
    /// devmap entries, as device-dax maps (never expanded by mremap, not
    /// in core dumps, write-back), whose faults `T` serves with
    /// [`VmFault::insert_devmap`] and [`VmFault::insert_devmap_pmd`]. No
    /// `VM_PFNMAP` or `VM_MIXEDMAP`, so GUP, pins and the mempolicy walk
    /// find the pages; `VM_HUGEPAGE` lets faults ask for PMDs. The VMA and
    /// every copy of it (split, fork) hold a reference to `mapping`.
    /// Read-only unless `writable` (then `mprotect` cannot add write
    /// access either).
    pub fn set_devmap_mapping<T: PfnMapping>(&self, writable: bool, mapping: Arc<T>) -> Result {
        let set = flags::HUGEPAGE | flags::DONTEXPAND | flags::DONTDUMP;
        self.set_mapping(set, CacheMode::WriteBack, writable, mapping)
    }

    /// Sets the flags `set`, the page protection of `mode`, and `T`'s
    /// vtable with `mapping` as the private data.
    fn set_mapping<T: PfnMapping>(
        &self,
        set: vm_flags_t,
        mode: CacheMode,
        writable: bool,
        mapping: Arc<T>,
    ) -> Result {
        if !writable && self.flags() & flags::WRITE != 0 {
            return Err(EACCES);
        }
        let vma = self.as_ptr();
        // SAFETY: the VMA is being set up under the mmap write lock
        // (invariant), as `vm_flags_set` requires; the callers' flags are
        // valid for a mapping whose faults the vtable below serves.
        unsafe { helpers::cxlf_vm_flags_set(vma, set) };
        if !writable {
            // SAFETY: as above; `VM_WRITE` is clear (checked above), so
            // clearing `VM_MAYWRITE` leaves consistent flags.
            unsafe { helpers::cxlf_vm_flags_clear(vma, flags::MAYWRITE) };
        }
        // SAFETY: the VMA is being set up by this `mmap` call (invariant):
        // nothing else reads or writes its fields until it returns.
        let prot = unsafe { (*vma).vm_page_prot };
        let prot = match mode {
            CacheMode::WriteBack => None,
            // SAFETY: computes a protection value; no preconditions.
            CacheMode::Uncached => Some(unsafe { helpers::cxlf_pgprot_noncached(prot) }),
            // SAFETY: as above.
            CacheMode::WriteCombining => Some(unsafe { bindings::pgprot_writecombine(prot) }),
        };
        let private = mapping.into_foreign().cast_mut();
        // SAFETY: as for `prot`. The vtable is 'static; `private` is an
        // `Arc<T>` that `pfn_close` gives back, once per VMA that this call
        // or `pfn_open` counted.
        unsafe {
            if let Some(prot) = prot {
                (*vma).vm_page_prot = prot;
            }
            (*vma).vm_ops = &PfnVtable::<T>::OPS;
            (*vma).vm_private_data = private;
        }
        Ok(())
    }
}

/// Cache mode of a [`VmaNew::set_pfn_mapping`] mapping. The values are
/// the beluga ABI's `MAP_*` (defined once, in `uapi/src/beluga.rs`); each
/// mode's page protection is chosen in `set_mapping`, so the C helpers
/// never see these numbers.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// Cached (write-back), as ordinary memory.
    WriteBack = beluga::MAP_WRITE_BACK,
    /// Uncached (uncached-minus).
    Uncached = beluga::MAP_UNCACHED,
    /// Write-combining.
    WriteCombining = beluga::MAP_WRITE_COMBINING,
}

/// The fault handler of a [`VmaNew::set_pfn_mapping`] or
/// [`VmaNew::set_devmap_mapping`] mapping.
pub trait PfnMapping: Send + Sync + Sized + 'static {
    /// A fault at `fault.address()` of a page (`order == 0`) or of a whole
    /// PMD (`order == pmd_order()`); other orders should fall back.
    fn fault(&self, fault: &VmFault<'_>, order: u32) -> FaultResult;
}

/// The outcome of a fault (`vm_fault_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultResult(bindings::vm_fault_t);

impl FaultResult {
    /// The access is not allowed: the process gets SIGBUS.
    pub const SIGBUS: FaultResult = FaultResult(bindings::vm_fault_reason_VM_FAULT_SIGBUS);
    /// Retry with a smaller page size.
    pub const FALLBACK: FaultResult = FaultResult(bindings::vm_fault_reason_VM_FAULT_FALLBACK);
}

/// The order of a PMD mapping (9 on x86-64: 2 MiB).
pub const fn pmd_order() -> u32 {
    bindings::PMD_ORDER
}

/// A page fault being handled.
///
/// # Invariants
///
/// `raw` is the fault passed to a fault callback, valid for `'a`, on a VMA
/// set up by `VmaNew::set_mapping`, whose mmap or VMA read lock the mm
/// holds for `'a`.
pub struct VmFault<'a> {
    raw: *mut bindings::vm_fault,
    _p: PhantomData<&'a bindings::vm_fault>,
}

impl<'a> VmFault<'a> {
    /// The faulting VMA.
    pub fn vma(&self) -> &'a VmaRef {
        // SAFETY: the fault is valid for `'a` (invariant); its `vma` is set
        // before the callback and is valid and read-locked for `'a`
        // (invariant).
        unsafe { VmaRef::from_raw((*self.raw).__bindgen_anon_1.vma) }
    }

    /// The faulting user address.
    pub fn address(&self) -> usize {
        // SAFETY: valid fault (invariant); `address` is set before the
        // callback and constant during it.
        unsafe { (*self.raw).__bindgen_anon_1.address }
    }

    /// Whether the access that faulted is a write.
    pub fn is_write(&self) -> bool {
        // SAFETY: as in `address`.
        let flags = unsafe { (*self.raw).flags };
        flags & bindings::fault_flag_FAULT_FLAG_WRITE != 0
    }

    /// `self.vma().start()`.
    pub fn vma_start(&self) -> usize {
        self.vma().start()
    }

    /// `self.vma().end()`.
    pub fn vma_end(&self) -> usize {
        self.vma().end()
    }

    /// `self.vma().pgoff()`: the VMA's offset into the file, in pages.
    pub fn vma_pgoff(&self) -> usize {
        self.vma().pgoff()
    }

    /// Maps page frame `pfn` at the faulting page (of a
    /// [`VmaNew::set_pfn_mapping`] VMA).
    pub fn insert_pfn(&self, pfn: usize) -> FaultResult {
        // SAFETY: valid fault on a VMA set up by `set_mapping` (invariant),
        // at an address inside it; the caller (the mapping's owner) vouches
        // that `pfn` is its memory.
        FaultResult(unsafe {
            bindings::vmf_insert_pfn(self.vma().as_ptr(), self.address() & PAGE_MASK, pfn)
        })
    }

    /// Maps the PMD-sized, PMD-aligned block at page frame `pfn` over the
    /// faulting PMD (of a [`VmaNew::set_pfn_mapping`] VMA).
    pub fn insert_pfn_pmd(&self, pfn: usize) -> FaultResult {
        self.insert_pmd(pfn, false)
    }

    /// Maps the ZONE_DEVICE page `pfn` at the faulting page (a devmap
    /// entry: GUP finds the page).
    pub fn insert_devmap(&self, pfn: usize) -> FaultResult {
        // SAFETY: computes a `pfn_t`; no preconditions.
        let pfn = unsafe { helpers::cxlf_pfn_to_pfn_t(pfn, true) };
        // SAFETY: valid fault on a VMA set up by `set_devmap_mapping`
        // (invariant), at an address inside it; the caller (the mapping's
        // owner) vouches that `pfn` is a page of its pagemap.
        FaultResult(unsafe {
            bindings::vmf_insert_mixed(self.vma().as_ptr(), self.address() & PAGE_MASK, pfn)
        })
    }

    /// Maps the PMD-sized, PMD-aligned block of ZONE_DEVICE pages at `pfn`
    /// over the faulting PMD.
    pub fn insert_devmap_pmd(&self, pfn: usize) -> FaultResult {
        self.insert_pmd(pfn, true)
    }

    /// Maps the PMD of page frames at `pfn`, as a devmap entry if
    /// `devmap`; falls back unless the PMD fits (see `pmd_fits`).
    fn insert_pmd(&self, pfn: usize, devmap: bool) -> FaultResult {
        if !self.pmd_fits(pfn) {
            return FaultResult::FALLBACK;
        }
        #[cfg(CONFIG_TRANSPARENT_HUGEPAGE)]
        {
            // SAFETY: computes a `pfn_t`; no preconditions.
            let pfn = unsafe { helpers::cxlf_pfn_to_pfn_t(pfn, devmap) };
            // SAFETY: valid fault (invariant) on a VMA whose setup matches
            // `devmap` (the callers' contract); the block lies inside the
            // VMA (checked) and belongs to the mapping's owner, who vouches
            // for it as in `insert_pfn` and `insert_devmap`.
            FaultResult(unsafe { bindings::vmf_insert_pfn_pmd(self.raw, pfn, self.is_write()) })
        }
        #[cfg(not(CONFIG_TRANSPARENT_HUGEPAGE))]
        {
            let _ = devmap;
            FaultResult::FALLBACK
        }
    }

    /// Whether a PMD of pages at `pfn` can map the faulting PMD: `pfn` is
    /// PMD aligned and the block lies inside the VMA.
    fn pmd_fits(&self, pfn: usize) -> bool {
        let pmd = (1usize << pmd_order()) * PAGE_SIZE;
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
/// Called by the mm, under the mmap write lock, for a new copy (split,
/// fork) of a VMA set up by `set_mapping::<T>`; its private data is that
/// VMA's `Arc<T>`.
unsafe extern "C" fn pfn_open<T: PfnMapping>(vma: *mut bindings::vm_area_struct) {
    // SAFETY: the mm passes a valid, write-locked VMA (function contract).
    let vma = unsafe { VmaRef::from_raw(vma) };
    // SAFETY: the private data is the original VMA's live `Arc<T>`
    // (function contract), which outlives this call.
    let borrowed = unsafe { Arc::<T>::borrow(vma.private_data()) };
    // The copy holds its own reference; `pfn_close` drops it.
    let _ = Arc::<T>::from(borrowed).into_foreign();
}

/// # Safety
///
/// Called by the mm once per VMA set up by `set_mapping::<T>` (or copied
/// through `pfn_open::<T>`) when it goes away.
unsafe extern "C" fn pfn_close<T: PfnMapping>(vma: *mut bindings::vm_area_struct) {
    // SAFETY: the mm passes a valid VMA, which it no longer shares
    // (function contract).
    let vma = unsafe { VmaRef::from_raw(vma) };
    // SAFETY: this VMA's reference, taken in `set_mapping` or `pfn_open`
    // (function contract), released once: `close` runs once per VMA.
    drop(unsafe { Arc::<T>::from_foreign(vma.private_data()) });
}

/// # Safety
///
/// Called by the mm with a valid fault, under the mmap or VMA read lock,
/// on a VMA set up by `set_mapping::<T>`.
unsafe extern "C" fn pfn_huge_fault<T: PfnMapping>(
    vmf: *mut bindings::vm_fault,
    order: c_uint,
) -> bindings::vm_fault_t {
    // INVARIANT: the mm passes a valid fault on a VMA set up for `T`, and
    // holds its read lock during this call (function contract).
    let fault = VmFault {
        raw: vmf,
        _p: PhantomData,
    };
    // SAFETY: the VMA holds its `Arc<T>` for as long as it exists (see
    // `set_mapping` and `pfn_close`), which is past this fault.
    let mapping = unsafe { Arc::<T>::borrow(fault.vma().private_data()) };
    mapping.fault(&fault, order).0
}

/// # Safety
///
/// As for `pfn_huge_fault`.
unsafe extern "C" fn pfn_fault<T: PfnMapping>(
    vmf: *mut bindings::vm_fault,
) -> bindings::vm_fault_t {
    // SAFETY: the mm's guarantees for this call (function contract) are
    // those `pfn_huge_fault` needs.
    unsafe { pfn_huge_fault::<T>(vmf, 0) }
}
