// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the drack_netdev core, run in the kernel on the same
//! source and the same test bodies as the host tests: every case of
//! `drack_netdev/core/src/cases.rs`, one KUnit case each, in the suites
//! its `suites!` lists (`drack_core_layout`, `drack_core_protocol`,
//! `drack_core_faults`); each case runs two hosts over the non-coherent
//! cache model in a buffer of the kernel's.

use kernel::prelude::*;

use cxlf_support as support;

// Turns the shared cases into KUnit cases.
mod shared_cases;

// The core's shared cases (built with `--cfg cxlf_kunit`).
use drack_core::cases;

module! {
    type: DrackCoreKunit,
    name: "drack_core_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites of the drack_netdev core",
    license: "GPL",
}

struct DrackCoreKunit;

impl kernel::Module for DrackCoreKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(DrackCoreKunit)
    }
}

drack_core::suites!(shared_kunit_suite);
