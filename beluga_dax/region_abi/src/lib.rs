// SPDX-License-Identifier: GPL-2.0

//! beluga_dax's in-kernel region ABI, `beluga_dax/beluga_region.h`, as
//! Rust: the C type of each function and the names a consumer looks them
//! up by. It belongs to beluga_dax, and lives beside it; the `unsafe`
//! glue over it (the consumer's lookup and calls, the provider's
//! definitions, which are checked against these types) is the support
//! layer's `region` part, the only place the project keeps `unsafe`.
//!
//! Built into every module that uses the support crate (as the `uapi`
//! crate is), and on the host, where a test ties [`SYMBOLS`] to the
//! header's declarations. Types are spelled as the kernel's `ffi` crate
//! spells C's: `char` is `u8` (the kernel builds with
//! `-funsigned-char`), `int` is `i32`, `size_t` is `usize`.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use core::ffi::c_void;

/// `beluga_region_get`: creates or opens object `name` of at least
/// `size` bytes in pool `pool` (both NUL-terminated) and holds it for
/// this host; NULL with `*err` set on failure.
pub type GetFn =
    unsafe extern "C" fn(pool: *const u8, name: *const u8, size: u64, err: *mut i32) -> *mut c_void;
/// `beluga_region_put`: lets go of a region (clears its revoke callback,
/// waiting for a call in progress).
pub type PutFn = unsafe extern "C" fn(region: *mut c_void);
/// `beluga_region_phys`: the region's physical address.
pub type PhysFn = unsafe extern "C" fn(region: *const c_void) -> u64;
/// `beluga_region_size`: the region's size in bytes.
pub type SizeFn = unsafe extern "C" fn(region: *const c_void) -> u64;
/// `beluga_region_read`: copies `len` bytes at `offset` out, keeping the
/// flush discipline (process context: takes a mutex); 0 or `-errno`.
pub type ReadFn =
    unsafe extern "C" fn(region: *const c_void, offset: u64, buf: *mut c_void, len: usize) -> i32;
/// `beluga_region_write`: copies `len` bytes in at `offset` and writes
/// them back (process context); 0 or `-errno`.
pub type WriteFn =
    unsafe extern "C" fn(region: *const c_void, offset: u64, buf: *const c_void, len: usize) -> i32;
/// `beluga_region_access_begin`: opens a non-sleeping access section
/// (RCU read side); the region's kernel address with its length in
/// `*len`, or NULL once the region is revoked.
pub type AccessBeginFn =
    unsafe extern "C" fn(region: *const c_void, len: *mut usize) -> *mut c_void;
/// `beluga_region_access_end`: ends the section, in the task that began
/// it.
pub type AccessEndFn = unsafe extern "C" fn(region: *const c_void);
/// A revoke callback: called once, in process context, before the
/// region is revoked.
pub type RevokeFn = unsafe extern "C" fn(data: *mut c_void);
/// `beluga_region_on_revoke`: registers (or with `None` clears) the
/// revoke callback; `-ENODEV` on a revoked region.
pub type OnRevokeFn =
    unsafe extern "C" fn(region: *const c_void, f: Option<RevokeFn>, data: *mut c_void) -> i32;

/// The exported functions, NUL-terminated, in the order a consumer's
/// table of them (support's `region::Api`) keeps: get, put, phys, size,
/// read, write, access_begin, access_end, on_revoke.
/// `beluga_region_page` is a static inline of the header, not exported.
pub const SYMBOLS: [&[u8]; 9] = [
    b"beluga_region_get\0",
    b"beluga_region_put\0",
    b"beluga_region_phys\0",
    b"beluga_region_size\0",
    b"beluga_region_read\0",
    b"beluga_region_write\0",
    b"beluga_region_access_begin\0",
    b"beluga_region_access_end\0",
    b"beluga_region_on_revoke\0",
];

/// Whether `name` ends in its only NUL (what `__symbol_get` needs).
const fn nul_terminated(name: &[u8]) -> bool {
    if name.is_empty() || name[name.len() - 1] != 0 {
        return false;
    }
    let mut i = 0;
    while i + 1 < name.len() {
        if name[i] == 0 {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether every symbol is NUL-terminated without an inner NUL.
const fn all_nul_terminated(names: &[&[u8]]) -> bool {
    let mut i = 0;
    while i < names.len() {
        if !nul_terminated(names[i]) {
            return false;
        }
        i += 1;
    }
    true
}

// The consumer passes these to `__symbol_get` as C strings.
const _: () = assert!(all_nul_terminated(&SYMBOLS));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn termination_is_checked() {
        assert!(nul_terminated(b"a\0"));
        assert!(!nul_terminated(b"a"));
        assert!(!nul_terminated(b"a\0b\0"));
        assert!(!nul_terminated(b""));
    }
}
