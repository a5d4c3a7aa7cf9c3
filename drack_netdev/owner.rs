// SPDX-License-Identifier: GPL-2.0

//! Lending this host's NICs to the rack (DRack section 4.2, the owner's
//! side). Root (`CAP_NET_ADMIN`) writes an interface's name to
//! `/sys/class/net/drack0/nics/lend`; drack takes it the way macvlan
//! takes a lower device:
//!
//! - a slot (`0..NICS_MAX`) and a new generation, published in this
//!   host's heartbeat line so that every peer makes a vNIC on it;
//! - a unicast filter entry per peer's vNIC address (`dev_uc_add`), so
//!   the NIC receives their frames without going promiscuous;
//! - GRO off while lent: the rx_handler must see frames as they were on
//!   the wire, which fit a pool frame (restored when it goes back);
//! - an rx_handler: a frame for one vNIC's address is copied into the
//!   pool for that peer and consumed; broadcast and multicast are copied
//!   to every peer and passed to our own stack too; anything else is
//!   passed on untouched.
//!
//! A vNIC's frames arrive on `Port::ToNic(slot)` in the poll (`rx.rs`),
//! are copied out of the pool into an skb for the NIC and transmitted
//! (`dev_queue_xmit`, its qdisc included) if they carry that vNIC's own
//! source address. The NIC's `nics/<slot>/` files count both ways.
//!
//! `nics/unlend` gives an interface back, and so does its unregister (a
//! netdevice notifier), so that an owned NIC never blocks its own
//! removal. A bridge, bond, macvlan or any other rx_handler already on
//! the interface makes `lend` fail with `EBUSY` and a line saying who.
//!
//! # Lock order
//!
//! RTNL serialises every change of the slots (`lend`, `unlend`, the
//! notifier, teardown). `Owner::lent` (a mutex) is held only to read or
//! store them, never across a call into the stack (whose notifier
//! calls, made under our `lend`, take it again); `Link::nic_paths` and
//! `Link::rx` (raw spinlocks, also the poll's and the rx_handler's) are
//! taken alone. The softirq paths take only the raw spinlocks and hold
//! none while transmitting.

#![deny(clippy::arithmetic_side_effects)]

use crate::link::Link;
use crate::pool::Mem;
use crate::stats::{add, bump};
use crate::support::error::{emsgsize, enobufs};
use crate::support::netdev::{Rtnl, RtnlGuard};
use crate::support::netlend::{
    Claimant, Device, DeviceRef, NetdevEvent, NetdevNotifier, RxFrame, RxHandler,
    RxHandlerRegistration, RxHandlerResult, TxFrame,
};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use drack_core::layout::{FRAME_MAX, MTU_MAX};
use drack_core::mem::PoolMem;
use drack_core::nic::{forward, sent_by_vnic, vnic_mac, Forward, NicRecord, Port, NICS_MAX};
use drack_core::peer::Frame;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};

/// Whether giving a NIC back withdraws it from the peers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Withdraw {
    /// `unlend`, or the NIC unregistered: published at once.
    Announce,
    /// Teardown: the peers learn of it from our lease's expiry.
    Quiet,
}

/// A lent NIC's counters (`nics/<slot>/`).
#[derive(Default)]
pub(crate) struct NicCounters {
    /// vNICs' frames sent on the NIC, and their bytes (one copy each,
    /// out of the pool).
    pub(crate) to_nic_frames: AtomicU64,
    pub(crate) to_nic_bytes: AtomicU64,
    /// vNICs' frames not sent: no buffer, not under the vNIC's own
    /// address, or refused by the NIC's queue.
    pub(crate) to_nic_dropped: AtomicU64,
    /// Frames the NIC received copied into the pool for a vNIC (a
    /// broadcast counts once per peer), and their bytes.
    pub(crate) from_nic_frames: AtomicU64,
    pub(crate) from_nic_bytes: AtomicU64,
    /// Frames for a vNIC not passed on: no room at the peer, too long,
    /// or no memory.
    pub(crate) from_nic_dropped: AtomicU64,
}

