// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_netlend`: claiming interfaces other drivers
//! own, on the loopback interface `lo` (which every test restores) and
//! on a test interface: references by name, rx_handlers, transmit,
//! receive by copy, the netdevice notifier, unicast filter entries, GRO.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use cxlf_support as support;
use support::netdev::{NetDevice, Netdev, Placement, Registration, Rtnl, RtnlGuard, SkBuff, Stats};
use support::netlend::{
    Claimant, Device, DeviceRef, NetdevEvent, NetdevNotifier, NotifierRegistration, PacketType,
    RxFrame, RxHandler, RxHandlerRegistration, RxHandlerResult, TxFrame,
};
use support::{kassert, kassert_eq, kunit_tests};

/// A local experimental EtherType: nothing else on `lo` uses it.
const TEST_TYPE: u16 = 0x88b5;
/// Bytes of a test frame.
const FRAME_LEN: usize = 74;
/// The test frames' source.
const SOURCE: [u8; 6] = [2, 0, 0, 0, 0, 0xbb];

/// A test frame to `dest`: the payload starts with `tag`, then counts.
fn test_frame(dest: [u8; 6], tag: u8) -> [u8; FRAME_LEN] {
    let mut f = [0u8; FRAME_LEN];
    f[..6].copy_from_slice(&dest);
    f[6..12].copy_from_slice(&SOURCE);
    f[12..14].copy_from_slice(&TEST_TYPE.to_be_bytes());
    f[14] = tag;
    for (i, b) in f.iter_mut().enumerate().skip(15) {
        *b = i as u8;
    }
    f
}

/// An rx_handler that checks the test frames it sees: consumes those
/// with an even tag, passes the rest (and all other traffic) on.
#[derive(Default)]
struct Seen {
    frames: AtomicU64,
    intact: AtomicU64,
    consumed: AtomicU64,
    pkt_type: AtomicU64,
}

impl RxHandler for Seen {
    fn handle(&self, f: &RxFrame<'_>) -> RxHandlerResult {
        if f.protocol() != TEST_TYPE {
            return RxHandlerResult::Pass;
        }
        self.frames.fetch_add(1, Ordering::Relaxed);
        let mut buf = [0u8; 128];
        let (Ok(n), Some(dest)) = (f.copy_frame(&mut buf), f.dest()) else {
            return RxHandlerResult::Dropped;
        };
        let tag = buf[14];
        let mut first = [0u8; 1];
        if n == FRAME_LEN
            && f.frame_len() == Some(n)
            && buf[..n] == test_frame(dest, tag)
            && f.len() as usize == n - 14
            && f.source() == Some(SOURCE)
            && f.copy_bits(0, &mut first).is_ok()
            && first[0] == tag
        {
            self.intact.fetch_add(1, Ordering::Relaxed);
        }
        let ty = match f.pkt_type() {
            PacketType::Host => 1,
            PacketType::Broadcast => 2,
            PacketType::Multicast => 3,
            PacketType::OtherHost => 4,
            PacketType::Other(t) => 100 + u64::from(t),
        };
        self.pkt_type.store(ty, Ordering::Relaxed);
        if tag % 2 == 0 {
            self.consumed.fetch_add(1, Ordering::Relaxed);
            RxHandlerResult::Consumed
        } else {
            RxHandlerResult::Pass
        }
    }
}

/// Waits up to a second for `count` to reach `n`.
fn wait_for(count: &AtomicU64, n: u64) -> Result {
    for _ in 0..200 {
        if count.load(Ordering::Relaxed) >= n {
            break;
        }
        support::time::sleep_ms_interruptible(5)?;
    }
    Ok(())
}

/// Sends test frame `tag` to `dest` on `dev`.
fn send(dev: &Device<'_>, dest: [u8; 6], tag: u8) -> Result {
    let mut tx = TxFrame::alloc(dev, FRAME_LEN as u32)?;
    tx.put_data(&test_frame(dest, tag))?;
    tx.xmit(dev)
}

fn lo_is_found_by_name() -> Result {
    let lo = DeviceRef::by_name(c_str!("lo"))?;
    let dev = lo.get();
    kassert_eq!(dev.name().as_bytes(), b"lo");
    kassert_eq!(dev.ifindex(), 1);
    kassert!(dev.is_loopback() && dev.is_up() && dev.carrier_ok());
    // Without a filter of its own: unicast entries make it promiscuous.
    kassert!(!dev.filters_unicast());
    kassert!(!dev.is_ethernet(), "lo is ARPHRD_LOOPBACK");
    kassert_eq!(dev.mac(), Some([0u8; 6]));
    kassert!(dev.mtu() >= 1500);
    kassert!(dev.is(&lo.hold().get()));
    kassert!(matches!(
        DeviceRef::by_name(c_str!("cxlfnone0")),
        Err(e) if e == ENODEV
    ));
    let rtnl = RtnlGuard::lock();
    kassert!(dev.is_registered(&rtnl));
    kassert_eq!(dev.claimed_by(&rtnl), None);
    Ok(())
}

