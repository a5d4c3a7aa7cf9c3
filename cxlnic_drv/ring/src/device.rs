//! The device's memory (ivshmem BAR2, the NIC's Type-2 HDM), version 1:
//! what the device publishes, how the driver configures it, and the
//! device's counters. Defined once, here; `Documentation/cxlfabric/
//! cxlnic.rst` describes it.
//!
//! ```text
//! 0x0000  DeviceHeader    device writes: signature, version, limits, MAC,
//!                         link, heartbeat, the config it took
//! 0x1000  DriverConfig    driver writes: mode, queues, ring sizes, where
//!                         each ring, line and buffer area lives; `gen` last
//! 0x2000  device counters device writes: per queue, what the protocol cost
//! 0x10000 data            device memory the driver places rings and
//!                         buffers in (type2), up to the BAR's end
//! ```
//!
//! Configuration: the driver writes `DriverConfig` with a new `gen` last
//! (and rings doorbell vector [`VECTOR_CONFIG`]); the device checks it
//! ([`check_config`]), takes it or refuses it, and answers with
//! `cfg_ack = gen` and `cfg_status` (0, or a [`ConfigError`] code). Mode
//! [`MODE_OFF`] stops the queues. The device raises vector
//! [`VECTOR_CONFIG`] for the answer and for link changes, and vector
//! `VECTOR_QUEUE0 + q` for queue `q`.

use super::index::RingSize;
use super::layout::{bytes_at, le32, le64, put, COMPLETION_BYTES, DESC_BYTES, LINE_BYTES};

/// Where the header, the config and the counters start in BAR2.
pub const HEADER_OFFSET: u64 = 0;
pub const CONFIG_OFFSET: u64 = 0x1000;
pub const STATS_OFFSET: u64 = 0x2000;
/// Device memory below this is the device's own; the driver places
/// rings and buffers from here to the BAR's end.
pub const DATA_OFFSET: u64 = 0x10000;
/// The most queue pairs a device has.
pub const QUEUES_MAX: u32 = 8;
/// Interrupt and doorbell vectors: the config answer and link changes,
/// then one per queue pair.
pub const VECTOR_CONFIG: u32 = 0;
pub const VECTOR_QUEUE0: u32 = 1;
/// Vectors a device needs.
pub const VECTORS: u32 = VECTOR_QUEUE0 + QUEUES_MAX;
/// The device bumps its heartbeat at least this often while it runs; a
/// driver that sees it stand still for [`HEARTBEAT_TIMEOUT_MS`] takes the
/// device as gone (carrier off) until it beats again.
pub const HEARTBEAT_MS: u32 = 10;
pub const HEARTBEAT_TIMEOUT_MS: u32 = 500;

/// Modes (`DriverConfig::mode`).
pub const MODE_OFF: u32 = 0;
/// Rings and buffers in host memory, polled coherently (CXL.cache).
pub const MODE_TYPE1: u32 = 1;
/// RX ring, completions, device line and both buffer areas in device
/// memory; TX ring and driver line in host memory (the paper's
/// latency-optimal layout).
pub const MODE_TYPE2: u32 = 2;
/// As type1, but the device waits for an MMIO doorbell per batch instead
/// of polling (a PCIe NIC).
pub const MODE_PCIE: u32 = 3;

/// `DeviceHeader::modes` bit of `mode`.
pub const fn mode_bit(mode: u32) -> u32 {
    if mode < 32 {
        1 << mode
    } else {
        0
    }
}

/// `DriverConfig::flags`: TX entries carry inline ready tags, and the
/// device polls the next entry's tag instead of the tail.
pub const FLAG_TX_INLINE: u32 = 1 << 0;
/// Flags this version knows.
pub const FLAGS_KNOWN: u32 = FLAG_TX_INLINE;

/// `DeviceHeader::link`.
pub const LINK_UP: u32 = 1;

/// Address spaces of a [`Loc`].
pub const SPACE_HOST: u32 = 0;
pub const SPACE_DEVICE: u32 = 1;

/// Bytes of each part in BAR2.
pub const HEADER_BYTES: usize = 128;
pub const LOC_BYTES: usize = 16;
pub const QUEUE_CONFIG_BYTES: usize = 128;
pub const CONFIG_HEAD_BYTES: usize = 64;
pub const CONFIG_BYTES: usize = CONFIG_HEAD_BYTES + QUEUE_CONFIG_BYTES * QUEUES_MAX as usize;
pub const QUEUE_STATS_BYTES: usize = 128;