/// What the softirq paths reach of a lent NIC: a counted reference and
/// its counters.
pub(crate) struct NicPath {
    pub(crate) dev: DeviceRef,
    pub(crate) slot: u8,
    pub(crate) counters: NicCounters,
}

/// The rx_handler of a lent NIC.
struct NicRx {
    link: Arc<Link>,
    path: Arc<NicPath>,
}

impl RxHandler for NicRx {
    fn handle(&self, frame: &RxFrame<'_>) -> RxHandlerResult {
        let Some(eth) = frame.eth_header() else {
            return RxHandlerResult::Pass;
        };
        let link = &self.link;
        match forward(&eth, link.me, self.path.slot, link.geom.hosts()) {
            Forward::Pass => RxHandlerResult::Pass,
            Forward::One(h) => {
                if link.nic_to_vnic(&self.path, h, frame) {
                    RxHandlerResult::Consumed
                } else {
                    RxHandlerResult::Dropped
                }
            }
            Forward::All => {
                for h in link.peers() {
                    link.nic_to_vnic(&self.path, h, frame);
                }
                RxHandlerResult::Pass
            }
        }
    }
}

impl Link {
    /// Copies `frame` (received on a lent NIC) into the pool for peer
    /// `h`'s vNIC of it; whether it went.
    fn nic_to_vnic(&self, path: &NicPath, h: u32, frame: &RxFrame<'_>) -> bool {
        let c = &path.counters;
        match self.nic_copy_in(path, h, frame) {
            Ok(len) => {
                bump(&c.from_nic_frames);
                add(&c.from_nic_bytes, len as u64);
                true
            }
            Err(_) => {
                bump(&c.from_nic_dropped);
                false
            }
        }
    }

    /// The copy into the pool; the frame's length.
    fn nic_copy_in(&self, path: &NicPath, h: u32, frame: &RxFrame<'_>) -> Result<usize> {
        let len = frame.frame_len().ok_or(EINVAL)?;
        // GRO is off on a lent NIC; anything longer is not a frame a
        // vNIC can take.
        if len > FRAME_MAX as usize {
            return Err(emsgsize());
        }
        let mut buf = KVec::from_elem(0u8, len, GFP_ATOMIC)?;
        frame.copy_frame(&mut buf)?;
        let mem = self.mem().ok_or(ENODEV)?;
        let by_value = self.by_value.load(Ordering::Relaxed);
        let port = Port::FromNic(path.slot);
        self.send_to(&mem, h, &buf, by_value, None, None, port)
            .map_err(|_| enobufs())?;
        Ok(len)
    }

    /// A vNIC's frame from peer `p` for our NIC `slot` (the poll): copied
    /// out of the pool and sent on the NIC. The caller gives the buffers
    /// back.
    pub(crate) fn to_nic(&self, mem: &Mem<'_>, p: u32, slot: u8, f: &Frame) {
        let path = self
            .nic_paths
            .lock()
            .get(usize::from(slot))
            .and_then(Option::clone);
        let Some(path) = path else {
            // Not lent (any more: the peer's vNIC sees its carrier go), or
            // never: a hostile peer's.
            bump(&self.counters.rx_unlent_nic);
            bump(&self.counters.rx_dropped);
            crate::support::pr_info_ratelimited!(
                "host {}'s frame for NIC {} dropped: this host does not lend one there\n",
                p,
                slot
            );
            return;
        };
        let c = &path.counters;
        match self.nic_send(mem, &path, p, f) {
            Ok(()) => {
                bump(&c.to_nic_frames);
                add(&c.to_nic_bytes, u64::from(f.len));
            }
            Err(e) => {
                bump(&c.to_nic_dropped);
                if e == EPERM {
                    crate::support::pr_info_ratelimited!(
                        "host {}'s frame for NIC {} not sent: its source address is not that host's vNIC's\n",
                        p,
                        slot
                    );
                }
            }
        }
    }

