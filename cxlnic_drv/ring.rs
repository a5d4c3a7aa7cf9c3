// SPDX-License-Identifier: GPL-2.0

//! The ring core (`ring/src/`: queue layout and ring protocol), compiled
//! in from the same files the device model and the host tests use.

// The driver uses the core as its issue's parts land.
#![allow(dead_code)]

// The core declares `pub` items for its host crate; here they are reached
// only through this module.
#[allow(unreachable_pub)]
#[path = "ring/src/device.rs"]
pub(crate) mod device;
#[allow(unreachable_pub)]
#[path = "ring/src/health.rs"]
pub(crate) mod health;
#[allow(unreachable_pub)]
#[path = "ring/src/index.rs"]
pub(crate) mod index;
#[allow(unreachable_pub)]
#[path = "ring/src/layout.rs"]
pub(crate) mod layout;
#[allow(unreachable_pub)]
#[path = "ring/src/plan.rs"]
pub(crate) mod plan;
#[allow(unreachable_pub)]
#[path = "ring/src/queue.rs"]
pub(crate) mod queue;
