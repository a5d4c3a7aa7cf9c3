// SPDX-License-Identifier: GPL-2.0

//! vNICs, the borrowing side of pooled NICs (DRack section 4.2): for
//! every NIC a peer lends (the table in its heartbeat line), an
//! interface `drackv<owner>n<slot>` with its own MAC address
//! (`drack_core::nic::vnic_mac`). Its frames go by reference to the
//! owner on `Port::ToNic(slot)`, and the owner transmits them on that
//! NIC; what the NIC receives for the vNIC's address comes back on
//! `Port::FromNic(slot)` and the poll hands it to the vNIC (`rx.rs`).
//!
//! A periodic work item (process context) makes and removes the
//! interfaces as the tables say, and sets their carrier: up while the
//! owner's lease holds, our sessions with it are up both ways and its
//! NIC has carrier. A table that does not check changes nothing (damaged
//! state is not evidence); an owner whose lease expired keeps its vNICs,
//! carrier down, until it returns (an MPTCP subflow on one then moves
//! its traffic to the others).
//!
//! A vNIC never stops its queue: a frame that finds no room is dropped
//! and counted (`tx_dropped`).
//!
//! # Lock order
//!
//! `Vnics::regs` (a mutex, the work item and teardown only) before
//! `Link::vnics` (a raw spinlock, also the poll's); the poll holds no
//! other lock when it takes `Link::vnics`, and hands frames to the stack
//! after dropping it.

#![deny(clippy::arithmetic_side_effects)]

use crate::link::Link;
use crate::stats::{add, bump};
use crate::support::netdev::{
    NetDevice, Netdev, NetdevRef, Placement, Registration, SkBuff, Stats,
};
use crate::support::workqueue::PeriodicWork;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use drack_core::layout::{FRAME_MAX, FRAME_MIN, HOSTS_MAX, MTU_MAX};
use drack_core::nic::{vnic_mac, NicRecord, Port, NICS_MAX};
use drack_core::peer::TxError;
use kernel::fmt;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{new_mutex, Arc, Mutex};

/// How often the work item looks at the peers' tables, milliseconds.
pub(crate) const RECONCILE_MS: u32 = 100;

/// A vNIC's counters (`ip -s link`).
#[derive(Default)]
pub(crate) struct VnicCounters {
    pub(crate) tx_frames: AtomicU64,
    pub(crate) tx_bytes: AtomicU64,
    pub(crate) tx_dropped: AtomicU64,
    pub(crate) rx_frames: AtomicU64,
    pub(crate) rx_bytes: AtomicU64,
    pub(crate) rx_dropped: AtomicU64,
}

/// One vNIC: NIC `slot` of host `owner`.
pub(crate) struct Vnic {
    link: Arc<Link>,
    pub(crate) owner: u32,
    pub(crate) slot: u8,
    up: AtomicBool,
    pub(crate) counters: VnicCounters,
}

impl Vnic {
    /// Whether the interface is up (frames for it are delivered).
    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }
}

/// What the poll needs to hand a vNIC its frames: a counted reference
/// on the interface and its state.
pub(crate) struct VnicRx {
    pub(crate) dev: NetdevRef,
    pub(crate) vnic: Arc<Vnic>,
}

/// The vNICs by owner and slot, for the poll.
pub(crate) struct VnicTable {
    by: [[Option<VnicRx>; NICS_MAX]; HOSTS_MAX as usize],
}

impl VnicTable {
    pub(crate) const fn new() -> VnicTable {
        VnicTable {
            by: [const { [const { None }; NICS_MAX] }; HOSTS_MAX as usize],
        }
    }

    fn slot(&mut self, owner: u32, slot: u8) -> Option<&mut Option<VnicRx>> {
        self.by.get_mut(owner as usize)?.get_mut(usize::from(slot))
    }

    /// The vNIC of `owner`'s NIC `slot`, held for a delivery.
    pub(crate) fn get(&mut self, owner: u32, slot: u8) -> Option<(NetdevRef, Arc<Vnic>)> {
        let v = self.slot(owner, slot)?.as_ref()?;
        Some((v.dev.get().hold(), v.vnic.clone()))
    }
}

impl NetDevice for Vnic {
    fn open(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        this.up.store(true, Ordering::Release);
        dev.tx_all(true);
        Ok(())
    }

