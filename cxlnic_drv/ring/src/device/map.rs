//! Where things are in BAR2 and the values its words take: offsets and
//! sizes in bytes, the device's limits, vectors, modes and flags.

/// Where the [`DeviceHeader`](crate::device::DeviceHeader) starts in BAR2, bytes.
pub const HEADER_OFFSET: u64 = 0;
/// Where the [`DriverConfig`](crate::device::DriverConfig) starts in BAR2, bytes.
pub const CONFIG_OFFSET: u64 = 0x1000;
/// Where the device's counters start in BAR2, bytes: queue pair `q`'s
/// [`QueueStats`](crate::device::QueueStats) at `STATS_OFFSET + q *`
/// [`QUEUE_STATS_BYTES`].
pub const STATS_OFFSET: u64 = 0x2000;
/// Device memory below this is the device's own; the driver places
/// rings and buffers from here to the BAR's end.
pub const DATA_OFFSET: u64 = 0x10000;
/// The most queue pairs a device has.
pub const QUEUES_MAX: u32 = 8;
/// Interrupt and doorbell vector of the config answer and link changes.
pub const VECTOR_CONFIG: u32 = 0;
/// Interrupt and doorbell vector of queue pair 0; queue pair `q` has
/// `VECTOR_QUEUE0 + q`.
pub const VECTOR_QUEUE0: u32 = 1;
/// Vectors a device needs.
pub const VECTORS: u32 = VECTOR_QUEUE0 + QUEUES_MAX;
/// The device bumps its heartbeat at least this often while it runs,
/// milliseconds.
pub const HEARTBEAT_MS: u32 = 10;
/// A driver that sees the heartbeat stand still this long, milliseconds,
/// takes the device as gone (carrier off) until it beats again.
pub const HEARTBEAT_TIMEOUT_MS: u32 = 500;

/// Mode (`DriverConfig::mode`) off: the device stops the queues.
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

/// `DeviceHeader::modes` bit of `mode` (0 for a mode past 31).
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

/// `DeviceHeader::link` while the link is up (0: down).
pub const LINK_UP: u32 = 1;

/// [`Loc::space`](crate::device::Loc::space) of host memory: the address is a
/// DMA address.
pub const SPACE_HOST: u32 = 0;
/// [`Loc::space`](crate::device::Loc::space) of device memory: the address is a
/// BAR2 offset.
pub const SPACE_DEVICE: u32 = 1;

/// Bytes of the device header.
pub const HEADER_BYTES: usize = 128;
/// Bytes of a [`Loc`](crate::device::Loc).
pub const LOC_BYTES: usize = 16;
/// Bytes of one queue pair's [`QueueConfig`](crate::device::QueueConfig).
pub const QUEUE_CONFIG_BYTES: usize = 128;
/// Bytes of the driver config before its queue pairs.
pub const CONFIG_HEAD_BYTES: usize = 64;
/// Bytes of the whole driver config.
pub const CONFIG_BYTES: usize = CONFIG_HEAD_BYTES + QUEUE_CONFIG_BYTES * QUEUES_MAX as usize;
/// Bytes of one queue pair's counters.
pub const QUEUE_STATS_BYTES: usize = 128;

const _: () = assert!(CONFIG_OFFSET >= HEADER_OFFSET + HEADER_BYTES as u64);
const _: () = assert!(STATS_OFFSET >= CONFIG_OFFSET + CONFIG_BYTES as u64);
const _: () = assert!(DATA_OFFSET >= STATS_OFFSET + QUEUE_STATS_BYTES as u64 * QUEUES_MAX as u64);

/// Offsets, in bytes, of `DeviceHeader`'s fields the two sides access
/// one at a time (the device updates them while the driver runs).
pub mod header {
    /// `DeviceHeader::link`.
    pub const LINK: usize = 56;
    /// `DeviceHeader::heartbeat`.
    pub const HEARTBEAT: usize = 60;
    /// `DeviceHeader::cfg_ack`.
    pub const CFG_ACK: usize = 64;
    /// `DeviceHeader::cfg_status`.
    pub const CFG_STATUS: usize = 68;
}

/// Offset of `DriverConfig::gen`, which the driver stores last.
pub const CONFIG_GEN: usize = 0;
