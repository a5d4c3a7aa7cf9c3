// SPDX-License-Identifier: GPL-2.0

//! beluga_dax's in-kernel region API (`beluga_dax/beluga_region.h`), both
//! sides. Rust modules of 6.12 cannot export Rust items to each other, so
//! the API is a small C ABI: beluga_dax defines it with
//! [`export_beluga_regions!`] (its `helpers.c` exports the symbols), and
//! other modules use [`Region`].
//!
//! Consumer functions are `#[inline]`: a module that never uses [`Region`]
//! references no beluga_dax symbol and does not depend on it.

use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

#[cfg(not(cxlf_region_provider))]
extern "C" {
    fn beluga_region_get(
        pool: *const c_char,
        name: *const c_char,
        size: u64,
        err: *mut c_int,
    ) -> *mut c_void;
    fn beluga_region_put(region: *mut c_void);
    fn beluga_region_phys(region: *const c_void) -> u64;
    fn beluga_region_size(region: *const c_void) -> u64;
    fn beluga_region_read(
        region: *const c_void,
        offset: u64,
        buf: *mut c_void,
        len: usize,
    ) -> c_int;
    fn beluga_region_write(
        region: *const c_void,
        offset: u64,
        buf: *const c_void,
        len: usize,
    ) -> c_int;
}

/// A named, cross-host shared region of a beluga pool, held until drop.
///
/// # Invariants
///
/// `raw` is a live handle from `beluga_region_get`, owned by this value.
#[cfg(not(cxlf_region_provider))]
pub(crate) struct Region {
    raw: *mut c_void,
}

// SAFETY: the handle may be used and released from any thread; beluga_dax
// serialises access internally.
#[cfg(not(cxlf_region_provider))]
unsafe impl Send for Region {}
// SAFETY: as above.
#[cfg(not(cxlf_region_provider))]
unsafe impl Sync for Region {}

#[cfg(not(cxlf_region_provider))]
impl Region {
    /// Creates or opens the shared object `name` of at least `size` bytes
    /// in pool `pool` (e.g. `beluga0.0`).
    #[inline]
    pub(crate) fn get(pool: &CStr, name: &CStr, size: u64) -> Result<Region> {
        let mut err: c_int = 0;
        // SAFETY: NUL-terminated strings valid for the call; `err` is a
        // valid out-parameter.
        let raw =
            unsafe { beluga_region_get(pool.as_char_ptr(), name.as_char_ptr(), size, &mut err) };
        if raw.is_null() {
            return Err(Error::from_errno(err));
        }
        Ok(Region { raw })
    }

    /// Physical address of the region.
    #[inline]
    pub(crate) fn phys(&self) -> u64 {
        // SAFETY: live handle (invariant).
        unsafe { beluga_region_phys(self.raw) }
    }

    #[inline]
    pub(crate) fn size(&self) -> u64 {
        // SAFETY: live handle (invariant).
        unsafe { beluga_region_size(self.raw) }
    }

    /// Reads `out.len()` bytes at `offset` (invalidating the lines first).
    #[inline]
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) -> Result {
        // SAFETY: live handle; `out` is valid for writes of its length.
        kernel::error::to_result(unsafe {
            beluga_region_read(self.raw, offset, out.as_mut_ptr().cast(), out.len())
        })
    }

    /// Writes `data` at `offset` (then writes the lines back).
    #[inline]
    pub(crate) fn write(&self, offset: u64, data: &[u8]) -> Result {
        // SAFETY: live handle; `data` is valid for reads of its length.
        kernel::error::to_result(unsafe {
            beluga_region_write(self.raw, offset, data.as_ptr().cast(), data.len())
        })
    }
}

#[cfg(not(cxlf_region_provider))]
impl Drop for Region {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the handle is ours (invariant), released once.
        unsafe { beluga_region_put(self.raw) };
    }
}

/// The provider side, compiled into beluga_dax only.
#[cfg(cxlf_region_provider)]
pub(crate) mod provider {
    use super::*;
    use core::sync::atomic::{AtomicPtr, Ordering};
    use kernel::sync::Arc;
    use kernel::types::ForeignOwnable;

