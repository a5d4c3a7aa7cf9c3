// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the beluga_dax pool core, run in the kernel on the same
//! source and the same test bodies as the host tests: every case of
//! `beluga_dax/pool/src/cases.rs`, one KUnit case each, in the suites
//! its `suites!` lists (the host runs the same list as `#[test]`s).

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// The core's shared cases (built with `--cfg cxlf_kunit`).
use beluga_pool::cases;

module! {
    type: BelugaDaxKunit,
    name: "beluga_dax_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites of the beluga_dax pool core",
    license: "GPL",
}

struct BelugaDaxKunit;

impl kernel::Module for BelugaDaxKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(BelugaDaxKunit)
    }
}

beluga_pool::suites!(shared_kunit_suite);
