// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the cxlnic_drv ring core, run in the kernel on the same
//! source and the same test bodies as the host tests: every case of
//! `cxlnic_drv/ring/src/cases.rs`, one KUnit case each, in the suites
//! its `suites!` lists (the host runs the same list as `#[test]`s).

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// The core's shared cases (built with `--cfg cxlf_kunit`).
use cxlnic_ring::cases;

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

cxlnic_ring::suites!(shared_kunit_suite);
