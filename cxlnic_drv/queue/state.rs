// SPDX-License-Identifier: GPL-2.0

//! A running queue pair: its rings, the state of its two producers, the
//! interrupt word, its stall detector and its counters.

use super::rings::{Rings, Shape, LINE_IRQ, LINE_RX_TAIL};
use crate::io::NicIo;
use crate::ring::device::{Part, QueueConfig};
use crate::ring::health::Watchdog;
use crate::ring::layout::IRQ_RX;
use crate::ring::plan::Bump;
use crate::ring::queue::Producer;
use crate::support::dma::CoherentAllocation;
use core::sync::atomic::{fence, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex, SpinLock};
use kernel::{new_mutex, new_spinlock};

/// A queue pair's counters (the interface's are their sums).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) tx_packets: AtomicU64,
    pub(crate) tx_bytes: AtomicU64,
    pub(crate) tx_dropped: AtomicU64,
    /// Transmits that met a full ring with the queue awake (a bug in the
    /// stop rule: `NETDEV_TX_BUSY`).
    pub(crate) tx_busy: AtomicU64,
    /// The stack's TX queue stopped because a maximal frame no longer
    /// fit, and woken again.
    pub(crate) tx_queue_stops: AtomicU64,
    pub(crate) tx_queue_wakes: AtomicU64,
    pub(crate) tx_faults: AtomicU64,
    pub(crate) rx_packets: AtomicU64,
    pub(crate) rx_bytes: AtomicU64,
    pub(crate) rx_dropped: AtomicU64,
    pub(crate) rx_faults: AtomicU64,
    pub(crate) doorbells: AtomicU64,
    pub(crate) polls: AtomicU64,
    /// Faults by kind: a TX or RX head outside what was posted, a bad
    /// RX completion (tag or length).
    pub(crate) tx_bad_head: AtomicU64,
    pub(crate) rx_bad_head: AtomicU64,
    pub(crate) rx_bad_completion: AtomicU64,
    /// The rings' indices as the driver last left them.
    pub(crate) tx_head: AtomicU64,
    pub(crate) tx_tail: AtomicU64,
    pub(crate) rx_head: AtomicU64,
    pub(crate) rx_tail: AtomicU64,
}

/// How many of [`Counters`] only grow ([`Counters::growing`]).
pub(crate) const GROWING: usize = 16;

impl Counters {
    /// The counters that only grow, in `ethtool -S` order (the rest are
    /// ring indices). A queue pair's totals keep them over restarts.
    pub(crate) fn growing(&self) -> [&AtomicU64; GROWING] {
        [
            &self.tx_packets,
            &self.tx_bytes,
            &self.tx_dropped,
            &self.tx_busy,
            &self.tx_queue_stops,
            &self.tx_queue_wakes,
            &self.tx_faults,
            &self.rx_packets,
            &self.rx_bytes,
            &self.rx_dropped,
            &self.rx_faults,
            &self.doorbells,
            &self.polls,
            &self.tx_bad_head,
            &self.rx_bad_head,
            &self.rx_bad_completion,
        ]
    }

    /// Adds the growing counters of `from` (a queue pair being torn
    /// down, its counts final) to these.
    pub(crate) fn absorb(&self, from: &Counters) {
        for (to, from) in self.growing().into_iter().zip(from.growing()) {
            to.fetch_add(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

/// Adds `n` to counter `c`.
pub(super) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// The TX producer's state (under `tx`).
pub(super) struct Tx {
    pub(super) ring: Producer,
    /// Entries posted since the last doorbell (pcie).
    pub(super) unrung: u32,
    /// This queue stopped the stack's TX queue for want of room (and has
    /// not woken it since). Polls wake only such a queue, never one
    /// `tx_disable` stopped.
    pub(super) stopped: bool,
}

/// The RX producer's state (under `rx`).
pub(super) struct Rx {
    pub(super) ring: Producer,
}

/// A running queue pair.
///
/// # Invariants
///
/// - `tx.ring` and `rx.ring` are sized as `rings.shape.sizes` says; every
///   entry between a ring's head and tail was posted to its part of
///   `rings` (a TX slot holds a copied frame, an RX slot an empty buffer),
///   and the driver line's tail words are the rings' tails as last
///   published.
/// - `irq` is what the driver line's interrupt word holds.
/// - Heads are taken from shared memory only through `Producer::consume`,
///   so an index never leaves `0..size` and never passes the tail.
#[pin_data]
pub(crate) struct Queue {
    pub(super) rings: Rings,
    #[pin]
    pub(super) tx: SpinLock<Tx>,
    #[pin]
    pub(super) rx: SpinLock<Rx>,
    /// The driver line's interrupt word, as last stored.
    #[pin]
    pub(super) irq: SpinLock<u32>,
    /// The stall detector the port's watch feeds (process context).
    #[pin]
    pub(super) health: Mutex<Watchdog>,
    pub(crate) counters: Counters,
}

impl Queue {
    /// Places queue `index`'s parts (host parts in fresh DMA memory, also
    /// pushed to `lent`, which the port keeps until the device has let go
    /// of them; device parts from `dev_mem`) and posts every RX buffer.
    pub(crate) fn new(
        index: u16,
        io: Arc<NicIo>,
        shape: Shape,
        dev_mem: &mut Bump,
        lent: &mut KVec<Arc<CoherentAllocation>>,
    ) -> Result<Arc<Queue>> {
        let rings = Rings::place(index, io, shape, dev_mem, lent)?;
        // Primed here, in process context, before the locks exist.
        let mut rx = Rx {
            ring: Producer::new(shape.sizes.rx, 0),
        };
        while rx.ring.free() > 0 {
            rings.post_rx(&mut rx.ring)?;
        }
        rings.store(Part::DriverLine, LINE_RX_TAIL, rx.ring.tail())?;
        let irq = if shape.interrupts { IRQ_RX } else { 0 };
        rings.store(Part::DriverLine, LINE_IRQ, irq)?;
        // INVARIANT: both rings sized from `shape`; every RX entry posted
        // and its tail published; the TX ring empty; `irq` as stored.
        Arc::pin_init(
            pin_init!(Queue {
                rings,
                tx <- new_spinlock!(Tx { ring: Producer::new(shape.sizes.tx, 0), unrung: 0, stopped: false }, "cxlnic:tx"),
                rx <- new_spinlock!(rx, "cxlnic:rx"),
                irq <- new_spinlock!(irq, "cxlnic:irq"),
                health <- new_mutex!(Watchdog::new(), "cxlnic:health"),
                counters: Counters::default(),
            }),
            GFP_KERNEL,
        )
    }

    /// The queue pair's index in the port.
    pub(crate) fn index(&self) -> u16 {
        self.rings.index
    }

    /// The queue's placement, for the device config.
    pub(crate) fn config(&self) -> QueueConfig {
        self.rings.config()
    }

    /// Sets or clears interrupt bits in the driver line. Asking for one
    /// is followed by a full barrier: the caller then reads the device's
    /// head, and the device stores its head before it reads this word,
    /// so one of the two sees the other.
    pub(super) fn want(&self, bits: u32, on: bool) -> Result {
        let mut irq = self.irq.lock();
        let new = if on { *irq | bits } else { *irq & !bits };
        if new != *irq {
            self.rings.store(Part::DriverLine, LINE_IRQ, new)?;
            *irq = new;
            if on {
                fence(Ordering::SeqCst);
            }
        }
        Ok(())
    }
}
