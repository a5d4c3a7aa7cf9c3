// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the mchannel_sched control core, run in the kernel on
//! the same source and the same test bodies as the host tests: every case
//! of `mchannel_sched/core/src/cases.rs`, one KUnit case each, in the
//! suites its `suites!` lists (the bookkeeping of the module's attached
//! threads, the core's `table`, `quota`, `seat` and `member`, included:
//! suite `mchannel_core_table`).

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// The core's shared cases (built with `--cfg cxlf_kunit`).
use mchannel_core::cases;

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

mchannel_core::suites!(shared_kunit_suite);
