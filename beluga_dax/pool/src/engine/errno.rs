//! Errno values carried in replies and returned to callers.
//!
//! Every `Errno` the engine returns lies in `1..=Errno::MAX` (4095, the
//! kernel's `MAX_ERRNO`), including those it takes from a reply another
//! host wrote (`errno_for_status`), so a caller may negate it as an `i32`.
//! `Errno::to_kernel` does that and maps anything else to `-EIO`.

#![deny(clippy::arithmetic_side_effects)]

use super::memory::Fault;

/// A positive errno value, as carried in replies and returned to callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub u32);

/// Declares the named errnos and `Errno::NAMED`, the list of all of them.
macro_rules! errnos {
    ($($name:ident = $value:literal,)+) => {
        impl Errno {
            $(pub const $name: Errno = Errno($value);)+

            /// Every errno named here, with its name: the values are the
            /// Linux ones, which the module checks against the kernel's
            /// and a host test against the C library's
            /// (`beluga_dax/agreement.rs`).
            pub const NAMED: &'static [(&'static str, Errno)] =
                &[$((stringify!($name), Errno::$name),)+];
        }
    };
}

errnos! {
    EPERM = 1,
    ENOENT = 2,
    EIO = 5,
    EAGAIN = 11,
    ENOMEM = 12,
    EACCES = 13,
    EBUSY = 16,
    EEXIST = 17,
    EINVAL = 22,
    ENOSPC = 28,
    EOVERFLOW = 75,
    ESTALE = 116,
    EUCLEAN = 117,
}

impl Errno {
    /// The largest errno value (the kernel's `MAX_ERRNO`).
    pub const MAX: u32 = 4095;

    /// The negative value a kernel function returns for this error:
    /// `-self.0`, or `-EIO` if `self.0` is not in `1..=MAX` (never
    /// overflows, never 0).
    pub fn to_kernel(self) -> i32 {
        let valid = if (1..=Self::MAX).contains(&self.0) {
            self.0
        } else {
            Self::EIO.0
        };
        // `valid <= 4095`: the conversion and the negation cannot fail.
        i32::try_from(valid).map_or(-5, i32::wrapping_neg)
    }
}

/// The errno a caller sees for a nonzero reply status (0 is success): the
/// status itself if it is a valid errno (`1..=Errno::MAX`), else `EIO`. A
/// reply is written by another host; its status is never trusted further.
pub fn errno_for_status(status: u32) -> Errno {
    if (1..=Errno::MAX).contains(&status) {
        Errno(status)
    } else {
        Errno::EIO
    }
}

impl From<Fault> for Errno {
    fn from(_: Fault) -> Errno {
        Errno::EIO
    }
}
