// SPDX-License-Identifier: GPL-2.0

//! The control core (`core/src/`: rate estimation, fair share, capacity
//! AIMD, HCSFQ, run windows), compiled in from the same files the host
//! tests and the fabric simulator use.

// The module uses the core as its issue's parts land; the KUnit module
// runs all of it.
#![allow(dead_code)]

// The core declares `pub` items for its host crate; here they are reached
// only through this module.
#[allow(unreachable_pub)]
#[path = "../beluga_dax/pool/src/checksum.rs"]
pub(crate) mod checksum;
#[allow(unreachable_pub)]
#[path = "core/src/component.rs"]
pub(crate) mod component;
#[allow(unreachable_pub)]
#[path = "core/src/congestion.rs"]
pub(crate) mod congestion;
#[allow(unreachable_pub)]
#[path = "core/src/estimator.rs"]
pub(crate) mod estimator;
#[allow(unreachable_pub)]
#[path = "core/src/fixed.rs"]
pub(crate) mod fixed;
#[allow(unreachable_pub)]
#[path = "core/src/meter.rs"]
pub(crate) mod meter;
#[allow(unreachable_pub)]
#[path = "core/src/shared.rs"]
pub(crate) mod shared;
#[allow(unreachable_pub)]
#[path = "core/src/thread.rs"]
pub(crate) mod thread;
#[allow(unreachable_pub)]
#[path = "core/src/tree.rs"]
pub(crate) mod tree;
#[allow(unreachable_pub)]
#[path = "core/src/window.rs"]
pub(crate) mod window;
