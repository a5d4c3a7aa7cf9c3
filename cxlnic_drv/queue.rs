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
//! and `irq` (both) are taken only with bottom halves off; `irq` nests
//! inside the other two.

use crate::io::NicIo;
use crate::ring::device::{space_of, Loc, Part, QueueConfig, SPACE_DEVICE, VECTOR_QUEUE0};
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
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, SpinLock};

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
    pub(crate) tx_busy: AtomicU64,
    pub(crate) tx_faults: AtomicU64,
    pub(crate) rx_packets: AtomicU64,
    pub(crate) rx_bytes: AtomicU64,
    pub(crate) rx_dropped: AtomicU64,
    pub(crate) rx_faults: AtomicU64,
    pub(crate) doorbells: AtomicU64,
    pub(crate) polls: AtomicU64,
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

struct Tx {
    ring: Producer,
    /// Entries posted since the last doorbell (pcie).
    unrung: u32,
}

struct Rx {
    ring: Producer,
}

#[pin_data]
pub(crate) struct Queue {
    index: u16,
    io: Arc<NicIo>,
    shape: Shape,
    parts: KVec<Placed>,
    #[pin]
    tx: SpinLock<Tx>,
    #[pin]
    rx: SpinLock<Rx>,
    /// The driver line's interrupt word, as last stored.
    #[pin]
    irq: SpinLock<u32>,
    pub(crate) counters: Counters,
}

/// Part `p`'s index in `PARTS` order.
fn slot_of(p: Part) -> usize {
    PARTS.iter().position(|&q| q == p).unwrap_or(0)
}

impl Queue {
    /// Places queue `index`'s parts: host parts in fresh DMA memory
    /// (also pushed to `lent`, which the port keeps until the device has
    /// let go of them), device parts from `dev_mem`.
    pub(crate) fn new(
        index: u16,
        io: Arc<NicIo>,
        shape: Shape,
        dev_mem: &mut Bump,
        lent: &mut KVec<Arc<CoherentAllocation>>,
    ) -> Result<Arc<Queue>> {
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
        let q = Arc::pin_init(
            pin_init!(Queue {
                index,
                io,
                shape,
                parts,
                tx <- new_spinlock!(Tx { ring: Producer::new(shape.sizes.tx, 0), unrung: 0 }, "cxlnic:tx"),
                rx <- new_spinlock!(Rx { ring: Producer::new(shape.sizes.rx, 0) }, "cxlnic:rx"),
                irq <- new_spinlock!(0, "cxlnic:irq"),
                counters: Counters::default(),
            }),
            GFP_KERNEL,
        )?;
        Ok(q)
    }

    /// The queue's placement, for the device config.
    pub(crate) fn config(&self) -> QueueConfig {
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
        // Below the area's length, a usize (checked when placed).
        self.shape.sizes.slot_offset(size, index) as usize
    }

    /// Posts every RX buffer and says which interrupts it wants (before
    /// the config that hands the rings to the device).
    pub(crate) fn prime(&self) -> Result {
        let mut rx = self.rx.lock();
        while rx.ring.free() > 0 {
            self.post_rx(&mut rx)?;
        }
        self.store(Part::DriverLine, LINE_RX_TAIL, rx.ring.tail())?;
        drop(rx);
        self.want(IRQ_RX, true)
    }

