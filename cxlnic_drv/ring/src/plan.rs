//! How a driver lays out a queue pair: each part's bytes and space for a
//! mode, ring sizes and MTU, and places in device memory handed out in
//! order. Buffer areas hold one fixed slot per ring entry (entry `i`'s
//! buffer is slot `i % size`), so posting never searches for room.

use super::device::{space_of, Part, DATA_OFFSET};
use super::index::RingSize;
use super::layout::{COMPLETION_BYTES, DESC_BYTES, FRAME_MAX, LINE_BYTES, MTU_MAX};

/// Every part of a queue pair, in `QueueConfig`'s order.
pub const PARTS: [Part; 7] = [
    Part::TxRing,
    Part::RxRing,
    Part::RxDone,
    Part::DriverLine,
    Part::DeviceLine,
    Part::TxArea,
    Part::RxArea,
];

/// Every part starts on a line of its own: its alignment, bytes.
pub const ALIGN: u64 = LINE_BYTES as u64;
/// The largest buffer area a driver allocates in host memory as one
/// piece (the page allocator's largest block, 4 MiB with 4 KiB pages).
pub const AREA_MAX: u64 = 4 << 20;
/// Bytes an MTU's frame needs beyond it: Ethernet header and VLAN tag
/// (18).
pub const FRAME_OVERHEAD: u32 = FRAME_MAX - MTU_MAX;

/// A queue pair's sizes. [`Sizes::new`] makes them with `slot` the
/// [`slot_bytes`] of an MTU of at most [`MTU_MAX`] and neither buffer
/// area above [`AREA_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Entries of the TX ring (and slots of the TX buffer area).
    pub tx: RingSize,
    /// Entries of the RX ring, its completion ring and the RX buffer
    /// area's slots.
    pub rx: RingSize,
    /// Bytes of each buffer slot, a multiple of a line.
    pub slot: u32,
}

/// Why sizes cannot be laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanError {
    /// An MTU above [`MTU_MAX`].
    Mtu,
    /// A buffer area above [`AREA_MAX`] (a smaller ring or MTU fits).
    Area,
    /// Device memory is full.
    DeviceMemory,
}

/// The slot for frames of `mtu`, bytes: the largest frame (the MTU and
/// [`FRAME_OVERHEAD`]) rounded up to a line.
pub fn slot_bytes(mtu: u32) -> Result<u32, PlanError> {
    if mtu > MTU_MAX {
        return Err(PlanError::Mtu);
    }
    // mtu <= 9000: no overflow.
    let frame = mtu.saturating_add(FRAME_OVERHEAD);
    let line = LINE_BYTES as u32;
    Ok(frame.div_ceil(line).saturating_mul(line))
}

impl Sizes {
    /// Sizes for rings of `tx` and `rx` entries carrying `mtu`, if both
    /// areas fit [`AREA_MAX`].
    pub fn new(tx: RingSize, rx: RingSize, mtu: u32) -> Result<Sizes, PlanError> {
        let s = Sizes {
            tx,
            rx,
            slot: slot_bytes(mtu)?,
        };
        if s.bytes(Part::TxArea) > AREA_MAX || s.bytes(Part::RxArea) > AREA_MAX {
            return Err(PlanError::Area);
        }
        Ok(s)
    }

    /// Bytes of `part` (a line for the control lines).
    pub fn bytes(&self, part: Part) -> u64 {
        let ring = |size: RingSize, entry: usize| {
            // At most 4096 entries of 16 bytes, or of 9024-byte slots.
            u64::from(size.get()).saturating_mul(entry as u64)
        };
        match part {
            Part::TxRing => ring(self.tx, DESC_BYTES),
            Part::RxRing => ring(self.rx, DESC_BYTES),
            Part::RxDone => ring(self.rx, COMPLETION_BYTES),
            Part::DriverLine | Part::DeviceLine => LINE_BYTES as u64,
            Part::TxArea => ring(self.tx, self.slot as usize),
            Part::RxArea => ring(self.rx, self.slot as usize),
        }
    }

    /// Offset, bytes, of entry `index`'s buffer slot in an area of `size`
    /// entries.
    pub fn slot_offset(&self, size: RingSize, index: u32) -> u64 {
        // slot < 4096, slot bytes <= 9024.
        (size.slot(index) as u64).saturating_mul(u64::from(self.slot))
    }

    /// Bytes of device memory `queues` queue pairs need in `mode`.
    pub fn device_bytes(&self, mode: u32, queues: u32) -> u64 {
        let one: u64 = PARTS
            .iter()
            .filter(|&&p| space_of(mode, p) == super::device::SPACE_DEVICE)
            .map(|&p| round_up(self.bytes(p)))
            .fold(0u64, u64::saturating_add);
        one.saturating_mul(u64::from(queues))
    }
}

fn round_up(len: u64) -> u64 {
    len.div_ceil(ALIGN).saturating_mul(ALIGN)
}

/// Device memory handed out in order, from [`DATA_OFFSET`] to the BAR's
/// end, each piece aligned to [`ALIGN`].
///
/// # Invariants
///
/// `next` is a multiple of [`ALIGN`]; the pieces handed out lie in
/// `DATA_OFFSET..next`, and `next <= end` once one has been.
#[derive(Debug, Clone, Copy)]
pub struct Bump {
    next: u64,
    end: u64,
}

impl Bump {
    /// Nothing handed out yet, in a BAR2 of `bar_bytes`.
    pub fn new(bar_bytes: u64) -> Bump {
        Bump {
            next: DATA_OFFSET,
            end: bar_bytes,
        }
    }

    /// The BAR2 offset of `len` more bytes (rounded up to [`ALIGN`]), if
    /// they fit.
    pub fn take(&mut self, len: u64) -> Result<u64, PlanError> {
        let at = self.next;
        let end = at
            .checked_add(round_up(len))
            .filter(|&e| e <= self.end)
            .ok_or(PlanError::DeviceMemory)?;
        self.next = end;
        Ok(at)
    }
}
