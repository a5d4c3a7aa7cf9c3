// SPDX-License-Identifier: GPL-2.0

//! drack0's state: the region, this host's ends of every pair (the
//! core's [`SrcEnd`]s and [`DstEnd`]s), the peers' leases, the polling
//! interval and the counters.
//!
//! # Lock order
//!
//! `place[p]` (one per peer, a plain spinlock) serialises every sender
//! of frames to peer `p` from reservation to publication (drack0's
//! queues, its vNICs, a lent NIC's receive): `tx` is taken inside it,
//! never the other way round, and no two `place` locks nest. Senders
//! run with bottom halves off (transmit, softirq), the only contexts
//! that take it.
//!
//! `tx` and `rx` are never held together, and neither is held across a
//! call into the stack (GRO may transmit, which takes `tx`). `tx` is
//! taken by transmit (softirq or process context with bottom halves off),
//! the poll and ethtool's statistics; `rx` by the poll, ethtool's
//! statistics and teardown. Messages are printed after dropping them. Both are raw
//! spinlocks with interrupts off, held for bookkeeping only: payload
//! copies happen outside them.

use crate::owner::NicPath;
use crate::pool::{Mem, Pool};
use crate::stats::Counters;
use crate::support::new_raw_spinlock_irq;
use crate::support::spinlock_irq::RawSpinLockIrq;
use crate::vnic::{Lending, VnicTable};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use drack_core::layout::{Geometry, HOSTS_MAX};
use drack_core::nic::{NicTable, NICS_MAX};
use drack_core::peer::{DstEnd, SrcEnd};
use kernel::prelude::*;
use kernel::sync::{new_spinlock, Arc, SpinLock};

/// The polling interval when idle doubles up to this, nanoseconds.
pub(crate) const POLL_NS_MAX: u64 = 1_000_000;
/// Bounds of the shortest polling interval (`ethtool -C rx-usecs`).
pub(crate) const POLL_US_MIN: u32 = 10;
pub(crate) const POLL_US_MAX: u32 = 1000;
/// The shortest interval at load: 50 us rather than the 20 us a real
/// machine affords, since the test VMs run under TCG.
pub(crate) const POLL_US_DEFAULT: u32 = 50;

/// The first five bytes of drack0's MAC addresses (locally
/// administered, unicast); the sixth is the host index, so a frame's
/// destination host is read off its destination address.
pub(crate) const MAC_PREFIX: [u8; 5] = [0x02, 0x44, 0x52, 0x4b, 0x00];

/// Host `h`'s MAC address.
pub(crate) fn mac_of(h: u32) -> [u8; 6] {
    let [a, b, c, d, e] = MAC_PREFIX;
    [a, b, c, d, e, u8::try_from(h).unwrap_or(u8::MAX)]
}

/// This host's source and destination ends, one each per peer (`None`
/// at our own index).
pub(crate) type Ends = (KVec<Option<KBox<SrcEnd>>>, KVec<Option<KBox<DstEnd>>>);

/// This host's source ends, one per peer (`None` at our own index).
pub(crate) struct TxSide {
    pub(crate) ends: KVec<Option<KBox<SrcEnd>>>,
    /// Peers whose TX queue transmit stopped because a maximal frame no
    /// longer fit (a bit each): the poll wakes them when one fits again
    /// or the session went down.
    pub(crate) stopped: u32,
}

/// What this host knows of a peer's heartbeat.
#[derive(Clone, Copy, Default)]
pub(crate) struct Lease {
    /// The epoch and beat last seen, and when they last changed.
    pub(crate) epoch: u32,
    pub(crate) beat: u64,
    pub(crate) changed_ns: u64,
    /// Seen beating and not expired since.
    pub(crate) live: bool,
    /// The lease it announced, nanoseconds (0: none).
    pub(crate) lease_ns: u64,
}

/// This host's destination ends and what it knows of its peers.
pub(crate) struct RxSide {
    pub(crate) ends: KVec<Option<KBox<DstEnd>>>,
    pub(crate) leases: [Lease; HOSTS_MAX as usize],
    /// Our epoch (a rejoin takes a new one, `lease.rs`).
    pub(crate) epoch: u32,
    /// Our own heartbeat: the beat and when it was last written.
    pub(crate) beat: u64,
    pub(crate) beat_ns: u64,
    /// When this host last rejoined (0: never since load).
    pub(crate) rejoined_ns: u64,
    /// The NICs this host lends, as its heartbeat publishes them.
    pub(crate) nics: NicTable,
    /// The NICs the peers lend (their heartbeats' last good tables).
    pub(crate) lending: Lending,
}

