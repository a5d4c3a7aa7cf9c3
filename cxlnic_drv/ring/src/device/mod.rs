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
//!
//! One file per concern, each using only the files listed before it:
//! - `map.rs`: offsets, sizes, limits, vectors, modes and flags;
//! - `records.rs`: the records, field by field, and a queue pair's parts;
//! - `encoding.rs`: the records' bytes, both ways;
//! - `check.rs`: the device's check of a config, and each part's space.

mod check;
mod encoding;
mod map;
mod records;

// One namespace for both sides: `device::DriverConfig`, `device::header`.
pub use check::{check_config, space_of, Checked, ConfigError, Spaces};
pub use map::*;
pub use records::{
    DeviceHeader, DriverConfig, Loc, Part, QueueConfig, QueueStats, QUEUE_STATS_NAMES,
};
