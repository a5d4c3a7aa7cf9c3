// SPDX-License-Identifier: GPL-2.0

//! Error codes 6.12's `kernel::error::code` lacks (later releases declare
//! them there as constants). Functions here, since 6.12's
//! `Error::from_errno` is not `const`. And [`register_with`], which the
//! wrappers' registrations share.
//!
//! [`MAX_ERRNO`] and the numbers in [`errno`] are for compile-time checks
//! that a module's own constants (a `no_std` core's errnos) agree with the
//! kernel's; upstream gives them only as `Error` values, whose `to_errno`
//! is not `const`. Code that fails returns an `Error`, never a number.

use kernel::bindings;
use kernel::error::{Error, Result};

/// `EOPNOTSUPP`: operation not supported.
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `ETIMEDOUT`: timed out.
pub fn etimedout() -> Error {
    Error::from_errno(-(bindings::ETIMEDOUT as i32))
}

/// `ENOBUFS`: no buffer space (a queue dropped the packet).
pub fn enobufs() -> Error {
    Error::from_errno(-(bindings::ENOBUFS as i32))
}

/// `EMSGSIZE`: a message (frame) too long for where it goes.
pub fn emsgsize() -> Error {
    Error::from_errno(-(bindings::EMSGSIZE as i32))
}

/// `EDQUOT`: a per-user quota is used up.
pub fn edquot() -> Error {
    Error::from_errno(-(bindings::EDQUOT as i32))
}

/// The largest errno value: an `ERR_PTR` or a negative return in
/// `-MAX_ERRNO..0` is an error (`include/linux/err.h`).
pub const MAX_ERRNO: u32 = bindings::MAX_ERRNO;

/// The kernel's errno numbers (positive), as bindgen gives them.
pub mod errno {
    pub use kernel::bindings::{
        EACCES, EAGAIN, EBUSY, EEXIST, EINVAL, EIO, ENOENT, ENOMEM, ENOSPC, EOVERFLOW, EPERM,
        ESTALE, EUCLEAN,
    };
}

/// Runs a registration (a C one returns a handle or an `ERR_PTR`, turned
/// into a `Result` by `kernel::error::from_err_ptr`) and logs a failure.
pub fn register_with<R>(what: &str, register: impl FnOnce() -> Result<R>) -> Result<R> {
    register().inspect_err(|err| {
        kernel::pr_err!("cannot register {}: error {}\n", what, err.to_errno());
    })
}