fn rx_handler_sees_frames_sent_on_lo_once_each() -> Result {
    let lo = DeviceRef::by_name(c_str!("lo"))?;
    let seen = Arc::new(Seen::default(), GFP_KERNEL)?;
    let reg = {
        let rtnl = RtnlGuard::lock();
        RxHandlerRegistration::register(&lo, &rtnl, seen.clone())?
    };
    let dest = [2, 0, 0, 0, 0, 0xaa];
    // Consumed: seen intact, once, addressed to another host.
    send(&lo.get(), dest, 2)?;
    wait_for(&seen.frames, 1)?;
    kassert_eq!(seen.frames.load(Ordering::Relaxed), 1);
    kassert_eq!(seen.intact.load(Ordering::Relaxed), 1);
    kassert_eq!(seen.consumed.load(Ordering::Relaxed), 1);
    kassert_eq!(seen.pkt_type.load(Ordering::Relaxed), 4);
    // Passed on (the stack then drops it: not for this host). `lo`'s
    // broadcast address is all zeroes, so to `eth_type_trans` on `lo`
    // all ones is multicast (broadcast is checked on an Ethernet
    // interface below).
    send(&lo.get(), [0xff; 6], 3)?;
    wait_for(&seen.frames, 2)?;
    kassert_eq!(seen.intact.load(Ordering::Relaxed), 2);
    kassert_eq!(seen.consumed.load(Ordering::Relaxed), 1);
    kassert_eq!(seen.pkt_type.load(Ordering::Relaxed), 3);
    // The interface has a handler: a second one is refused. (RTNL is
    // let go before anything is checked: dropping a registration that
    // succeeded by mistake takes it.)
    let other = Arc::new(Seen::default(), GFP_KERNEL)?;
    let (claimant, again) = {
        let rtnl = RtnlGuard::lock();
        let claimant = reg.dev().claimed_by(&rtnl);
        (claimant, RxHandlerRegistration::register(&lo, &rtnl, other))
    };
    kassert_eq!(claimant, Some(Claimant::RxHandler));
    kassert!(matches!(again, Err(e) if e == EBUSY));
    // Frames too short or too long for the interface are refused.
    let mut short = TxFrame::alloc(&lo.get(), 10)?;
    short.put(10)?;
    kassert!(matches!(short.xmit(&lo.get()), Err(e) if e == EINVAL));
    // Unregistered: no more frames reach it, and `lo` is free again.
    let back = {
        let rtnl = RtnlGuard::lock();
        let back = reg.unregister(&rtnl);
        kassert_eq!(lo.get().claimed_by(&rtnl), None);
        back
    };
    send(&lo.get(), dest, 4)?;
    support::time::sleep_ms_interruptible(50)?;
    kassert_eq!(back.frames.load(Ordering::Relaxed), 2);
    // Dropping a registration unregisters it too.
    let reg = {
        let rtnl = RtnlGuard::lock();
        RxHandlerRegistration::register(&lo, &rtnl, seen.clone())?
    };
    drop(reg);
    let rtnl = RtnlGuard::lock();
    kassert_eq!(lo.get().claimed_by(&rtnl), None);
    Ok(())
}

/// A test interface that drops what it is asked to send.
struct Quiet;

impl NetDevice for Quiet {
    fn open(_this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        Ok(())
    }

    fn stop(_this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        Ok(())
    }

    fn start_xmit(
        _this: &Arc<Self>,
        _dev: &Netdev<'_>,
        _skb: SkBuff,
        _queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        Ok(())
    }

    fn stats(_this: &Arc<Self>, _stats: &mut Stats) {}

    fn change_mtu(_this: &Arc<Self>, _dev: &Netdev<'_>, _mtu: u32) -> Result {
        Ok(())
    }
}

fn receive_copy_reaches_the_interface_rx_handler() -> Result {
    let mac = [2, 0, 0, 0, 0, 0x11];
    let reg = Registration::register(Arc::new(Quiet, GFP_KERNEL)?, &Placement::detached(mac))?;
    let dev = DeviceRef::by_name(reg.name())?;
    kassert!(dev.get().is_ethernet());
    kassert_eq!(dev.get().mac(), Some(mac));
    let seen = Arc::new(Seen::default(), GFP_KERNEL)?;
    let rx = {
        let rtnl = RtnlGuard::lock();
        RxHandlerRegistration::register(&dev, &rtnl, seen.clone())?
    };
    // Down: the backlog refuses it.
    kassert!(reg.netdev().receive_copy(&test_frame(mac, 6)).is_err());
    reg.open()?;
    reg.netdev().receive_copy(&test_frame(mac, 6))?;
    wait_for(&seen.frames, 1)?;
    kassert_eq!(seen.intact.load(Ordering::Relaxed), 1);
    kassert_eq!(seen.pkt_type.load(Ordering::Relaxed), 1);
    reg.netdev().receive_copy(&test_frame([0xff; 6], 8))?;
    wait_for(&seen.frames, 2)?;
    kassert_eq!(seen.intact.load(Ordering::Relaxed), 2);
    kassert_eq!(seen.pkt_type.load(Ordering::Relaxed), 2);
    kassert_eq!(seen.consumed.load(Ordering::Relaxed), 2);
    kassert!(reg.netdev().receive_copy(&[0u8; 13]).is_err());
    // The handler and the reference go before the interface.
    drop(rx);
    drop(dev);
    drop(reg);
    Ok(())
}

