// SPDX-License-Identifier: GPL-2.0

//! What the user ABI (`uapi/src/beluga.rs`) and the pool core (`pool/src/`)
//! each define and must agree on, checked at compile time against the
//! kernel's errno values, so that a divergence fails the module build.
//!
//! The ABI has no dependencies and the pool format is not the ABI, so each
//! keeps its own definition; this file ties them. The host test
//! `pool/tests/abi_agreement.rs` checks the same through the two crates,
//! against the C library's errno values.

use crate::pool;
use crate::support::error::errno as os;
use crate::support::uapi::beluga as abi;

// Sizes and limits the ABI repeats from the pool format.
const _: () = assert!(abi::NAME_BYTES == pool::objects::NAME_BYTES);
const _: () = assert!(abi::MAX_HOSTS == pool::layout::MAX_HOSTS as usize);
const _: () = assert!(abi::SECTION_SIZE == pool::layout::SECTION_SIZE);

// The ABI's object flags are the pool's, bit for bit.
const _: () = assert!(abi::FLAG_SHARED == pool::objects::FLAG_SHARED);
const _: () = assert!(abi::FLAG_UNLINKED == pool::objects::FLAG_UNLINKED);
const _: () = assert!(abi::FLAG_CLEARING == pool::objects::FLAG_CLEARING);

/// Asserts that each named `Errno` of the pool core has the OS's value,
/// and that the list names every one of them (`Errno::NAMED`).
macro_rules! same_errnos {
    ($($name:ident),+ $(,)?) => {
        $(const _: () = assert!(
            pool::engine::Errno::$name.0 as i64 == os::$name as i64,
            concat!("Errno::", stringify!($name), " is not the OS's value")
        );)+
        const _: () = assert!(
            pool::engine::Errno::NAMED.len() == [$(stringify!($name)),+].len(),
            "an Errno of the pool core is missing here"
        );
    };
}

same_errnos!(
    EPERM, ENOENT, EIO, EAGAIN, ENOMEM, EACCES, EBUSY, EEXIST, EINVAL, ENOSPC, EOVERFLOW, ESTALE,
    EUCLEAN,
);
