//! The device's check of a config read from BAR2, and where each part of
//! a queue pair must live.

use super::map::{
    mode_bit, DATA_OFFSET, FLAGS_KNOWN, FLAG_TX_INLINE, MODE_OFF, MODE_TYPE2, QUEUES_MAX,
    SPACE_DEVICE, SPACE_HOST,
};
use super::records::{DriverConfig, Loc, Part, QueueConfig};
use crate::index::RingSize;
use crate::layout::{COMPLETION_BYTES, DESC_BYTES, LINE_BYTES};

/// Why a device refused a config (`DeviceHeader::cfg_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ConfigError {
    /// A mode it does not know or support.
    Mode = 1,
    /// No queues, or more than it has.
    Queues = 2,
    /// A ring size that is not a power of two in range.
    RingSize = 3,
    /// A batch of 0 or above the ring.
    Batch = 4,
    /// Flags or reserved fields it does not know.
    Flags = 5,
    /// A part outside its space, misaligned, or in the wrong space for
    /// the mode.
    Placement = 6,
}

impl ConfigError {
    /// Its code in `DeviceHeader::cfg_status` (never 0, which is taken).
    pub const fn code(self) -> u32 {
        self as u32
    }
}

/// The memory a device reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spaces {
    /// Bytes of host memory (`DeviceHeader::host_bytes`), from DMA
    /// address 0.
    pub host_bytes: u64,
    /// Where the driver's part of BAR2 ends: the KVS area's start
    /// (`DeviceHeader::kvs_offset`) when the device has one, else the
    /// BAR's size.
    pub bar_bytes: u64,
}

impl Spaces {
    /// Whether `len` bytes at `loc` lie in its space, aligned to `align`
    /// bytes (in BAR2: in the driver's part, past the device's own pages).
    pub fn fits(&self, loc: &Loc, len: u64, align: u64) -> bool {
        let (lo, hi) = match loc.space {
            SPACE_HOST => (0, self.host_bytes),
            SPACE_DEVICE => (DATA_OFFSET, self.bar_bytes),
            _ => return false,
        };
        let aligned = align != 0 && loc.addr.checked_rem(align) == Some(0);
        let end = loc.addr.checked_add(len);
        aligned && loc.addr >= lo && end.is_some_and(|e| e <= hi)
    }
}

/// The space `part` of a queue pair lives in under `mode`: type2 puts
/// the device-written parts and both buffer areas in device memory.
pub fn space_of(mode: u32, part: Part) -> u32 {
    match (mode, part) {
        (MODE_TYPE2, Part::TxRing | Part::DriverLine) => SPACE_HOST,
        (MODE_TYPE2, _) => SPACE_DEVICE,
        _ => SPACE_HOST,
    }
}

/// A config the device took: sizes as checked types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The mode, one the device supports (never [`MODE_OFF`]).
    pub mode: u32,
    /// Queue pairs, 1 up to what the device has.
    pub queues: u32,
    /// Entries of every TX ring.
    pub tx_size: RingSize,
    /// Entries of every RX ring.
    pub rx_size: RingSize,
    /// Entries between head stores, 1 up to the smaller ring.
    pub batch: u32,
    /// TX entries carry inline ready tags ([`FLAG_TX_INLINE`]).
    pub inline: bool,
}

/// Checks a config read from device memory against what the device has
/// (`queues_max`, supported `modes`, `spaces`): every value in range,
/// every part inside its space, aligned, and in the space the mode puts it
/// in. Queues past `queues` are not looked at.
pub fn check_config(
    c: &DriverConfig,
    queues_max: u32,
    modes: u32,
    spaces: &Spaces,
) -> Result<Checked, ConfigError> {
    if c.mode == MODE_OFF || modes & mode_bit(c.mode) == 0 {
        return Err(ConfigError::Mode);
    }
    if c.queues == 0 || c.queues > queues_max.min(QUEUES_MAX) {
        return Err(ConfigError::Queues);
    }
    let tx_size = RingSize::new(c.tx_size).ok_or(ConfigError::RingSize)?;
    let rx_size = RingSize::new(c.rx_size).ok_or(ConfigError::RingSize)?;
    if c.batch == 0 || c.batch > tx_size.get().min(rx_size.get()) {
        return Err(ConfigError::Batch);
    }
    if c.flags & !FLAGS_KNOWN != 0 || c._reserved.iter().any(|&r| r != 0) {
        return Err(ConfigError::Flags);
    }
    let n = usize::try_from(c.queues).map_err(|_| ConfigError::Queues)?;
    for q in c.queue.iter().take(n) {
        check_queue(q, c.mode, tx_size, rx_size, spaces)?;
    }
    Ok(Checked {
        mode: c.mode,
        queues: c.queues,
        tx_size,
        rx_size,
        batch: c.batch,
        inline: c.flags & FLAG_TX_INLINE != 0,
    })
}

fn ring_bytes(size: RingSize, entry: usize) -> u64 {
    // At most 4096 entries of 16 bytes: no overflow.
    u64::from(size.get()).saturating_mul(entry as u64)
}

fn check_queue(
    q: &QueueConfig,
    mode: u32,
    tx: RingSize,
    rx: RingSize,
    spaces: &Spaces,
) -> Result<(), ConfigError> {
    let line = LINE_BYTES as u64;
    let parts = [
        (Part::TxRing, &q.tx_ring, ring_bytes(tx, DESC_BYTES), line),
        (Part::RxRing, &q.rx_ring, ring_bytes(rx, DESC_BYTES), line),
        (
            Part::RxDone,
            &q.rx_done,
            ring_bytes(rx, COMPLETION_BYTES),
            line,
        ),
        (Part::DriverLine, &q.driver_line, line, line),
        (Part::DeviceLine, &q.device_line, line, line),
        (Part::TxArea, &q.tx_area, u64::from(q.tx_area_len), line),
        (Part::RxArea, &q.rx_area, u64::from(q.rx_area_len), line),
    ];
    for (part, loc, len, align) in parts {
        let placed = loc.space == space_of(mode, part) && loc._pad == 0;
        if !placed || len == 0 || !spaces.fits(loc, len, align) {
            return Err(ConfigError::Placement);
        }
    }
    if q._pad != 0 {
        return Err(ConfigError::Flags);
    }
    Ok(())
}