    fn nic_send(&self, mem: &Mem<'_>, path: &NicPath, p: u32, f: &Frame) -> Result {
        let dev = path.dev.get();
        let mut tx = TxFrame::alloc(&dev, f.len)?;
        let buf = tx.put(f.len)?;
        let mut at = 0usize;
        for (_, off, l) in f.parts() {
            let end = at.checked_add(usize::from(l)).ok_or(EINVAL)?;
            let part = buf.get_mut(at..end).ok_or(EINVAL)?;
            mem.read(off, part).map_err(|_| EIO)?;
            at = end;
        }
        // Only as the vNIC it came from: a peer sends nothing under
        // another's address or the NIC's own.
        if !sent_by_vnic(buf, self.me, path.slot, p) {
            return Err(EPERM);
        }
        tx.xmit(&dev)
    }
}

/// A NIC lent in a slot, and what undoes it.
struct Lent {
    path: Arc<NicPath>,
    handler: Option<RxHandlerRegistration<NicRx>>,
    /// The vNIC addresses in its unicast filter.
    macs: KVec<[u8; 6]>,
    /// GRO was on before.
    gro_was: bool,
}

/// This host's lent NICs.
pub(crate) struct Owner {
    link: Arc<Link>,
    lent: Pin<KBox<Mutex<[Option<Lent>; NICS_MAX]>>>,
    /// The last generation handed out (one more per lending).
    generation: AtomicU32,
}

/// Why an interface cannot be lent, for the log.
fn claimant(c: Claimant) -> &'static str {
    match c {
        Claimant::Bridge => "a bridge port",
        Claimant::Bond => "a bond's slave",
        Claimant::Macvlan => "a macvlan's lower device",
        Claimant::Team => "a team port",
        Claimant::Openvswitch => "an Open vSwitch port",
        Claimant::RxHandler => "claimed by another rx_handler",
    }
}

impl Owner {
    pub(crate) fn new(link: Arc<Link>) -> Result<Arc<Owner>> {
        let lent = KBox::pin_init(
            new_mutex!([const { None }; NICS_MAX], "drack:lent"),
            GFP_KERNEL,
        )?;
        // Generations of this load start above any of an earlier one the
        // peers may still hold: they are made from our epoch.
        let epoch = link.rx.lock().epoch;
        let generation = AtomicU32::new(epoch.wrapping_shl(8));
        Ok(Arc::new(
            Owner {
                link,
                lent,
                generation,
            },
            GFP_KERNEL,
        )?)
    }

    /// Lends interface `name`; its slot. RTNL serialises every change
    /// of the slots (lend, unlend, the notifier); `lent` is held only
    /// around reading or storing them, never across a call into the
    /// stack, whose notifier calls would take it again.
    pub(crate) fn lend(&self, name: &CStr) -> Result<u8> {
        let dev = DeviceRef::by_name(name).inspect_err(|_| {
            pr_err!("lend {:?}: no such interface\n", name);
        })?;
        let rtnl = RtnlGuard::lock();
        let slot = {
            let lent = self.lent.lock();
            self.may_lend(&rtnl, &lent, &dev.get())?;
            (0u8..)
                .zip(lent.iter())
                .find(|(_, l)| l.is_none())
                .map(|(s, _)| s)
                .ok_or_else(|| {
                    pr_err!("lend {:?}: all {} slots are lent\n", name, NICS_MAX);
                    ENOSPC
                })?
        };
        let l = self.claim(&rtnl, dev, slot)?;
        let generation = self.next_generation();
        self.publish(slot, &l.path.dev.get(), generation);
        if let Some(s) = self.lent.lock().get_mut(usize::from(slot)) {
            *s = Some(l);
        }
        pr_info!(
            "lent {:?} as NIC {} (generation {})\n",
            name,
            slot,
            generation
        );
        Ok(slot)
    }

    /// Lends each interface of `list` (the `lend=` parameter: names
    /// separated by commas); the first refusal is the error, and what
    /// was lent before it is given back by the caller's `UnlendAll`.
    pub(crate) fn lend_list(&self, list: &[u8]) -> Result {
        for part in list.split(|b| *b == b',').filter(|p| !p.is_empty()) {
            let mut buf = [0u8; crate::nicfiles::IFNAME_MAX + 1];
            let name = crate::nicfiles::ifname(part, &mut buf)
                .inspect_err(|_| pr_err!("lend=: a name is not an interface name\n"))?;
            self.lend(name)?;
        }
        Ok(())
    }

