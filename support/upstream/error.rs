// SPDX-License-Identifier: GPL-2.0

//! Error codes 6.12's `kernel::error::code` lacks (later releases declare
//! them there as constants). Functions here, since 6.12's
//! `Error::from_errno` is not `const`. And [`register_with`], which the
//! wrappers' registrations share.

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

/// `EDQUOT`: a per-user quota is used up.
pub fn edquot() -> Error {
    Error::from_errno(-(bindings::EDQUOT as i32))
}

/// Runs a registration (a C one returns a handle or an `ERR_PTR`, turned
/// into a `Result` by `kernel::error::from_err_ptr`) and logs a failure.
pub fn register_with<R>(what: &str, register: impl FnOnce() -> Result<R>) -> Result<R> {
    register().inspect_err(|err| {
        kernel::pr_err!("cannot register {}: error {}\n", what, err.to_errno());
    })
}
