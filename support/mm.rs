// SPDX-License-Identifier: GPL-2.0

//! Virtual memory areas being set up by `mmap` (upstream:
//! `kernel::mm::virt::VmaNew`, 6.16), as much as the drivers use.

use super::helpers;
use kernel::bindings;
use kernel::error::to_result;
use kernel::page::Page;
use kernel::prelude::*;
use kernel::types::Opaque;

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