    fn stop(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        dev.tx_disable();
        this.up.store(false, Ordering::Release);
        Ok(())
    }

    fn start_xmit(
        this: &Arc<Self>,
        _dev: &Netdev<'_>,
        skb: SkBuff,
        _queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        this.link.xmit_vnic(this, &skb);
        Ok(())
    }

    fn stats(this: &Arc<Self>, s: &mut Stats) {
        let c = &this.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        s.tx_packets = get(&c.tx_frames);
        s.tx_bytes = get(&c.tx_bytes);
        s.tx_dropped = get(&c.tx_dropped);
        s.rx_packets = get(&c.rx_frames);
        s.rx_bytes = get(&c.rx_bytes);
        s.rx_dropped = get(&c.rx_dropped);
    }

    fn change_mtu(_this: &Arc<Self>, _dev: &Netdev<'_>, mtu: u32) -> Result {
        if !(crate::netdev::MTU_MIN..=MTU_MAX).contains(&mtu) {
            return Err(EINVAL);
        }
        Ok(())
    }
}

impl Link {
    /// A vNIC's frame, to its owner by reference (or by value, as drack0
    /// is set), on the NIC's port.
    fn xmit_vnic(&self, v: &Vnic, skb: &SkBuff) {
        let c = &v.counters;
        let (Some(frame), Some(mem)) = (skb.linear(), self.mem()) else {
            bump(&c.tx_dropped);
            return;
        };
        if !(FRAME_MIN as usize..=FRAME_MAX as usize).contains(&frame.len()) {
            bump(&c.tx_dropped);
            return;
        }
        let by_value = self.by_value.load(Ordering::Relaxed);
        let port = Port::ToNic(v.slot);
        match self.send_to(&mem, v.owner, frame, by_value, None, None, port) {
            Ok(()) => {
                bump(&c.tx_frames);
                add(&c.tx_bytes, frame.len() as u64);
            }
            Err(e) => {
                if matches!(e, TxError::RingFull | TxError::NoBuffer) {
                    self.poll_fast();
                }
                bump(&c.tx_dropped);
            }
        }
    }
}

/// A registered vNIC. Dropping it takes it out of the poll's table
/// before unregistering (which waits for the table's reference).
struct VnicReg {
    owner: u32,
    slot: u8,
    generation: u32,
    /// The MTU it was made with (the owner's NIC's, clamped).
    mtu: u32,
    link: Arc<Link>,
    reg: Registration<Vnic>,
}

impl Drop for VnicReg {
    fn drop(&mut self) {
        let gone = {
            let mut t = self.link.vnics.lock();
            t.slot(self.owner, self.slot).and_then(Option::take)
        };
        // The reference goes outside the lock; then `reg` unregisters.
        drop(gone);
        pr_info!("{} removed\n", self.reg.name());
    }
}

/// The vNICs of this host by owner and slot, kept in step with the
/// peers' tables.
type Regs = [[Option<VnicReg>; NICS_MAX]; HOSTS_MAX as usize];

/// The vNICs of this host, kept in step with the peers' tables.
pub(crate) struct Vnics {
    link: Arc<Link>,
    regs: Pin<KBox<Mutex<Regs>>>,
}

impl Vnics {
    pub(crate) fn new(link: Arc<Link>) -> Result<Arc<Vnics>> {
        let empty: Regs = [const { [const { None }; NICS_MAX] }; HOSTS_MAX as usize];
        let regs = KBox::pin_init(new_mutex!(empty, "drack:vnics"), GFP_KERNEL)?;
        Ok(Arc::new(Vnics { link, regs }, GFP_KERNEL)?)
    }

    /// Makes the vNIC of `owner`'s NIC `slot` as `r` describes.
    fn make(&self, owner: u32, slot: u8, r: &NicRecord) -> Result<VnicReg> {
        let link = &self.link;
        let name = CString::try_from_fmt(fmt!("drackv{}n{}", owner, slot))?;
        let vnic = Arc::new(
            Vnic {
                link: link.clone(),
                owner,
                slot,
                up: AtomicBool::new(false),
                counters: VnicCounters::default(),
            },
            GFP_KERNEL,
        )?;
        let at = Placement::detached(vnic_mac(owner, slot, link.me))
            .named(&name)
            .mtu_range(crate::netdev::MTU_MIN, MTU_MAX);
        let reg = Registration::register(vnic.clone(), &at)?;
        let mtu = vnic_mtu(r);
        if reg.set_mtu(mtu).is_err() {
            pr_warn!("{}: MTU {} refused; left at its default\n", reg.name(), mtu);
        }
        let dev = reg.netdev().hold();
        {
            let mut t = link.vnics.lock();
            if let Some(s) = t.slot(owner, slot) {
                *s = Some(VnicRx { dev, vnic });
            }
        }
        pr_info!(
            "{}: host {}'s NIC {} (generation {}, MTU {})\n",
            reg.name(),
            owner,
            slot,
            r.generation,
            mtu
        );
        Ok(VnicReg {
            owner,
            slot,
            generation: r.generation,
            mtu,
            link: link.clone(),
            reg,
        })
    }

