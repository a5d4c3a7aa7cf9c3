//! What a shared test case returns, and the checks that build it: one
//! file for every core's `cases.rs` (beluga's pool, mchannel's control
//! core, cxlnic's rings), compiled into the host crates and the KUnit modules alike. No
//! `std`, no allocation, no panic: a failed check returns `Err(Failure)`
//! with the file, the line and the text of the check.
//!
//! The cores bring the checks in with `#[macro_use] extern crate
//! cxlf_common;` (host and kernel builds alike).

// A `Failure` carries its text (no allocation); only failed cases return it.
#![allow(clippy::result_large_err)]
#![allow(clippy::arithmetic_side_effects)]

use core::fmt::{self, Write};

/// A failed check: where, and what (truncated to fit).
pub struct Failure {
    /// The source file of the failed check.
    pub file: &'static str,
    /// Its line.
    pub line: u32,
    text: [u8; 240],
    len: usize,
}

impl Failure {
    /// A failure at `file:line` saying `what`.
    pub fn new(file: &'static str, line: u32, what: fmt::Arguments<'_>) -> Failure {
        let mut failure = Failure {
            file,
            line,
            text: [0; 240],
            len: 0,
        };
        // A full buffer truncates the text; that is not an error here.
        let _ = failure.write_fmt(what);
        failure
    }

    /// What failed (the check's text, or the message given).
    pub fn text(&self) -> &str {
        self.text
            .get(..self.len)
            .and_then(|t| core::str::from_utf8(t).ok())
            .unwrap_or("")
    }
}

impl Write for Failure {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.text.len().saturating_sub(self.len);
        let mut n = s.len().min(room);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        if let (Some(to), Some(from)) = (self.text.get_mut(self.len..self.len + n), s.get(..n)) {
            to.copy_from_slice(from.as_bytes());
            self.len += n;
        }
        Ok(())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.text())
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What a shared case returns.
pub type Outcome = Result<(), Failure>;

/// Fails the case unless `$cond` holds.
#[macro_export]
macro_rules! check {
    ($cond:expr $(,)?) => {
        $crate::check!($cond, "expected `{}`", stringify!($cond))
    };
    ($cond:expr, $($what:tt)+) => {
        if !$cond {
            return Err($crate::outcome::Failure::new(file!(), line!(), format_args!($($what)+)));
        }
    };
}

/// Fails the case unless `$left == $right`, showing both (and why it
/// matters, if given).
#[macro_export]
macro_rules! check_eq {
    ($left:expr, $right:expr $(,)?) => {
        $crate::check_eq!($left, $right, "")
    };
    ($left:expr, $right:expr, $why:literal) => {
        // A `match` keeps the operands' temporaries alive, as `assert_eq!`.
        match (&$left, &$right) {
            (left, right) => $crate::check!(
                *left == *right,
                "expected `{}` == `{}`: left = {:?}, right = {:?} {}",
                stringify!($left),
                stringify!($right),
                left,
                right,
                $why
            ),
        }
    };
}

/// The value of an `Ok` (or `Some`), or the case fails with the error.
#[macro_export]
macro_rules! ok {
    ($e:expr) => {
        match $crate::outcome::OkOrFail::ok_or_fail($e) {
            Ok(v) => v,
            Err(e) => {
                return Err($crate::outcome::Failure::new(
                    file!(),
                    line!(),
                    format_args!("`{}` failed: {:?}", stringify!($e), e),
                ))
            }
        }
    };
}

/// `Result` and `Option` alike for `ok!`.
pub trait OkOrFail<T> {
    /// What the failure shows.
    type Error: fmt::Debug;
    /// The value, or what to show.
    fn ok_or_fail(self) -> Result<T, Self::Error>;
}

impl<T, E: fmt::Debug> OkOrFail<T> for Result<T, E> {
    type Error = E;
    fn ok_or_fail(self) -> Result<T, E> {
        self
    }
}

impl<T> OkOrFail<T> for Option<T> {
    type Error = &'static str;
    fn ok_or_fail(self) -> Result<T, &'static str> {
        self.ok_or("None")
    }
}

/// The host side of a core's shared cases: each case of a
/// `cases::suites!` list becomes a `#[test]` (a `case(pool)` gets a
/// zeroed buffer of `POOL_BYTES`). Invoked as `super::suites!(host_tests)`
/// from a `#[cfg(test)] mod host` (with `extern crate std`) inside
/// `cases.rs`; the KUnit side is `kunit/shared_cases.rs`.
#[macro_export]
macro_rules! host_tests {
    ($suite:ident, [$($case:ident $(($pool:ident))?),+ $(,)?]) => {
        mod $suite {
            $(
                #[test]
                fn $case() {
                    $(let mut $pool = super::std::vec![0u8; super::super::POOL_BYTES];)?
                    if let Err(failure) = super::super::$case($(&mut $pool)?) {
                        panic!("{failure}");
                    }
                }
            )+
        }
    };
}
