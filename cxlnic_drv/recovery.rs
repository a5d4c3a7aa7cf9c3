// SPDX-License-Identifier: GPL-2.0

//! Getting a port's rings back from a device that went wrong.
//!
//! - **Memory lent to the device** ([`Lent`]) is freed only on proof that
//!   the device let go of it: it answered a config written after the one
//!   that named the memory (or refused that one). A heartbeat that stands
//!   still proves nothing: a device that only hung may resume mid-pass
//!   and finish the writes it had started. Until the proof comes the
//!   memory is held (and the watch frees it when it does); memory never
//!   proven free is kept for good when the port goes.
//! - **A stalled queue pair** (`ring::health`: a TX head stuck with
//!   entries out, faults that keep rising, or the stack's TX watchdog)
//!   restarts the rings: the driver and the device start again from
//!   index 0, the only way to agree again after a forged head. A config
//!   names every queue pair, and the device restarts its queues only
//!   when it takes one (layout v1 has no way to restart one queue pair
//!   and keep the others), so a restart covers the port: every queue
//!   pair, counted once in `queue_resets` (`ethtool -S`) and logged with
//!   why.
//!
//! Values from the device (its acks, counters, heads) are compared here,
//! never computed with: no arithmetic on them can overflow.

#![deny(clippy::arithmetic_side_effects)]

use crate::io::NicIo;
use crate::ring::health::Stall;
use crate::support::coherent::Coherent;
use crate::support::dma::CoherentAllocation;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Host memory the device was told about in config `named`.
///
/// # Invariants
///
/// `mem` is freed only by [`Lent::release`], once the device answered a
/// later config; dropped otherwise, it is kept for good.
pub(crate) struct Lent {
    named: u32,
    mem: KVec<Arc<CoherentAllocation>>,
}

impl Lent {
    pub(crate) fn new(named: u32, mem: KVec<Arc<CoherentAllocation>>) -> Lent {
        Lent { named, mem }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.mem
            .iter()
            .fold(0usize, |sum, m| sum.saturating_add(m.len()))
    }

    /// Frees the memory (its bytes) if the device answered a config
    /// written after the one that named it; else gives it back.
    pub(crate) fn release(mut self, io: &NicIo) -> core::result::Result<usize, Lent> {
        if !io.answered_after(self.named) {
            return Err(self);
        }
        let bytes = self.bytes();
        drop(core::mem::take(&mut self.mem));
        Ok(bytes)
    }

    /// Frees the memory of a config the device refused: it took none of
    /// it (a device that refuses a config drops it whole).
    pub(crate) fn refused(mut self) {
        drop(core::mem::take(&mut self.mem));
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if self.mem.is_empty() {
            return;
        }
        pr_warn!(
            "a device never let go of {} KiB of rings: kept for good\n",
            self.bytes() >> 10
        );
        core::mem::forget(core::mem::take(&mut self.mem));
    }
}

/// Why the rings were restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The ring core's rules (`ring::health`).
    Stalled(Stall),
    /// The stack's TX watchdog named the queue.
    TxTimeout,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::ring::health::{FAULT_WINDOWS, FAULT_WINDOW_MS, TX_STUCK_MS};
        let window = u64::from(FAULT_WINDOWS).saturating_mul(FAULT_WINDOW_MS);
        match self {
            Why::Stalled(Stall::TxStuck { waiting }) => write!(
                f,
                "TX head stuck for {} ms with entries waiting ({})",
                TX_STUCK_MS, waiting
            ),
            Why::Stalled(Stall::TxFaults { count }) => write!(
                f,
                "TX faults keep rising ({} in {} ms) with no entry freed",
                count, window
            ),
            Why::Stalled(Stall::RxFaults { count }) => write!(
                f,
                "RX faults keep rising ({} in {} ms) with no frame received",
                count, window
            ),
            Why::TxTimeout => f.write_str("the stack's TX watchdog timed out"),
        }
    }
}

/// Restarts of the rings, in all and by reason (`ethtool -S`).
#[derive(Default)]
pub(crate) struct Resets {
    pub(crate) total: AtomicU64,
    pub(crate) tx_stuck: AtomicU64,
    pub(crate) faults: AtomicU64,
    pub(crate) tx_timeout: AtomicU64,
}

impl Resets {
    pub(crate) fn count(&self, why: Why) {
        let by = match why {
            Why::Stalled(Stall::TxStuck { .. }) => &self.tx_stuck,
            Why::Stalled(Stall::TxFaults { .. } | Stall::RxFaults { .. }) => &self.faults,
            Why::TxTimeout => &self.tx_timeout,
        };
        by.fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
    }

    /// In [`RESET_STATS`] order.
    pub(crate) fn values(&self) -> [u64; 4] {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            get(&self.total),
            get(&self.tx_stuck),
            get(&self.faults),
            get(&self.tx_timeout),
        ]
    }
}

/// The port's own `ethtool -S` counters, before the queues'.
pub(crate) const RESET_STATS: [&str; 4] = [
    "queue_resets",
    "resets_tx_stuck",
    "resets_faults",
    "resets_tx_timeout",
];

/// The shortest wait between two restarts, doubling while they follow
/// each other within [`RESET_CALM_MS`], up to [`RESET_GAP_MAX_MS`]: a
/// device that keeps stalling costs a restart a minute at most.
pub(crate) const RESET_GAP_MS: u64 = 1000;
pub(crate) const RESET_GAP_MAX_MS: u64 = 60_000;
pub(crate) const RESET_CALM_MS: u64 = 30_000;

/// When restarts may happen (the watch's, one at a time).
pub(crate) struct Pace {
    last_ms: AtomicU64,
    gap_ms: AtomicU64,
}

impl Pace {
    pub(crate) const fn new() -> Pace {
        Pace {
            last_ms: AtomicU64::new(0),
            gap_ms: AtomicU64::new(RESET_GAP_MS),
        }
    }

    /// Whether a restart may happen at `now`.
    pub(crate) fn allows(&self, now: u64) -> bool {
        let last = self.last_ms.load(Ordering::Relaxed);
        last == 0 || now.saturating_sub(last) >= self.gap_ms.load(Ordering::Relaxed)
    }

    /// A restart happens at `now`: the next waits longer if this one came
    /// soon after the last.
    pub(crate) fn note(&self, now: u64) {
        let last = self.last_ms.swap(now.max(1), Ordering::Relaxed);
        let gap = self.gap_ms.load(Ordering::Relaxed);
        let next = if last != 0 && now.saturating_sub(last) < RESET_CALM_MS {
            gap.saturating_mul(2).min(RESET_GAP_MAX_MS)
        } else {
            RESET_GAP_MS
        };
        self.gap_ms.store(next, Ordering::Relaxed);
    }
}
