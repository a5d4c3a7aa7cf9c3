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

/// `beluga_region_access_begin`'s type.
pub type AccessBeginFn =
    unsafe extern "C" fn(region: *const c_void, len: *mut usize) -> *mut c_void;
/// `beluga_region_access_end`'s type.
pub type AccessEndFn = unsafe extern "C" fn(region: *const c_void);
/// A revoke callback (`beluga_region_on_revoke`).
pub type RevokeFn = unsafe extern "C" fn(data: *mut c_void);
/// `beluga_region_on_revoke`'s type.
pub type OnRevokeFn =
    unsafe extern "C" fn(region: *const c_void, f: Option<RevokeFn>, data: *mut c_void) -> c_int;

/// The names [`Api`] looks up, in the order of its fields.
#[cfg(not(cxlf_region_provider))]
const NAMES: [&CStr; 9] = [
    kernel::c_str!("beluga_region_get"),
    kernel::c_str!("beluga_region_put"),
    kernel::c_str!("beluga_region_phys"),
    kernel::c_str!("beluga_region_size"),
    kernel::c_str!("beluga_region_read"),
    kernel::c_str!("beluga_region_write"),
    kernel::c_str!("beluga_region_access_begin"),
    kernel::c_str!("beluga_region_access_end"),
    kernel::c_str!("beluga_region_on_revoke"),
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
mod consumer {
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
            let page = PAGE_SIZE as u64;
            if off % page != 0 || off >= self.len() {
                return Err(EINVAL);
            }
            let phys = self.region.phys.checked_add(off).ok_or(EINVAL)?;
            let pfn = usize::try_from(phys / page).map_err(|_| EINVAL)?;
            // SAFETY: the page lies inside the region (checked), whose
            // memory has struct pages (ZONE_DEVICE, `beluga_region.h`);
            // the open section keeps the pool bound, so its memory map is
            // live, and beluga_dax releases the memory only once no page of
            // it is referenced beyond its idle count.
            Ok(unsafe { SharedPage::get_pfn(pfn) })
        }
    }
}

