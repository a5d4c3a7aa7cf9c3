// SPDX-License-Identifier: GPL-2.0

//! Memory shared with other hosts (a CXL pool range), mapped write-back.
//! Shaped like upstream's `kernel::io::mem::ExclusiveIoMem` (6.16): the
//! physical range is requested for exclusive use ([`ClaimedRange`]), then
//! mapped ([`SharedMem`]).
//!
//! No upstream counterpart for the accessors or the memory types: CXL 2.0
//! pools keep no coherence across hosts, so every access goes through
//! [`SharedMem::read`] and [`SharedMem::write`]: a reader invalidates the
//! lines before it reads (another host may have written them), a writer
//! stores, then writes the lines back and fences. [`MemtypeReservation`]
//! reserves a range's x86 memory type for user mappings of it.

use crate::coherent::Window;
use kernel::bindings;
use kernel::ffi::{c_uint, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

/// A physical range claimed for exclusive use (visible in `/proc/iomem`).
///
/// # Invariants
///
/// `[start, start + len)` is requested from `iomem_resource` by this value
/// and released on drop.
pub struct ClaimedRange {
    start: u64,
    len: usize,
}

impl ClaimedRange {
    /// `EBUSY` if another driver holds any of the range.
    pub fn claim(start: u64, len: usize, name: &'static CStr) -> Result<ClaimedRange> {
        if len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: `iomem_resource` is the kernel's root resource, valid
        // forever, and `__request_region` locks it; `name` is 'static and
        // NUL-terminated, as the resource keeps the pointer.
        let res = unsafe {
            bindings::__request_region(
                core::ptr::addr_of_mut!(bindings::iomem_resource),
                start,
                len as _,
                name.as_char_ptr(),
                0,
            )
        };
        if res.is_null() {
            pr_err!("{:#x}+{:#x} is in use by another driver\n", start, len);
            return Err(EBUSY);
        }
        // INVARIANT: `__request_region` succeeded for exactly this range.
        Ok(ClaimedRange { start, len })
    }

    /// Physical address of the first byte.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Bytes in the range.
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for ClaimedRange {
    fn drop(&mut self) {
        // SAFETY: releasing exactly the range this value requested
        // (invariant), once.
        unsafe {
            bindings::__release_region(
                core::ptr::addr_of_mut!(bindings::iomem_resource),
                self.start,
                self.len as _,
            )
        };
    }
}

/// A write-back kernel mapping of memory that is not System RAM (part of
/// a [`ClaimedRange`], or a device's BAR). On x86 it also reserves the
/// write-back memory type for the range, so no other mapping of it may
/// use another type. The accessors are its users': [`SharedMem`] here,
/// [`super::pci::DeviceMem`] for coherent device memory.
///
/// # Invariants
///
/// `ptr` maps `len` bytes (`len > 0`) of physical `[start, start + len)`
/// write-back, owned by this value (unmapped on drop).
pub struct WbMap {
    start: u64,
    len: usize,
    ptr: *mut u8,
}

// SAFETY: the mapping is plain memory; its users' accessors say how
// concurrent access is coordinated.
unsafe impl Send for WbMap {}
// SAFETY: as above; `&self` gives out only checked pointers.
unsafe impl Sync for WbMap {}

impl WbMap {
    /// Maps `[start, start + len)`, which the caller has claimed.
    pub fn map(start: u64, len: usize) -> Result<WbMap> {
        if len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: `memremap` has no memory-safety preconditions: it maps
        // the range write-back, or returns NULL (for System RAM it gives
        // the direct map). The range is the caller's claim, so no other
        // driver maps it with another type.
        let ptr = unsafe { bindings::memremap(start, len, bindings::MEMREMAP_WB as _) };
        if ptr.is_null() {
            pr_err!("cannot map {:#x}+{:#x} write-back\n", start, len);
            return Err(ENOMEM);
        }
        // INVARIANT: `memremap` mapped `len` bytes at `start` write-back;
        // this value owns the mapping.
        Ok(WbMap {
            start,
            len,
            ptr: ptr.cast(),
        })
    }

    /// Physical address of the first byte.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Bytes in the mapping.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The mapping as a [`Window`] for the coherent accessors.
    pub fn window(&self) -> Window<'_> {
        // SAFETY: `ptr` maps `len` bytes (invariant) for as long as `self`
        // lives, which the borrow bounds.
        unsafe { Window::new(self.ptr, self.len) }
    }

    /// The address of `count` bytes at `offset`, if inside the mapping.
    pub fn range(&self, offset: usize, count: usize) -> Result<*mut u8> {
        self.window().range(offset, count)
    }

    /// Copies `out.len()` bytes from `offset` (volatile).
    pub fn load_bytes(&self, offset: usize, out: &mut [u8]) -> Result {
        self.window().load_bytes(offset, out)
    }

    /// Copies `data` to `offset` (volatile).
    pub fn store_bytes(&self, offset: usize, data: &[u8]) -> Result {
        self.window().store_bytes(offset, data)
    }
}

impl Drop for WbMap {
    fn drop(&mut self) {
        // SAFETY: the mapping is this value's own (invariant), undone once,
        // here.
        unsafe { bindings::memunmap(self.ptr.cast()) };
    }
}

/// Memory shared with other hosts, through a [`WbMap`]: reads invalidate
/// first, writes write back after (no coherence across hosts).
pub struct SharedMem {
    map: WbMap,
}

impl SharedMem {
    /// Maps `[start, start + len)`, which the caller has claimed.
    pub fn map(start: u64, len: usize) -> Result<SharedMem> {
        Ok(SharedMem {
            map: WbMap::map(start, len)?,
        })
    }

    /// Physical address of the first byte.
    pub fn start(&self) -> u64 {
        self.map.start()
    }

    /// Bytes in the mapping.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The kernel address of the first byte, mapped for `len()` bytes
    /// while `self` lives (no Rust reference may cover it: other hosts
    /// write it).
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.ptr
    }

    /// Reads `out.len()` bytes at `offset`, after invalidating those lines.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        let src = self.map.range(offset, out.len())?;
        // SAFETY: `[src, src + out.len())` is mapped (checked by `range`);
        // flushing has no other precondition, and the call fences before
        // and after.
        unsafe { bindings::clflush_cache_range(src.cast::<c_void>(), out.len() as c_uint) };
        self.map.load_bytes(offset, out)
    }

    /// Writes `data` at `offset`, then writes the lines back and fences.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.map.store_bytes(offset, data)?;
        let dst = self.map.range(offset, data.len())?;
        // SAFETY: `[dst, dst + data.len())` is mapped (checked by `range`);
        // the trailing fence orders the write-back.
        unsafe { bindings::clflush_cache_range(dst.cast::<c_void>(), data.len() as c_uint) };
        Ok(())
    }
}

