// SPDX-License-Identifier: GPL-2.0

//! KUnit suites declared from Rust.
//!
//! 6.12 has no `#[kunit_tests]`; this mirrors upstream's `kunit_case`,
//! `kunit_case_null` and `kunit_unsafe_test_suite!` (6.15), plus
//! [`kunit_tests!`](crate::kunit_tests), a declarative front end (upstream
//! has the `#[kunit_tests]` attribute macro instead).
//!
//! Suites land in the module's `.kunit_test_suites` section and run when the
//! module is loaded; results go to the kernel log and, with
//! `CONFIG_KUNIT_DEBUGFS`, to `/sys/kernel/debug/kunit/<suite>/results`.
//!
//! Test cases are `fn() -> Result`. The assertion macros
//! ([`kassert!`](crate::kassert), [`kassert_eq!`](crate::kassert_eq)) record
//! a failure and return `Err` from the case, so destructors run normally;
//! unlike the 6.12 `kunit_assert!` they never abort the test thread.

use core::ffi::c_void;
use core::fmt;
use kernel::bindings;
use kernel::ffi::c_char;
use kernel::prelude::*;
use kernel::str::CStr;

/// Builds a test case entry for a suite's case table.
pub const fn kunit_case(
    name: &'static CStr,
    run_case: unsafe extern "C" fn(*mut bindings::kunit),
) -> bindings::kunit_case {
    bindings::kunit_case {
        run_case: Some(run_case),
        name: name.as_char_ptr(),
        generate_params: None,
        // SAFETY: `kunit_attributes` is plain data for which all-zero means
        // "no attributes".
        attr: unsafe { core::mem::zeroed() },
        status: bindings::kunit_status_KUNIT_SUCCESS,
        module_name: core::ptr::null_mut(),
        log: core::ptr::null_mut(),
    }
}

/// The all-zero entry that terminates a case table.
pub const fn kunit_case_null() -> bindings::kunit_case {
    // SAFETY: KUnit treats an all-zero `kunit_case` (null `run_case`) as the
    // end of the table; every field is valid when zeroed.
    unsafe { core::mem::zeroed() }
}

/// Builds the fixed-size, NUL-terminated name field of `struct kunit_suite`.
///
/// Fails the build if the name does not fit.
pub const fn suite_name(name: &str) -> [c_char; 256] {
    let bytes = name.as_bytes();
    assert!(bytes.len() < 256, "KUnit suite name too long");
    let mut out = [0 as c_char; 256];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i] as c_char;
        i += 1;
    }
    out
}

/// The `struct kunit` of the case the current task runs, or null.
fn current_test() -> *mut bindings::kunit {
    // SAFETY: `kunit_get_current_test` has no preconditions: it reads the
    // current task's KUnit pointer (null outside a case).
    unsafe { bindings::kunit_get_current_test() }
}

/// Whether the current task is running a KUnit case.
pub fn in_kunit_test() -> bool {
    !current_test().is_null()
}

/// Records a failed expectation in the running case, at `file:line`, with a
/// formatted message. Outside a KUnit case it only logs an error.
pub fn report_failure(file: &'static CStr, line: u32, args: fmt::Arguments<'_>) {
    let test = current_test();
    if test.is_null() {
        pr_err!(
            "kunit failure outside a test at {}:{}: {}\n",
            file,
            line,
            args
        );
        return;
    }
    let loc = bindings::kunit_loc {
        line: line as i32,
        file: file.as_char_ptr(),
    };
    let assert = bindings::kunit_fail_assert {
        assert: bindings::kunit_assert {},
    };
    // An EXPECTATION only marks the case failed; it never aborts the thread.
    // SAFETY: `test` is the running case's `struct kunit` (non-null, and
    // KUnit keeps it alive while the case runs); `loc`/`assert` outlive the
    // call, which formats into the case log; `%pA` takes `&fmt::Arguments`.
    unsafe {
        bindings::__kunit_do_failed_assertion(
            test,
            &loc,
            bindings::kunit_assert_type_KUNIT_EXPECTATION,
            &assert.assert,
            Some(bindings::kunit_fail_assert_format),
            c"%pA".as_ptr().cast(),
            &args as *const fmt::Arguments<'_> as *const c_void,
        );
    }
}

