// SPDX-License-Identifier: GPL-2.0

//! The key-value offload (issue #29) on the driver's side: the host
//! table in host memory, the config exchange, commands and the log in
//! the device's KVS area, the operations `/dev/cxlnic` and ethtool reach,
//! and a periodic drain. The protocol is the ring core's (`ring::kvs`).
//!
//! One file per concern; each uses only the files listed before it:
//! - `area.rs`: the KVS area in BAR2 (config, lines, rings, counters);
//! - `host.rs`: the host table's memory and its seqlock writes;
//! - `state.rs`: the store's state, under one mutex, and the config
//!   exchange;
//! - `log.rs`: applying the device's log, and commands;
//! - `ops.rs`: put, get and del, the periodic look, removal;
//! - `work.rs`: the periodic drain and reset detection.

mod area;
mod host;
mod log;
mod ops;
mod state;
mod work;

pub(crate) use area::Area;
pub(crate) use state::{Kvs, KvsSettings, DEFAULT_CACHE_BUCKETS};
pub(crate) use work::KvsWork;
