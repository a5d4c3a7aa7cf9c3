//! Where the key-value store's parts are and the values their words take.
//! Offsets are from the KVS area's start in BAR2
//! ([`DeviceHeader::kvs_offset`](crate::device::DeviceHeader::kvs_offset)).

/// Bytes of the KVS area a device with the offload reserves at the top of
/// BAR2.
pub const AREA_BYTES: u32 = 4 << 20;
/// The [`KvsConfig`](super::KvsConfig), driver-written, `gen` last.
pub const CONFIG_OFFSET: u32 = 0;
/// The [`DriverLine`](super::DriverLine): command tail, log head.
pub const DRIVER_LINE_OFFSET: u32 = 0x40;
/// The [`DeviceLine`](super::DeviceLine): the answered config, command
/// head, log tail.
pub const DEVICE_LINE_OFFSET: u32 = 0x80;
/// The device's counters ([`KvsStats`](super::KvsStats)).
pub const STATS_OFFSET: u32 = 0x100;
/// The command ring: [`CMD_ENTRIES`] records.
pub const CMD_OFFSET: u32 = 0x1000;
/// The log ring: [`LOG_ENTRIES`] records.
pub const LOG_OFFSET: u32 = 0x4000;
/// The cache: up to [`CACHE_BUCKETS_MAX`] buckets of [`WAYS`] records.
pub const CACHE_OFFSET: u32 = 0x40000;

/// Bytes of a [`Record`](super::Record).
pub const RECORD_BYTES: usize = 128;
/// Bytes of the config, of each control line.
pub const LINE_BYTES: usize = 64;
/// Bytes of the counters.
pub const STATS_BYTES: usize = 256;
/// Entries of the command ring (a power of two).
pub const CMD_ENTRIES: u32 = 64;
/// Entries of the log ring (a power of two).
pub const LOG_ENTRIES: u32 = 1024;
/// Slots per bucket, in the cache and in the host table.
pub const WAYS: u32 = 4;
/// The most cache buckets ([`AREA_BYTES`] holds them).
pub const CACHE_BUCKETS_MAX: u32 = 4096;
/// The most host table buckets (4 MiB of slots: one DMA allocation).
pub const HOST_BUCKETS_MAX: u32 = 8192;

/// The longest key, bytes (keys are 1 to this).
pub const KEY_MAX: usize = 32;
/// The longest value, bytes (values are 0 to this).
pub const VALUE_MAX: usize = 64;

/// Tries of a seqlock read before the device gives up on a slot the
/// driver keeps rewriting (the request is answered [`STATUS_BUSY`]).
pub const READ_TRIES: u32 = 4;

/// Record op: the pair is written (command, log); a used slot (cache,
/// host table).
pub const OP_PUT: u8 = 1;
/// Record op: the pair is deleted (command, log).
pub const OP_DEL: u8 = 2;

/// Request magic, the first two bytes of every message.
pub const MAGIC: [u8; 2] = *b"KV";
/// The protocol version this crate speaks.
pub const PROTO_VERSION: u8 = 1;
/// Request opcode: read a key.
pub const REQ_GET: u8 = 1;
/// Request opcode: write the value of a key the store has.
pub const REQ_PUT: u8 = 2;
/// Bit set in the answer's opcode.
pub const REQ_ANSWER: u8 = 0x80;
/// Bytes of a request's or answer's header.
pub const MSG_HEADER_BYTES: usize = 12;
/// The UDP port the offload serves unless configured otherwise.
pub const DEFAULT_PORT: u16 = 7878;

/// Answer status: done (GET: the value follows).
pub const STATUS_OK: u8 = 0;
/// Answer status: the store has no such key.
pub const STATUS_NOT_FOUND: u8 = 1;
/// Answer status: not now (the log is full, or the host kept rewriting
/// the slot); retry.
pub const STATUS_BUSY: u8 = 2;

const _: () = assert!(CMD_ENTRIES.is_power_of_two() && LOG_ENTRIES.is_power_of_two());
const _: () = assert!(DRIVER_LINE_OFFSET as usize >= CONFIG_OFFSET as usize + LINE_BYTES);
const _: () = assert!(DEVICE_LINE_OFFSET as usize >= DRIVER_LINE_OFFSET as usize + LINE_BYTES);
const _: () = assert!(STATS_OFFSET as usize >= DEVICE_LINE_OFFSET as usize + LINE_BYTES);
const _: () = assert!(CMD_OFFSET as usize >= STATS_OFFSET as usize + STATS_BYTES);
const _: () =
    assert!(LOG_OFFSET as usize >= CMD_OFFSET as usize + CMD_ENTRIES as usize * RECORD_BYTES);
const _: () =
    assert!(CACHE_OFFSET as usize >= LOG_OFFSET as usize + LOG_ENTRIES as usize * RECORD_BYTES);
const _: () = assert!(
    CACHE_OFFSET as usize + (CACHE_BUCKETS_MAX * WAYS) as usize * RECORD_BYTES
        <= AREA_BYTES as usize
);
const _: () = assert!(16 + 16 + KEY_MAX + VALUE_MAX <= RECORD_BYTES);
