// SPDX-License-Identifier: GPL-2.0

//! Ethernet network devices. Upstream has no `net_device` abstraction
//! (6.12-6.17; the 2023 RFC series proposed `kernel::net::Device`, a
//! `Registration` and a `DeviceOperations` trait, which this follows):
//! a [`NetDevice`] implementation is the driver's per-interface object,
//! shared ([`Arc`]) with the callbacks; a [`Registration`] allocates and
//! registers the interface and unregisters and frees it on drop, after
//! which no callback runs.
//!
//! The `net_device_ops` and `ethtool_ops` tables are built here, per
//! [`NetDevice`] type, with their trampolines. `struct net_device` stays
//! opaque (6.12's bindings declare it so): its fields and static inlines
//! are reached through one-line helpers (`helpers/netdev.c`).
//!
//! Files by concern: `device` (the interface a callback gets, packets),
//! `registration` (registering, RTNL), `frames` (counters, test frames),
//! `ops` (the `net_device_ops` table and its trampolines), `ethtool` (the
//! `ethtool_ops` table's callbacks).

use crate::bindings;
use kernel::prelude::*;
use kernel::sync::Arc;

mod device;
mod ethtool;
mod frames;
mod ops;
mod registration;

pub use device::{xmit_more, Netdev, NetdevRef, SkBuff};
pub use registration::{Placement, Registration, Rtnl, RtnlGuard};

/// The interface counters `ip -s link` shows.
#[derive(Clone, Copy, Default, Debug)]
pub struct Stats {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Received packets dropped.
    pub rx_dropped: u64,
    /// Packets to send dropped.
    pub tx_dropped: u64,
}

/// What a driver's interface does when the stack calls it.
pub trait NetDevice: Send + Sync + Sized + 'static {
    /// `ip link set up` (under RTNL).
    fn open(this: &Arc<Self>, dev: &Netdev<'_>) -> Result;
    /// `ip link set down` (under RTNL; transmits have stopped).
    fn stop(this: &Arc<Self>, dev: &Netdev<'_>) -> Result;
    /// Sends (or drops, counting it) `skb` on TX queue `queue`; `Err`
    /// gives it back to the stack to retry (the queue is full).
    fn start_xmit(
        this: &Arc<Self>,
        dev: &Netdev<'_>,
        skb: SkBuff,
        queue: u16,
    ) -> core::result::Result<(), SkBuff>;
    /// Whether the interface picks each packet's TX queue itself
    /// ([`NetDevice::select_queue`]); else the stack hashes flows.
    const HAS_SELECT_QUEUE: bool = false;
    /// The TX queue for `skb` (`ndo_select_queue`, transmit context), of
    /// those the stack uses (it caps a larger one). The packet stays the
    /// stack's.
    fn select_queue(_this: &Arc<Self>, _dev: &Netdev<'_>, _skb: &SkBuff) -> u16 {
        0
    }
    /// The counters.
    fn stats(this: &Arc<Self>, stats: &mut Stats);
    /// A new MTU (in the range given at registration), while down or up.
    fn change_mtu(this: &Arc<Self>, dev: &Netdev<'_>, mtu: u32) -> Result;
    /// Fills `ethtool -i` beyond the driver and bus names.
    fn drvinfo(_this: &Arc<Self>, _info: &mut bindings::ethtool_drvinfo) {}
    /// The settings `ethtool -g`, `-l`, `-c` and `--show-priv-flags`
    /// show (`EOPNOTSUPP`: none).
    fn params(_this: &Arc<Self>) -> Result<Params> {
        Err(crate::error::eopnotsupp())
    }
    /// Takes `p`, of which the part `what` changed (under RTNL, up or
    /// down).
    fn set_params(_this: &Arc<Self>, _dev: &Netdev<'_>, _p: &Params, _what: Change) -> Result {
        Err(crate::error::eopnotsupp())
    }
    /// How many strings `set` has (`ethtool -S` counters, private flags).
    fn string_count(_this: &Arc<Self>, _set: StringSet) -> usize {
        0
    }
    /// Writes `set`'s strings, NUL-padded, one per element of `out`.
    fn strings(_this: &Arc<Self>, _set: StringSet, _out: &mut [[u8; STRING_LEN]]) {}
    /// The `ethtool -S` counters, in the order of their strings.
    fn stat_values(_this: &Arc<Self>, _out: &mut [u64]) {}
    /// Whether the interface takes [`NetDevice::tx_timeout`]: only then
    /// does the stack arm its TX watchdog.
    const HAS_TX_TIMEOUT: bool = false;
    /// The stack's TX watchdog: TX queue `queue` has been stopped, with
    /// carrier, longer than the timeout ([`Placement::watchdog_ms`]).
    /// Called in softirq context with every TX queue frozen: record it
    /// and act elsewhere.
    fn tx_timeout(_this: &Arc<Self>, _dev: &Netdev<'_>, _queue: u32) {}
}

/// What ethtool reads and changes (see [`NetDevice::params`]): ring
/// sizes (`-g`/`-G`), queue pairs (`-l`/`-L`), RX coalescing (`-c`/`-C`)
/// and private flags.
#[derive(Clone, Copy, Default, Debug)]
pub struct Params {
    /// RX ring entries.
    pub rx_ring: u32,
    /// TX ring entries.
    pub tx_ring: u32,
    /// Most RX ring entries the device takes.
    pub rx_ring_max: u32,
    /// Most TX ring entries the device takes.
    pub tx_ring_max: u32,
    /// Queue pairs in use.
    pub channels: u32,
    /// Most queue pairs the device has.
    pub channels_max: u32,
    /// RX interrupt coalescing: microseconds.
    pub rx_usecs: u32,
    /// RX interrupt coalescing: frames.
    pub rx_frames: u32,
    /// Private flags, a bit each.
    pub priv_flags: u32,
}

/// The part of [`Params`] an ethtool command changes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Change {
    /// Ring sizes (`ethtool -G`).
    Rings,
    /// Queue pairs (`ethtool -L`).
    Channels,
    /// RX coalescing (`ethtool -C`).
    Coalesce,
    /// Private flags (`ethtool --set-priv-flags`).
    PrivFlags,
}

/// An ethtool string set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum StringSet {
    /// The names of the driver's statistics (`ethtool -S`).
    Stats,
    /// The names of the private flags.
    PrivFlags,
}

/// Bytes of an ethtool string (`ETH_GSTRING_LEN`).
pub const STRING_LEN: usize = bindings::ETH_GSTRING_LEN as usize;

/// Writes `parts` one after another into `out` as an ethtool string,
/// cut at `STRING_LEN - 1` bytes, NUL-padded.
pub fn ethtool_string(out: &mut [u8; STRING_LEN], parts: &[&[u8]]) {
    *out = [0; STRING_LEN];
    let bytes = parts.iter().flat_map(|p| p.iter()).take(STRING_LEN - 1);
    for (o, b) in out.iter_mut().zip(bytes) {
        *o = *b;
    }
}

impl StringSet {
    fn from_raw(set: u32) -> Option<StringSet> {
        match set {
            bindings::ethtool_stringset_ETH_SS_STATS => Some(StringSet::Stats),
            bindings::ethtool_stringset_ETH_SS_PRIV_FLAGS => Some(StringSet::PrivFlags),
            _ => None,
        }
    }
}