/// Whether the running case has already been marked failed.
fn current_case_failed() -> bool {
    let test = current_test();
    if test.is_null() {
        return false;
    }
    // SAFETY: `test` points to the live `struct kunit` of the running case;
    // the test thread is the only writer of `status` while the case runs.
    unsafe { (*test).status == bindings::kunit_status_KUNIT_FAILURE }
}

/// Runs one case body and turns an `Err` it returns into a KUnit failure
/// (unless an assertion already reported it).
#[doc(hidden)]
pub fn run_case(name: &'static CStr, body: fn() -> Result) {
    if let Err(err) = body() {
        if !current_case_failed() {
            report_failure(name, 0, format_args!("case returned {:?}", err));
        }
    }
}

/// Fails the running case and returns `Err(EINVAL)` from it if `cond` is false.
#[macro_export]
macro_rules! kassert {
    ($cond:expr $(,)?) => {
        $crate::kassert!($cond, "expected `{}` to be true", stringify!($cond))
    };
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            $crate::kunit::report_failure(
                kernel::c_str!(file!()),
                line!(),
                format_args!($($msg)+),
            );
            return Err(kernel::error::code::EINVAL);
        }
    };
}

/// Fails the running case unless `left == right`, printing both values.
#[macro_export]
macro_rules! kassert_eq {
    ($left:expr, $right:expr $(,)?) => {{
        let (left, right) = (&$left, &$right);
        $crate::kassert!(
            *left == *right,
            "expected `{}` == `{}`: left = {:?}, right = {:?}",
            stringify!($left),
            stringify!($right),
            left,
            right
        );
    }};
}

/// Declares a KUnit suite whose case table is the `static mut` array
/// `$cases` (ending in [`kunit_case_null`]), and registers it in the
/// module's `.kunit_test_suites` section.
///
/// # Safety
///
/// `$cases` must be a zero-terminated table that nothing but KUnit touches
/// (KUnit writes each case's status and log into it).
#[macro_export]
macro_rules! kunit_unsafe_test_suite {
    ($suite:ident, $cases:ident) => {
        const _: () = {
            static mut SUITE: kernel::bindings::kunit_suite = kernel::bindings::kunit_suite {
                name: $crate::kunit::suite_name(stringify!($suite)),
                test_cases: core::ptr::addr_of_mut!($cases) as *mut kernel::bindings::kunit_case,
                // SAFETY: the remaining fields (hooks, attributes, private
                // state) are valid when zeroed and set up by KUnit.
                ..unsafe { core::mem::zeroed() }
            };

            // The module loader hands every pointer in this section to KUnit.
            #[used]
            #[link_section = ".kunit_test_suites"]
            static mut SUITE_ENTRY: *const kernel::bindings::kunit_suite =
                core::ptr::addr_of!(SUITE);
        };
    };
}

/// Declares a KUnit suite from plain case functions `fn() -> Result`:
///
/// ```ignore
/// kunit_tests!(beluga_layout, [superblock_round_trip, bad_magic_is_refused]);
/// ```
#[macro_export]
macro_rules! kunit_tests {
    ($suite:ident, [$($case:ident),+ $(,)?]) => {
        #[allow(non_snake_case)]
        mod $suite {

            $(
                extern "C" fn $case(_test: *mut kernel::bindings::kunit) {
                    $crate::kunit::run_case(
                        kernel::c_str!(stringify!($case)),
                        super::$case,
                    );
                }
            )+

            static mut CASES: [kernel::bindings::kunit_case;
                [$(stringify!($case)),+].len() + 1] = [
                $($crate::kunit::kunit_case(kernel::c_str!(stringify!($case)), $case),)+
                $crate::kunit::kunit_case_null(),
            ];

            $crate::kunit_unsafe_test_suite!($suite, CASES);
        }
    };
}
