// SPDX-License-Identifier: GPL-2.0

//! The RX path and the NAPI poll: the poll completes TX entries, takes
//! the frames the device completed (each checked against the driver's
//! own record of its buffer), gives each buffer back at once, and asks
//! for the RX interrupt again when it is done.
//!
//! Locks: `rx`, and `tx` (`complete_tx`) and `irq` (`want`) on their own;
//! bottom halves off.

use super::rings::{LINE_RX_HEAD, LINE_RX_TAIL};
use super::state::{bump, Queue};
use crate::ring::device::Part;
use crate::ring::layout::{RxCompletion, COMPLETION_BYTES, IRQ_RX};
use crate::ring::queue::check_completion;
use crate::support::napi::{NapiPoll, Poll};
use core::sync::atomic::Ordering;
use kernel::sync::ArcBorrow;

impl Queue {
    /// Receives up to `budget` frames; returns how many entries it took.
    fn receive(&self, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        let mut rx = self.rx.lock();
        let Ok(head) = self.rings.load(Part::DeviceLine, LINE_RX_HEAD) else {
            return 0;
        };
        let span = match rx.ring.consume(head, budget) {
            Ok(s) => s,
            Err(_) => {
                bump(&self.counters.rx_faults, 1);
                bump(&self.counters.rx_bad_head, 1);
                return 0;
            }
        };
        for index in span.indices() {
            self.receive_one(napi, index);
            // The entry's buffer goes back to the device at once.
            if self.rings.post_rx(&mut rx.ring).is_err() {
                bump(&self.counters.rx_faults, 1);
            }
        }
        if span.count > 0 {
            let _ = self
                .rings
                .store(Part::DriverLine, LINE_RX_TAIL, rx.ring.tail());
        }
        let c = &self.counters;
        c.rx_head
            .store(u64::from(rx.ring.head()), Ordering::Relaxed);
        c.rx_tail
            .store(u64::from(rx.ring.tail()), Ordering::Relaxed);
        span.count
    }

    /// Delivers RX entry `index`'s frame, if its completion checks out.
    fn receive_one(&self, napi: &NapiPoll<'_>, index: u32) {
        let rings = &self.rings;
        let size = rings.shape.sizes.rx;
        let mut raw = [0u8; COMPLETION_BYTES];
        let off = size.slot(index).saturating_mul(COMPLETION_BYTES);
        if rings.read(Part::RxDone, off, &mut raw).is_err() {
            bump(&self.counters.rx_faults, 1);
            return;
        }
        let c = RxCompletion::decode(&raw);
        let len = match check_completion(&c, index, rings.shape.sizes.slot) {
            Ok(len) => len,
            Err(_) => {
                bump(&self.counters.rx_faults, 1);
                bump(&self.counters.rx_bad_completion, 1);
                return;
            }
        };
        let buf = rings.buffer_offset(size, index);
        let delivered = rings
            .at(Part::RxArea, buf, len as usize)
            .and_then(|(m, at)| napi.receive(m, at, len));
        match delivered {
            Ok(()) => {
                bump(&self.counters.rx_packets, 1);
                bump(&self.counters.rx_bytes, u64::from(len));
            }
            Err(_) => bump(&self.counters.rx_dropped, 1),
        }
    }

    /// Whether the device has completed RX entries the poll has not
    /// taken (after interrupts are asked for again).
    fn rx_pending(&self) -> bool {
        let rx = self.rx.lock();
        self.rings
            .load(Part::DeviceLine, LINE_RX_HEAD)
            .is_ok_and(|h| rx.ring.pending(h))
    }
}

impl Poll for Queue {
    fn poll(this: ArcBorrow<'_, Self>, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        bump(&this.counters.polls, 1);
        // While polling, the device need not interrupt.
        let _ = this.want(IRQ_RX, false);
        this.complete_tx(&napi.netdev());
        let work = this.receive(napi, budget);
        if work < budget && napi.complete_done(work) && this.rings.shape.interrupts {
            let _ = this.want(IRQ_RX, true);
            if this.rx_pending() {
                napi.schedule();
            }
        }
        work
    }
}
