// SPDX-License-Identifier: GPL-2.0

//! Error codes 6.12's `kernel::error::code` lacks (later releases declare
//! them there as constants). Functions here, since 6.12's
//! `Error::from_errno` is not `const`.

use kernel::bindings;
use kernel::error::Error;

/// `EOPNOTSUPP`: operation not supported.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `ETIMEDOUT`: timed out.
pub(crate) fn etimedout() -> Error {
    Error::from_errno(-(bindings::ETIMEDOUT as i32))
}

/// `ENOBUFS`: no buffer space (a queue dropped the packet).
pub(crate) fn enobufs() -> Error {
    Error::from_errno(-(bindings::ENOBUFS as i32))
}

/// `EDQUOT`: a per-user quota is used up.
pub(crate) fn edquot() -> Error {
    Error::from_errno(-(bindings::EDQUOT as i32))
}
