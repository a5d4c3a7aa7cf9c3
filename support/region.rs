// SPDX-License-Identifier: GPL-2.0

//! beluga_dax's in-kernel region API (`beluga_dax/beluga_region.h`), both
//! sides. No upstream counterpart: this is the project's own ABI. Rust
//! modules of 6.12 cannot export Rust items to each other, so the API is a
//! small C ABI: beluga_dax defines it with [`export_beluga_regions!`] (its
//! `helpers.c` exports the symbols), and other modules use [`Region`].
//!
//! A consumer finds the functions when it gets a region, by name, as C's
//! `symbol_get` does (`__symbol_get`, which takes a reference on beluga_dax
//! for each), and puts them when the region goes (`__symbol_put`): it
//! references no beluga_dax symbol, so it does not depend on beluga_dax
//! (`modinfo -F depends` lists none), loads without it, and holds it loaded
//! only while it holds a region. Without beluga_dax, [`Region::get`] fails
//! with `ENOENT` and a log line saying so.

use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

/// The C types of `beluga_region.h`'s functions; the provider's
/// definitions are checked against them (`export_beluga_regions!`).
pub type GetFn = unsafe extern "C" fn(
    pool: *const c_char,
    name: *const c_char,
    size: u64,
    err: *mut c_int,
) -> *mut c_void;
/// `beluga_region_put`'s type.
pub type PutFn = unsafe extern "C" fn(region: *mut c_void);
/// `beluga_region_phys`'s type.
pub type PhysFn = unsafe extern "C" fn(region: *const c_void) -> u64;
/// `beluga_region_size`'s type.
pub type SizeFn = unsafe extern "C" fn(region: *const c_void) -> u64;
/// `beluga_region_read`'s type.
pub type ReadFn =
    unsafe extern "C" fn(region: *const c_void, offset: u64, buf: *mut c_void, len: usize) -> c_int;
/// `beluga_region_write`'s type.
pub type WriteFn = unsafe extern "C" fn(
    region: *const c_void,
    offset: u64,
    buf: *const c_void,
    len: usize,
) -> c_int;

/// The names [`Api`] looks up, in the order of its fields.
#[cfg(not(cxlf_region_provider))]
const NAMES: [&CStr; 6] = [
    kernel::c_str!("beluga_region_get"),
    kernel::c_str!("beluga_region_put"),
    kernel::c_str!("beluga_region_phys"),
    kernel::c_str!("beluga_region_size"),
    kernel::c_str!("beluga_region_read"),
    kernel::c_str!("beluga_region_write"),
];

/// beluga_dax's functions, found by name.
///
/// # Invariants
///
/// Each field is the address `__symbol_get` gave for the name of the same
/// position in [`NAMES`], a function of beluga_dax with the C type of its
/// field; the value holds the module reference each of those calls took,
/// and puts them on drop (so beluga_dax stays loaded while it lives).
#[cfg(not(cxlf_region_provider))]
struct Api {
    get: GetFn,
    put: PutFn,
    phys: PhysFn,
    size: SizeFn,
    read: ReadFn,
    write: WriteFn,
}

#[cfg(not(cxlf_region_provider))]
impl Api {
    /// Finds every function, or none (`ENOENT` if beluga_dax is not
    /// loaded, or is still loading or going away).
    fn find() -> Result<Api> {
        let mut addrs = [core::ptr::null_mut::<c_void>(); 6];
        for (i, name) in NAMES.iter().enumerate() {
            // SAFETY: `name` is NUL-terminated and static; `__symbol_get`
            // has no other preconditions.
            let addr = unsafe { kernel::bindings::__symbol_get(name.as_char_ptr()) };
            if addr.is_null() {
                // SAFETY: the first `i` names were found, each with a
                // reference this puts back once.
                unsafe { put_names(&NAMES[..i]) };
                pr_err!(
                    "beluga_dax is not loaded: no {:?} for its region API\n",
                    name
                );
                return Err(ENOENT);
            }
            addrs[i] = addr;
        }
        // SAFETY: each address is beluga_dax's function of that name,
        // defined by `export_beluga_regions!` with the type of its field
        // (checked there), so it may be called as one; function pointers
        // and data pointers have one size and representation.
        let api = unsafe {
            use core::mem::transmute;
            Api {
                get: transmute::<*mut c_void, GetFn>(addrs[0]),
                put: transmute::<*mut c_void, PutFn>(addrs[1]),
                phys: transmute::<*mut c_void, PhysFn>(addrs[2]),
                size: transmute::<*mut c_void, SizeFn>(addrs[3]),
                read: transmute::<*mut c_void, ReadFn>(addrs[4]),
                write: transmute::<*mut c_void, WriteFn>(addrs[5]),
            }
        };
        // INVARIANT: every name found, in order, with its reference held.
        Ok(api)
    }
}