/// What the device publishes at [`HEADER_OFFSET`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceHeader {
    pub signature: [u8; 8],
    pub version: u32,
    /// Queue pairs it has (at most [`QUEUES_MAX`]).
    pub queues_max: u32,
    pub mac: [u8; 8],
    /// Size of BAR2.
    pub bar_bytes: u64,
    /// Where the driver's part of device memory starts.
    pub data_offset: u64,
    /// Bytes of host memory the device reaches (0: none, so only type2).
    pub host_bytes: u64,
    /// Modes it supports (`mode_bit`).
    pub modes: u32,
    /// The ivshmem peer to ring for a doorbell.
    pub doorbell_peer: u32,
    pub link: u32,
    pub heartbeat: u32,
    /// The config generation it last answered, and its answer.
    pub cfg_ack: u32,
    pub cfg_status: u32,
    /// Link speed for ethtool, Mb/s.
    pub speed_mbps: u32,
    pub _reserved: [u32; 13],
}

/// Where a ring, line or buffer area lives.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loc {
    /// [`SPACE_HOST`] (a DMA address) or [`SPACE_DEVICE`] (a BAR2 offset).
    pub space: u32,
    pub _pad: u32,
    pub addr: u64,
}

/// One queue pair's placement.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueConfig {
    pub tx_ring: Loc,
    pub rx_ring: Loc,
    pub rx_done: Loc,
    pub driver_line: Loc,
    pub device_line: Loc,
    pub tx_area: Loc,
    pub rx_area: Loc,
    pub tx_area_len: u32,
    pub rx_area_len: u32,
    pub _pad: u64,
}

/// What the driver writes at [`CONFIG_OFFSET`] (`gen` last).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverConfig {
    pub gen: u32,
    pub mode: u32,
    pub queues: u32,
    pub tx_size: u32,
    pub rx_size: u32,
    /// The device stores its heads at least every `batch` entries.
    pub batch: u32,
    pub flags: u32,
    pub _reserved: [u32; 9],
    pub queue: [QueueConfig; QUEUES_MAX as usize],
}

/// A queue pair's counters at `STATS_OFFSET + q * QUEUE_STATS_BYTES`: the
/// coherent transactions the protocol causes (the paper's Fig. 6/10).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Polls of the TX tail or next tag that found nothing.
    pub tx_empty_polls: u64,
    /// TX descriptors read, frames sent, bytes sent.
    pub tx_desc_reads: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// TX descriptors refused (tag, length, buffer).
    pub tx_faults: u64,
    /// Polls of the RX tail that found no posted buffer.
    pub rx_empty_polls: u64,
    pub rx_desc_reads: u64,
    pub rx_frames: u64,
    pub rx_bytes: u64,
    /// RX descriptors refused, and frames dropped for want of a buffer.
    pub rx_faults: u64,
    pub rx_no_buffer: u64,
    /// Completions and heads written, interrupts raised, doorbells taken.
    pub completions: u64,
    pub head_writes: u64,
    pub interrupts: u64,
    pub doorbells: u64,
    pub _reserved: u64,
}

/// The names of [`QueueStats`]' counters, in order (`ethtool -S`).
pub const QUEUE_STATS_NAMES: [&str; 15] = [
    "tx_empty_polls",
    "tx_desc_reads",
    "tx_frames",
    "tx_bytes",
    "tx_faults",
    "rx_empty_polls",
    "rx_desc_reads",
    "rx_frames",
    "rx_bytes",
    "rx_faults",
    "rx_no_buffer",
    "completions",
    "head_writes",
    "interrupts",
    "doorbells",
];

const _: () = assert!(core::mem::size_of::<DeviceHeader>() == HEADER_BYTES);
const _: () = assert!(core::mem::size_of::<Loc>() == LOC_BYTES);
const _: () = assert!(core::mem::size_of::<QueueConfig>() == QUEUE_CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<DriverConfig>() == CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<QueueStats>() == QUEUE_STATS_BYTES);
const _: () = assert!(CONFIG_OFFSET >= HEADER_OFFSET + HEADER_BYTES as u64);
const _: () = assert!(STATS_OFFSET >= CONFIG_OFFSET + CONFIG_BYTES as u64);
const _: () = assert!(DATA_OFFSET >= STATS_OFFSET + QUEUE_STATS_BYTES as u64 * QUEUES_MAX as u64);
const _: () = assert!(QUEUE_STATS_NAMES.len() * 8 < QUEUE_STATS_BYTES);

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
    pub const fn code(self) -> u32 {
        self as u32
    }
}

/// The memory a device reaches: bytes of host memory (`DeviceHeader::
/// host_bytes`) and of BAR2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spaces {
    pub host_bytes: u64,
    pub bar_bytes: u64,
}

