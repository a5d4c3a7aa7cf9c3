// SPDX-License-Identifier: GPL-2.0

//! The consumer's non-sleeping access sections ([`Access`]) and revoke
//! notification ([`RevokeHandler`]) of a [`Region`].

use super::{Region, RevokeFn};
use crate::coherent::Window;
use crate::helpers;
use crate::page::SharedPage;
use core::marker::PhantomData;
use kernel::bindings;
use kernel::ffi::{c_uint, c_void};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::{ARef, ForeignOwnable};

/// What a region's user does when beluga_dax is about to revoke it
/// (unbind, a lost lease, the pool changing under the host).
pub trait RevokeHandler: Send + Sync + 'static {
    /// Called once, in process context, before the region is revoked:
    /// access sections still succeed during the call and fail after
    /// it. It may sleep (stop NAPI, wait for transmits) but must not
    /// get, put or register on a region of this pool: beluga_dax holds
    /// its pool's lock meanwhile.
    fn revoked(&self);
}

/// A registered handler: an `Arc<T>` given up by `into_foreign`, and
/// how to take it back.
pub(super) struct Handler {
    data: *const c_void,
    drop: unsafe fn(*const c_void),
}

impl Drop for Handler {
    fn drop(&mut self) {
        // SAFETY: `data` is the `Arc` `drop` was made for, given up by
        // `into_foreign` and taken back once, here (beluga_dax no
        // longer calls it: the registration was replaced or the region
        // put).
        unsafe { (self.drop)(self.data) };
    }
}

/// # Safety
///
/// `data` is an `Arc<T>` given up by `into_foreign`, taken back once.
unsafe fn drop_handler<T: RevokeHandler>(data: *const c_void) {
    // SAFETY: the caller's guarantee.
    drop(unsafe { Arc::<T>::from_foreign(data) });
}

/// # Safety
///
/// `data` is an `Arc<T>` given up by `into_foreign`, alive for the
/// call (beluga_dax calls it only while it is registered).
unsafe extern "C" fn call_handler<T: RevokeHandler>(data: *mut c_void) {
    // SAFETY: the caller's guarantee.
    let handler = unsafe { Arc::<T>::borrow(data) };
    handler.revoked();
}

impl Region {
    /// Registers `handler` (replacing an earlier one): beluga_dax
    /// calls it before it revokes the region. `ENODEV` if the region
    /// is already revoked (or being revoked).
    pub fn on_revoke<T: RevokeHandler>(&mut self, handler: Arc<T>) -> Result {
        let data = handler.into_foreign();
        let f: RevokeFn = call_handler::<T>;
        // SAFETY: `raw` is a live handle of `api` (invariant of
        // `Region`); `data` stays alive while registered: it is
        // dropped only after a later registration or the put, after
        // which beluga_dax no longer calls it.
        let ret = unsafe { (self.api.on_revoke)(self.raw, Some(f), data.cast_mut()) };
        let new = Handler {
            data,
            drop: drop_handler::<T>,
        };
        kernel::error::to_result(ret)?;
        // INVARIANT: `new` is the registered handler; the one it
        // replaces (dropped here) is no longer called.
        self.handler = Some(new);
        Ok(())
    }

    /// Opens a non-sleeping access section, or `None` once the region
    /// is revoked. While it lives the region stays mapped and not
    /// revoked; nothing may sleep meanwhile.
    pub fn access(&self) -> Option<Access<'_>> {
        let mut len = 0usize;
        // SAFETY: `raw` is a live handle of `api` (invariant of
        // `Region`); `len` is a valid out-parameter.
        let base = unsafe { (self.api.access_begin)(self.raw, &mut len) };
        if base.is_null() {
            return None;
        }
        // SAFETY: a section is open (non-null), so `base` maps `len`
        // bytes of the region until `access_end`, which `Access` calls
        // on drop, in this task, before `self` can go.
        let window = unsafe { Window::new(base.cast(), len) };
        // INVARIANT: the section was begun for `region`, here.
        Some(Access {
            region: self,
            window,
            _not_send: PhantomData,
        })
    }
}

/// A non-sleeping access section of a [`Region`] (an RCU read-side
/// section): the region stays mapped and not revoked until it is
/// dropped. Offsets are bytes into the region; every range is checked.
/// Reads and writes are plain (volatile) cached accesses: the pool is
/// not coherent across hosts, so a reader invalidates the lines
/// another host wrote before reading them, and a writer writes its
/// lines back before it publishes them.
///
/// # Invariants
///
/// A section of `region` is open, begun in this task, ended on drop;
/// `window` is the region's mapping, valid while it is open.
pub struct Access<'a> {
    region: &'a Region,
    window: Window<'a>,
    /// Ends in the task that began it.
    _not_send: PhantomData<*mut ()>,
}

