// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_kunit`: the KUnit wrapper itself, and the
//! rate limiter.

use kernel::prelude::*;

use cxlf_support as support;
use support::kunit::{in_kunit_test, suite_name};
use support::ratelimit::{RateLimit, Verdict, BURST, INTERVAL_NS};
use support::{kassert, kassert_eq, kunit_tests};

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

fn ratelimit_allows_a_burst_then_counts_what_it_drops() -> Result {
    let limit = RateLimit::new();
    let t0 = 1_000;
    for _ in 0..BURST {
        kassert_eq!(limit.check_at(t0), Verdict::Print { suppressed: 0 });
    }
    for _ in 0..3 {
        kassert_eq!(limit.check_at(t0 + 1), Verdict::Suppress);
    }
    kassert_eq!(
        limit.check_at(t0 + INTERVAL_NS),
        Verdict::Print { suppressed: 3 }
    );
    kassert_eq!(
        limit.check_at(t0 + INTERVAL_NS + 1),
        Verdict::Print { suppressed: 0 }
    );
    Ok(())
}

kunit_tests!(
    cxlfabric_support_kunit,
    [
        case_runs_in_kunit_context,
        suite_name_is_nul_terminated_and_padded,
        suite_name_takes_255_bytes,
        question_mark_propagates_ok,
        ratelimit_allows_a_burst_then_counts_what_it_drops,
    ]
);
