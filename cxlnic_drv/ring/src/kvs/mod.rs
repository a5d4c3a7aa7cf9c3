//! The near-packet key-value store (CXL-NIC §5.4, Type-2): layout
//! version 1 of its part of device memory, its UDP request protocol, and
//! the protocol of both sides, the device's ([`Engine`]) and the
//! driver's ([`HostTable`]). Defined once, here;
//! `Documentation/cxlfabric/cxlnic.rst` ("Key-value offload") describes it.
//!
//! Four tables of the same 128-byte [`Record`], each with one writer:
//!
//! ```text
//! where            writer  reader  what
//! host table       driver  device  every pair: buckets of WAYS slots, two
//!   (host memory)                  candidate buckets per key; a seqlock
//!                                  version per slot
//! cache (BAR2)     device  device  the hot pairs: one bucket of WAYS per
//!                                  key, LRU within it (device bias)
//! command ring     driver  device  the host's puts and deletes, in order
//!   (BAR2)
//! log ring (BAR2)  device  driver  every write the device made, in order:
//!                                  the driver applies it to the host table
//! ```
//!
//! The device serializes every write (the host's, through the command
//! ring, and the network's PUTs) and logs each at once (write-through),
//! so a pair's value is the cache's copy if it has one, else the newest
//! record for its key the driver has not applied yet, else the host
//! table's. An evicted pair needs no copy back: its value is already in
//! the log or the host table.
//!
//! One file per concern, each using only those listed before it:
//! - `map.rs`: offsets, sizes, limits, opcodes and statuses;
//! - `record.rs`: the record, the config, the control lines, counters;
//! - `hash.rs`: the keyed hash and the buckets it picks;
//! - `seq.rs`: the seqlock discipline of a slot;
//! - `wire.rs`: the UDP request and its answer, frame by frame;
//! - `table.rs`: the driver's host table;
//! - `engine.rs`: the device's side;
//! - `sim.rs` (feature `sim`, host only): both sides' memory in vectors,
//!   for tests and tools.

mod engine;
mod hash;
mod map;
mod record;
mod seq;
#[cfg(feature = "sim")]
pub mod sim;
mod table;
mod wire;

pub use engine::{Answer, DeviceMemory, Engine};
pub use hash::{buckets, key_hash, Buckets};
pub use map::*;
pub use record::{
    check_config, ConfigError, DeviceLine, DriverLine, KvsConfig, KvsStats, Op, Record,
    KVS_STATS_NAMES,
};
pub use seq::{read_stable, write_versions, Torn};
pub use table::{Applied, HostSlots, HostTable, TableError};
pub use wire::{answer_frame, parse, Parsed, Reject, Reply, Request, ANSWER_MAX};
