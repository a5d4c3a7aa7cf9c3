// SPDX-License-Identifier: GPL-2.0

//! One queue pair as the driver runs it: its seven parts placed in host
//! memory (DMA-coherent) or device memory (BAR2) as the mode says, the
//! TX producer the stack's transmits drive, and the RX producer the NAPI
//! poll drives. No MMIO on the data path except pcie mode's doorbell.
//!
//! Everything read from shared memory (the device's heads, completions)
//! goes through the ring core's checks first: a bad value drops frames
//! and is counted, never moves an index or a copy out of bounds.
//!
//! Locks: `tx` (transmit, and the poll's TX completion), `rx` (the poll)
//! and `irq` (both) are taken only with bottom halves off (the RX ring
//! is primed before its lock exists); `irq` nests inside the other two.

use crate::io::NicIo;
use crate::ring::device::{
    space_of, Loc, Part, QueueConfig, QueueStats, QUEUE_STATS_BYTES, SPACE_DEVICE, STATS_OFFSET,
    VECTOR_QUEUE0,
};
use crate::ring::health::{Look, Stall, Watchdog};
use crate::ring::index::RingSize;
use crate::ring::layout::{
    RxCompletion, RxDesc, TxDesc, COMPLETION_BYTES, DESC_BYTES, FRAME_MIN, IRQ_RX, IRQ_TX,
};
use crate::ring::plan::{Bump, Sizes, PARTS};
use crate::ring::queue::{check_completion, Producer};
use crate::support::coherent::Coherent;
use crate::support::dma::CoherentAllocation;
use crate::support::napi::{NapiPoll, Poll};
use crate::support::netdev::{self, Netdev, SkBuff};
use core::sync::atomic::{fence, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, Mutex, SpinLock};
use kernel::{new_mutex, new_spinlock};

/// Driver line words: TX tail, RX tail, interrupts wanted.
const LINE_TX_TAIL: usize = 0;
const LINE_RX_TAIL: usize = 4;
const LINE_IRQ: usize = 8;
/// Device line words: TX head, RX head.
const LINE_TX_HEAD: usize = 0;
const LINE_RX_HEAD: usize = 4;

/// How a queue pair runs (from the port's settings).
#[derive(Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) mode: u32,
    pub(crate) sizes: Sizes,
    pub(crate) batch: u32,
    /// TX entries carry inline ready tags (no tail store).
    pub(crate) inline: bool,
    /// Ring the queue's doorbell per batch (pcie mode).
    pub(crate) doorbell: bool,
    /// The device interrupts (else a timer polls).
    pub(crate) interrupts: bool,
}

/// Where one part lives.
enum Place {
    Host(Arc<CoherentAllocation>),
    /// An offset in device memory.
    Device(usize),
}

struct Placed {
    place: Place,
    len: usize,
}

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

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

struct Tx {
    ring: Producer,
    /// Entries posted since the last doorbell (pcie).
    unrung: u32,
    /// This queue stopped the stack's TX queue for want of room (and has
    /// not woken it since). Polls wake only such a queue, never one
    /// `tx_disable` stopped.
    stopped: bool,
}

struct Rx {
    ring: Producer,
}

/// A queue pair's memory: where each part is, and how it is accessed.
///
/// # Invariants
///
/// `parts` has one entry per part, in `PARTS` order, each
/// `shape.sizes.bytes(part)` long: buffer offsets of entries are inside
/// their areas.
struct Rings {
    index: u16,
    io: Arc<NicIo>,
    shape: Shape,
    parts: KVec<Placed>,
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
    rings: Rings,
    #[pin]
    tx: SpinLock<Tx>,
    #[pin]
    rx: SpinLock<Rx>,
    /// The driver line's interrupt word, as last stored.
    #[pin]
    irq: SpinLock<u32>,
    /// The stall detector the port's watch feeds (process context).
    #[pin]
    health: Mutex<Watchdog>,
    pub(crate) counters: Counters,
}

/// Part `p`'s index in `PARTS` order.
fn slot_of(p: Part) -> usize {
    PARTS.iter().position(|&q| q == p).unwrap_or(0)
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
            rings.post_rx(&mut rx)?;
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

    /// The queue's placement, for the device config.
    pub(crate) fn config(&self) -> QueueConfig {
        self.rings.config()
    }
}

