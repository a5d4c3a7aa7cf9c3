// SPDX-License-Identifier: GPL-2.0

//! The NAPI poll, scheduled by the polling timer (`ticker.rs`; the pool
//! raises no interrupts): this host's heartbeat and the peers' leases,
//! the source ends (sessions, returned buffers), the
//! carrier, then receive from each source. An idle poll doubles the
//! timer's interval up to 1 ms; traffic resets it.
//!
//! Heartbeats, leases and rejoining are `lease.rs`'s.

#![deny(clippy::arithmetic_side_effects)]

use crate::link::Link;
use crate::pool::Mem;
use crate::stats::bump;
use crate::support::napi::{NapiPoll, Poll};
use crate::support::time::boottime_ns;
use core::sync::atomic::Ordering;
use drack_core::layout::FRAME_MAX;
use drack_core::peer::Session;
use kernel::sync::ArcBorrow;

impl Poll for Link {
    fn poll(this: ArcBorrow<'_, Self>, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        bump(&this.counters.polls);
        let Some(mem) = this.mem() else {
            // Revoked (beluga unbind): nothing to reach any more.
            this.set_carrier(napi, 0);
            napi.complete_done(0);
            this.poll_slower();
            return 0;
        };
        this.housekeeping(&mem, boottime_ns());
        let returned = this.poll_sources(&mem, napi);
        this.carrier_from_sessions(napi);
        let work = this.receive_all(&mem, napi, budget);
        if work < budget {
            if work > 0 || returned {
                this.poll_fast();
            } else {
                this.poll_slower();
            }
            napi.complete_done(work);
        }
        work
    }
}

impl Link {
    /// Receives from every peer within `budget`; returns the frames in.
    /// The first peer rotates each poll and each gets an equal share
    /// first, then the rest goes round again: a busy low-index peer
    /// cannot starve the others. Every peer's end is polled and its
    /// returns given back whatever the budget.
    fn receive_all(&self, mem: &Mem<'_>, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        const N: usize = drack_core::layout::HOSTS_MAX as usize;
        let mut order = [0u32; N];
        let mut n = 0usize;
        for (o, p) in order.iter_mut().zip(self.peers()) {
            *o = p;
            n = n.saturating_add(1);
        }
        let Some(order) = order.get_mut(..n).filter(|o| !o.is_empty()) else {
            return 0;
        };
        let first = self.rx_first.fetch_add(1, Ordering::Relaxed) as usize;
        order.rotate_left(first.checked_rem(n).unwrap_or(0));
        for p in order.iter() {
            self.rx_prepare(mem, *p);
        }
        let share = budget.checked_div(n as u32).unwrap_or(budget).max(1);
        let mut got = [0u32; N];
        let mut work = 0u32;
        for pass in [share, budget] {
            for p in order.iter() {
                let left = budget.saturating_sub(work).min(pass);
                if left == 0 {
                    break;
                }
                let w = self.receive_from(mem, napi, *p, left);
                if let Some(g) = got.get_mut(*p as usize) {
                    *g = g.saturating_add(w);
                }
                work = work.saturating_add(w);
            }
        }
        for p in order.iter() {
            let any = got.get(*p as usize).is_some_and(|g| *g > 0);
            self.rx_settle(mem, *p, any);
        }
        work
    }

    /// Polls every source end; whether buffers came back. Wakes the TX
    /// queues of peers with room for a maximal frame again, or whose
    /// session went down (their frames are then dropped, counted).
    fn poll_sources(&self, mem: &Mem<'_>, napi: &NapiPoll<'_>) -> bool {
        let by_value = self.by_value.load(Ordering::Relaxed);
        let mut tx = self.tx.lock();
        let mut returned = false;
        for end in tx.ends.iter_mut().flatten() {
            let before = end.counters.returned;
            end.poll(mem);
            returned |= end.counters.returned != before;
        }
        let mut wake = 0u32;
        for p in self.peers() {
            let bit = 1u32.checked_shl(p).unwrap_or(0);
            if tx.stopped & bit == 0 {
                continue;
            }
            let room = tx.end(p).map_or(true, |e| {
                e.session() != Session::Up || e.fits(FRAME_MAX, by_value)
            });
            if room {
                tx.stopped &= !bit;
                wake |= bit;
            }
        }
        drop(tx);
        // Outside `tx`: waking schedules the queue's qdisc.
        for p in self.peers() {
            if wake & 1u32.checked_shl(p).unwrap_or(0) != 0 {
                napi.netdev().txq_wake(u16::try_from(p).unwrap_or(u16::MAX));
                bump(&self.counters.tx_queue_wakes);
            }
        }
        returned
    }

    /// The carrier: up while any peer's sessions are up both ways.
    fn carrier_from_sessions(&self, napi: &NapiPoll<'_>) {
        let mut up = u32::MAX;
        {
            let tx = self.tx.lock();
            for (i, e) in tx.ends.iter().enumerate() {
                if e.as_ref().map(|e| e.session()) != Some(Session::Up) {
                    up &= !(1u32.checked_shl(i as u32).unwrap_or(0));
                }
            }
        }
        {
            let rx = self.rx.lock();
            for (i, e) in rx.ends.iter().enumerate() {
                if e.as_ref().map(|e| e.session()) != Some(Session::Up) {
                    up &= !(1u32.checked_shl(i as u32).unwrap_or(0));
                }
            }
        }
        let hosts = 1u32
            .checked_shl(self.geom.hosts())
            .map_or(u32::MAX, |b| b.wrapping_sub(1));
        self.set_carrier(napi, up & hosts);
    }

    /// Records the peers up (a bit each) and sets the carrier.
    fn set_carrier(&self, napi: &NapiPoll<'_>, up: u32) {
        let was = self.carrier.swap(up, Ordering::AcqRel);
        if was == up {
            return;
        }
        for p in self.peers() {
            let bit = 1u32.checked_shl(p).unwrap_or(0);
            if (was ^ up) & bit != 0 {
                let state = if up & bit != 0 { "up" } else { "down" };
                crate::support::pr_info_ratelimited!("link to host {} {}\n", p, state);
            }
        }
        napi.netdev().set_carrier(up != 0);
    }
}
