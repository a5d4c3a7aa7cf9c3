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
    ($($(#[$doc:meta])* $name:ident = $value:literal,)+) => {
        impl Errno {
            $($(#[$doc])* pub const $name: Errno = Errno($value);)+

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
    /// Not permitted: FREE for another uid, or RECLAIM, without admin.
    EPERM = 1,
    /// No such object: no visible name, a stale (index, serial), or no
    /// hold to release.
    ENOENT = 2,
    /// The pool could not be read or written, or a reply made no sense.
    EIO = 5,
    /// Not attached yet: try again once the attach is answered.
    EAGAIN = 11,
    /// Out of memory (the engine itself never allocates).
    ENOMEM = 12,
    /// The object's mode does not let the caller open it.
    EACCES = 13,
    /// A call is outstanding already, or the host to reclaim is live.
    EBUSY = 16,
    /// The name is taken.
    EEXIST = 17,
    /// An argument is out of range or does not fit the pool.
    EINVAL = 22,
    /// No free object entry, or no free run of sections long enough.
    ENOSPC = 28,
    /// No generation left for another format.
    EOVERFLOW = 75,
    /// This incarnation lost its lease or detached (reattach), or the
    /// call is not the outstanding one.
    ESTALE = 116,
    /// The tables are inconsistent or unreadable, or no serial is left
    /// (the pool needs a format).
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
