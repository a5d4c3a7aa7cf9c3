// SPDX-License-Identifier: GPL-2.0

//! The TX path: a transmit copies the frame into its entry and posts it,
//! stops the stack's TX queue before the ring fills, and rings the
//! doorbell (pcie) once per burst; the poll's completion frees entries
//! and wakes the queue a batch later.
//!
//! Locks: `tx`, then `irq` (`want`); bottom halves off.

use super::state::{bump, Queue, Tx};
use crate::ring::layout::{FRAME_MIN, IRQ_TX};
use crate::support::netdev::{self, Netdev, SkBuff};
use core::sync::atomic::Ordering;

impl Queue {
    /// Takes the device's TX head (a bad one counted) and records the
    /// ring's indices for ethtool and the watch.
    fn reclaim(&self, tx: &mut Tx) {
        if !self.rings.reclaim(&mut tx.ring) {
            bump(&self.counters.tx_faults, 1);
            bump(&self.counters.tx_bad_head, 1);
        }
        let c = &self.counters;
        c.tx_head
            .store(u64::from(tx.ring.head()), Ordering::Relaxed);
        c.tx_tail
            .store(u64::from(tx.ring.tail()), Ordering::Relaxed);
    }

    fn doorbell(&self, tx: &mut Tx) {
        if self.rings.doorbell(&mut tx.unrung) {
            bump(&self.counters.doorbells, 1);
        }
    }

    /// Sends `skb` (copied into the entry's buffer, then freed), and
    /// stops the stack's queue when a maximal frame no longer fits
    /// (`Producer::must_stop`). `Err` gives it back on a full ring, which
    /// an awake queue never has unless that rule is broken. Bottom halves
    /// are off.
    pub(crate) fn xmit(&self, dev: &Netdev<'_>, skb: SkBuff) -> core::result::Result<(), SkBuff> {
        let mut tx = self.tx.lock();
        let shape = self.rings.shape;
        // One read of the device's line per transmit with entries out: a
        // cache hit unless the device has stored a new head since.
        if tx.ring.in_flight() > 0 {
            self.reclaim(&mut tx);
        }
        let Some(e) = tx.ring.next() else {
            // The queue should have stopped after the post that filled
            // the ring: a bug, counted and logged.
            bump(&self.counters.tx_busy, 1);
            crate::support::pr_info_ratelimited!(
                "{}: queue {}: TX ring full with the queue awake: NETDEV_TX_BUSY (a driver bug)\n",
                dev.name(),
                self.rings.index
            );
            self.stop_tx(dev, &mut tx);
            return Err(skb);
        };
        let len = skb.len();
        // Not a frame the interface's MTU allows, or not copied.
        let sent = (FRAME_MIN..=shape.sizes.slot).contains(&len)
            && self
                .rings
                .post_tx(&mut tx.ring, &skb, e.index, e.slot, e.tag)
                .is_ok();
        drop(skb);
        self.count_sent(&mut tx, sent, len);
        // A held doorbell rings with the last packet of a burst, sent or
        // not.
        if shape.doorbell && (!netdev::xmit_more() || tx.unrung >= shape.batch) {
            self.doorbell(&mut tx);
        }
        if tx.ring.must_stop() {
            // The device's line once more may spare the stop.
            self.reclaim(&mut tx);
            if tx.ring.must_stop() {
                self.stop_tx(dev, &mut tx);
            }
        }
        Ok(())
    }

    /// Counts a frame of `len` bytes as sent (one more for the doorbell)
    /// or dropped.
    fn count_sent(&self, tx: &mut Tx, sent: bool, len: u32) {
        if sent {
            let tail = u64::from(tx.ring.tail());
            self.counters.tx_tail.store(tail, Ordering::Relaxed);
            bump(&self.counters.tx_packets, 1);
            bump(&self.counters.tx_bytes, u64::from(len));
            if self.rings.shape.doorbell {
                tx.unrung += 1;
            }
        } else {
            bump(&self.counters.tx_dropped, 1);
        }
    }

    /// A maximal frame no longer fits: the stack holds packets until the
    /// device frees entries, which it says by a TX interrupt (asked for
    /// here) whose poll wakes the queue (`complete_tx`).
    ///
    /// Stop, ask, full barrier, look again, wake if room appeared (the
    /// order of `netif_txq_maybe_stop`): the device stores its head
    /// before it reads the interrupt word (with a full barrier between),
    /// so either it sees the request and interrupts, or this look sees
    /// the entries it freed; a wake cannot be lost. The poll's wake takes
    /// this queue's `tx` lock, held here, so it cannot fall between the
    /// stop and the look.
    fn stop_tx(&self, dev: &Netdev<'_>, tx: &mut Tx) {
        // No more transmits come to ring a held-back doorbell.
        self.doorbell(tx);
        dev.txq_stop(self.rings.index);
        tx.stopped = true;
        bump(&self.counters.tx_queue_stops, 1);
        // The barrier comes with the request (`want`); a timer polls
        // instead where the device does not interrupt.
        let _ = self.want(IRQ_TX, self.rings.shape.interrupts);
        self.reclaim(tx);
        if tx.ring.may_wake(self.rings.shape.batch) {
            self.wake_tx(dev, tx);
        }
    }

    /// Wakes the TX queue `stop_tx` stopped; the device need not
    /// interrupt for it any more.
    fn wake_tx(&self, dev: &Netdev<'_>, tx: &mut Tx) {
        let _ = self.want(IRQ_TX, false);
        tx.stopped = false;
        dev.txq_wake(self.rings.index);
        bump(&self.counters.tx_queue_wakes, 1);
    }

    /// TX completion from the poll: frees entries and wakes the queue
    /// once a batch is free (`Producer::may_wake`; until then the TX
    /// interrupt stays asked for, and the device's next head store
    /// brings another poll).
    pub(super) fn complete_tx(&self, dev: &Netdev<'_>) {
        let mut tx = self.tx.lock();
        self.reclaim(&mut tx);
        if tx.stopped && tx.ring.may_wake(self.rings.shape.batch) {
            self.wake_tx(dev, &mut tx);
        }
    }
}