    /// Refuses what cannot be lent, saying why.
    fn may_lend(&self, rtnl: &Rtnl, lent: &[Option<Lent>; NICS_MAX], d: &Device<'_>) -> Result {
        let name = d.name();
        if lent.iter().flatten().any(|l| l.path.dev.get().is(d)) {
            pr_err!("lend {:?}: lent already\n", name);
            return Err(EBUSY);
        }
        let ours = d.mac().is_some_and(|m| {
            m[..5] == crate::link::MAC_PREFIX || drack_core::nic::vnic_of(&m).is_some()
        });
        if !d.is_ethernet() || d.is_loopback() || ours {
            pr_err!("lend {:?}: not a physical Ethernet interface\n", name);
            return Err(EINVAL);
        }
        if d.mtu() > MTU_MAX {
            pr_err!("lend {:?}: MTU {} is above {}\n", name, d.mtu(), MTU_MAX);
            return Err(EINVAL);
        }
        if let Some(c) = d.claimed_by(rtnl) {
            pr_err!("lend {:?}: it is {}\n", name, claimant(c));
            return Err(EBUSY);
        }
        Ok(())
    }

    /// Claims `dev` for `slot`: filters, GRO, the softirq path and the
    /// rx_handler, each undone if a later one fails.
    fn claim(&self, rtnl: &Rtnl, dev: DeviceRef, slot: u8) -> Result<Lent> {
        let link = &self.link;
        let d = dev.get();
        let gro_was = d.gro_on();
        let mut l = Lent {
            path: Arc::new(
                NicPath {
                    dev: dev.hold(),
                    slot,
                    counters: NicCounters::default(),
                },
                GFP_KERNEL,
            )?,
            handler: None,
            macs: KVec::new(),
            gro_was,
        };
        if gro_was {
            d.set_gro(rtnl, false);
        }
        for h in link.peers() {
            let mac = vnic_mac(link.me, slot, h);
            if let Err(e) = d.uc_add(rtnl, &mac) {
                pr_err!(
                    "lend {:?}: its unicast filter refused an address\n",
                    d.name()
                );
                self.release(rtnl, l);
                return Err(e);
            }
            if l.macs.push(mac, GFP_KERNEL).is_err() {
                let _ = d.uc_del(rtnl, &mac);
                self.release(rtnl, l);
                return Err(ENOMEM);
            }
        }
        if let Some(s) = link.nic_paths.lock().get_mut(usize::from(slot)) {
            *s = Some(l.path.clone());
        }
        let rx = Arc::new(
            NicRx {
                link: link.clone(),
                path: l.path.clone(),
            },
            GFP_KERNEL,
        )
        .map_err(Error::from);
        match rx.and_then(|rx| RxHandlerRegistration::register(&dev, rtnl, rx)) {
            Ok(h) => l.handler = Some(h),
            Err(e) => {
                pr_err!(
                    "lend {:?}: cannot take its receive path: {:?}\n",
                    d.name(),
                    e
                );
                self.release(rtnl, l);
                return Err(e);
            }
        }
        Ok(l)
    }

    /// Undoes a claim (RTNL held, the slot already unpublished).
    fn release(&self, rtnl: &Rtnl, l: Lent) {
        let slot = l.path.slot;
        if let Some(h) = l.handler {
            // Waits for running handlers (`synchronize_net`).
            drop(h.unregister(rtnl));
        }
        if let Some(s) = self.link.nic_paths.lock().get_mut(usize::from(slot)) {
            s.take();
        }
        let d = l.path.dev.get();
        for mac in l.macs.iter() {
            let _ = d.uc_del(rtnl, mac);
        }
        if l.gro_was {
            d.set_gro(rtnl, true);
        }
    }

    fn next_generation(&self) -> u32 {
        let g = self
            .generation
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        // 0 means "not lent".
        if g == 0 {
            self.next_generation()
        } else {
            g
        }
    }