    /// One pass: what the peers lend now, against what we have.
    fn reconcile(&self) {
        let lent = self.link.peers_lending();
        let mut regs = self.regs.lock();
        for (owner, nics) in (0u32..).zip(regs.iter_mut()) {
            for (slot, have) in (0u8..).zip(nics.iter_mut()) {
                let now = lent.get(owner, slot);
                // Lent again with the same MTU (the owner came back, or
                // lent another NIC there): the vNIC stays, with its
                // addresses, routes and MPTCP endpoints.
                if let (Some(r), Some(rec)) = (have.as_mut(), now) {
                    if r.generation != rec.generation && r.mtu == vnic_mtu(&rec) {
                        r.generation = rec.generation;
                        pr_info!(
                            "{}: host {}'s NIC {} is back (generation {})\n",
                            r.reg.name(),
                            owner,
                            slot,
                            rec.generation
                        );
                    }
                }
                // Withdrawn, or lent again with another MTU: the old one
                // goes, and the new one is made. A withdrawal counts only
                // from an owner that is up: one that rejoins publishes an
                // empty table until it lends again (at once with `lend=`),
                // and its vNICs are kept meanwhile.
                let owner_up = self.link.peer_up(owner);
                if have
                    .as_ref()
                    .is_some_and(|r| stale(now, r.generation) && (now.is_some() || owner_up))
                {
                    drop(have.take());
                }
                if let (None, Some(rec)) = (have.as_ref(), now) {
                    match self.make(owner, slot, &rec) {
                        Ok(r) => *have = Some(r),
                        Err(e) => crate::support::pr_info_ratelimited!(
                            "cannot make the vNIC of host {}'s NIC {}: {:?}\n",
                            owner,
                            slot,
                            e
                        ),
                    }
                }
                if let (Some(r), Some(rec)) = (have.as_ref(), now) {
                    let on = rec.carrier && owner_up;
                    if r.reg.carrier_ok() != on {
                        r.reg.set_carrier(on);
                    }
                }
            }
        }
    }
}

/// The MTU a vNIC of the NIC `r` describes gets.
fn vnic_mtu(r: &NicRecord) -> u32 {
    u32::from(r.mtu).clamp(crate::netdev::MTU_MIN, MTU_MAX)
}

/// Whether a vNIC of `generation` is out of date against what the
/// owner publishes now (`None`: nothing lent there).
fn stale(now: Option<NicRecord>, generation: u32) -> bool {
    now.map_or(true, |n| n.generation != generation)
}

impl PeriodicWork for Vnics {
    fn run(&self) -> u32 {
        self.reconcile();
        RECONCILE_MS
    }
}

/// The NICs the peers lend, by owner and slot: each peer's last table
/// that checked.
#[derive(Clone, Copy)]
pub(crate) struct Lending {
    by: [[NicRecord; NICS_MAX]; HOSTS_MAX as usize],
}

impl Lending {
    pub(crate) const fn new() -> Lending {
        Lending {
            by: [[NicRecord {
                generation: 0,
                mtu: 0,
                carrier: false,
            }; NICS_MAX]; HOSTS_MAX as usize],
        }
    }

    /// Records `owner`'s table.
    pub(crate) fn set(&mut self, owner: u32, nics: &[NicRecord; NICS_MAX]) {
        if let Some(o) = self.by.get_mut(owner as usize) {
            *o = *nics;
        }
    }

    fn get(&self, owner: u32, slot: u8) -> Option<NicRecord> {
        self.by
            .get(owner as usize)?
            .get(usize::from(slot))
            .copied()
            .filter(NicRecord::lent)
    }
}
