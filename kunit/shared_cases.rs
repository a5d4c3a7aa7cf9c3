// SPDX-License-Identifier: GPL-2.0

//! The KUnit side of the cores' shared test bodies (`cases.rs` of
//! beluga's pool and of mchannel's control core): each case of a
//! `cases::suites!` list becomes a KUnit case. A KUnit module declares
//! `outcome`, `cases` and this module at its root, then calls
//! `cases::suites!(shared_kunit_suite)`.

use kernel::prelude::*;

/// A shared case's outcome as a KUnit case's: a failure is reported with
/// the file, line and text of the failed check.
pub(crate) fn report(result: cxlf_common::outcome::Outcome) -> Result {
    result.map_err(|failure| {
        crate::support::kunit::report_failure(
            kernel::c_str!(file!()),
            line!(),
            format_args!("{}", failure),
        );
        EINVAL
    })
}

/// One KUnit suite of shared cases; a `case(pool)` gets a zeroed buffer of
/// `cases::POOL_BYTES`.
#[macro_export]
macro_rules! shared_kunit_suite {
    ($suite:ident, [$($case:ident $(($pool:ident))?),+ $(,)?]) => {
        $(
            fn $case() -> Result {
                $(let mut $pool = KVVec::from_elem(0u8, cases::POOL_BYTES, GFP_KERNEL)?;)?
                $crate::shared_cases::report(cases::$case($(&mut $pool)?))
            }
        )+
        kunit_tests!($suite, [$($case),+]);
    };
}
