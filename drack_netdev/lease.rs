// SPDX-License-Identifier: GPL-2.0

//! Heartbeats and leases, from the poll every quarter lease: this host
//! beats its heartbeat line, watches every peer's, and rejoins with a new
//! epoch when it may have been declared dead.
//!
//! - A peer is dead only when its heartbeat line has not changed for a
//!   lease, as this host observed it; a damaged line is not evidence.
//!   Its ends then stop (`peer_dead`), and their lines withdraw their
//!   acknowledgement of the peer's epoch, so a peer that only stalled
//!   learns it was declared dead.
//! - This host rejoins (a new epoch from its heartbeat line, every end
//!   restarted in place) when a peer withdrew its acknowledgement (an end
//!   says `dropped`), or when its own beats lapsed for a lease (a pause,
//!   a stall: its peers have likely declared it dead). A host that
//!   lapsed observed nothing meanwhile: it starts its peers' leases
//!   afresh instead of declaring them dead. Rejoins are at most one a
//!   lease, so a hostile peer withdrawing its acknowledgement at will
//!   costs a session reset a lease at most.
//!
//! Locks: `rx`, then (released) `tx`, never both (`link.rs`).

#![deny(clippy::arithmetic_side_effects)]

use crate::link::{Link, RxSide};
use crate::pool::Mem;
use crate::setup::LEASE_MS_MAX;
use drack_core::layout::{Heartbeat, HOSTS_MAX};
use drack_core::peer::{beat, heartbeat, join};
use kernel::prelude::*;

/// What a pass saw of a peer's heartbeat.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Nothing new to say.
    Same,
    /// It began beating, in this epoch.
    Beats(u32),
    /// Its lease (this many milliseconds) just expired.
    Dead(u64),
}

/// Why this host rejoins.
#[derive(Clone, Copy)]
enum Rejoin {
    /// Its own beats lapsed for this many milliseconds.
    Lapsed(u64),
    /// A peer withdrew its acknowledgement of our epoch.
    Dropped(u32),
}

impl Link {
    /// Every quarter lease: our beat, the peers' leases, a rejoin if
    /// this host may have been declared dead.
    pub(crate) fn housekeeping(&self, mem: &Mem<'_>, now: u64) {
        let dropped_by = self.dropped_by_tx();
        let mut seen = [Seen::Same; HOSTS_MAX as usize];
        let (beat_ok, rejoined) = {
            let mut rx = self.rx.lock();
            let since = now.saturating_sub(rx.beat_ns);
            if since < self.lease_ns / 4 {
                return;
            }
            let lapsed = since > self.lease_ns;
            let why = if lapsed {
                Some(Rejoin::Lapsed(since / 1_000_000))
            } else {
                dropped_by
                    .or_else(|| dropped_by_rx(&rx))
                    .map(Rejoin::Dropped)
            };
            let rejoined = why.and_then(|w| self.rejoin_rx(&mut rx, mem, now).map(|e| (e, w)));
            rx.beat_ns = now;
            rx.beat = rx.beat.wrapping_add(1);
            let ok = self.write_line(mem, &rx);
            for p in self.peers() {
                let hb = heartbeat(mem, &self.geom, p);
                // A line just joined (beat 0) has an empty table that
                // says nothing yet: a host back with `lend=` publishes
                // its NICs from its first beat, and its peers' vNICs
                // on them must not go meanwhile.
                if let Some(t) = hb.filter(|h| h.beat != 0).and_then(|h| h.nics) {
                    rx.lending.set(p, &t.nics);
                }
                let s = self.watch(&mut rx, p, hb, now, lapsed);
                if matches!(s, Seen::Dead(_)) {
                    if let Some(end) = rx.end(p) {
                        end.peer_dead(mem);
                    }
                }
                if let Some(slot) = seen.get_mut(p as usize) {
                    *slot = s;
                }
            }
            (ok, rejoined)
        };
        self.finish_pass(mem, &seen, beat_ok, rejoined);
    }

    /// Writes our heartbeat line: `rx`'s epoch, beat and NIC table, and
    /// the lease we announce. Whether it could be written.
    fn write_line(&self, mem: &Mem<'_>, rx: &RxSide) -> bool {
        let lease_ms = u32::try_from(self.lease_ns / 1_000_000).unwrap_or(u32::MAX);
        beat(
            mem, &self.geom, self.me, rx.epoch, rx.beat, lease_ms, &rx.nics,
        )
        .is_ok()
    }

    /// Writes our heartbeat line again with the NIC table as it is now,
    /// the epoch and beat unchanged (so it renews no lease): the peers'
    /// next pass sees a lend or a withdrawal, whether or not we beat
    /// again (`drack unlend` then rmmod must not leave the NIC published).
    pub(crate) fn announce_nics(&self) {
        let Some(mem) = self.mem() else {
            return;
        };
        if !self.write_line(&mem, &self.rx.lock()) {
            pr_warn!("cannot write this host's heartbeat line: NIC table not announced\n");
        }
    }