impl Drop for Access<'_> {
    fn drop(&mut self) {
        // SAFETY: the section is open and this task's (invariant),
        // ended once, here.
        unsafe { (self.region.api.access_end)(self.region.raw) };
    }
}

/// `off` as an index into the mapping.
fn at(off: u64) -> Result<usize> {
    usize::try_from(off).map_err(|_| EINVAL)
}

impl Access<'_> {
    /// Bytes in the region.
    pub fn len(&self) -> u64 {
        self.window.len() as u64
    }

    /// Copies `out.len()` bytes at `off`.
    pub fn read(&self, off: u64, out: &mut [u8]) -> Result {
        self.window.load_bytes(at(off)?, out)
    }

    /// Copies `data` to `off`.
    pub fn write(&self, off: u64, data: &[u8]) -> Result {
        self.window.store_bytes(at(off)?, data)
    }

    /// The aligned 8 bytes at `off`.
    fn word(&self, off: u64) -> Result<*mut u64> {
        let p = self.window.range(at(off)?, 8)?;
        if p as usize % 8 != 0 {
            return Err(EINVAL);
        }
        Ok(p.cast())
    }

    /// The little-endian `u64` at `off` (8-byte aligned), in one load.
    pub fn read_u64(&self, off: u64) -> Result<u64> {
        let p = self.word(off)?;
        // SAFETY: eight aligned bytes inside the mapping (checked),
        // mapped while the section is open (invariant).
        Ok(u64::from_le(unsafe { p.read_volatile() }))
    }

    /// Stores `v` little-endian at `off` (8-byte aligned), in one store.
    pub fn write_u64(&self, off: u64, v: u64) -> Result {
        let p = self.word(off)?;
        // SAFETY: as in `read_u64`.
        unsafe { p.write_volatile(v.to_le()) };
        Ok(())
    }

    /// The address of `[off, off + len)`, checked (and under 4 GiB).
    fn span(&self, off: u64, len: u64) -> Result<(*mut u8, usize)> {
        let len = at(len)?;
        Ok((self.window.range(at(off)?, len)?, len))
    }

    /// Writes back the lines covering `[off, off + len)` (`clwb` each,
    /// then `sfence`): other hosts can read them when this returns.
    pub fn write_back(&self, off: u64, len: u64) -> Result {
        let (p, len) = self.span(off, len)?;
        // SAFETY: the range is inside the mapping (checked), mapped
        // while the section is open (invariant); writing lines back
        // does not change their contents.
        unsafe { helpers::cxlf_write_back(p.cast::<c_void>(), len) };
        Ok(())
    }

    /// Invalidates the lines covering `[off, off + len)` (`mfence`,
    /// `clflushopt` each, `mfence`): the next read of them comes from
    /// memory. A dirty line is written back first, so only lines this
    /// host wrote itself keep their bytes.
    pub fn invalidate(&self, off: u64, len: u64) -> Result {
        let (p, len) = self.span(off, len)?;
        // SAFETY: as in `write_back`; `span` checked that `len` fits a
        // C `unsigned int`.
        unsafe { bindings::clflush_cache_range(p.cast::<c_void>(), len as c_uint) };
        Ok(())
    }

    /// A reference on the page at `off` (page-aligned), e.g. to lend
    /// it to the network stack as an sk_buff fragment. It may outlive
    /// the section and the region: beluga_dax keeps the memory (and
    /// the pool's struct pages) until every reference is dropped.
    pub fn page(&self, off: u64) -> Result<ARef<SharedPage>> {
        let pfn = self.pfn(off)?;
        // SAFETY: the page lies inside the region (checked), whose
        // memory has struct pages (ZONE_DEVICE, `beluga_region.h`);
        // the open section keeps the pool bound, so its memory map is
        // live, and beluga_dax releases the memory only once no page of
        // it is referenced beyond its idle count.
        Ok(unsafe { SharedPage::get_pfn(pfn) })
    }

    /// The reference count of the page at `off` (page-aligned), read in
    /// place: a page the region holds idle has one.
    pub fn page_ref_count(&self, off: u64) -> Result<i32> {
        let pfn = self.pfn(off)?;
        // SAFETY: the page lies inside the region (checked), whose
        // memory has struct pages; the open section keeps the pool
        // bound, so its memory map is live for the call.
        Ok(unsafe { SharedPage::ref_count_pfn(pfn) })
    }

    /// The frame number of the page at `off`, checked to be page-aligned
    /// and inside the region.
    fn pfn(&self, off: u64) -> Result<usize> {
        let page = PAGE_SIZE as u64;
        if off % page != 0 || off >= self.len() {
            return Err(EINVAL);
        }
        let phys = self.region.phys.checked_add(off).ok_or(EINVAL)?;
        usize::try_from(phys / page).map_err(|_| EINVAL)
    }
}