/// A notifier that counts `lo`'s events.
struct LoEvents {
    lo: DeviceRef,
    register: AtomicU64,
    up: AtomicU64,
    down: AtomicU64,
    unregister: AtomicU64,
    mtu: AtomicU64,
    features: AtomicU64,
    others: AtomicU64,
}

impl NetdevNotifier for LoEvents {
    fn event(&self, rtnl: &Rtnl, event: NetdevEvent, dev: &Device<'_>) {
        if !dev.is(&self.lo.get()) {
            self.others.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let count = match event {
            NetdevEvent::Register => &self.register,
            NetdevEvent::Up => &self.up,
            NetdevEvent::Down => &self.down,
            NetdevEvent::Unregister => &self.unregister,
            NetdevEvent::ChangeMtu => &self.mtu,
            NetdevEvent::FeatChange => &self.features,
            _ => return,
        };
        // Under RTNL, as the proof says: a call that asserts it.
        let _ = dev.claimed_by(rtnl);
        count.fetch_add(1, Ordering::Relaxed);
    }
}

fn notifier_sees_lo_replayed_and_changed() -> Result {
    let events = Arc::new(
        LoEvents {
            lo: DeviceRef::by_name(c_str!("lo"))?,
            register: AtomicU64::new(0),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            unregister: AtomicU64::new(0),
            mtu: AtomicU64::new(0),
            features: AtomicU64::new(0),
            others: AtomicU64::new(0),
        },
        GFP_KERNEL,
    )?;
    let reg = NotifierRegistration::register(events.clone())?;
    // Registering replays lo's registration and its being up.
    kassert_eq!(events.register.load(Ordering::Relaxed), 1);
    kassert_eq!(events.up.load(Ordering::Relaxed), 1);
    let lo = events.lo.get();
    let mtu = lo.mtu();
    let gro = lo.gro_on();
    {
        let rtnl = RtnlGuard::lock();
        let changed = lo.set_mtu(&rtnl, mtu - 1000);
        let changed_to = lo.mtu();
        // Restored whatever happened.
        let back = lo.set_mtu(&rtnl, mtu);
        kassert!(changed.is_ok() && back.is_ok());
        kassert_eq!(changed_to, mtu - 1000);
        lo.set_gro(&rtnl, !gro);
        let toggled = lo.gro_on();
        lo.set_gro(&rtnl, gro);
        kassert_eq!(toggled, !gro);
        kassert_eq!(lo.gro_on(), gro);
    }
    kassert_eq!(lo.mtu(), mtu);
    kassert_eq!(events.mtu.load(Ordering::Relaxed), 2);
    kassert_eq!(events.features.load(Ordering::Relaxed), 2);
    // Unregistering replays lo going down and away (lo stays).
    drop(reg);
    kassert_eq!(events.down.load(Ordering::Relaxed), 1);
    kassert_eq!(events.unregister.load(Ordering::Relaxed), 1);
    kassert!(lo.is_up());
    Ok(())
}

fn unicast_filter_entries_are_counted() -> Result {
    let lo = DeviceRef::by_name(c_str!("lo"))?;
    let dev = lo.get();
    let mac = [2, 0, 0, 0, 0, 0x33];
    let rtnl = RtnlGuard::lock();
    let before = dev.uc_count(&rtnl);
    // Every change is undone before anything is checked.
    let once = dev.uc_add(&rtnl, &mac);
    let listed_once = dev.uc_count(&rtnl);
    // A second user of the same entry is counted, not listed twice.
    let twice = dev.uc_add(&rtnl, &mac);
    let listed = dev.uc_count(&rtnl);
    let first_del = dev.uc_del(&rtnl, &mac);
    let after_one = dev.uc_count(&rtnl);
    let second_del = dev.uc_del(&rtnl, &mac);
    kassert!(once.is_ok() && twice.is_ok() && first_del.is_ok() && second_del.is_ok());
    kassert_eq!(listed_once, before + 1);
    kassert_eq!(listed, before + 1);
    kassert_eq!(after_one, before + 1);
    kassert_eq!(dev.uc_count(&rtnl), before);
    kassert!(matches!(dev.uc_del(&rtnl, &mac), Err(e) if e == ENOENT));
    Ok(())
}

kunit_tests!(
    cxlfabric_support_netlend,
    [
        lo_is_found_by_name,
        rx_handler_sees_frames_sent_on_lo_once_each,
        receive_copy_reaches_the_interface_rx_handler,
        notifier_sees_lo_replayed_and_changed,
        unicast_filter_entries_are_counted
    ]
);