    /// What the pass decided, outside `rx`: the source ends follow (dead
    /// peers, a rejoin), then the log lines, rate-limited (a peer can
    /// make its heartbeat come and go at will).
    fn finish_pass(
        &self,
        mem: &Mem<'_>,
        seen: &[Seen; HOSTS_MAX as usize],
        beat_ok: bool,
        rejoined: Option<(u32, Rejoin)>,
    ) {
        {
            let mut tx = self.tx.lock();
            if let Some((epoch, _)) = rejoined {
                for end in tx.ends.iter_mut().flatten() {
                    if end.rejoin(mem, epoch).is_err() {
                        end.counters.count(drack_core::counters::Fault::Access);
                    }
                }
            }
            for (p, _) in seen
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, Seen::Dead(_)))
            {
                if let Some(end) = tx.end(p as u32) {
                    end.peer_dead(mem);
                }
            }
        }
        if !beat_ok {
            pr_warn!("cannot write this host's heartbeat line\n");
        }
        match rejoined {
            Some((epoch, Rejoin::Lapsed(ms))) => crate::support::pr_info_ratelimited!(
                "this host's heartbeat lapsed for {} ms (paused or stalled): rejoining in epoch {}\n",
                ms,
                epoch
            ),
            Some((epoch, Rejoin::Dropped(p))) => crate::support::pr_info_ratelimited!(
                "peer {} declared this host dead: rejoining in epoch {}\n",
                p,
                epoch
            ),
            None => {}
        }
        for (p, s) in seen.iter().enumerate() {
            match s {
                Seen::Beats(epoch) => {
                    crate::support::pr_info_ratelimited!("peer {} beats (epoch {})\n", p, epoch);
                }
                Seen::Dead(ms) => crate::support::pr_info_ratelimited!(
                    "peer {}: no heartbeat for a lease ({} ms): dead\n",
                    p,
                    ms
                ),
                Seen::Same => {}
            }
        }
    }

    /// The first peer whose destination end withdrew its acknowledgement
    /// of our epoch (our source end towards it says `dropped`).
    fn dropped_by_tx(&self) -> Option<u32> {
        let tx = self.tx.lock();
        (0u32..)
            .zip(tx.ends.iter())
            .find_map(|(p, e)| e.as_ref().filter(|e| e.dropped()).map(|_| p))
    }

    /// A new epoch for this host, its destination ends restarted in it
    /// (under `rx`; the source ends follow in `finish_pass`). `None` if
    /// the last rejoin is less than a lease ago or the heartbeat line
    /// cannot be written.
    fn rejoin_rx(&self, rx: &mut RxSide, mem: &Mem<'_>, now: u64) -> Option<u32> {
        if rx.rejoined_ns != 0 && now.saturating_sub(rx.rejoined_ns) < self.lease_ns {
            return None;
        }
        let epoch = join(mem, &self.geom, self.me).ok()?;
        rx.rejoined_ns = now;
        rx.epoch = epoch;
        rx.beat = 0;
        for end in rx.ends.iter_mut().flatten() {
            if end.rejoin(mem, epoch).is_err() {
                end.counters.count(drack_core::counters::Fault::Access);
            }
        }
        Some(epoch)
    }

    /// Folds peer `p`'s heartbeat line in: whether it just began beating
    /// or its lease just expired. The lease is the longer of ours and the
    /// one the peer announces (at most the largest `lease_ms`): a peer
    /// loaded with a longer lease beats less often. After this host's own
    /// beats `lapsed`, a line that did not change proves nothing (this
    /// host did not look): the lease starts afresh.
    fn watch(
        &self,
        rx: &mut RxSide,
        p: u32,
        seen: Option<Heartbeat>,
        now: u64,
        lapsed: bool,
    ) -> Seen {
        let Some(l) = rx.leases.get_mut(p as usize) else {
            return Seen::Same;
        };
        if let Some(h) = seen {
            let announced = u64::from(h.lease_ms.min(LEASE_MS_MAX)).saturating_mul(1_000_000);
            l.lease_ns = self.lease_ns.max(announced);
        }
        if let Some((epoch, b)) = seen
            .map(|h| (h.epoch, h.beat))
            .filter(|s| *s != (l.epoch, l.beat))
        {
            (l.epoch, l.beat, l.changed_ns) = (epoch, b, now);
            if !l.live {
                l.live = true;
                return Seen::Beats(epoch);
            }
            return Seen::Same;
        }
        if lapsed {
            l.changed_ns = now;
            return Seen::Same;
        }
        let lease = l.lease_ns.max(self.lease_ns);
        if l.live && now.saturating_sub(l.changed_ns) > lease {
            l.live = false;
            return Seen::Dead(lease / 1_000_000);
        }
        Seen::Same
    }
}

/// The first peer whose source end withdrew its acknowledgement of our
/// epoch (our destination end from it says `dropped`).
fn dropped_by_rx(rx: &RxSide) -> Option<u32> {
    (0u32..)
        .zip(rx.ends.iter())
        .find_map(|(p, e)| e.as_ref().filter(|e| e.dropped()).map(|_| p))
}
