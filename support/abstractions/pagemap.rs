// SPDX-License-Identifier: GPL-2.0

//! Struct pages for device memory: a ZONE_DEVICE pagemap of type
//! `MEMORY_DEVICE_GENERIC` over a claimed range, as device-dax creates for
//! its instances. No upstream Rust counterpart exists (6.16 has none).
//!
//! With pages, user mappings can use devmap entries ([`crate::mm`]), so
//! everything that walks page tables for pages works on them: GUP and its
//! pins (O_DIRECT, io_uring fixed buffers, `process_vm_readv`, RDMA
//! registration), the mempolicy walk of `mbind`, `/proc/pid/mem`.
//!
//! The pagemap also maps the range into the kernel's direct map,
//! write-back, and reserves that memory type for the whole range (x86
//! PAT): user mappings of it can only be write-back.

use crate::bindings;
use crate::error;
use crate::helpers;
use kernel::error::from_err_ptr;
use kernel::ffi::{c_int, c_uint, c_ulong};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::types::Opaque;

/// A pagemap over `[start, start + len)`.
///
/// # Invariants
///
/// `pgmap` is a live pagemap created by `memremap_pages` over exactly that
/// range, owned by this value (it stays at its address until `drop` has
/// unmapped it); `vaddr` is its direct-map address.
pub struct DevicePages {
    pgmap: KBox<Opaque<bindings::dev_pagemap>>,
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
    pub fn new(start: u64, len: u64, nid: i32) -> Result<DevicePages> {
        let page = PAGE_SIZE as u64;
        if len == 0 || start % page != 0 || len % page != 0 || start.checked_add(len).is_none() {
            return Err(EINVAL);
        }
        let (pgmap, vaddr) = error::register_with("device pages", || {
            let pgmap = KBox::new(Opaque::<bindings::dev_pagemap>::uninit(), GFP_KERNEL)?;
            let p = pgmap.get();
            // SAFETY: `p` is this function's own allocation, not shared
            // yet; zero is a valid `dev_pagemap`, and `range` (not
            // `ranges`) is the union's member for one range.
            unsafe {
                p.write(core::mem::zeroed());
                // Order-0 pages: a PMD maps 512 of them, as device-dax
                // with 4K alignment.
                (*p).type_ = bindings::memory_type_MEMORY_DEVICE_GENERIC;
                let range = (*p).__bindgen_anon_1.range.as_mut();
                range.start = start;
                range.end = start + len - 1;
                (*p).nr_range = 1;
            }
            // SAFETY: the pagemap is set up above and stays at its address
            // (a box owned by the `DevicePages`) until `memunmap_pages`;
            // the range is page aligned (checked) and the caller's
            // (claimed, not System RAM: this function's contract).
            let vaddr = from_err_ptr(unsafe { bindings::memremap_pages(p, nid as c_int) })?;
            Ok((pgmap, vaddr))
        })?;
        // INVARIANT: `memremap_pages` succeeded over exactly this range.
        Ok(DevicePages {
            pgmap,
            vaddr: vaddr.cast(),
            start,
            len,
        })
    }

    /// Pages of `[offset, offset + len)` (bytes into the range) that
    /// someone holds a reference to: a GUP get or pin (O_DIRECT, io_uring,
    /// RDMA), or a kernel user. An idle `MEMORY_DEVICE_GENERIC` page has a
    /// count of one. Memory with such pages must not change owner. `None`
    /// outside the range. May sleep.
    pub fn referenced(&self, offset: u64, len: u64) -> Option<u64> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        let page = PAGE_SIZE as u64;
        let first = self.start.checked_add(offset)? / page;
        let nr = len.div_ceil(page);
        let mut busy = 0;
        for i in 0..nr {
            let pfn = (first + i) as c_ulong;
            // SAFETY: every page of `[first, first + nr)` belongs to the
            // pagemap (checked above), which is live (invariant), so each
            // has a `struct page` whose count may be read.
            let count = unsafe { helpers::cxlf_page_ref_count(helpers::cxlf_pfn_to_page(pfn)) };
            if count > 1 {
                busy += 1;
            }
            if i % 4096 == 0 {
                cond_resched();
            }
        }
        Some(busy)
    }

    /// Zeroes `[offset, offset + len)` (bytes into the range) and writes
    /// it back, so other hosts see zeros. May sleep.
    pub fn clear(&self, offset: u64, len: u64) -> Result {
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
        unsafe { clear_flush(self.vaddr.add(at), len) };
        Ok(())
    }

    /// The kernel's (direct-map, write-back) address of the range.
    pub fn vaddr(&self) -> *mut u8 {
        self.vaddr
    }

    /// Bytes of the pages.
    pub fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for DevicePages {
    fn drop(&mut self) {
        // Waits for transient pagemap references (a GUP walk in progress);
        // page references (pins) must be gone already: the owner checks
        // `referenced` before it lets go.
        // SAFETY: the pagemap is this value's own (invariant), torn down
        // once, here; its box is freed after this.
        unsafe { bindings::memunmap_pages(self.pgmap.get()) };
    }
}

/// A reschedule point (`cond_resched`) in a long loop of process context.
fn cond_resched() {
    // SAFETY: no preconditions beyond process context, which the callers
    // (documented "may sleep") are in.
    unsafe { helpers::cxlf_cond_resched() };
}

/// Zeroes `[addr, addr + len)` of shared memory and writes it back, in
/// chunks with a reschedule point between them (a pool section is 2 MiB,
/// and on an emulated CXL window every store traps).
///
/// # Safety
///
/// `[addr, addr + len)` is mapped memory that no Rust reference covers,
/// in process context.
unsafe fn clear_flush(addr: *mut u8, len: usize) {
    const CHUNK: usize = kernel::sizes::SZ_64K;
    let flush = |at: *mut u8, n: usize| {
        // SAFETY: `[at, at + n)` is inside the caller's range, which is
        // mapped (function contract); the call fences before and after.
        unsafe { bindings::clflush_cache_range(at.cast(), n as c_uint) };
    };
    // 8-byte stores: an emulated window traps once per store.
    if (addr as usize | len) % 8 != 0 {
        // SAFETY: the range is mapped and unaliased (function contract).
        unsafe { core::ptr::write_bytes(addr, 0, len) };
        flush(addr, len);
        return;
    }
    let mut done = 0;
    while done < len {
        let n = CHUNK.min(len - done);
        // SAFETY: `done < len`, so the chunk starts inside the range.
        let chunk = unsafe { addr.add(done) };
        for i in 0..n / 8 {
            // SAFETY: `[chunk, chunk + n)` is inside the range, 8-byte
            // aligned (checked above); volatile keeps each store 8 bytes
            // wide (a `memset` may store bytes).
            unsafe { chunk.cast::<u64>().add(i).write_volatile(0) };
        }
        flush(chunk, n);
        done += n;
        cond_resched();
    }
}