/// A memory-type reservation of a physical range for user mappings of it
/// (x86 PAT: every mapping of a range must use the same type, and page
/// faults take the type reserved for it). Released on drop.
///
/// # Invariants
///
/// A `Reservation::Uncached` holds an `ioremap` (uncached-minus) mapping of
/// the range, a `Reservation::WriteCombining` a write-combining reservation
/// of `(start, len)`, each owned by this value. The enum is private, so
/// only [`MemtypeReservation::new`] makes them.
pub struct MemtypeReservation(Reservation);

enum Reservation {
    /// The write-back mapping, held until the reservation is dropped.
    WriteBack {
        _mapping: SharedMem,
    },
    Uncached(*mut c_void),
    WriteCombining(u64, u64),
}

// SAFETY: a reservation is only released, from any thread.
unsafe impl Send for MemtypeReservation {}
// SAFETY: `&self` exposes nothing.
unsafe impl Sync for MemtypeReservation {}

impl MemtypeReservation {
    /// Reserves `[start, start + len)` (claimed by the caller) for `mode`;
    /// `EBUSY` if the range is reserved with another type.
    pub fn new(start: u64, len: usize, mode: crate::mm::CacheMode) -> Result<Self> {
        use crate::mm::CacheMode;
        let reservation = match mode {
            CacheMode::WriteBack => Reservation::WriteBack {
                _mapping: SharedMem::map(start, len)?,
            },
            CacheMode::Uncached => {
                // SAFETY: `ioremap` has no memory-safety preconditions: it
                // maps the range (the caller's claim) uncached-minus, or
                // returns NULL if the range has a conflicting type.
                let ptr = unsafe { bindings::ioremap(start, len as _) };
                if ptr.is_null() {
                    return Err(EBUSY);
                }
                Reservation::Uncached(ptr)
            }
            CacheMode::WriteCombining => {
                // SAFETY: `arch_io_reserve_memtype_wc` only records the
                // type of the range (the caller's claim), or fails.
                let ret = unsafe { bindings::arch_io_reserve_memtype_wc(start, len as u64) };
                if ret != 0 {
                    return Err(EBUSY);
                }
                Reservation::WriteCombining(start, len as u64)
            }
        };
        // INVARIANT: the mapping or reservation just made, now this value's.
        Ok(MemtypeReservation(reservation))
    }
}

impl Drop for MemtypeReservation {
    fn drop(&mut self) {
        match self.0 {
            Reservation::WriteBack { .. } => {}
            // SAFETY: the mapping is this value's own (invariant), unmapped
            // once, here.
            Reservation::Uncached(ptr) => unsafe { bindings::iounmap(ptr) },
            // SAFETY: the reservation is this value's own (invariant), freed
            // once, here.
            Reservation::WriteCombining(start, len) => unsafe {
                bindings::arch_io_free_memtype_wc(start, len)
            },
        }
    }
}
