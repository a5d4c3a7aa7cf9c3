// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the cxlnic_drv ring core, run in the kernel on the same
//! source and the same test bodies as the host tests: every case of
//! `cxlnic_drv/ring/src/selftests.rs`, one KUnit case each, in the suites
//! its `suites!` lists (the host runs the same list as `#[test]`s).

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

#[path = "../cxlnic_drv/ring.rs"]
mod ring;

// The checks the test bodies use (before them, for its macros); its
// `pub` items are for the host crates.
#[allow(unreachable_pub)]
#[macro_use]
mod outcome;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// `selftests.rs` reaches the other files of the core as `super::<file>`.
use ring::{device, health, index, layout, plan, queue};

// Its `pub` items are for the host crate.
#[allow(unreachable_pub)]
#[path = "../cxlnic_drv/ring/src/selftests.rs"]
mod selftests;

module! {
    type: CxlnicRingKunit,
    name: "cxlnic_ring_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites of the cxlnic_drv ring core",
    license: "GPL",
}

struct CxlnicRingKunit;

impl kernel::Module for CxlnicRingKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(CxlnicRingKunit)
    }
}

selftests::suites!(shared_kunit_suite);
