//! The records in BAR2, field by field (little-endian on the wire; see
//! `encoding.rs`), and the parts of a queue pair they place.

use super::map::{
    header, CONFIG_BYTES, CONFIG_GEN, HEADER_BYTES, LOC_BYTES, QUEUES_MAX, QUEUE_CONFIG_BYTES,
    QUEUE_STATS_BYTES,
};

/// What the device publishes at [`HEADER_OFFSET`](crate::device::HEADER_OFFSET).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceHeader {
    /// [`SIGNATURE`](crate::layout::SIGNATURE).
    pub signature: [u8; 8],
    /// The layout version it speaks ([`VERSION`](crate::layout::VERSION)).
    pub version: u32,
    /// Queue pairs it has (at most [`QUEUES_MAX`]).
    pub queues_max: u32,
    /// Its MAC address in the first 6 bytes, then zeros.
    pub mac: [u8; 8],
    /// Size of BAR2, bytes.
    pub bar_bytes: u64,
    /// Where the driver's part of device memory starts, a BAR2 offset.
    pub data_offset: u64,
    /// Bytes of host memory the device reaches (0: none, so only type2).
    pub host_bytes: u64,
    /// Modes it supports (`mode_bit`).
    pub modes: u32,
    /// The ivshmem peer to ring for a doorbell.
    pub doorbell_peer: u32,
    /// [`LINK_UP`](crate::device::LINK_UP), or 0 while the link is down.
    pub link: u32,
    /// A counter it bumps at least every
    /// [`HEARTBEAT_MS`](crate::device::HEARTBEAT_MS) while it runs (wrapping).
    pub heartbeat: u32,
    /// The config generation it last answered.
    pub cfg_ack: u32,
    /// Its answer to `cfg_ack`: 0 (taken) or a
    /// [`ConfigError`](crate::device::ConfigError) code.
    pub cfg_status: u32,
    /// Link speed for ethtool, Mb/s.
    pub speed_mbps: u32,
    /// Where the key-value offload's area starts, a BAR2 offset (0: the
    /// device has no offload). The driver places nothing from here on.
    pub kvs_offset: u32,
    /// Bytes of that area ([`kvs::AREA_BYTES`](crate::kvs::AREA_BYTES)).
    pub kvs_bytes: u32,
    /// Zero.
    pub _reserved: [u32; 11],
}

/// Where a ring, line or buffer area lives.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loc {
    /// [`SPACE_HOST`](crate::device::SPACE_HOST) or
    /// [`SPACE_DEVICE`](crate::device::SPACE_DEVICE).
    pub space: u32,
    /// Zero.
    pub _pad: u32,
    /// A DMA address (host memory) or a BAR2 offset (device memory).
    pub addr: u64,
}

/// One queue pair's placement: where each of its [`Part`]s lives.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueConfig {
    /// The TX descriptor ring.
    pub tx_ring: Loc,
    /// The RX descriptor ring.
    pub rx_ring: Loc,
    /// The RX completion ring.
    pub rx_done: Loc,
    /// The driver's control line.
    pub driver_line: Loc,
    /// The device's control line.
    pub device_line: Loc,
    /// The TX buffer area.
    pub tx_area: Loc,
    /// The RX buffer area.
    pub rx_area: Loc,
    /// Bytes of the TX buffer area.
    pub tx_area_len: u32,
    /// Bytes of the RX buffer area.
    pub rx_area_len: u32,
    /// Zero.
    pub _pad: u64,
}

/// What the driver writes at [`CONFIG_OFFSET`](crate::device::CONFIG_OFFSET)
/// (`gen` last).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverConfig {
    /// The config's generation: a new one for each config, stored last.
    pub gen: u32,
    /// [`MODE_OFF`](crate::device::MODE_OFF), or the mode the queues run in.
    pub mode: u32,
    /// Queue pairs to run, 1 up to the device's `queues_max`.
    pub queues: u32,
    /// Entries of every TX ring.
    pub tx_size: u32,
    /// Entries of every RX ring (and its completion ring).
    pub rx_size: u32,
    /// The device stores its heads at least every `batch` entries.
    pub batch: u32,
    /// [`FLAG_TX_INLINE`](crate::device::FLAG_TX_INLINE), or 0.
    pub flags: u32,
    /// Zero.
    pub _reserved: [u32; 9],
    /// Queue pair `q`'s placement; those past `queues` are not looked at.
    pub queue: [QueueConfig; QUEUES_MAX as usize],
}

/// A queue pair's counters at `STATS_OFFSET + q * QUEUE_STATS_BYTES`: the
/// coherent transactions the protocol causes (the paper's Fig. 6/10).
/// Counted from the queue pair's start (each config the device takes
/// starts its queue pairs afresh).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Polls of the TX tail or next tag that found nothing.
    pub tx_empty_polls: u64,
    /// TX descriptors read.
    pub tx_desc_reads: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// TX descriptors refused (tag, length, buffer).
    pub tx_faults: u64,
    /// Polls of the RX tail that found no posted buffer.
    pub rx_empty_polls: u64,
    /// RX descriptors read.
    pub rx_desc_reads: u64,
    /// Frames received into the driver's buffers.
    pub rx_frames: u64,
    /// Bytes received into the driver's buffers.
    pub rx_bytes: u64,
    /// RX descriptors refused.
    pub rx_faults: u64,
    /// Frames dropped for want of a posted buffer.
    pub rx_no_buffer: u64,
    /// RX completions written.
    pub completions: u64,
    /// Heads stored into the device line.
    pub head_writes: u64,
    /// Interrupts raised.
    pub interrupts: u64,
    /// Doorbells taken.
    pub doorbells: u64,
    /// Zero.
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

/// The parts of a queue pair, in [`QueueConfig`]'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The TX descriptor ring (driver writes).
    TxRing,
    /// The RX descriptor ring (driver writes).
    RxRing,
    /// The RX completion ring (device writes).
    RxDone,
    /// The driver's control line: its tails, the interrupts it wants.
    DriverLine,
    /// The device's control line: its heads.
    DeviceLine,
    /// The TX buffer area: one slot per TX entry.
    TxArea,
    /// The RX buffer area: one slot per RX entry.
    RxArea,
}

const _: () = assert!(core::mem::size_of::<DeviceHeader>() == HEADER_BYTES);
const _: () = assert!(core::mem::size_of::<Loc>() == LOC_BYTES);
const _: () = assert!(core::mem::size_of::<QueueConfig>() == QUEUE_CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<DriverConfig>() == CONFIG_BYTES);
const _: () = assert!(core::mem::size_of::<QueueStats>() == QUEUE_STATS_BYTES);
const _: () = assert!(QUEUE_STATS_NAMES.len() * 8 < QUEUE_STATS_BYTES);

const _: () = assert!(core::mem::offset_of!(DeviceHeader, link) == header::LINK);
const _: () = assert!(core::mem::offset_of!(DeviceHeader, heartbeat) == header::HEARTBEAT);
const _: () = assert!(core::mem::offset_of!(DeviceHeader, cfg_ack) == header::CFG_ACK);
const _: () = assert!(core::mem::offset_of!(DeviceHeader, cfg_status) == header::CFG_STATUS);
const _: () = assert!(core::mem::offset_of!(DriverConfig, gen) == CONFIG_GEN);
const _: () = assert!(core::mem::offset_of!(QueueConfig, tx_area_len) == 112);
const _: () = assert!(core::mem::offset_of!(QueueConfig, _pad) == 120);