    /// Sets or clears interrupt bits in the driver line.
    fn want(&self, bits: u32, on: bool) -> Result {
        let mut irq = self.irq.lock();
        let new = if on { *irq | bits } else { *irq & !bits };
        if new != *irq {
            self.store(Part::DriverLine, LINE_IRQ, new)?;
            *irq = new;
        }
        Ok(())
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

    /// Takes the device's TX head: the entries it read are free again.
    fn reclaim(&self, tx: &mut Tx) {
        let Ok(head) = self.load(Part::DeviceLine, LINE_TX_HEAD) else {
            return;
        };
        if tx.ring.consumed(head).is_err() {
            // A head the driver never posted up to: ignored (a later,
            // sane one frees the entries).
            bump(&self.counters.tx_faults, 1);
        }
    }

    fn doorbell(&self, tx: &mut Tx) {
        if tx.unrung > 0 {
            self.io.ring(VECTOR_QUEUE0 + u32::from(self.index));
            tx.unrung = 0;
            bump(&self.counters.doorbells, 1);
        }
    }

    /// Sends `skb` (copied into the entry's buffer, then freed); `Err`
    /// gives it back when the ring is full. Bottom halves are off.
    pub(crate) fn xmit(&self, dev: &Netdev<'_>, skb: SkBuff) -> core::result::Result<(), SkBuff> {
        let mut tx = self.tx.lock();
        if tx.ring.free() < self.shape.batch {
            self.reclaim(&mut tx);
        }
        let Some(e) = tx.ring.next() else {
            bump(&self.counters.tx_busy, 1);
            self.stop_tx(dev, &mut tx);
            return Err(skb);
        };
        let len = skb.len();
        if len < FRAME_MIN || len > self.shape.sizes.slot {
            // Not a frame the interface's MTU allows.
            bump(&self.counters.tx_dropped, 1);
            return Ok(());
        }
        if self.post_tx(&mut tx, &skb, e.index, e.slot, e.tag).is_err() {
            bump(&self.counters.tx_dropped, 1);
            return Ok(());
        }
        drop(skb);
        bump(&self.counters.tx_packets, 1);
        bump(&self.counters.tx_bytes, u64::from(len));
        if self.shape.doorbell {
            tx.unrung += 1;
            if !netdev::xmit_more() || tx.unrung >= self.shape.batch {
                self.doorbell(&mut tx);
            }
        }
        if tx.ring.free() == 0 {
            self.reclaim(&mut tx);
            if tx.ring.free() == 0 {
                self.stop_tx(dev, &mut tx);
            }
        }
        Ok(())
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

    /// The ring is full: the stack holds packets until the device frees
    /// entries, which it says by interrupt (asked for here).
    fn stop_tx(&self, dev: &Netdev<'_>, tx: &mut Tx) {
        // No more transmits come to ring a held-back doorbell.
        self.doorbell(tx);
        dev.txq_stop(self.index);
        let _ = self.want(IRQ_TX, true);
        // The device may have freed entries before it saw the request.
        self.reclaim(tx);
        if tx.ring.free() > 0 {
            let _ = self.want(IRQ_TX, false);
            dev.txq_wake(self.index);
        }
    }

    /// TX completion from the poll: frees entries and wakes the queue.
    fn complete_tx(&self, dev: &Netdev<'_>) {
        let mut tx = self.tx.lock();
        self.reclaim(&mut tx);
        if tx.ring.free() > 0 && dev.txq_stopped(self.index) {
            let _ = self.want(IRQ_TX, false);
            dev.txq_wake(self.index);
        }
    }

    /// Receives up to `budget` frames; returns how many entries it took.
    fn receive(&self, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        let mut rx = self.rx.lock();
        let Ok(head) = self.load(Part::DeviceLine, LINE_RX_HEAD) else {
            return 0;
        };
        let span = match rx.ring.consume(head, budget) {
            Ok(s) => s,
            Err(_) => {
                bump(&self.counters.rx_faults, 1);
                return 0;
            }
        };
        for index in span.indices() {
            self.receive_one(napi, index);
            // The entry's buffer goes back to the device at once.
            if self.post_rx(&mut rx).is_err() {
                bump(&self.counters.rx_faults, 1);
            }
        }
        if span.count > 0 {
            let _ = self.store(Part::DriverLine, LINE_RX_TAIL, rx.ring.tail());
        }
        span.count
    }

    fn receive_one(&self, napi: &NapiPoll<'_>, index: u32) {
        let size = self.shape.sizes.rx;
        let mut raw = [0u8; COMPLETION_BYTES];
        let off = size.slot(index).saturating_mul(COMPLETION_BYTES);
        if self.read(Part::RxDone, off, &mut raw).is_err() {
            bump(&self.counters.rx_faults, 1);
            return;
        }
        let c = RxCompletion::decode(&raw);
        let len = match check_completion(&c, index, self.shape.sizes.slot) {
            Ok(len) => len,
            Err(_) => {
                bump(&self.counters.rx_faults, 1);
                return;
            }
        };
        let buf = self.buffer_offset(size, index);
        let delivered = self
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
        self.load(Part::DeviceLine, LINE_RX_HEAD)
            .is_ok_and(|h| h != rx.ring.head())
    }
}

impl Poll for Queue {
    fn poll(this: ArcBorrow<'_, Self>, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        bump(&this.counters.polls, 1);
        // While polling, the device need not interrupt.
        let _ = this.want(IRQ_RX, false);
        this.complete_tx(&napi.netdev());
        let work = this.receive(napi, budget);
        if work < budget && napi.complete_done(work) {
            let _ = this.want(IRQ_RX, true);
            if this.rx_pending() {
                napi.schedule();
            }
        }
        work
    }
}
