//! The cxlfabric user-space ABI, one definition for the kernel and the
//! tools. The modules build it as crate `cxlf_uapi` (`scripts/cxlfabric.mk`),
//! which the support crate re-exports as `support::uapi`, so it is `no_std`
//! and free of dependencies. Every public item says what it means and its
//! unit: for the kernel and the tools alike, the ABI is its documentation.

#![no_std]
#![deny(missing_docs)]

pub mod beluga;
pub mod cxlnic;
pub mod ioctl;
pub mod mchannel;
pub mod selftest;