#[cfg(not(cxlf_region_provider))]
impl Drop for Api {
    fn drop(&mut self) {
        // SAFETY: every name was found, and its reference is this value's
        // (invariant), put once, here.
        unsafe { put_names(&NAMES) };
    }
}

/// Puts the references `__symbol_get` took for `names`.
///
/// # Safety
///
/// Each name was found by `__symbol_get`, and the caller owns that
/// reference and gives it up.
#[cfg(not(cxlf_region_provider))]
unsafe fn put_names(names: &[&CStr]) {
    for name in names {
        // SAFETY: found, so beluga_dax holds the symbol until the
        // reference goes, here (the caller's guarantee).
        unsafe { kernel::bindings::__symbol_put(name.as_char_ptr()) };
    }
}

/// A named, cross-host shared region of a beluga pool, held until drop.
///
/// # Invariants
///
/// `raw` is a live handle from `api.get`, owned by this value.
#[cfg(not(cxlf_region_provider))]
pub struct Region {
    raw: *mut c_void,
    /// Dropped after the handle is put (field order).
    api: Api,
}

// SAFETY: the handle may be used and released from any thread; beluga_dax
// serialises access internally. The function addresses are plain data.
#[cfg(not(cxlf_region_provider))]
unsafe impl Send for Region {}
// SAFETY: as above.
#[cfg(not(cxlf_region_provider))]
unsafe impl Sync for Region {}

#[cfg(not(cxlf_region_provider))]
impl Region {
    /// Creates or opens the shared object `name` of at least `size` bytes
    /// in pool `pool` (e.g. `beluga0.0`). `ENOENT` (logged) if beluga_dax
    /// is not loaded.
    pub fn get(pool: &CStr, name: &CStr, size: u64) -> Result<Region> {
        let api = Api::find()?;
        let mut err: c_int = 0;
        // SAFETY: `api.get` is `beluga_region_get` (invariant of `Api`);
        // `CStr`s are NUL-terminated and live for the call, which only
        // reads them; `err` is a valid out-parameter.
        let raw = unsafe { (api.get)(pool.as_char_ptr(), name.as_char_ptr(), size, &mut err) };
        if raw.is_null() {
            return Err(Error::from_errno(err));
        }
        // INVARIANT: a live handle from `api.get`, which this value now
        // owns, with the functions it came from.
        Ok(Region { raw, api })
    }

    /// Physical address of the region.
    pub fn phys(&self) -> u64 {
        // SAFETY: `raw` is a live handle of `api` (invariant).
        unsafe { (self.api.phys)(self.raw) }
    }

    /// Bytes in the region.
    pub fn size(&self) -> u64 {
        // SAFETY: `raw` is a live handle of `api` (invariant).
        unsafe { (self.api.size)(self.raw) }
    }

    /// Reads `out.len()` bytes at `offset` (invalidating the lines first).
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result {
        // SAFETY: `raw` is a live handle of `api` (invariant); `out` is a
        // live `&mut` slice, valid for writes of its length, which is all
        // the provider writes.
        kernel::error::to_result(unsafe {
            (self.api.read)(self.raw, offset, out.as_mut_ptr().cast(), out.len())
        })
    }

    /// Writes `data` at `offset` (then writes the lines back).
    pub fn write(&self, offset: u64, data: &[u8]) -> Result {
        // SAFETY: `raw` is a live handle of `api` (invariant); `data` is a
        // live slice, valid for reads of its length, which is all the
        // provider reads.
        kernel::error::to_result(unsafe {
            (self.api.write)(self.raw, offset, data.as_ptr().cast(), data.len())
        })
    }
}

#[cfg(not(cxlf_region_provider))]
impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the handle is this value's (invariant), released once,
        // here, before `api` (and with it beluga_dax's references) goes.
        unsafe { (self.api.put)(self.raw) };
    }
}

