// SPDX-License-Identifier: GPL-2.0

//! The interface's counters: the running queues' plus those of queues
//! torn down (`retired`), which keep counting for the interface.
//!
//! Locks: `lanes` (an IRQ-off leaf).

use super::state::Port;
use crate::queue::Counters;
use crate::support::netdev::Stats;
use core::sync::atomic::{AtomicU64, Ordering};

impl Port {
    /// Adds a queue's counters to the retired ones (it is being torn
    /// down, and its counters are final).
    pub(super) fn retire(&self, c: &Counters) {
        let pairs = [
            (&self.retired.tx_packets, &c.tx_packets),
            (&self.retired.tx_bytes, &c.tx_bytes),
            (&self.retired.tx_dropped, &c.tx_dropped),
            (&self.retired.rx_packets, &c.rx_packets),
            (&self.retired.rx_bytes, &c.rx_bytes),
            (&self.retired.rx_dropped, &c.rx_dropped),
            (&self.retired.rx_faults, &c.rx_faults),
            (&self.retired.tx_faults, &c.tx_faults),
        ];
        for (to, from) in pairs {
            to.fetch_add(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Adds the interface's counters to `s` (`ndo_get_stats64`).
    pub(super) fn sum(&self, s: &mut Stats) {
        add(s, &self.retired);
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
