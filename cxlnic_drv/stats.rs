// SPDX-License-Identifier: GPL-2.0

//! `ethtool -S`: the port's restarts of its rings, the key-value
//! offload's counters (the device's, `kvs_<name>`, then the driver's),
//! then per queue pair the driver's counters and the device's (the
//! coherent transactions its side of the protocol made, which it
//! publishes in device memory with each heartbeat).

use crate::io::NicIo;
use crate::kvs::Kvs;
use crate::queue::{Counters, Queue, GROWING};
use crate::recovery::{Resets, RESET_STATS};
use crate::ring::device::{QueueStats, QUEUE_STATS_BYTES, QUEUE_STATS_NAMES, STATS_OFFSET};
use crate::ring::kvs::KVS_STATS_NAMES;
use crate::support::coherent::Coherent;
use crate::support::netdev::{ethtool_string, STRING_LEN};
use crate::support::uapi::cxlnic::DRIVER_STATS as KVS_DRIVER_STATS;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::sync::Arc;

/// The driver's counters of a queue pair, in [`driver_values`] order:
/// first the [`GROWING`] ones, in `Counters::growing` order.
const DRIVER_STATS: [&str; 22] = [
    "tx_packets",
    "tx_bytes",
    "tx_dropped",
    "tx_busy",
    "tx_queue_stops",
    "tx_queue_wakes",
    "tx_faults",
    "rx_packets",
    "rx_bytes",
    "rx_dropped",
    "rx_faults",
    "doorbells",
    "polls",
    "tx_bad_head",
    "rx_bad_head",
    "rx_bad_completion",
    "tx_head",
    "tx_tail",
    "tx_dev_head",
    "rx_head",
    "rx_tail",
    "rx_dev_head",
];

// The growing counters, then six ring indices.
const _: () = assert!(DRIVER_STATS.len() == GROWING + 6);

pub(crate) const STATS_PER_QUEUE: usize = DRIVER_STATS.len() + QUEUE_STATS_NAMES.len();

/// The port's counters before the queues': restarts, then the
/// offload's (zero on a device without one).
pub(crate) const PORT_STATS: usize =
    RESET_STATS.len() + KVS_STATS_NAMES.len() + KVS_DRIVER_STATS.len();

/// Counters of a port with `queues` queue pairs.
pub(crate) fn count(queues: usize) -> usize {
    queues
        .saturating_mul(STATS_PER_QUEUE)
        .saturating_add(PORT_STATS)
}

/// Queue pair `q`'s counters: what it counted before it was last torn
/// down (`retired`) plus what the running queue counted since, then the
/// running queue's ring indices.
fn driver_values(retired: &Counters, q: Option<&Queue>) -> [u64; DRIVER_STATS.len()] {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut out = [0; DRIVER_STATS.len()];
    let (growing, indices) = out.split_at_mut(GROWING);
    for (o, c) in growing.iter_mut().zip(retired.growing()) {
        *o = get(c);
    }
    let Some(q) = q else {
        return out;
    };
    for (o, c) in growing.iter_mut().zip(q.counters.growing()) {
        *o = o.saturating_add(get(c));
    }
    let c = &q.counters;
    let (tx_dev, rx_dev) = q.device_heads();
    let now = [
        get(&c.tx_head),
        get(&c.tx_tail),
        u64::from(tx_dev),
        get(&c.rx_head),
        get(&c.rx_tail),
        u64::from(rx_dev),
    ];
    for (o, v) in indices.iter_mut().zip(now) {
        *o = v;
    }
    out
}

/// `queue_resets`, ..., `kvs_hits`, ..., `kvs_log_applied`,
/// `q3_tx_packets`, `q3_dev_tx_desc_reads`, ...
pub(crate) fn names(out: &mut [[u8; STRING_LEN]]) {
    let (port, queues) = out.split_at_mut(PORT_STATS.min(out.len()));
    let port_names = RESET_STATS
        .iter()
        .map(|n| (&b""[..], *n))
        .chain(KVS_STATS_NAMES.iter().map(|n| (&b"kvs_"[..], *n)))
        .chain(KVS_DRIVER_STATS.iter().map(|n| (&b"kvs_"[..], *n)));
    for (o, (prefix, name)) in port.iter_mut().zip(port_names) {
        ethtool_string(o, &[prefix, name.as_bytes()]);
    }
    for (q, chunk) in queues.chunks_mut(STATS_PER_QUEUE).enumerate() {
        let mut digits = [0u8; 20];
        let num = decimal(q, &mut digits);
        let names = DRIVER_STATS
            .iter()
            .map(|n| (&b""[..], n))
            .chain(QUEUE_STATS_NAMES.iter().map(|n| (&b"dev_"[..], n)));
        for (o, (prefix, name)) in chunk.iter_mut().zip(names) {
            ethtool_string(o, &[b"q", num, b"_", prefix, name.as_bytes()]);
        }
    }
}

fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// The port's values (the first [`PORT_STATS`]).
pub(crate) fn port_values(resets: &Resets, kvs: &Kvs, out: &mut [u64]) {
    let device = kvs
        .area
        .as_ref()
        .and_then(|a| a.stats().ok())
        .map(|s| s.values())
        .unwrap_or_default();
    let all = resets
        .values()
        .into_iter()
        .chain(device)
        .chain(kvs.counters.values());
    for (o, v) in out.iter_mut().zip(all) {
        *o = v;
    }
}

/// The queues' values for `out` (as many queues as it has room for): a
/// queue pair that is not running shows what it counted, and zeros for
/// its indices and the device's counters.
pub(crate) fn values(io: &NicIo, retired: &[Counters], lanes: &[Arc<Queue>], out: &mut [u64]) {
    for (q, chunk) in out.chunks_mut(STATS_PER_QUEUE).enumerate() {
        let driver = retired.get(q).map_or([0; DRIVER_STATS.len()], |r| {
            driver_values(r, lanes.get(q).map(|l| &**l))
        });
        let mut raw = [0u8; QUEUE_STATS_BYTES];
        let at = (STATS_OFFSET as usize).saturating_add(q.saturating_mul(QUEUE_STATS_BYTES));
        let device = match io.mem.read(at, &mut raw) {
            Ok(()) if q < lanes.len() => QueueStats::decode(&raw),
            _ => [0; QUEUE_STATS_NAMES.len()],
        };
        for (o, v) in chunk.iter_mut().zip(driver.iter().chain(device.iter())) {
            *o = *v;
        }
    }
}
