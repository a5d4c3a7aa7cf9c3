// SPDX-License-Identifier: GPL-2.0

//! Where a queue pair's seven parts live: placed in host memory
//! (DMA-coherent, lent to the device) or device memory (BAR2) as the
//! mode says, and named to the device in its config.

use crate::io::NicIo;
use crate::ring::device::{space_of, Loc, Part, QueueConfig, SPACE_DEVICE, SPACE_HOST};
use crate::ring::plan::{Bump, Sizes, PARTS};
use crate::support::coherent::Coherent;
use crate::support::dma::CoherentAllocation;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Driver line words: TX tail, RX tail, interrupts wanted.
pub(super) const LINE_TX_TAIL: usize = 0;
pub(super) const LINE_RX_TAIL: usize = 4;
pub(super) const LINE_IRQ: usize = 8;
/// Device line words: TX head, RX head.
pub(super) const LINE_TX_HEAD: usize = 0;
pub(super) const LINE_RX_HEAD: usize = 4;

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
pub(super) enum Place {
    Host(Arc<CoherentAllocation>),
    /// An offset in device memory.
    Device(usize),
}

/// A part's place and its bytes.
pub(super) struct Placed {
    pub(super) place: Place,
    pub(super) len: usize,
}

/// A queue pair's memory: where each part is, and how it is accessed
/// (`access.rs`).
///
/// # Invariants
///
/// `parts` has one entry per part, in `PARTS` order, each
/// `shape.sizes.bytes(part)` long: buffer offsets of entries are inside
/// their areas.
pub(super) struct Rings {
    pub(super) index: u16,
    pub(super) io: Arc<NicIo>,
    pub(super) shape: Shape,
    pub(super) parts: KVec<Placed>,
}

/// Part `p`'s index in `PARTS` order.
pub(super) fn slot_of(p: Part) -> usize {
    PARTS.iter().position(|&q| q == p).unwrap_or(0)
}

impl Rings {
    /// Places queue `index`'s parts (host parts in fresh DMA memory, also
    /// pushed to `lent`; device parts from `dev_mem`, cleared).
    pub(super) fn place(
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
                place_device(index, &io, dev_mem, bytes, len)?
            } else {
                place_host(index, &io, lent, bytes, len)?
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

    /// The placement the device config names.
    pub(super) fn config(&self) -> QueueConfig {
        let loc = |p: Part| match self.parts.get(slot_of(p)).map(|x| &x.place) {
            Some(Place::Host(m)) => Loc {
                space: SPACE_HOST,
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
}

/// `bytes` (`len`) of device memory from `dev_mem`, cleared.
fn place_device(
    index: u16,
    io: &NicIo,
    dev_mem: &mut Bump,
    bytes: u64,
    len: usize,
) -> Result<Place> {
    let at = dev_mem.take(bytes).map_err(|_| {
        pr_info!("queue {}: device memory is full\n", index);
        ENOSPC
    })?;
    let at = usize::try_from(at).map_err(|_| EINVAL)?;
    // Memory that changes owner is cleared first.
    io.mem.clear(at, len)?;
    Ok(Place::Device(at))
}

/// `bytes` (`len`) of fresh DMA memory the device reaches, also pushed to
/// `lent`.
fn place_host(
    index: u16,
    io: &NicIo,
    lent: &mut KVec<Arc<CoherentAllocation>>,
    bytes: u64,
    len: usize,
) -> Result<Place> {
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
    Ok(Place::Host(mem))
}
