// SPDX-License-Identifier: GPL-2.0

//! drack0's counters: `ip -s link` and `ethtool -S`.
//!
//! Copies are counted on both sides, in bytes: `tx_placed_bytes` (the
//! one copy of a by-reference frame into the sender's pool buffer),
//! `tx_by_value_bytes` (into the queue's slot), `rx_header_bytes` (the
//! headers a lent frame's skb gets in its linear part),
//! `rx_fallback_copy_bytes` (a by-reference frame copied because the
//! lend cap was reached or a page was still referenced) and
//! `rx_by_value_bytes` (out of the slot). Copies the stack makes itself
//! (`skb_try_coalesce`, `tcp_collapse`, pulling headers, copying to
//! user space) are not seen here. Then the core's counters of all ends,
//! summed (the source ends' as `tx_*`, the destination ends' as `rx_*`),
//! and per peer its session and lent pages.

use crate::link::Link;
use crate::support::netdev::{ethtool_string, Stats, STRING_LEN};
use core::sync::atomic::{AtomicU64, Ordering};
use drack_core::counters::Counters as CoreCounters;
use drack_core::peer::Session;

/// The module's own counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) tx_frames: AtomicU64,
    pub(crate) tx_bytes: AtomicU64,
    pub(crate) tx_placed_bytes: AtomicU64,
    pub(crate) tx_by_value_bytes: AtomicU64,
    pub(crate) tx_dropped: AtomicU64,
    pub(crate) tx_no_session: AtomicU64,
    /// Frames dropped because the destination's ring or buffers were
    /// full (a broadcast counts each peer missed).
    pub(crate) tx_dropped_full: AtomicU64,
    /// A peer's TX queue stopped for room, and woken again.
    pub(crate) tx_queue_stops: AtomicU64,
    pub(crate) tx_queue_wakes: AtomicU64,
    /// Frames given back to the stack, their peer's queue stopped (a
    /// frame for every peer took the room first).
    pub(crate) tx_busy: AtomicU64,
    pub(crate) rx_frames: AtomicU64,
    pub(crate) rx_bytes: AtomicU64,
    pub(crate) rx_lent_frames: AtomicU64,
    pub(crate) rx_header_bytes: AtomicU64,
    pub(crate) rx_fallback_copy_frames: AtomicU64,
    pub(crate) rx_fallback_copy_bytes: AtomicU64,
    pub(crate) rx_by_value_frames: AtomicU64,
    pub(crate) rx_by_value_bytes: AtomicU64,
    pub(crate) rx_page_busy: AtomicU64,
    /// Frames whose entry carried checksum hints, ignored.
    pub(crate) rx_csum_hint_ignored: AtomicU64,
    pub(crate) rx_dropped: AtomicU64,
    /// A peer's vNIC frames for a NIC this host does not lend (in that
    /// slot): dropped (also in `rx_dropped`).
    pub(crate) rx_unlent_nic: AtomicU64,
    /// Frames from a peer's lent NIC for which this host has no vNIC up:
    /// dropped (also in `rx_dropped`).
    pub(crate) rx_no_vnic: AtomicU64,
    pub(crate) polls: AtomicU64,
    /// Polls scheduled on every CPU to free the skbs of lent pages other
    /// CPUs deferred (`reclaim.rs`).
    pub(crate) rx_defer_kicks: AtomicU64,
}