impl Rings {
    fn place(
        index: u16,
        io: Arc<NicIo>,
        shape: Shape,
        dev_mem: &mut Bump,
        lent: &mut KVec<Arc<CoherentAllocation>>,
    ) -> Result<Rings> {
        let mut parts = KVec::with_capacity(PARTS.len(), GFP_KERNEL)?;
        for part in PARTS {
            let bytes = shape.sizes.bytes(part);
            let len = usize::try_from(bytes).map_err(|_| EINVAL)?;
            let place = if space_of(shape.mode, part) == SPACE_DEVICE {
                let at = dev_mem.take(bytes).map_err(|_| {
                    pr_info!("queue {}: device memory is full\n", index);
                    ENOSPC
                })?;
                let at = usize::try_from(at).map_err(|_| EINVAL)?;
                // Memory that changes owner is cleared first.
                io.mem.clear(at, len)?;
                Place::Device(at)
            } else {
                let mem = Arc::new(
                    CoherentAllocation::alloc_coherent(&io.dma, len)?,
                    GFP_KERNEL,
                )?;
                let end = mem.dma_handle().checked_add(bytes).ok_or(ENOMEM)?;
                if end > io.host_bytes {
                    pr_info!(
                        "queue {}: DMA memory at {:#x} is beyond the {:#x} bytes the device reaches\n",
                        index,
                        mem.dma_handle(),
                        io.host_bytes
                    );
                    return Err(ENOMEM);
                }
                lent.push(mem.clone(), GFP_KERNEL)?;
                Place::Host(mem)
            };
            parts.push(Placed { place, len }, GFP_KERNEL)?;
        }
        // INVARIANT: every part placed, in order, at its size.
        Ok(Rings {
            index,
            io,
            shape,
            parts,
        })
    }

    fn config(&self) -> QueueConfig {
        let loc = |p: Part| match self.parts.get(slot_of(p)).map(|x| &x.place) {
            Some(Place::Host(m)) => Loc {
                space: crate::ring::device::SPACE_HOST,
                _pad: 0,
                addr: m.dma_handle(),
            },
            Some(Place::Device(at)) => Loc {
                space: SPACE_DEVICE,
                _pad: 0,
                addr: *at as u64,
            },
            None => Loc::default(),
        };
        let len = |p: Part| u32::try_from(self.shape.sizes.bytes(p)).unwrap_or(0);
        QueueConfig {
            tx_ring: loc(Part::TxRing),
            rx_ring: loc(Part::RxRing),
            rx_done: loc(Part::RxDone),
            driver_line: loc(Part::DriverLine),
            device_line: loc(Part::DeviceLine),
            tx_area: loc(Part::TxArea),
            rx_area: loc(Part::RxArea),
            tx_area_len: len(Part::TxArea),
            rx_area_len: len(Part::RxArea),
            _pad: 0,
        }
    }

    /// Part `p`'s memory and the offset of byte `off..off + n` of it, if
    /// inside the part.
    fn at(&self, p: Part, off: usize, n: usize) -> Result<(&dyn Coherent, usize)> {
        let placed = self.parts.get(slot_of(p)).ok_or(EINVAL)?;
        if !off.checked_add(n).is_some_and(|end| end <= placed.len) {
            return Err(EINVAL);
        }
        Ok(match &placed.place {
            Place::Host(m) => (&**m as &dyn Coherent, off),
            Place::Device(base) => (
                &self.io.mem as &dyn Coherent,
                base.checked_add(off).ok_or(EINVAL)?,
            ),
        })
    }

    fn load(&self, p: Part, off: usize) -> Result<u32> {
        let (m, at) = self.at(p, off, 4)?;
        m.load32(at)
    }

    fn store(&self, p: Part, off: usize, v: u32) -> Result {
        let (m, at) = self.at(p, off, 4)?;
        m.store32(at, v)
    }

    fn write(&self, p: Part, off: usize, data: &[u8]) -> Result {
        let (m, at) = self.at(p, off, data.len())?;
        m.write(at, data)
    }

    fn read(&self, p: Part, off: usize, out: &mut [u8]) -> Result {
        let (m, at) = self.at(p, off, out.len())?;
        m.read(at, out)
    }