/// The provider side, compiled into beluga_dax only.
#[cfg(cxlf_region_provider)]
pub mod provider {
    use super::*;
    use crate::helpers;
    use crate::sharedmem::SharedMem;
    use core::sync::atomic::{AtomicPtr, Ordering};
    use kernel::error::from_result;
    use kernel::new_mutex;
    use kernel::sync::{Arc, Mutex};
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
        /// The kernel mapping of the region, for access sections; it must
        /// live as long as the region.
        fn mem(&self) -> &SharedMem;
        /// Whether access sections may begin. Once false it stays false,
        /// and whoever made it so calls [`wait_for_accesses`] before the
        /// memory changes owner.
        fn accessible(&self) -> bool;
        /// The user's revoke callback.
        fn hook(&self) -> &RevokeHook;
    }

    /// Waits until every access section open when it was called has
    /// ended (an RCU grace period). Call it after making regions
    /// inaccessible and before their memory changes owner. Sleeps.
    pub fn wait_for_accesses() {
        // SAFETY: no preconditions; the caller may sleep.
        unsafe { kernel::bindings::synchronize_rcu() };
    }

    /// The state of a region's revoke callback.
    enum Hook {
        Empty,
        Set(RevokeFn, *mut c_void),
        Fired,
    }

    /// `Hook` with its pointer.
    struct HookCell(Hook);

    // SAFETY: the callback and its data may be called from any task (the
    // contract of `beluga_region_on_revoke`).
    unsafe impl Send for HookCell {}

    /// A region user's revoke callback: set and cleared by the user,
    /// fired once by the provider before it revokes the region.
    ///
    /// # Invariants
    ///
    /// A `Hook::Set(f, data)` may be called as `f(data)` until it is
    /// replaced or cleared.
    #[pin_data]
    pub struct RevokeHook {
        #[pin]
        state: Mutex<HookCell>,
    }

    impl RevokeHook {
        /// An empty hook.
        pub fn new() -> Result<Arc<RevokeHook>> {
            Arc::pin_init(
                pin_init!(RevokeHook {
                    state <- new_mutex!(HookCell(Hook::Empty), "beluga:revoke_hook"),
                }),
                GFP_KERNEL,
            )
        }

        /// Sets (or with `None` clears) the callback; `ENODEV` once fired.
        ///
        /// # Safety
        ///
        /// `f(data)` may be called from process context until the callback
        /// is replaced or cleared (until the call that does so returns).
        unsafe fn set(&self, f: Option<RevokeFn>, data: *mut c_void) -> Result {
            let mut state = self.state.lock();
            if matches!(state.0, Hook::Fired) {
                return Err(ENODEV);
            }
            // INVARIANT: the caller's guarantee.
            state.0 = match f {
                Some(f) => Hook::Set(f, data),
                None => Hook::Empty,
            };
            Ok(())
        }

        /// Clears the callback, waiting for a call in progress.
        pub fn clear(&self) {
            let mut state = self.state.lock();
            if !matches!(state.0, Hook::Fired) {
                state.0 = Hook::Empty;
            }
        }

        /// Calls the callback, if set, once; later `set`s fail. Call it
        /// before making the region inaccessible, in process context.
        pub fn fire(&self) {
            let mut state = self.state.lock();
            if let Hook::Set(f, data) = core::mem::replace(&mut state.0, Hook::Fired) {
                // SAFETY: set and not replaced or cleared (the lock is
                // held), so callable (invariant).
                unsafe { f(data) };
            }
        }
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

    /// # Safety
    ///
    /// As for [`with`]; `len` is a valid out-parameter. On a non-null
    /// return the caller is in an access section and ends it with
    /// [`access_end`], in the same task, without sleeping meanwhile.
    pub unsafe fn access_begin<T: RegionSource>(region: *const c_void, len: *mut usize) -> *mut u8 {
        // SAFETY: no preconditions; ended below or by `access_end`.
        unsafe { helpers::cxlf_rcu_read_lock() };
        // SAFETY: `region` is live (function contract).
        let mapping = unsafe {
            with::<T, _>(region, |r| {
                // Whoever makes the region inaccessible waits for the
                // sections that saw it accessible (`wait_for_accesses`).
                r.accessible().then(|| (r.mem().as_ptr(), r.mem().len()))
            })
        };
        match mapping {
            Some((base, n)) => {
                // SAFETY: `len` is a valid out-parameter (function
                // contract).
                unsafe { *len = n };
                base
            }
            None => {
                // SAFETY: begun above, in this task.
                unsafe { helpers::cxlf_rcu_read_unlock() };
                core::ptr::null_mut()
            }
        }
    }

    /// # Safety
    ///
    /// Ends a section [`access_begin`] opened in this task.
    pub unsafe fn access_end() {
        // SAFETY: the section is an RCU read-side section of this task
        // (function contract).
        unsafe { helpers::cxlf_rcu_read_unlock() };
    }

    /// # Safety
    ///
    /// As for [`with`]; `f(data)` may be called from process context until
    /// the region is put or another callback registered.
    pub unsafe fn on_revoke<T: RegionSource>(
        region: *const c_void,
        f: Option<RevokeFn>,
        data: *mut c_void,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `region` is live (function contract); so is the
            // callback (function contract).
            unsafe { with::<T, _>(region, |r| r.hook().set(f, data)) }?;
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
                const _: region::AccessBeginFn = beluga_region_access_begin;
                const _: region::AccessEndFn = beluga_region_access_end;
                const _: region::OnRevokeFn = beluga_region_on_revoke;

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

                #[no_mangle]
                extern "C" fn beluga_region_access_begin(
                    region: *const c_void,
                    len: *mut usize,
                ) -> *mut c_void {
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // live handle, a valid `len`, the section ended with
                    // beluga_region_access_end without sleeping.
                    unsafe { provider::access_begin::<$source>(region, len) }.cast()
                }

                #[no_mangle]
                extern "C" fn beluga_region_access_end(_region: *const c_void) {
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // section they began, in this task.
                    unsafe { provider::access_end() }
                }

                #[no_mangle]
                extern "C" fn beluga_region_on_revoke(
                    region: *const c_void,
                    f: Option<region::RevokeFn>,
                    data: *mut c_void,
                ) -> c_int {
                    // SAFETY: C callers keep beluga_region.h's contract: a
                    // live handle, a callback valid until replaced or put.
                    unsafe { provider::on_revoke::<$source>(region, f, data) }
                }
            }
        };
    }
    pub use crate::export_beluga_regions;
}
