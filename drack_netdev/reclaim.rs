// SPDX-License-Identifier: GPL-2.0

//! Lent pages that a socket let go of on another CPU. A socket frees a
//! received skb on the CPU that allocated it (`skb_attempt_defer_free`,
//! 6.1+), at that CPU's next NET_RX softirq, and sends it no IPI for
//! fewer than 32 skbs; our poll runs on the CPU its timer fires on, so
//! after a reload (a new timer, maybe on the other CPU) or when traffic
//! stops, lent pages could stay referenced from another CPU's list
//! indefinitely and their buffers never go back. A work item every
//! 100 ms looks: while buffers are lent and none came back since the
//! last look, it schedules the poll on every CPU
//! (`Napi::schedule_on_each_cpu`), which frees those lists, backing off
//! to every 1.6 s while nothing comes back (a slow reader's pages are
//! not stuck, only unread). `rx_defer_kicks` counts the kicks.

use crate::link::Link;
use crate::stats::bump;
use crate::support::napi::Napi;
use crate::support::workqueue::PeriodicWork;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::sync::Arc;

/// How often the work runs, and the longest wait between kicks.
pub(crate) const RECLAIM_MS: u32 = 100;
const KICK_MS_MAX: u32 = 1600;

pub(crate) struct Reclaim {
    napi: Arc<Napi<Link>>,
    /// Buffers given back when it last looked.
    returned: AtomicU64,
    /// Milliseconds until the next kick, and between kicks now.
    due_ms: AtomicU32,
    every_ms: AtomicU32,
}

impl Reclaim {
    pub(crate) fn new(napi: Arc<Napi<Link>>) -> Reclaim {
        Reclaim {
            napi,
            returned: AtomicU64::new(0),
            due_ms: AtomicU32::new(RECLAIM_MS),
            every_ms: AtomicU32::new(RECLAIM_MS),
        }
    }
}

impl PeriodicWork for Reclaim {
    fn run(&self) -> u32 {
        let link = self.napi.data();
        let (lent, returned) = link.lends_out();
        let progress = self.returned.swap(returned, Ordering::Relaxed) != returned;
        if lent == 0 || progress {
            self.every_ms.store(RECLAIM_MS, Ordering::Relaxed);
            self.due_ms.store(RECLAIM_MS, Ordering::Relaxed);
            return RECLAIM_MS;
        }
        let due = self
            .due_ms
            .load(Ordering::Relaxed)
            .saturating_sub(RECLAIM_MS);
        if due > 0 {
            self.due_ms.store(due, Ordering::Relaxed);
            return RECLAIM_MS;
        }
        self.napi.schedule_on_each_cpu();
        bump(&link.counters.rx_defer_kicks);
        let every = self
            .every_ms
            .load(Ordering::Relaxed)
            .saturating_mul(2)
            .min(KICK_MS_MAX);
        self.every_ms.store(every, Ordering::Relaxed);
        self.due_ms.store(every, Ordering::Relaxed);
        RECLAIM_MS
    }
}