    fn buffer_offset(&self, size: RingSize, index: u32) -> usize {
        // Inside the area (invariant), so a usize.
        self.shape.sizes.slot_offset(size, index) as usize
    }

    fn post_rx(&self, rx: &mut Rx) -> Result {
        let Some(e) = rx.ring.next() else {
            return Ok(());
        };
        let buf = self.buffer_offset(self.shape.sizes.rx, e.index);
        let desc = RxDesc {
            buf: buf as u64,
            cap: self.shape.sizes.slot,
            tag: e.tag,
        }
        .encode();
        let off = e.slot.checked_mul(DESC_BYTES).ok_or(EINVAL)?;
        // The tag, which makes the entry valid, last.
        self.write(Part::RxRing, off, &desc[..12])?;
        self.store(Part::RxRing, off + 12, e.tag)?;
        rx.ring.commit();
        Ok(())
    }

    /// Takes the device's TX head: the entries it read are free again;
    /// false if the head was not one the driver can have reached.
    fn reclaim(&self, tx: &mut Tx) -> bool {
        // A head the driver never posted up to is ignored (a later, sane
        // one frees the entries).
        self.load(Part::DeviceLine, LINE_TX_HEAD)
            .is_ok_and(|head| tx.ring.consumed(head).is_ok())
    }

    /// Rings the doorbell for entries posted since the last one; whether
    /// it rang.
    fn doorbell(&self, tx: &mut Tx) -> bool {
        if tx.unrung == 0 {
            return false;
        }
        self.io.ring(VECTOR_QUEUE0 + u32::from(self.index));
        tx.unrung = 0;
        true
    }

    fn post_tx(&self, tx: &mut Tx, skb: &SkBuff, index: u32, slot: usize, tag: u32) -> Result {
        let buf = self.buffer_offset(self.shape.sizes.tx, index);
        let (m, at) = self.at(Part::TxArea, buf, skb.len() as usize)?;
        let len = skb.copy_into(m, at)?;
        let desc = TxDesc {
            buf: buf as u64,
            len,
            tag,
        }
        .encode();
        let off = slot.checked_mul(DESC_BYTES).ok_or(EINVAL)?;
        self.write(Part::TxRing, off, &desc[..12])?;
        self.store(Part::TxRing, off + 12, tag)?;
        tx.ring.commit();
        if !self.shape.inline {
            self.store(Part::DriverLine, LINE_TX_TAIL, tx.ring.tail())?;
        }
        Ok(())
    }
}

impl Queue {
    /// Sets or clears interrupt bits in the driver line. Asking for one
    /// is followed by a full barrier: the caller then reads the device's
    /// head, and the device stores its head before it reads this word,
    /// so one of the two sees the other.
    fn want(&self, bits: u32, on: bool) -> Result {
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

    fn reclaim(&self, tx: &mut Tx) {
        if !self.rings.reclaim(tx) {
            bump(&self.counters.tx_faults, 1);
            bump(&self.counters.tx_bad_head, 1);
        }
        let c = &self.counters;
        c.tx_head
            .store(u64::from(tx.ring.head()), Ordering::Relaxed);
        c.tx_tail
            .store(u64::from(tx.ring.tail()), Ordering::Relaxed);
    }

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

    fn doorbell(&self, tx: &mut Tx) {
        if self.rings.doorbell(tx) {
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
                .post_tx(&mut tx, &skb, e.index, e.slot, e.tag)
                .is_ok();
        drop(skb);
        if sent {
            let tail = u64::from(tx.ring.tail());
            self.counters.tx_tail.store(tail, Ordering::Relaxed);
            bump(&self.counters.tx_packets, 1);
            bump(&self.counters.tx_bytes, u64::from(len));
            if shape.doorbell {
                tx.unrung += 1;
            }
        } else {
            bump(&self.counters.tx_dropped, 1);
        }
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
    fn complete_tx(&self, dev: &Netdev<'_>) {
        let mut tx = self.tx.lock();
        self.reclaim(&mut tx);
        if tx.stopped && tx.ring.may_wake(self.rings.shape.batch) {
            self.wake_tx(dev, &mut tx);
        }
    }

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
            if self.rings.post_rx(&mut rx).is_err() {
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
