// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the mchannel_sched control core, run in the kernel on
//! the same source and the same test bodies as the host tests: every case
//! of `mchannel_sched/core/src/selftests.rs`, one KUnit case each, in the
//! suites its `suites!` lists.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

#[path = "../mchannel_sched/control.rs"]
mod control;

// The checks the test bodies use (before them, for its macros); its
// `pub` items are for the host crates.
#[allow(unreachable_pub)]
#[macro_use]
mod outcome;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// `selftests.rs` reaches the other files of the core as `super::<file>`.
use control::{component, congestion, estimator, fixed, meter, thread, tree, window};

// Its `pub` items are for the host crate.
#[allow(unreachable_pub)]
#[path = "../mchannel_sched/core/src/selftests.rs"]
mod selftests;

module! {
    type: MchannelCoreKunit,
    name: "mchannel_core_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites of the mchannel_sched control core",
    license: "GPL",
}

struct MchannelCoreKunit;

impl kernel::Module for MchannelCoreKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(MchannelCoreKunit)
    }
}

selftests::suites!(shared_kunit_suite);
