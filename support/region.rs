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
//!
//! Two ways in: [`Region::read`] and [`Region::write`] take beluga_dax's
//! lock and flush for the caller (process context only); [`Region::access`]
//! opens a non-sleeping access section ([`Access`]: NAPI, transmit, under
//! spinlocks) in which the region stays mapped and not revoked, with
//! bounds-checked reads and writes, explicit write-back and invalidation
//! of line ranges, and the region's pages ([`SharedPage`]). The section is
//! an RCU read-side section: readers cost nothing and never sleep, and
//! beluga_dax revokes a region by marking it gone and waiting for a grace
//! period (`synchronize_rcu`), which unbind can afford. [`Region::on_revoke`]
//! tells the user before that happens.

#[cfg(not(cxlf_region_provider))]
pub use consumer::{Access, RevokeHandler};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;

/// The C types of `beluga_region.h`'s functions (the ABI is beluga_dax's,
/// kept beside it in `beluga_dax/region_abi/`); the provider's
/// definitions are checked against them (`export_beluga_regions!`).
pub use beluga_region_abi::{
    AccessBeginFn, AccessEndFn, GetFn, OnRevokeFn, PhysFn, PutFn, ReadFn, RevokeFn, SizeFn,
    WriteFn,
};

/// The names [`Api`] looks up, in the order of its fields: NUL-terminated
/// (checked where they are defined).
#[cfg(not(cxlf_region_provider))]
const NAMES: [&[u8]; 9] = beluga_region_abi::SYMBOLS;

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
    access_begin: AccessBeginFn,
    access_end: AccessEndFn,
    on_revoke: OnRevokeFn,
}

#[cfg(not(cxlf_region_provider))]
impl Api {
    /// Finds every function, or none (`ENOENT` if beluga_dax is not
    /// loaded, or is still loading or going away).
    fn find() -> Result<Api> {
        let mut addrs = [core::ptr::null_mut::<c_void>(); NAMES.len()];
        for (i, name) in NAMES.iter().enumerate() {
            // SAFETY: `name` is NUL-terminated (checked at compile time in
            // `beluga_region_abi`) and static; `__symbol_get` has no other
            // preconditions.
            let addr = unsafe { kernel::bindings::__symbol_get(name.as_ptr()) };
            if addr.is_null() {
                // SAFETY: the first `i` names were found, each with a
                // reference this puts back once.
                unsafe { put_names(&NAMES[..i]) };
                pr_err!(
                    "beluga_dax is not loaded: no {} for its region API\n",
                    symbol_name(name)
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
                access_begin: transmute::<*mut c_void, AccessBeginFn>(addrs[6]),
                access_end: transmute::<*mut c_void, AccessEndFn>(addrs[7]),
                on_revoke: transmute::<*mut c_void, OnRevokeFn>(addrs[8]),
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
unsafe fn put_names(names: &[&[u8]]) {
    for name in names {
        // SAFETY: found, so beluga_dax holds the symbol until the
        // reference goes, here (the caller's guarantee); NUL-terminated.
        unsafe { kernel::bindings::__symbol_put(name.as_ptr()) };
    }
}

/// `name` without its NUL, for a log line.
#[cfg(not(cxlf_region_provider))]
fn symbol_name(name: &[u8]) -> &str {
    let bytes = name.strip_suffix(&[0]).unwrap_or(name);
    core::str::from_utf8(bytes).unwrap_or("?")
}

/// A named, cross-host shared region of a beluga pool, held until drop.
///
/// # Invariants
///
/// `raw` is a live handle from `api.get`, owned by this value; `phys` and
/// `size` are its physical address and size. `handler`, if any, is the
/// revoke handler registered for `raw`.
#[cfg(not(cxlf_region_provider))]
pub struct Region {
    raw: *mut c_void,
    phys: u64,
    size: u64,
    /// Dropped after the handle is put (field order), when beluga_dax
    /// can no longer call it.
    handler: Option<consumer::Handler>,
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
        // SAFETY: `raw` is a live handle of `api`.
        let (phys, size) = unsafe { ((api.phys)(raw), (api.size)(raw)) };
        // INVARIANT: a live handle from `api.get`, which this value now
        // owns, with the functions it came from, its address and size; no
        // handler yet.
        Ok(Region {
            raw,
            phys,
            size,
            handler: None,
            api,
        })
    }

    /// Physical address of the region.
    pub fn phys(&self) -> u64 {
        self.phys
    }

    /// Bytes in the region.
    pub fn size(&self) -> u64 {
        self.size
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
        // here, before `handler` and `api` (and with it beluga_dax's
        // references) go. Putting it unregisters the handler, waiting for
        // a call in progress.
        unsafe { (self.api.put)(self.raw) };
    }
}

/// The consumer's non-sleeping access and revoke notification.
#[cfg(not(cxlf_region_provider))]
mod consumer;

/// The provider side, compiled into beluga_dax only.
#[cfg(cxlf_region_provider)]
pub mod provider;
