// SPDX-License-Identifier: GPL-2.0

//! The pool core (`pool/src/`: format and section allocator), compiled in
//! from the same files the host tests and tools use.

// Each user (the driver, its KUnit module) needs a subset of the core.
#![allow(dead_code)]

// The core declares `pub` items for its host crate; here they are reached
// only through this module.
#[allow(unreachable_pub)]
#[path = "pool/src/checksum.rs"]
pub(crate) mod checksum;
#[allow(unreachable_pub)]
#[path = "pool/src/engine/mod.rs"]
pub(crate) mod engine;
#[allow(unreachable_pub)]
#[path = "pool/src/layout.rs"]
pub(crate) mod layout;
#[allow(unreachable_pub)]
#[path = "pool/src/le.rs"]
pub(crate) mod le;
#[allow(unreachable_pub)]
#[path = "pool/src/leases.rs"]
pub(crate) mod leases;
#[allow(unreachable_pub)]
#[path = "pool/src/mailbox.rs"]
pub(crate) mod mailbox;
#[allow(unreachable_pub)]
#[path = "pool/src/objects.rs"]
pub(crate) mod objects;
#[allow(unreachable_pub)]
#[path = "pool/src/sections.rs"]
pub(crate) mod sections;
