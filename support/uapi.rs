// SPDX-License-Identifier: GPL-2.0

//! The user-space ABI (`uapi/src/`), compiled into the module from the same
//! files the tools use: one definition of every ioctl number and structure.

// The ABI files declare `pub` items for the tools; inside a module crate
// they are reachable only through this module.
#[allow(unreachable_pub)]
#[path = "../uapi/src/ioctl.rs"]
pub(crate) mod ioctl;
#[allow(unreachable_pub)]
#[path = "../uapi/src/selftest.rs"]
pub(crate) mod selftest;