/// drack0.
///
/// # Invariants
///
/// `tx.ends` and `rx.ends` have `geom.hosts()` entries, `None` exactly
/// at `me`.
#[pin_data]
pub(crate) struct Link {
    pub(crate) pool: Pool,
    pub(crate) geom: Geometry,
    pub(crate) me: u32,
    pub(crate) lease_ns: u64,
    /// Per peer: held by a sender from reservation to publication.
    pub(crate) place: KVec<Pin<KBox<SpinLock<()>>>>,
    #[pin]
    pub(crate) tx: RawSpinLockIrq<TxSide>,
    #[pin]
    pub(crate) rx: RawSpinLockIrq<RxSide>,
    /// The vNICs, for the poll to hand them their frames (`vnic.rs`).
    #[pin]
    pub(crate) vnics: RawSpinLockIrq<VnicTable>,
    /// Our lent NICs, for the poll to send vNICs' frames on (`owner.rs`).
    #[pin]
    pub(crate) nic_paths: RawSpinLockIrq<[Option<Arc<NicPath>>; NICS_MAX]>,
    /// Send by value (copy into the queue's slot) rather than by
    /// reference: the `by-value` private flag.
    pub(crate) by_value: AtomicBool,
    /// The interface is up (between `open` and `stop`).
    pub(crate) up: AtomicBool,
    /// Peers whose sessions are up both ways, a bit each.
    pub(crate) carrier: AtomicU32,
    /// The peer the next poll receives from first (rotates).
    pub(crate) rx_first: AtomicU32,
    /// The polling timer's interval now, and its shortest.
    pub(crate) poll_ns: AtomicU64,
    pub(crate) poll_ns_min: AtomicU64,
    pub(crate) counters: Counters,
}

impl Link {
    /// drack0 on `pool`, formatted as `geom`, for host `me` in `epoch`,
    /// with the ends already started.
    pub(crate) fn new(
        pool: Pool,
        geom: Geometry,
        me: u32,
        epoch: u32,
        lease_ns: u64,
        ends: Ends,
    ) -> Result<Arc<Link>> {
        let interval = u64::from(POLL_US_DEFAULT) * 1000;
        let now = crate::support::time::boottime_ns();
        let mut place = KVec::with_capacity(geom.hosts() as usize, GFP_KERNEL)?;
        for _ in 0..geom.hosts() {
            place.push(
                KBox::pin_init(new_spinlock!((), "drack:place"), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        Arc::pin_init(
            pin_init!(Link {
                pool,
                geom,
                me,
                lease_ns,
                place,
                tx <- new_raw_spinlock_irq!(TxSide { ends: ends.0, stopped: 0 }, "drack:tx"),
                rx <- new_raw_spinlock_irq!(
                    RxSide {
                        ends: ends.1,
                        leases: [Lease::default(); HOSTS_MAX as usize],
                        epoch,
                        beat: 0,
                        beat_ns: now,
                        rejoined_ns: 0,
                        nics: NicTable::default(),
                        lending: Lending::new(),
                    },
                    "drack:rx"
                ),
                vnics <- new_raw_spinlock_irq!(VnicTable::new(), "drack:vnics"),
                nic_paths <- new_raw_spinlock_irq!([const { None }; NICS_MAX], "drack:nic_paths"),
                by_value: AtomicBool::new(false),
                up: AtomicBool::new(false),
                carrier: AtomicU32::new(0),
                rx_first: AtomicU32::new(0),
                poll_ns: AtomicU64::new(interval),
                poll_ns_min: AtomicU64::new(interval),
                counters: Counters::default(),
            }),
            GFP_KERNEL,
        )
    }

    /// The peers' indices.
    pub(crate) fn peers(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.geom.hosts()).filter(move |p| *p != self.me)
    }

    /// Buffers lent to the stack now, of all peers, and buffers the
    /// destination ends gave back so far.
    pub(crate) fn lends_out(&self) -> (u32, u64) {
        let rx = self.rx.lock();
        rx.ends.iter().flatten().fold((0u32, 0u64), |(l, r), e| {
            (
                l.saturating_add(e.lends().lent()),
                r.saturating_add(e.counters.returned),
            )
        })
    }

    /// What the peers lend now.
    pub(crate) fn peers_lending(&self) -> Lending {
        self.rx.lock().lending
    }

    /// Whether peer `p`'s sessions with us are up both ways (its lease
    /// holding).
    pub(crate) fn peer_up(&self, p: u32) -> bool {
        let bit = 1u32.checked_shl(p).unwrap_or(0);
        self.carrier.load(Ordering::Acquire) & bit != 0
    }

    /// The region's memory, `None` once revoked.
    pub(crate) fn mem(&self) -> Option<Mem<'_>> {
        self.pool.mem()
    }

    /// Polls fast again: traffic, or a full destination waiting for returns.
    pub(crate) fn poll_fast(&self) {
        let min = self.poll_ns_min.load(Ordering::Relaxed);
        self.poll_ns.store(min, Ordering::Relaxed);
    }

    /// An idle poll: the interval doubles up to [`POLL_NS_MAX`].
    pub(crate) fn poll_slower(&self) {
        let now = self.poll_ns.load(Ordering::Relaxed);
        let next = now.saturating_mul(2).min(POLL_NS_MAX);
        self.poll_ns.store(next, Ordering::Relaxed);
    }
}
