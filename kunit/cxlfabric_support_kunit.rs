// SPDX-License-Identifier: GPL-2.0

//! KUnit suites for the cxlfabric support layer. They run when this module
//! is loaded; results are in /sys/kernel/debug/kunit/<suite>/results.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

use support::kunit::{in_kunit_test, suite_name};

module! {
    type: SupportKunit,
    name: "cxlfabric_support_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites of the cxlfabric support layer",
    license: "GPL",
}

struct SupportKunit;

impl kernel::Module for SupportKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(SupportKunit)
    }
}

fn case_runs_in_kunit_context() -> Result {
    kassert!(in_kunit_test());
    Ok(())
}

fn suite_name_is_nul_terminated_and_padded() -> Result {
    let name = suite_name("abc");
    kassert_eq!(name[0], b'a');
    kassert_eq!(name[2], b'c');
    kassert!(name[3..].iter().all(|&c| c == 0));
    Ok(())
}

fn suite_name_takes_255_bytes() -> Result {
    const LONG: [u8; 255] = [b'x'; 255];
    let text = core::str::from_utf8(&LONG).map_err(|_| EINVAL)?;
    let name = suite_name(text);
    kassert_eq!(name[254], b'x');
    kassert_eq!(name[255], 0);
    Ok(())
}

fn question_mark_propagates_ok() -> Result {
    let value: Result<u32> = Ok(7);
    kassert_eq!(value?, 7);
    Ok(())
}

kunit_tests!(
    cxlfabric_support_kunit,
    [
        case_runs_in_kunit_context,
        suite_name_is_nul_terminated_and_padded,
        suite_name_takes_255_bytes,
        question_mark_propagates_ok,
    ]
);
