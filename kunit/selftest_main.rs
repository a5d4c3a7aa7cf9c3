// SPDX-License-Identifier: GPL-2.0

//! Harness self-test: a suite with one passing case and two cases that fail
//! on purpose (a failed assertion, a returned error). `cargo xtask test`
//! loads it in a separate boot and requires that exactly these two are
//! reported as failures; it is never loaded otherwise.

use kernel::prelude::*;

use cxlf_support as support;
use support::{kassert_eq, kunit_tests};

module! {
    type: Selftest,
    name: "cxlfabric_selftest",
    author: "cxlfabric developers",
    description: "Deliberately failing KUnit suite for the harness self-test",
    license: "GPL",
}

struct Selftest;

impl kernel::Module for Selftest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(Selftest)
    }
}

fn selftest_passes() -> Result {
    kassert_eq!(1 + 1, 2);
    Ok(())
}

fn selftest_fails_assertion() -> Result {
    kassert_eq!(1 + 1, 3);
    Ok(())
}

fn selftest_fails_by_error() -> Result {
    Err(ENOMEM)
}

kunit_tests!(
    cxlfabric_selftest,
    [
        selftest_passes,
        selftest_fails_assertion,
        selftest_fails_by_error
    ]
);
