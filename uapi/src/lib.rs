//! The cxlfabric user-space ABI, one definition for the kernel and the
//! tools. The modules compile these files in through `support/uapi.rs`, so
//! every file here is `no_std`, free of dependencies, and refers to its
//! siblings only as `super::<file>`.

#![no_std]

pub mod beluga;
pub mod ioctl;
pub mod mchannel;
pub mod selftest;
