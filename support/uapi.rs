// SPDX-License-Identifier: GPL-2.0

//! The user-space ABI: the `uapi` crate (`uapi/src/`, `cxlf_uapi` in the
//! kernel build, whose own crate is `uapi`), built into the
//! module from the same files the tools use (one definition of every ioctl
//! number and structure), and the copies of its structures to and from
//! user memory. No upstream counterpart: the ABI is the project's own.

use core::mem::{size_of, MaybeUninit};
use kernel::error::Result;
use kernel::uaccess::{UserSliceReader, UserSliceWriter};

pub use cxlf_uapi::{beluga, cxlnic, ioctl, mchannel, selftest};

/// An ABI structure that is plain bytes, copied to and from user memory
/// with [`ReadAbi::read_abi`] and [`WriteAbi::write_abi`]. (The kernel's
/// `FromBytes`/`AsBytes` cannot be implemented here for another crate's
/// types.)
///
/// # Safety
///
/// Every byte pattern is a valid value of the type, and it has no padding
/// (every byte of a value is initialised).
pub unsafe trait Plain: Sized {}

/// Marks ABI structures as [`Plain`].
macro_rules! plain_bytes {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: `#[repr(C)]` with only integer and integer-array fields
        // and no padding (the ABI file asserts the sizes), so every byte
        // pattern is a valid value and every byte is initialised.
        unsafe impl Plain for $t {}
    )*};
}

plain_bytes!(
    beluga::PoolInfo,
    beluga::ObjectHandle,
    beluga::AllocArgs,
    beluga::OpenArgs,
    beluga::FreeArgs,
    beluga::ObjectInfo,
    beluga::ListArgs,
    beluga::FormatArgs,
    beluga::ReclaimArgs,
    cxlnic::KvsConfigArgs,
    cxlnic::KvsPairArgs,
    cxlnic::KvsStatsArgs,
    mchannel::ComponentSpec,
    mchannel::ChannelSpec,
    mchannel::AttachArgs,
    mchannel::CongestionArgs,
    mchannel::ChannelStat,
);

/// Reads ABI structures from user memory.
pub trait ReadAbi {
    /// Reads a `T`, as `UserSliceReader::read` does for `FromBytes` types.
    fn read_abi<T: Plain>(&mut self) -> Result<T>;
}

impl ReadAbi for UserSliceReader {
    fn read_abi<T: Plain>(&mut self) -> Result<T> {
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: `out` is valid for writing `size_of::<T>()` bytes, and a
        // `MaybeUninit<u8>` may hold any of them.
        let bytes = unsafe {
            core::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<MaybeUninit<u8>>(),
                size_of::<T>(),
            )
        };
        self.read_raw(bytes)?;
        // SAFETY: `read_raw` succeeded, so every byte of `out` is
        // initialised, and every byte pattern is a `T` (`Plain`).
        Ok(unsafe { out.assume_init() })
    }
}

/// Writes ABI structures to user memory.
pub trait WriteAbi {
    /// Writes `value`, as `UserSliceWriter::write` does for `AsBytes` types.
    fn write_abi<T: Plain>(&mut self, value: &T) -> Result;
}

impl WriteAbi for UserSliceWriter {
    fn write_abi<T: Plain>(&mut self, value: &T) -> Result {
        // SAFETY: `value` is valid for reading `size_of::<T>()` bytes, all
        // of them initialised (`Plain`: no padding), for the borrow.
        let bytes = unsafe {
            core::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>())
        };
        self.write_slice(bytes)
    }
}