/// Adds `n` to `c`.
pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// Adds one to `c`.
pub(crate) fn bump(c: &AtomicU64) {
    add(c, 1);
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

const OWN: [&str; 25] = [
    "tx_frames",
    "tx_bytes",
    "tx_placed_bytes",
    "tx_by_value_bytes",
    "tx_dropped_frames",
    "tx_no_session_frames",
    "tx_dropped_full_frames",
    "tx_queue_stops",
    "tx_queue_wakes",
    "tx_busy_frames",
    "rx_frames",
    "rx_bytes",
    "rx_lent_frames",
    "rx_header_bytes",
    "rx_fallback_copy_frames",
    "rx_fallback_copy_bytes",
    "rx_by_value_frames",
    "rx_by_value_bytes",
    "rx_page_busy_frames",
    "rx_csum_hint_ignored_frames",
    "rx_dropped_frames",
    "rx_unlent_nic_frames",
    "rx_no_vnic_frames",
    "polls",
    "rx_defer_kicks",
];

/// The core's counters, as `<side>_<name>`: names and values from
/// [`CoreCounters::named`], their one list.
const CORE: usize = drack_core::counters::COUNT;

/// Per peer: its session (0 down, 1 syncing, 2 up; source end, then
/// destination end), the pages of it the stack holds, whether its TX
/// queue is stopped for room (1) or not (0), and this host's buffers
/// towards it that are not free (sent and not back, or not known yet
/// after a reset: `tx_buffers_out`).
const PEER: [&str; 6] = [
    "tx_session",
    "rx_session",
    "lent_pages",
    "released_buffers",
    "tx_queue_stopped",
    "tx_buffers_out",
];

fn session_value(s: Session) -> u64 {
    match s {
        Session::Down => 0,
        Session::Syncing => 1,
        Session::Up => 2,
    }
}

/// How many counters `ethtool -S` shows for `hosts` hosts.
pub(crate) fn count(hosts: u32) -> usize {
    let peers = (hosts as usize).saturating_sub(1);
    OWN.len()
        .saturating_add(2 * CORE)
        .saturating_add(peers.saturating_mul(PEER.len()))
}

/// Their names.
pub(crate) fn names(link: &Link, out: &mut [[u8; STRING_LEN]]) {
    let mut it = out.iter_mut();
    for n in OWN {
        if let Some(o) = it.next() {
            ethtool_string(o, &[n.as_bytes()]);
        }
    }
    for side in ["tx_", "rx_"] {
        for (n, _) in CoreCounters::default().named() {
            if let Some(o) = it.next() {
                ethtool_string(o, &[side.as_bytes(), n.as_bytes()]);
            }
        }
    }
    for p in link.peers() {
        let digit = [b'0'.saturating_add(u8::try_from(p).unwrap_or(0))];
        for n in PEER {
            if let Some(o) = it.next() {
                ethtool_string(o, &[b"peer", &digit, b"_", n.as_bytes()]);
            }
        }
    }
}

fn sum(into: &mut [u64; CORE], c: &CoreCounters) {
    for (a, (_, b)) in into.iter_mut().zip(c.named()) {
        *a = a.saturating_add(b);
    }
}

/// Their values, in [`names`] order.
pub(crate) fn values(link: &Link, out: &mut [u64]) {
    let c = &link.counters;
    let own = [
        get(&c.tx_frames),
        get(&c.tx_bytes),
        get(&c.tx_placed_bytes),
        get(&c.tx_by_value_bytes),
        get(&c.tx_dropped),
        get(&c.tx_no_session),
        get(&c.tx_dropped_full),
        get(&c.tx_queue_stops),
        get(&c.tx_queue_wakes),
        get(&c.tx_busy),
        get(&c.rx_frames),
        get(&c.rx_bytes),
        get(&c.rx_lent_frames),
        get(&c.rx_header_bytes),
        get(&c.rx_fallback_copy_frames),
        get(&c.rx_fallback_copy_bytes),
        get(&c.rx_by_value_frames),
        get(&c.rx_by_value_bytes),
        get(&c.rx_page_busy),
        get(&c.rx_csum_hint_ignored),
        get(&c.rx_dropped),
        get(&c.rx_unlent_nic),
        get(&c.rx_no_vnic),
        get(&c.polls),
        get(&c.rx_defer_kicks),
    ];
    let hosts = link.geom.hosts() as usize;
    let mut tx = [0u64; CORE];
    let mut tx_state = [Session::Down; drack_core::layout::HOSTS_MAX as usize];
    let mut tx_out = [0u32; drack_core::layout::HOSTS_MAX as usize];
    let stopped = {
        let side = link.tx.lock();
        for (i, e) in side.ends.iter().enumerate() {
            if let Some(e) = e {
                sum(&mut tx, &e.counters);
                if let (Some(s), Some(o)) = (tx_state.get_mut(i), tx_out.get_mut(i)) {
                    *s = e.session();
                    *o = e.buffers().not_free();
                }
            }
        }
        side.stopped
    };
    let mut rx = [0u64; CORE];
    let mut peer = [[0u64; PEER.len()]; drack_core::layout::HOSTS_MAX as usize];
    {
        let side = link.rx.lock();
        for (i, e) in side.ends.iter().enumerate() {
            if let (Some(e), Some(row)) = (e, peer.get_mut(i)) {
                sum(&mut rx, &e.counters);
                *row = [
                    tx_state.get(i).map_or(0, |s| session_value(*s)),
                    session_value(e.session()),
                    u64::from(e.lends().lent()),
                    u64::from(e.lends().released()),
                    u64::from(stopped.checked_shr(i as u32).map_or(0, |v| v & 1)),
                    u64::from(tx_out.get(i).copied().unwrap_or(0)),
                ];
            }
        }
    }
    let peers = peer
        .iter()
        .take(hosts)
        .enumerate()
        .filter(|(i, _)| *i != link.me as usize)
        .flat_map(|(_, row)| row.iter().copied());
    let all = own
        .iter()
        .copied()
        .chain(tx.iter().copied())
        .chain(rx.iter().copied())
        .chain(peers);
    for (o, v) in out.iter_mut().zip(all) {
        *o = v;
    }
}

/// What `ip -s link` shows.
pub(crate) fn link_stats(link: &Link, s: &mut Stats) {
    let c = &link.counters;
    s.tx_packets = get(&c.tx_frames);
    s.tx_bytes = get(&c.tx_bytes);
    s.tx_dropped = get(&c.tx_dropped)
        .saturating_add(get(&c.tx_no_session))
        .saturating_add(get(&c.tx_dropped_full));
    s.rx_packets = get(&c.rx_frames);
    s.rx_bytes = get(&c.rx_bytes);
    s.rx_dropped = get(&c.rx_dropped);
}
