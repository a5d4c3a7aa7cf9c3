// SPDX-License-Identifier: GPL-2.0

//! Struct pages for device memory: a ZONE_DEVICE pagemap of type
//! `MEMORY_DEVICE_GENERIC` over a claimed range, as device-dax creates for
//! its instances. No upstream Rust counterpart exists (6.16 has none).
//!
//! With pages, user mappings can use devmap entries ([`super::mm`]), so
//! everything that walks page tables for pages works on them: GUP and its
//! pins (O_DIRECT, io_uring fixed buffers, `process_vm_readv`, RDMA
//! registration), the mempolicy walk of `mbind`, `/proc/pid/mem`.
//!
//! The pagemap also maps the range into the kernel's direct map,
//! write-back, and reserves that memory type for the whole range (x86
//! PAT): user mappings of it can only be write-back.

use super::helpers;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;

/// A pagemap over `[start, start + len)`.
///
/// # Invariants
///
/// `pgmap` is a live pagemap created by `memremap_pages` over exactly that
/// range, owned by this value; `vaddr` is its direct-map address.
pub(crate) struct DevicePages {
    pgmap: *mut kernel::bindings::dev_pagemap,
    vaddr: *mut u8,
    start: u64,
    len: u64,
}

// SAFETY: the pagemap is only torn down (from any thread); queries read
// page reference counts, which are atomics.
unsafe impl Send for DevicePages {}
// SAFETY: as above.
unsafe impl Sync for DevicePages {}

impl DevicePages {
    /// Creates the pages of `[start, start + len)` (claimed by the caller,
    /// not System RAM, page aligned) on NUMA node `nid`.
    pub(crate) fn new(start: u64, len: u64, nid: i32) -> Result<DevicePages> {
        let page = PAGE_SIZE as u64;
        if len == 0 || start % page != 0 || len % page != 0 || start.checked_add(len).is_none() {
            return Err(EINVAL);
        }
        let mut vaddr: *mut c_void = core::ptr::null_mut();
        let pgmap = helpers::register_err_ptr(
            "device pages",
            // SAFETY: the range is page aligned (checked) and the caller's
            // (claimed, not System RAM: this function's contract); the
            // helper writes `vaddr` only on success.
            unsafe { helpers::cxlf_pagemap_create(start, len, nid as c_int, &mut vaddr) },
        )?;
        // INVARIANT: `memremap_pages` succeeded over exactly this range.
        Ok(DevicePages {
            pgmap,
            vaddr: vaddr.cast(),
            start,
            len,
        })
    }

    /// The first page frame of the range.
    pub(crate) fn first_pfn(&self) -> usize {
        (self.start / PAGE_SIZE as u64) as usize
    }

    /// Pages of `[offset, offset + len)` (bytes into the range) that
    /// someone holds a reference to: a GUP get or pin, or a kernel user.
    /// Memory with such pages must not change owner. `None` outside the
    /// range.
    pub(crate) fn referenced(&self, offset: u64, len: u64) -> Option<u64> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        let page = PAGE_SIZE as u64;
        let first = self.start.checked_add(offset)? / page;
        let nr = len.div_ceil(page);
        // SAFETY: every page of `[first, first + nr)` belongs to the
        // pagemap (checked above), which is live (invariant), so each has a
        // `struct page` whose count the helper may read.
        Some(unsafe { helpers::cxlf_pages_referenced(first as c_ulong, nr as c_ulong) } as u64)
    }

    /// Zeroes `[offset, offset + len)` (bytes into the range) and writes
    /// it back, so other hosts see zeros. May sleep.
    pub(crate) fn clear(&self, offset: u64, len: u64) -> Result {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => {}
            _ => return Err(EINVAL),
        }
        let at = usize::try_from(offset).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: `[at, at + len)` lies inside the direct mapping of the
        // range (checked above), which lives as long as the pagemap
        // (invariant); the memory is shared device memory that no Rust
        // reference covers.
        unsafe { helpers::cxlf_clear_flush(self.vaddr.add(at).cast(), len) };
        Ok(())
    }

    /// The kernel's (direct-map, write-back) address of the range.
    pub(crate) fn vaddr(&self) -> *mut u8 {
        self.vaddr
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for DevicePages {
    fn drop(&mut self) {
        // Waits for transient pagemap references (a GUP walk in progress);
        // page references (pins) must be gone already: the owner checks
        // `referenced` before it lets go.
        // SAFETY: the pagemap is this value's own (invariant), torn down
        // once, here.
        unsafe { helpers::cxlf_pagemap_destroy(self.pgmap) };
    }
}