    /// A region handed out through the C ABI.
    pub(crate) trait SharedRegion: Send + Sync + 'static {
        fn phys(&self) -> u64;
        fn size(&self) -> u64;
        fn read(&self, offset: u64, out: &mut [u8]) -> Result;
        fn write(&self, offset: u64, data: &[u8]) -> Result;
    }

    /// Finds or creates regions.
    pub(crate) trait RegionSource: Send + Sync + 'static {
        type Region: SharedRegion;
        fn get(&self, pool: &CStr, name: &CStr, size: u64) -> Result<Arc<Self::Region>>;
    }

    /// Where the exported functions find the module's source: installed
    /// at the end of module init, removed at exit.
    ///
    /// # Invariants
    ///
    /// `ptr` is null or an `Arc<T>` turned into a foreign pointer, owned
    /// by the cell.
    pub(crate) struct SourceCell<T> {
        ptr: AtomicPtr<c_void>,
        _t: core::marker::PhantomData<Arc<T>>,
    }

    // SAFETY: the cell only hands out shared references to `T`, which is
    // `Send + Sync`.
    unsafe impl<T: Send + Sync> Sync for SourceCell<T> {}

    impl<T: RegionSource> SourceCell<T> {
        pub(crate) const fn new() -> Self {
            SourceCell {
                ptr: AtomicPtr::new(core::ptr::null_mut()),
                _t: core::marker::PhantomData,
            }
        }

        pub(crate) fn install(&self, source: Arc<T>) {
            let new = source.into_foreign().cast_mut();
            let old = self.ptr.swap(new, Ordering::AcqRel);
            if !old.is_null() {
                // SAFETY: a pointer the cell owned (invariant).
                drop(unsafe { Arc::<T>::from_foreign(old) });
            }
        }

        pub(crate) fn remove(&self) {
            let old = self.ptr.swap(core::ptr::null_mut(), Ordering::AcqRel);
            if !old.is_null() {
                // SAFETY: a pointer the cell owned (invariant).
                drop(unsafe { Arc::<T>::from_foreign(old) });
            }
        }

        fn get(&self) -> Option<Arc<T>> {
            let ptr = self.ptr.load(Ordering::Acquire);
            if ptr.is_null() {
                return None;
            }
            // Exported calls come only from modules that depend on this
            // one's symbols: none runs before init installs the source or
            // after exit begins.
            // SAFETY: the cell's `Arc` lives until `remove`, at module exit.
            let borrowed = unsafe { Arc::<T>::borrow(ptr) };
            Some(borrowed.into())
        }
    }

    /// # Safety
    ///
    /// `pool` and `name` are NUL-terminated strings, `err` a valid
    /// out-parameter (the C contract of `beluga_region_get`).
    pub(crate) unsafe fn get<T: RegionSource>(
        cell: &SourceCell<T>,
        pool: *const c_char,
        name: *const c_char,
        size: u64,
        err: *mut c_int,
    ) -> *mut c_void {
        // SAFETY: NUL-terminated for the call (caller).
        let (pool, name) = unsafe { (CStr::from_char_ptr(pool), CStr::from_char_ptr(name)) };
        let result = match cell.get() {
            Some(source) => source.get(pool, name, size),
            None => Err(ENODEV),
        };
        match result {
            Ok(region) => region.into_foreign().cast_mut(),
            Err(e) => {
                // SAFETY: valid out-parameter (caller).
                unsafe { *err = e.to_errno() };
                core::ptr::null_mut()
            }
        }
    }

    /// # Safety
    ///
    /// `region` came from `get::<T>` and is not used after this.
    pub(crate) unsafe fn put<T: RegionSource>(region: *mut c_void) {
        // SAFETY: caller.
        drop(unsafe { Arc::<T::Region>::from_foreign(region) });
    }

    /// # Safety
    ///
    /// `region` came from `get::<T>` and has not been put.
    pub(crate) unsafe fn with<T: RegionSource, R>(
        region: *const c_void,
        f: impl FnOnce(&T::Region) -> R,
    ) -> R {
        // SAFETY: caller.
        let region = unsafe { Arc::<T::Region>::borrow(region) };
        f(&region)
    }

    /// # Safety
    ///
    /// As for [`with`]; `buf` is valid for writes of `len` bytes.
    pub(crate) unsafe fn read<T: RegionSource>(
        region: *const c_void,
        offset: u64,
        buf: *mut c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: caller.
        let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        // SAFETY: caller.
        match unsafe { with::<T, _>(region, |r| r.read(offset, out)) } {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As for [`with`]; `buf` is valid for reads of `len` bytes.
    pub(crate) unsafe fn write<T: RegionSource>(
        region: *const c_void,
        offset: u64,
        buf: *const c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: caller.
        let data = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
        // SAFETY: caller.
        match unsafe { with::<T, _>(region, |r| r.write(offset, data)) } {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// Defines the C functions of `beluga_region.h` over `$cell`, a
    /// `static SourceCell<$source>`; the module's `helpers.c` exports them.
    macro_rules! export_beluga_regions {
        ($cell:path, $source:ty) => {
            mod beluga_region_exports {
                use kernel::ffi::{c_char, c_int, c_void};
                use $crate::support::region::provider;

                #[no_mangle]
                extern "C" fn beluga_region_get(
                    pool: *const c_char,
                    name: *const c_char,
                    size: u64,
                    err: *mut c_int,
                ) -> *mut c_void {
                    // SAFETY: the C contract of beluga_region_get.
                    unsafe { provider::get::<$source>(&$cell, pool, name, size, err) }
                }

                #[no_mangle]
                extern "C" fn beluga_region_put(region: *mut c_void) {
                    // SAFETY: the C contract: a handle from get, put once.
                    unsafe { provider::put::<$source>(region) }
                }

                #[no_mangle]
                extern "C" fn beluga_region_phys(region: *const c_void) -> u64 {
                    // SAFETY: the C contract: a live handle.
                    unsafe {
                        provider::with::<$source, _>(region, |r| provider::SharedRegion::phys(r))
                    }
                }

                #[no_mangle]
                extern "C" fn beluga_region_size(region: *const c_void) -> u64 {
                    // SAFETY: the C contract: a live handle.
                    unsafe {
                        provider::with::<$source, _>(region, |r| provider::SharedRegion::size(r))
                    }
                }

                #[no_mangle]
                extern "C" fn beluga_region_read(
                    region: *const c_void,
                    offset: u64,
                    buf: *mut c_void,
                    len: usize,
                ) -> c_int {
                    // SAFETY: the C contract: a live handle, a buffer of `len`.
                    unsafe { provider::read::<$source>(region, offset, buf, len) }
                }

                #[no_mangle]
                extern "C" fn beluga_region_write(
                    region: *const c_void,
                    offset: u64,
                    buf: *const c_void,
                    len: usize,
                ) -> c_int {
                    // SAFETY: the C contract: a live handle, a buffer of `len`.
                    unsafe { provider::write::<$source>(region, offset, buf, len) }
                }
            }
        };
    }
    pub(crate) use export_beluga_regions;
}
