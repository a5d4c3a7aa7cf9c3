// SPDX-License-Identifier: GPL-2.0

//! Rate-limited logging for messages a user can trigger at will (a refused
//! ioctl, a missing capability): the kernel's `pr_*_ratelimited` policy (at
//! most 10 messages per 5 s per call site, then a count of what was
//! suppressed). No upstream Rust counterpart yet; the C macros are not
//! reachable from Rust.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Messages allowed per interval, and the interval (the kernel's
/// `DEFAULT_RATELIMIT_BURST` and `DEFAULT_RATELIMIT_INTERVAL`).
pub const BURST: u32 = 10;
/// Length of an interval, in nanoseconds.
pub const INTERVAL_NS: u64 = 5_000_000_000;

/// What a call site may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Print, after saying how many were suppressed before (if any).
    Print {
        /// Messages suppressed since the last printed one.
        suppressed: u32,
    },
    /// Suppress this message.
    Suppress,
}

/// One call site's state. Races between CPUs can let a message or two
/// more through in an interval, as the kernel's own trylock version can
/// drop some; nothing worse.
pub struct RateLimit {
    start_ns: AtomicU64,
    printed: AtomicU32,
    suppressed: AtomicU32,
}

impl RateLimit {
    /// A limit with nothing printed yet.
    pub const fn new() -> RateLimit {
        RateLimit {
            start_ns: AtomicU64::new(0),
            printed: AtomicU32::new(0),
            suppressed: AtomicU32::new(0),
        }
    }

    /// The verdict now (boot-time clock).
    pub fn check(&self) -> Verdict {
        self.check_at(crate::time::boottime_ns())
    }

    /// The verdict at `now_ns`.
    pub fn check_at(&self, now_ns: u64) -> Verdict {
        let start = self.start_ns.load(Ordering::Acquire);
        let mut suppressed = 0;
        if start == 0 || now_ns.saturating_sub(start) >= INTERVAL_NS {
            // One CPU opens the new interval and reports what the last one
            // suppressed.
            if self
                .start_ns
                .compare_exchange(start, now_ns.max(1), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.printed.store(0, Ordering::Release);
                suppressed = self.suppressed.swap(0, Ordering::AcqRel);
            }
        }
        if self.printed.fetch_add(1, Ordering::AcqRel) < BURST {
            Verdict::Print { suppressed }
        } else {
            self.suppressed.fetch_add(1, Ordering::AcqRel);
            Verdict::Suppress
        }
    }
}

/// `pr_info!` at most [`BURST`] times per [`INTERVAL_NS`] from this call
/// site.
#[macro_export]
macro_rules! pr_info_ratelimited {
    ($($arg:tt)+) => {{
        static LIMIT: $crate::ratelimit::RateLimit =
            $crate::ratelimit::RateLimit::new();
        if let $crate::ratelimit::Verdict::Print { suppressed } = LIMIT.check() {
            if suppressed > 0 {
                kernel::pr_info!("{} messages like the next suppressed\n", suppressed);
            }
            kernel::pr_info!($($arg)+);
        }
    }};
}