/// The provider side, compiled into beluga_dax only.
#[cfg(cxlf_region_provider)]
pub mod provider {
    use super::*;
    use core::sync::atomic::{AtomicPtr, Ordering};
    use kernel::error::from_result;
    use kernel::sync::Arc;
    use kernel::types::ForeignOwnable;

    /// A region handed out through the C ABI.
    pub trait SharedRegion: Send + Sync + 'static {
        /// Physical address of the region's first byte.
        fn phys(&self) -> u64;
        /// Bytes in the region.
        fn size(&self) -> u64;
        /// Reads `out.len()` bytes at `offset`.
        fn read(&self, offset: u64, out: &mut [u8]) -> Result;
        /// Writes `data` at `offset`.
        fn write(&self, offset: u64, data: &[u8]) -> Result;
    }

    /// Finds or creates regions.
    pub trait RegionSource: Send + Sync + 'static {
        /// The regions it hands out.
        type Region: SharedRegion;
        /// The region `name` of pool `pool`, created with `size` bytes if new.
        fn get(&self, pool: &CStr, name: &CStr, size: u64) -> Result<Arc<Self::Region>>;
    }

    /// Where the exported functions find the module's source: installed
    /// at the end of module init, removed at exit.
    ///
    /// # Invariants
    ///
    /// `ptr` is null or an `Arc<T>` turned into a foreign pointer, owned
    /// by the cell.
    pub struct SourceCell<T> {
        ptr: AtomicPtr<c_void>,
        _t: core::marker::PhantomData<Arc<T>>,
    }

    // SAFETY: the cell only hands out shared references to `T`, which is
    // `Send + Sync`.
    unsafe impl<T: Send + Sync> Sync for SourceCell<T> {}

    impl<T: RegionSource> SourceCell<T> {
        /// An empty cell.
        pub const fn new() -> Self {
            // INVARIANT: null.
            SourceCell {
                ptr: AtomicPtr::new(core::ptr::null_mut()),
                _t: core::marker::PhantomData,
            }
        }

        /// Makes `source` the one the C functions use.
        pub fn install(&self, source: Arc<T>) {
            // SAFETY: an `Arc<T>` given up by `into_foreign`, for the cell.
            unsafe { self.replace(source.into_foreign().cast_mut()) };
        }

        /// Removes the source; the C functions fail from now on.
        pub fn remove(&self) {
            // SAFETY: null.
            unsafe { self.replace(core::ptr::null_mut()) };
        }

        /// Stores `new` and drops the `Arc<T>` the cell held before, if
        /// any.
        ///
        /// # Safety
        ///
        /// `new` must be null or an `Arc<T>` given up by `into_foreign`,
        /// which the cell then owns.
        unsafe fn replace(&self, new: *mut c_void) {
            // INVARIANT: `new` is null or an `Arc<T>` the cell now owns
            // (the caller's guarantee).
            let old = self.ptr.swap(new, Ordering::AcqRel);
            if !old.is_null() {
                // SAFETY: a non-null `ptr` is an `Arc<T>` the cell owned
                // (invariant); the swap took it out, so it is dropped once.
                drop(unsafe { Arc::<T>::from_foreign(old) });
            }
        }

        fn get(&self) -> Option<Arc<T>> {
            let ptr = self.ptr.load(Ordering::Acquire);
            if ptr.is_null() {
                return None;
            }
            // Exported calls come only from modules that hold a reference
            // on this one (through `symbol_get`, or a dependency on its
            // symbols): none runs before init installs the source or after
            // exit begins.
            // SAFETY: a non-null `ptr` is an `Arc<T>` the cell owns
            // (invariant), and it lives until `remove`, at module exit,
            // after every exported call has returned (see above).
            let borrowed = unsafe { Arc::<T>::borrow(ptr) };
            Some(borrowed.into())
        }
    }

    /// # Safety
    ///
    /// `pool` and `name` are NUL-terminated strings, `err` a valid
    /// out-parameter (the C contract of `beluga_region_get`).
    pub unsafe fn get<T: RegionSource>(
        cell: &SourceCell<T>,
        pool: *const c_char,
        name: *const c_char,
        size: u64,
        err: *mut c_int,
    ) -> *mut c_void {
        // SAFETY: the C caller passes NUL-terminated strings that live for
        // the call (function contract).
        let (pool, name) = unsafe { (CStr::from_char_ptr(pool), CStr::from_char_ptr(name)) };
        let result = match cell.get() {
            Some(source) => source.get(pool, name, size),
            None => Err(ENODEV),
        };
        match result {
            Ok(region) => region.into_foreign().cast_mut(),
            Err(e) => {
                // SAFETY: the C caller passes a valid out-parameter
                // (function contract).
                unsafe { *err = e.to_errno() };
                core::ptr::null_mut()
            }
        }
    }

    /// # Safety
    ///
    /// `region` came from `get::<T>` and is not used after this.
    pub unsafe fn put<T: RegionSource>(region: *mut c_void) {
        // SAFETY: `region` is an `Arc<T::Region>` that `get::<T>` gave up
        // with `into_foreign`, put once (function contract).
        drop(unsafe { Arc::<T::Region>::from_foreign(region) });
    }

    /// # Safety
    ///
    /// `region` came from `get::<T>` and has not been put.
    pub unsafe fn with<T: RegionSource, R>(
        region: *const c_void,
        f: impl FnOnce(&T::Region) -> R,
    ) -> R {
        // SAFETY: `region` is an `Arc<T::Region>` from `get::<T>` that
        // has not been put (function contract), so it lives for the call.
        let region = unsafe { Arc::<T::Region>::borrow(region) };
        f(&region)
    }

    /// # Safety
    ///
    /// As for [`with`]; `buf` is valid for writes of `len` bytes.
    pub unsafe fn read<T: RegionSource>(
        region: *const c_void,
        offset: u64,
        buf: *mut c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: the C caller passes a buffer valid for writes of `len`
        // bytes that nothing else uses during the call (function contract).
        let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        from_result(|| {
            // SAFETY: `region` is live (function contract).
            unsafe { with::<T, _>(region, |r| r.read(offset, out)) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for [`with`]; `buf` is valid for reads of `len` bytes.
    pub unsafe fn write<T: RegionSource>(
        region: *const c_void,
        offset: u64,
        buf: *const c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: the C caller passes a buffer valid for reads of `len`
        // bytes (function contract).
        let data = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
        from_result(|| {
            // SAFETY: `region` is live (function contract).
            unsafe { with::<T, _>(region, |r| r.write(offset, data)) }?;
            Ok(0)
        })
    }

    /// Defines the C functions of `beluga_region.h` over `$cell`, a
    /// `static SourceCell<$source>`; the module's `helpers.c` exports them.
    #[macro_export]
    macro_rules! export_beluga_regions {
        ($cell:path, $source:ty) => {
            mod beluga_region_exports {
                use kernel::ffi::{c_char, c_int, c_void};
                use $crate::region::{self, provider};

                // Consumers call them through these types (they find them
                // by name, so nothing else checks that the types agree).
                const _: region::GetFn = beluga_region_get;
                const _: region::PutFn = beluga_region_put;
                const _: region::PhysFn = beluga_region_phys;
                const _: region::SizeFn = beluga_region_size;
                const _: region::ReadFn = beluga_region_read;
                const _: region::WriteFn = beluga_region_write;

                #[no_mangle]
                extern "C" fn beluga_region_get(
                    pool: *const c_char,
                    name: *const c_char,
                    size: u64,
                    err: *mut c_int,
                ) -> *mut c_void {
                    // SAFETY: C callers keep beluga_region_get's contract
                    // (beluga_region.h): NUL-terminated names, a valid `err`.
                    unsafe { provider::get::<$source>(&$cell, pool, name, size, err) }
                }

                #[no_mangle]
                extern "C" fn beluga_region_put(region: *mut c_void) {
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // handle from beluga_region_get, put once.
                    unsafe { provider::put::<$source>(region) }
                }

                #[no_mangle]
                extern "C" fn beluga_region_phys(region: *const c_void) -> u64 {
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // live handle.
                    unsafe {
                        provider::with::<$source, _>(region, |r| provider::SharedRegion::phys(r))
                    }
                }

                #[no_mangle]
                extern "C" fn beluga_region_size(region: *const c_void) -> u64 {
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // live handle.
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
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // live handle, a buffer of `len` bytes.
                    unsafe { provider::read::<$source>(region, offset, buf, len) }
                }

                #[no_mangle]
                extern "C" fn beluga_region_write(
                    region: *const c_void,
                    offset: u64,
                    buf: *const c_void,
                    len: usize,
                ) -> c_int {
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // live handle, a buffer of `len` bytes.
                    unsafe { provider::write::<$source>(region, offset, buf, len) }
                }
            }
        };
    }
    pub use crate::export_beluga_regions;
}