    /// Publishes slot `slot` in our heartbeat's table (`generation` 0:
    /// not lent), written to the pool at once.
    fn publish(&self, slot: u8, d: &Device<'_>, generation: u32) {
        let rec = NicRecord {
            generation,
            mtu: u16::try_from(d.mtu()).unwrap_or(u16::MAX),
            carrier: d.is_up() && d.carrier_ok(),
        };
        {
            let mut rx = self.link.rx.lock();
            if let Some(r) = rx.nics.nics.get_mut(usize::from(slot)) {
                *r = if generation == 0 {
                    NicRecord::default()
                } else {
                    rec
                };
            }
        }
        self.link.announce_nics();
    }

    /// Gives back the interface in `slot` (RTNL held, `lent` not); the
    /// peers are told so if `withdraw` says.
    fn unlend_slot(&self, rtnl: &Rtnl, slot: u8, withdraw: Withdraw) {
        let taken = self
            .lent
            .lock()
            .get_mut(usize::from(slot))
            .and_then(Option::take);
        let Some(l) = taken else {
            return;
        };
        if withdraw == Withdraw::Announce {
            self.publish(slot, &l.path.dev.get(), 0);
        }
        pr_info!(
            "NIC {} ({:?}) is no longer lent\n",
            slot,
            l.path.dev.get().name()
        );
        self.release(rtnl, l);
    }

    /// The slot `dev` is lent in.
    fn slot_of(&self, dev: &Device<'_>) -> Option<u8> {
        let lent = self.lent.lock();
        (0u8..)
            .zip(lent.iter())
            .find(|(_, l)| l.as_ref().is_some_and(|l| l.path.dev.get().is(dev)))
            .map(|(s, _)| s)
    }

    /// Gives back interface `name`.
    pub(crate) fn unlend(&self, name: &CStr) -> Result {
        let rtnl = RtnlGuard::lock();
        let slot = {
            let lent = self.lent.lock();
            (0u8..)
                .zip(lent.iter())
                .find(|(_, l)| {
                    l.as_ref()
                        .is_some_and(|l| l.path.dev.get().name().as_bytes() == name.as_bytes())
                })
                .map(|(s, _)| s)
        };
        let slot = slot.ok_or_else(|| {
            pr_err!("unlend {:?}: not lent\n", name);
            ENOENT
        })?;
        self.unlend_slot(&rtnl, slot, Withdraw::Announce);
        Ok(())
    }

    /// Gives back every lent interface (teardown) without withdrawing
    /// it: the table our last beats publish keeps it, so the peers keep
    /// their vNICs (carrier down at our lease's expiry) for a reload
    /// that lends it again (`lend=`).
    pub(crate) fn unlend_all(&self) {
        let rtnl = RtnlGuard::lock();
        for slot in 0..NICS_MAX as u8 {
            self.unlend_slot(&rtnl, slot, Withdraw::Quiet);
        }
    }

    /// What our heartbeat publishes for `slot`.
    pub(crate) fn record(&self, slot: u8) -> NicRecord {
        let rx = self.link.rx.lock();
        rx.nics
            .nics
            .get(usize::from(slot))
            .copied()
            .unwrap_or_default()
    }

    /// The interface name and counters of `slot`, for sysfs.
    pub(crate) fn with_slot<R>(
        &self,
        slot: u8,
        f: impl FnOnce(Option<(&CStr, &NicPath)>) -> R,
    ) -> R {
        let lent = self.lent.lock();
        let l = lent.get(usize::from(slot)).and_then(Option::as_ref);
        f(l.map(|l| (l.path.dev.get().name(), &*l.path)))
    }
}

impl NetdevNotifier for Owner {
    fn event(&self, rtnl: &Rtnl, event: NetdevEvent, dev: &Device<'_>) {
        let Some(slot) = self.slot_of(dev) else {
            return;
        };
        match event {
            NetdevEvent::Unregister => {
                pr_info!("{:?} is going away\n", dev.name());
                self.unlend_slot(rtnl, slot, Withdraw::Announce);
            }
            // The vNICs follow the NIC's carrier, and are made again
            // for a new MTU.
            NetdevEvent::Up | NetdevEvent::Down | NetdevEvent::Change => {
                let g = self.record(slot).generation;
                self.publish(slot, dev, g);
            }
            NetdevEvent::ChangeMtu => {
                let g = self.next_generation();
                self.publish(slot, dev, g);
            }
            _ => {}
        }
    }
}
