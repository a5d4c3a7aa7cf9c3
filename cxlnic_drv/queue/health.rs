// SPDX-License-Identifier: GPL-2.0

//! What the port's watch and ethtool see of a queue pair beyond its
//! counters: the device's heads and counters as they are now, and the
//! stall detector's look (`ring::health`).
//!
//! Locks: `health` (process context, under the port's `up`).

use super::rings::{LINE_RX_HEAD, LINE_TX_HEAD};
use super::state::Queue;
use crate::ring::device::{Part, QueueStats, QUEUE_STATS_BYTES, STATS_OFFSET};
use crate::ring::health::{Look, Stall};
use crate::support::coherent::Coherent;
use core::sync::atomic::{AtomicU64, Ordering};

impl Queue {
    /// The device line's heads as they are now (TX, RX), for ethtool.
    pub(crate) fn device_heads(&self) -> (u32, u32) {
        let get = |at| self.rings.load(Part::DeviceLine, at).unwrap_or(0);
        (get(LINE_TX_HEAD), get(LINE_RX_HEAD))
    }

    /// The device's counters of this queue pair (zeros if unreadable).
    fn device_stats(&self) -> QueueStats {
        let mut raw = [0u8; QUEUE_STATS_BYTES];
        let at = usize::from(self.rings.index)
            .checked_mul(QUEUE_STATS_BYTES)
            .and_then(|off| off.checked_add(STATS_OFFSET as usize));
        match at.map(|at| self.rings.io.mem.read(at, &mut raw)) {
            Some(Ok(())) => QueueStats::from_bytes(&raw),
            _ => QueueStats::default(),
        }
    }

    /// Takes one look for a stall (the port's watch; `beat`: the
    /// device's heartbeat now): the driver's counters as transmits and
    /// polls left them, the device's TX head and fault counts.
    pub(crate) fn stalled(&self, now_ms: u64, beat: u32) -> Option<Stall> {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        // Stored from u32 ring indices.
        let index = |a: &AtomicU64| u32::try_from(get(a)).unwrap_or(0);
        let dev = self.device_stats();
        let look = Look {
            now_ms,
            beat,
            tx_head: index(&c.tx_head),
            tx_tail: index(&c.tx_tail),
            tx_dev_head: self.device_heads().0,
            tx_faults: get(&c.tx_faults).saturating_add(dev.tx_faults),
            rx_faults: get(&c.rx_faults).saturating_add(dev.rx_faults),
            rx_frames: get(&c.rx_packets).saturating_add(get(&c.rx_dropped)),
        };
        self.health.lock().look(&look)
    }
}
