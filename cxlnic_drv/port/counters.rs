// SPDX-License-Identifier: GPL-2.0

//! The interface's counters: the running queues' plus those of queues
//! torn down (`retired`, per queue pair), which keep counting for the
//! interface and for `ethtool -S`.
//!
//! Locks: `lanes` (an IRQ-off leaf).

use super::state::Port;
use crate::queue::{Counters, Queue};
use crate::support::netdev::Stats;
use core::sync::atomic::{AtomicU64, Ordering};

impl Port {
    /// Keeps a queue's counts in its slot of `retired` (it is being torn
    /// down, and its counters are final).
    pub(super) fn retire(&self, q: &Queue) {
        if let Some(slot) = self.retired.get(usize::from(q.index())) {
            slot.absorb(&q.counters);
        }
    }

    /// Adds the interface's counters to `s` (`ndo_get_stats64`).
    pub(super) fn sum(&self, s: &mut Stats) {
        for c in self.retired.iter() {
            add(s, c);
        }
        for q in self.lanes.lock().iter() {
            add(s, &q.counters);
        }
    }
}

fn add(s: &mut Stats, c: &Counters) {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    s.tx_packets += get(&c.tx_packets);
    s.tx_bytes += get(&c.tx_bytes);
    s.tx_dropped += get(&c.tx_dropped);
    s.tx_errors += get(&c.tx_faults);
    s.rx_packets += get(&c.rx_packets);
    s.rx_bytes += get(&c.rx_bytes);
    s.rx_dropped += get(&c.rx_dropped);
    s.rx_errors += get(&c.rx_faults);
}
