//! What the rings look like in memory (version 1, little-endian). Defined
//! once, here; `Documentation/cxlfabric/cxlnic.rst` describes it.
//!
//! A queue pair is a TX ring and an RX ring of [`RING_MIN`]..=[`RING_MAX`]
//! 16-byte descriptors, an RX completion ring of 8-byte entries, and two
//! control lines of 64 bytes, each with one writer: the driver's (its
//! tails, which interrupts it wants) and the device's (its heads). Where
//! each of them lives (host memory, device memory) is the mode's choice.
//!
//! [`RING_MIN`]: super::index::RING_MIN
//! [`RING_MAX`]: super::index::RING_MAX

use cxlf_common::le::{le32, le64, put};

/// The device header's signature (BAR2, offset 0).
pub const SIGNATURE: [u8; 8] = *b"CXLNIC\x00\x01";
/// The layout version this crate speaks.
pub const VERSION: u32 = 1;
/// The largest MTU, bytes.
pub const MTU_MAX: u32 = 9000;
/// The smallest frame, bytes: an Ethernet header.
pub const FRAME_MIN: u32 = 14;
/// The largest frame, bytes: [`MTU_MAX`], an Ethernet header and a VLAN
/// tag.
pub const FRAME_MAX: u32 = MTU_MAX + 18;
/// Bytes of a TX or RX descriptor.
pub const DESC_BYTES: usize = 16;
/// Bytes of an RX completion.
pub const COMPLETION_BYTES: usize = 8;
/// Bytes of a control line.
pub const LINE_BYTES: usize = 64;

/// A TX descriptor, written by the driver, read by the device.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxDesc {
    /// Offset of the frame in the queue's TX buffer area.
    pub buf: u64,
    /// Bytes of the frame.
    pub len: u32,
    /// `index::ready_tag` of the entry, stored last.
    pub tag: u32,
}

/// An RX descriptor: a buffer the driver posts for the device to fill.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxDesc {
    /// Offset of the buffer in the queue's RX buffer area.
    pub buf: u64,
    /// Bytes the buffer holds.
    pub cap: u32,
    /// `index::ready_tag` of the entry, stored last.
    pub tag: u32,
}

/// An RX completion, written by the device for each frame it received.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxCompletion {
    /// Bytes of the frame in the entry's buffer.
    pub len: u32,
    /// `index::ready_tag` of the entry.
    pub tag: u32,
}

/// The driver's control line of a queue pair.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverLine {
    /// TX entries posted (tail mode; inline mode leaves it to the tags).
    pub tx_tail: u32,
    /// RX buffers posted.
    pub rx_tail: u32,
    /// Interrupts the driver asks for: [`IRQ_RX`], [`IRQ_TX`].
    pub irq: u32,
}

/// The device's control line of a queue pair.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceLine {
    /// TX entries the device has read (their buffers are free again).
    pub tx_head: u32,
    /// RX entries the device has filled (their completions are written).
    pub rx_head: u32,
}

/// `DriverLine::irq`: interrupt when RX entries complete.
pub const IRQ_RX: u32 = 1 << 0;
/// `DriverLine::irq`: interrupt when TX entries complete.
pub const IRQ_TX: u32 = 1 << 1;

const _: () = assert!(core::mem::size_of::<TxDesc>() == DESC_BYTES);
const _: () = assert!(core::mem::size_of::<RxDesc>() == DESC_BYTES);
const _: () = assert!(core::mem::size_of::<RxCompletion>() == COMPLETION_BYTES);
const _: () = assert!(core::mem::size_of::<DriverLine>() <= LINE_BYTES);
const _: () = assert!(core::mem::size_of::<DeviceLine>() <= LINE_BYTES);

impl TxDesc {
    /// The descriptor's bytes in the TX ring (the tag last, at 12).
    pub fn encode(&self) -> [u8; DESC_BYTES] {
        let mut b = [0u8; DESC_BYTES];
        put(&mut b, 0, &self.buf.to_le_bytes());
        put(&mut b, 8, &self.len.to_le_bytes());
        put(&mut b, 12, &self.tag.to_le_bytes());
        b
    }

    /// The descriptor in `b`, unchecked (the device checks it: `queue::check_tx`).
    pub fn decode(b: &[u8; DESC_BYTES]) -> TxDesc {
        TxDesc {
            buf: le64(b, 0),
            len: le32(b, 8),
            tag: le32(b, 12),
        }
    }
}

impl RxDesc {
    /// The descriptor's bytes in the RX ring (the tag last, at 12).
    pub fn encode(&self) -> [u8; DESC_BYTES] {
        let mut b = [0u8; DESC_BYTES];
        put(&mut b, 0, &self.buf.to_le_bytes());
        put(&mut b, 8, &self.cap.to_le_bytes());
        put(&mut b, 12, &self.tag.to_le_bytes());
        b
    }

    /// The descriptor in `b`, unchecked (the device checks it: `queue::check_rx`).
    pub fn decode(b: &[u8; DESC_BYTES]) -> RxDesc {
        RxDesc {
            buf: le64(b, 0),
            cap: le32(b, 8),
            tag: le32(b, 12),
        }
    }
}

impl RxCompletion {
    /// The completion's bytes in the completion ring.
    pub fn encode(&self) -> [u8; COMPLETION_BYTES] {
        let mut b = [0u8; COMPLETION_BYTES];
        put(&mut b, 0, &self.len.to_le_bytes());
        put(&mut b, 4, &self.tag.to_le_bytes());
        b
    }

    /// The completion in `b`, unchecked (the driver checks it:
    /// `queue::check_completion`).
    pub fn decode(b: &[u8; COMPLETION_BYTES]) -> RxCompletion {
        RxCompletion {
            len: le32(b, 0),
            tag: le32(b, 4),
        }
    }
}

impl DriverLine {
    /// The line's bytes (unused words zero).
    pub fn encode(&self) -> [u8; LINE_BYTES] {
        let mut b = [0u8; LINE_BYTES];
        put(&mut b, 0, &self.tx_tail.to_le_bytes());
        put(&mut b, 4, &self.rx_tail.to_le_bytes());
        put(&mut b, 8, &self.irq.to_le_bytes());
        b
    }

    /// The line in `b`, unchecked.
    pub fn decode(b: &[u8; LINE_BYTES]) -> DriverLine {
        DriverLine {
            tx_tail: le32(b, 0),
            rx_tail: le32(b, 4),
            irq: le32(b, 8),
        }
    }
}

impl DeviceLine {
    /// The line's bytes (unused words zero).
    pub fn encode(&self) -> [u8; LINE_BYTES] {
        let mut b = [0u8; LINE_BYTES];
        put(&mut b, 0, &self.tx_head.to_le_bytes());
        put(&mut b, 4, &self.rx_head.to_le_bytes());
        b
    }

    /// The line in `b`, unchecked (the driver takes heads only through
    /// `queue::Producer::consume`).
    pub fn decode(b: &[u8; LINE_BYTES]) -> DeviceLine {
        DeviceLine {
            tx_head: le32(b, 0),
            rx_head: le32(b, 4),
        }
    }
}
