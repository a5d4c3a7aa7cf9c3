// SPDX-License-Identifier: GPL-2.0

//! What the support layer needs from C beyond 6.12's `kernel::bindings`:
//! generated at build time by bindgen from `bindings/bindings_helper.h`
//! (the items `bindings/parameters` names), with the kernel's own flags,
//! once per module directory (`scripts/cxlfabric.mk`). Everything else is
//! re-exported from `kernel::bindings`, so a wrapper imports one
//! `bindings` and a layout is never written by hand. A type the kernel
//! declares opaquely (`napi_struct`) is generated here in full, with the
//! functions that take it, so that both agree.
//!
//! Upstream: a kernel whose `bindings_helper.h` includes these headers
//! makes this file unnecessary.

// Generated code: C names, and no documentation to lint.
#[allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unreachable_pub,
    improper_ctypes,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
mod generated {
    use kernel::ffi;
    // Starts with `pub use kernel::bindings::*;`: what is generated here
    // shadows the kernel's item of the same name (an opaque declaration
    // there), and everything else comes through.
    include!(env!("CXLF_BINDINGS"));
}

// A module that uses no part reading these leaves them unused.
#[allow(unused_imports)]
pub(crate) use generated::*;
