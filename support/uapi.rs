// SPDX-License-Identifier: GPL-2.0

//! The user-space ABI (`uapi/src/`), compiled into the module from the same
//! files the tools use: one definition of every ioctl number and structure.
//! No upstream counterpart: the ABI is the project's own.

// The ABI files declare `pub` items for the tools; inside a module crate
// they are reachable only through this module.
#[allow(unreachable_pub)]
#[path = "../uapi/src/beluga.rs"]
pub(crate) mod beluga;
#[allow(unreachable_pub)]
#[path = "../uapi/src/ioctl.rs"]
pub(crate) mod ioctl;
#[allow(unreachable_pub)]
#[path = "../uapi/src/mchannel.rs"]
pub(crate) mod mchannel;
#[allow(unreachable_pub)]
#[path = "../uapi/src/selftest.rs"]
pub(crate) mod selftest;

/// Marks ABI structures as plain bytes for `UserSlice` copies.
macro_rules! plain_bytes {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: `#[repr(C)]` with only integer and integer-array fields
        // and no padding (the ABI file asserts the sizes), so every byte
        // pattern is a valid value and every byte is initialised.
        unsafe impl kernel::types::FromBytes for $t {}
        // SAFETY: as above.
        unsafe impl kernel::types::AsBytes for $t {}
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
    mchannel::ComponentSpec,
    mchannel::ChannelSpec,
    mchannel::AttachArgs,
    mchannel::CongestionArgs,
    mchannel::ChannelStat,
);
