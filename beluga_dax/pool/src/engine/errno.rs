//! Errno values carried in replies and returned to callers.

use super::memory::Fault;

/// A positive errno value, as carried in replies and returned to callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub u32);

impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const EIO: Errno = Errno(5);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const EINVAL: Errno = Errno(22);
    pub const ENOSPC: Errno = Errno(28);
    pub const ESTALE: Errno = Errno(116);
    pub const EUCLEAN: Errno = Errno(117);
}

impl From<Fault> for Errno {
    fn from(_: Fault) -> Errno {
        Errno::EIO
    }
}