impl Spaces {
    /// Whether `len` bytes at `loc` lie in its space, aligned to `align`
    /// (in BAR2: in the driver's part, past the device's own pages).
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

/// The parts of a queue pair, in [`QueueConfig`]'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    TxRing,
    RxRing,
    RxDone,
    DriverLine,
    DeviceLine,
    TxArea,
    RxArea,
}

/// A config the device took: sizes as checked types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub mode: u32,
    pub queues: u32,
    pub tx_size: RingSize,
    pub rx_size: RingSize,
    pub batch: u32,
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

/// Offsets of `DeviceHeader`'s fields the two sides access one at a time
/// (the device updates them while the driver runs).
pub mod header {
    pub const LINK: usize = 56;
    pub const HEARTBEAT: usize = 60;
    pub const CFG_ACK: usize = 64;
    pub const CFG_STATUS: usize = 68;
}

/// Offset of `DriverConfig::gen`, which the driver stores last.
pub const CONFIG_GEN: usize = 0;

const _: () = assert!(core::mem::offset_of!(DeviceHeader, link) == header::LINK);
const _: () = assert!(core::mem::offset_of!(DeviceHeader, heartbeat) == header::HEARTBEAT);
const _: () = assert!(core::mem::offset_of!(DeviceHeader, cfg_ack) == header::CFG_ACK);
const _: () = assert!(core::mem::offset_of!(DeviceHeader, cfg_status) == header::CFG_STATUS);
const _: () = assert!(core::mem::offset_of!(DriverConfig, gen) == CONFIG_GEN);

impl DeviceHeader {
    /// Whether this is a CXL-NIC whose layout this crate speaks (what a
    /// driver checks before it binds).
    pub fn supported(&self) -> bool {
        self.signature == super::layout::SIGNATURE && self.version == super::layout::VERSION
    }

    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        put(&mut b, 0, &self.signature);
        put(&mut b, 8, &self.version.to_le_bytes());
        put(&mut b, 12, &self.queues_max.to_le_bytes());
        put(&mut b, 16, &self.mac);
        put(&mut b, 24, &self.bar_bytes.to_le_bytes());
        put(&mut b, 32, &self.data_offset.to_le_bytes());
        put(&mut b, 40, &self.host_bytes.to_le_bytes());
        put(&mut b, 48, &self.modes.to_le_bytes());
        put(&mut b, 52, &self.doorbell_peer.to_le_bytes());
        put(&mut b, header::LINK, &self.link.to_le_bytes());
        put(&mut b, header::HEARTBEAT, &self.heartbeat.to_le_bytes());
        put(&mut b, header::CFG_ACK, &self.cfg_ack.to_le_bytes());
        put(&mut b, header::CFG_STATUS, &self.cfg_status.to_le_bytes());
        put(&mut b, 72, &self.speed_mbps.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; HEADER_BYTES]) -> DeviceHeader {
        DeviceHeader {
            signature: bytes_at(b, 0),
            version: le32(b, 8),
            queues_max: le32(b, 12),
            mac: bytes_at(b, 16),
            bar_bytes: le64(b, 24),
            data_offset: le64(b, 32),
            host_bytes: le64(b, 40),
            modes: le32(b, 48),
            doorbell_peer: le32(b, 52),
            link: le32(b, header::LINK),
            heartbeat: le32(b, header::HEARTBEAT),
            cfg_ack: le32(b, header::CFG_ACK),
            cfg_status: le32(b, header::CFG_STATUS),
            speed_mbps: le32(b, 72),
            _reserved: [0; 13],
        }
    }
}

impl Loc {
    fn encode_into(&self, b: &mut [u8], at: usize) {
        put(b, at, &self.space.to_le_bytes());
        put(b, at.saturating_add(4), &self._pad.to_le_bytes());
        put(b, at.saturating_add(8), &self.addr.to_le_bytes());
    }

    fn decode_from(b: &[u8], at: usize) -> Loc {
        Loc {
            space: le32(b, at),
            _pad: le32(b, at.saturating_add(4)),
            addr: le64(b, at.saturating_add(8)),
        }
    }
}

impl QueueConfig {
    fn locs(&self) -> [&Loc; 7] {
        [
            &self.tx_ring,
            &self.rx_ring,
            &self.rx_done,
            &self.driver_line,
            &self.device_line,
            &self.tx_area,
            &self.rx_area,
        ]
    }

