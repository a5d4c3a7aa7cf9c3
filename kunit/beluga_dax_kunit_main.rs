// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the beluga_dax pool core, run in the kernel on the same
//! source and the same test bodies as the host tests: every case of
//! `beluga_dax/pool/src/selftests.rs`, one KUnit case each, in the suites
//! its `suites!` lists (the host runs the same list as `#[test]`s).

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

#[path = "../beluga_dax/pool.rs"]
mod pool;

// The checks the test bodies use (before them, for its macros); its
// `pub` items are for the host crates.
#[allow(unreachable_pub)]
#[macro_use]
mod outcome;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// `selftests.rs` reaches the other files of the core as `super::<file>`.
use pool::{checksum, engine, layout, le, leases, mailbox, objects, sections};

// Its `pub` items are for the host crate.
#[allow(unreachable_pub)]
#[path = "../beluga_dax/pool/src/selftests.rs"]
mod selftests;

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

selftests::suites!(shared_kunit_suite);
