// SPDX-License-Identifier: GPL-2.0

//! The provider side of the region API, compiled into beluga_dax only:
//! the C functions of `beluga_region.h` ([`export_beluga_regions!`]) over
//! a [`RegionSource`], access sections and revoke callbacks.

use super::*;
use crate::helpers;
use crate::sharedmem::SharedMem;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::error::from_result;
use kernel::ffi::c_char;
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
                unsafe { provider::with::<$source, _>(region, |r| provider::SharedRegion::phys(r)) }
            }

            #[no_mangle]
            extern "C" fn beluga_region_size(region: *const c_void) -> u64 {
                // SAFETY: C callers keep beluga_region.h's contract: a
                // live handle.
                unsafe { provider::with::<$source, _>(region, |r| provider::SharedRegion::size(r)) }
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