    fn encode_into(&self, b: &mut [u8], at: usize) {
        for (i, loc) in self.locs().into_iter().enumerate() {
            loc.encode_into(b, at.saturating_add(i.saturating_mul(LOC_BYTES)));
        }
        put(b, at.saturating_add(112), &self.tx_area_len.to_le_bytes());
        put(b, at.saturating_add(116), &self.rx_area_len.to_le_bytes());
        put(b, at.saturating_add(120), &self._pad.to_le_bytes());
    }

    fn decode_from(b: &[u8], at: usize) -> QueueConfig {
        let loc = |i: usize| Loc::decode_from(b, at.saturating_add(i.saturating_mul(LOC_BYTES)));
        QueueConfig {
            tx_ring: loc(0),
            rx_ring: loc(1),
            rx_done: loc(2),
            driver_line: loc(3),
            device_line: loc(4),
            tx_area: loc(5),
            rx_area: loc(6),
            tx_area_len: le32(b, at.saturating_add(112)),
            rx_area_len: le32(b, at.saturating_add(116)),
            _pad: le64(b, at.saturating_add(120)),
        }
    }
}

const _: () = assert!(core::mem::offset_of!(QueueConfig, tx_area_len) == 112);
const _: () = assert!(core::mem::offset_of!(QueueConfig, _pad) == 120);

impl DriverConfig {
    pub fn encode(&self) -> [u8; CONFIG_BYTES] {
        let mut b = [0u8; CONFIG_BYTES];
        let head = [
            self.gen,
            self.mode,
            self.queues,
            self.tx_size,
            self.rx_size,
            self.batch,
            self.flags,
        ];
        for (i, v) in head.iter().enumerate() {
            put(&mut b, i.saturating_mul(4), &v.to_le_bytes());
        }
        for (i, v) in self._reserved.iter().enumerate() {
            put(
                &mut b,
                28usize.saturating_add(i.saturating_mul(4)),
                &v.to_le_bytes(),
            );
        }
        for (i, q) in self.queue.iter().enumerate() {
            let at = CONFIG_HEAD_BYTES.saturating_add(i.saturating_mul(QUEUE_CONFIG_BYTES));
            q.encode_into(&mut b, at);
        }
        b
    }

    pub fn decode(b: &[u8; CONFIG_BYTES]) -> DriverConfig {
        let mut c = DriverConfig {
            gen: le32(b, 0),
            mode: le32(b, 4),
            queues: le32(b, 8),
            tx_size: le32(b, 12),
            rx_size: le32(b, 16),
            batch: le32(b, 20),
            flags: le32(b, 24),
            ..DriverConfig::default()
        };
        for (i, r) in c._reserved.iter_mut().enumerate() {
            *r = le32(b, 28usize.saturating_add(i.saturating_mul(4)));
        }
        for (i, q) in c.queue.iter_mut().enumerate() {
            let at = CONFIG_HEAD_BYTES.saturating_add(i.saturating_mul(QUEUE_CONFIG_BYTES));
            *q = QueueConfig::decode_from(b, at);
        }
        c
    }
}

impl QueueStats {
    /// The counters in [`QUEUE_STATS_NAMES`] order.
    pub fn values(&self) -> [u64; 15] {
        [
            self.tx_empty_polls,
            self.tx_desc_reads,
            self.tx_frames,
            self.tx_bytes,
            self.tx_faults,
            self.rx_empty_polls,
            self.rx_desc_reads,
            self.rx_frames,
            self.rx_bytes,
            self.rx_faults,
            self.rx_no_buffer,
            self.completions,
            self.head_writes,
            self.interrupts,
            self.doorbells,
        ]
    }

    pub fn encode(&self) -> [u8; QUEUE_STATS_BYTES] {
        let mut b = [0u8; QUEUE_STATS_BYTES];
        for (i, v) in self.values().iter().enumerate() {
            put(&mut b, i.saturating_mul(8), &v.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8; QUEUE_STATS_BYTES]) -> [u64; 15] {
        core::array::from_fn(|i| le64(b, i.saturating_mul(8)))
    }

    /// The counters by name (`decode` gives them in name order).
    pub fn from_bytes(b: &[u8; QUEUE_STATS_BYTES]) -> QueueStats {
        let v = Self::decode(b);
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        QueueStats {
            tx_empty_polls: at(0),
            tx_desc_reads: at(1),
            tx_frames: at(2),
            tx_bytes: at(3),
            tx_faults: at(4),
            rx_empty_polls: at(5),
            rx_desc_reads: at(6),
            rx_frames: at(7),
            rx_bytes: at(8),
            rx_faults: at(9),
            rx_no_buffer: at(10),
            completions: at(11),
            head_writes: at(12),
            interrupts: at(13),
            doorbells: at(14),
            _reserved: 0,
        }
    }
}
