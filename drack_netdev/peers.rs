// SPDX-License-Identifier: GPL-2.0

//! Per-peer state in sysfs, `/sys/class/net/drack0/peers/<host>/`:
//! `alive` (1 while its lease holds), `epoch` (the one it beats in),
//! `tx_session` and `rx_session` (`down`, `syncing` or `up`: this host's
//! source and destination ends towards it), `lent_pages` (its buffers
//! the stack holds), `tx_queue_stopped` (1 while its TX queue waits
//! for room) and `tx_buffers_out` (this host's buffers towards it that
//! are not free: sent and not back, or unknown after a reset). The same
//! as `ethtool -S`'s `peerN_*`, one file each, for scripts and
//! monitoring.
//!
//! Locks: `show` takes `tx` or `rx` (never both, never while a directory
//! is removed: the directories go before the interface, in `Drack0`'s
//! drop order).

use crate::link::Link;
use crate::support::sysfs::{AttributeBuffer, Attributes, Dir, NoAttributes, Parent};
use core::fmt::Write;
use drack_core::peer::Session;
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// One peer's files.
struct PeerView {
    link: Arc<Link>,
    peer: u32,
}

fn session(s: Option<Session>) -> &'static str {
    match s {
        Some(Session::Up) => "up",
        Some(Session::Syncing) => "syncing",
        Some(Session::Down) | None => "down",
    }
}

impl Attributes for PeerView {
    const NAMES: &'static [&'static CStr] = &[
        c_str!("alive"),
        c_str!("epoch"),
        c_str!("tx_session"),
        c_str!("rx_session"),
        c_str!("lent_pages"),
        c_str!("tx_queue_stopped"),
        c_str!("tx_buffers_out"),
    ];

    fn show(&self, index: usize, out: &mut AttributeBuffer<'_>) -> Result {
        let p = self.peer;
        let bit = 1u32.checked_shl(p).unwrap_or(0);
        let r = match index {
            0 | 1 | 3 | 4 => {
                let mut rx = self.link.rx.lock();
                let lease = rx.leases.get(p as usize).copied().unwrap_or_default();
                let end = rx.end(p);
                match index {
                    0 => writeln!(out, "{}", u32::from(lease.live)),
                    1 => writeln!(out, "{}", lease.epoch),
                    3 => writeln!(out, "{}", session(end.map(|e| e.session()))),
                    _ => writeln!(out, "{}", end.map_or(0, |e| e.lends().lent())),
                }
            }
            2 | 5 | 6 => {
                let mut tx = self.link.tx.lock();
                let stopped = tx.stopped & bit != 0;
                let end = tx.end(p);
                match index {
                    2 => writeln!(out, "{}", session(end.map(|e| e.session()))),
                    5 => writeln!(out, "{}", u32::from(stopped)),
                    _ => writeln!(out, "{}", end.map_or(0, |e| e.buffers().not_free())),
                }
            }
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }
}

/// `peers/` and a directory per peer, removed in field order (the
/// peers' before their parent).
pub(crate) struct PeerFiles {
    _each: KVec<Dir<PeerView>>,
    _dir: Dir<NoAttributes>,
}

impl PeerFiles {
    /// The files of every peer of `link`, under `parent` (the
    /// interface's directory).
    pub(crate) fn new(parent: Parent<'_>, link: &Arc<Link>) -> Result<PeerFiles> {
        let dir = Dir::new(parent, b"peers", Arc::new(NoAttributes, GFP_KERNEL)?)?;
        let mut each = KVec::new();
        for p in link.peers() {
            let mut digits = [0u8; 10];
            let name = decimal(p, &mut digits);
            let view = Arc::new(
                PeerView {
                    link: link.clone(),
                    peer: p,
                },
                GFP_KERNEL,
            )?;
            each.push(Dir::new(dir.as_parent(), name, view)?, GFP_KERNEL)?;
        }
        Ok(PeerFiles {
            _each: each,
            _dir: dir,
        })
    }
}

/// `n` in decimal, in `buf`.
fn decimal(mut n: u32, buf: &mut [u8; 10]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at = at.saturating_sub(1);
        if let Some(b) = buf.get_mut(at) {
            *b = b'0'.saturating_add((n % 10) as u8);
        }
        n /= 10;
        if n == 0 || at == 0 {
            return buf.get(at..).unwrap_or(&[]);
        }
    }
}
