// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_netdev`: the network device wrapper, NAPI
//! and the RTNL lock.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

use cxlf_support as support;
use support::napi::{Napi, NapiPoll, Poll};
use support::netdev::{
    NetDevice, Netdev, Placement, Registration as NetRegistration, RtnlGuard, SkBuff,
    Stats as NetStats,
};
use support::{kassert, kassert_eq, kunit_tests};

/// A test interface: counts what the stack asks of it.
#[derive(Default)]
struct TestIf {
    opens: AtomicU64,
    stops: AtomicU64,
    sent: AtomicU64,
    last_len: AtomicU64,
    mtu: AtomicU64,
}

impl NetDevice for TestIf {
    fn open(this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        this.opens.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn stop(this: &Arc<Self>, _dev: &Netdev<'_>) -> Result {
        this.stops.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn start_xmit(
        this: &Arc<Self>,
        _dev: &Netdev<'_>,
        skb: SkBuff,
        _queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        let mut head = [0u8; 14];
        // The frame is addressed to the interface itself.
        if skb.copy_to(&mut head) == Ok(14) && head[..6] == [2, 0, 0, 0, 0, 1] {
            this.sent.fetch_add(1, Ordering::Relaxed);
        }
        this.last_len.store(u64::from(skb.len()), Ordering::Relaxed);
        Ok(())
    }

    fn stats(this: &Arc<Self>, stats: &mut NetStats) {
        stats.tx_packets = this.sent.load(Ordering::Relaxed);
    }

    fn change_mtu(this: &Arc<Self>, _dev: &Netdev<'_>, mtu: u32) -> Result {
        this.mtu.store(u64::from(mtu), Ordering::Relaxed);
        Ok(())
    }
}

fn netdev_callbacks_reach_the_driver_until_unregistered() -> Result {
    let this = Arc::new(TestIf::default(), GFP_KERNEL)?;
    let at = Placement::detached([2, 0, 0, 0, 0, 1]).mtu_range(68, 9000);
    let reg = NetRegistration::register(this.clone(), &at)?;
    kassert!(reg.name().as_bytes().starts_with(b"eth"));
    // The range is the stack's to enforce; the driver sees what passes.
    reg.set_mtu(9000)?;
    kassert_eq!(this.mtu.load(Ordering::Relaxed), 9000);
    kassert!(reg.set_mtu(9001).is_err());
    kassert_eq!(reg.mtu(), 9000);
    reg.open()?;
    kassert_eq!(this.opens.load(Ordering::Relaxed), 1);
    reg.set_carrier(true);
    kassert!(reg.carrier_ok());
    // The queue starts when link watch has seen the carrier: retry.
    for _ in 0..200 {
        let _ = reg.send_frame(100);
        if this.sent.load(Ordering::Relaxed) > 0 {
            break;
        }
        support::time::sleep_ms_interruptible(5)?;
    }
    kassert!(this.sent.load(Ordering::Relaxed) >= 1);
    kassert_eq!(this.last_len.load(Ordering::Relaxed), 100);
    kassert_eq!(reg.stats().tx_packets, this.sent.load(Ordering::Relaxed));
    kassert!(reg.send_frame(10).is_err(), "shorter than a header");
    reg.close();
    kassert_eq!(this.stops.load(Ordering::Relaxed), 1);
    reg.open()?;
    // Unregistering takes it down (stop runs) and ends the callbacks.
    drop(reg);
    kassert_eq!(this.stops.load(Ordering::Relaxed), 2);
    Ok(())
}

/// A test interface that takes the stack's TX watchdog: records the
/// queue it names.
#[derive(Default)]
struct WatchedIf {
    timeouts: AtomicU64,
    queue: AtomicU64,
}

impl NetDevice for WatchedIf {
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

    fn stats(_this: &Arc<Self>, _stats: &mut NetStats) {}

    fn change_mtu(_this: &Arc<Self>, _dev: &Netdev<'_>, _mtu: u32) -> Result {
        Ok(())
    }

    const HAS_TX_TIMEOUT: bool = true;

    fn tx_timeout(this: &Arc<Self>, _dev: &Netdev<'_>, queue: u32) {
        this.queue.store(u64::from(queue), Ordering::Relaxed);
        this.timeouts.fetch_add(1, Ordering::Relaxed);
    }
}

fn netdev_tx_watchdog_names_a_stopped_queue() -> Result {
    let this = Arc::new(WatchedIf::default(), GFP_KERNEL)?;
    let at = Placement::detached([2, 0, 0, 0, 0, 3])
        .queues(2, 2)
        .watchdog_ms(100);
    let reg = NetRegistration::register(this.clone(), &at)?;
    reg.open()?;
    reg.set_carrier(true);
    // Queue 1 stops and nothing wakes it. The watchdog's timer is rounded
    // to whole seconds, and runs once link watch has activated the queues.
    reg.netdev().txq_stop(1);
    for _ in 0..400 {
        if this.timeouts.load(Ordering::Relaxed) > 0 {
            break;
        }
        support::time::sleep_ms_interruptible(10)?;
    }
    kassert!(this.timeouts.load(Ordering::Relaxed) >= 1);
    kassert_eq!(this.queue.load(Ordering::Relaxed), 1);
    drop(reg);
    Ok(())
}

/// A NAPI poll that counts what the stack asks of it.
#[derive(Default)]
struct TestPoll {
    polls: AtomicU64,
    budget: AtomicU64,
    completed: AtomicU64,
}

impl Poll for TestPoll {
    fn poll(this: ArcBorrow<'_, Self>, napi: &NapiPoll<'_>, budget: u32) -> u32 {
        this.polls.fetch_add(1, Ordering::Relaxed);
        this.budget.store(u64::from(budget), Ordering::Relaxed);
        if napi.complete_done(0) {
            this.completed.fetch_add(1, Ordering::Relaxed);
        }
        0
    }
}

fn napi_polls_only_while_enabled() -> Result {
    let at = Placement::detached([2, 0, 0, 0, 0, 2]);
    let reg = NetRegistration::register(Arc::new(TestIf::default(), GFP_KERNEL)?, &at)?;
    let p = Arc::new(TestPoll::default(), GFP_KERNEL)?;
    let polls = || p.polls.load(Ordering::Relaxed);
    let napi = Napi::add(&reg.netdev(), p.clone(), 0)?;
    // Not enabled yet: scheduling does nothing.
    napi.schedule();
    support::time::sleep_ms_interruptible(20)?;
    kassert_eq!(polls(), 0);
    napi.enable();
    napi.schedule();
    // Until a poll has completed: a poll counts itself before it
    // completes, and one that found a missed schedule polls again first.
    for _ in 0..200 {
        if p.completed.load(Ordering::Relaxed) > 0 {
            break;
        }
        support::time::sleep_ms_interruptible(5)?;
    }
    // At least once: the schedule while disabled may count as missed,
    // and the core polls again after completing.
    kassert!(polls() >= 1);
    kassert!(p.budget.load(Ordering::Relaxed) > 0);
    kassert!(p.completed.load(Ordering::Relaxed) >= 1);
    // Disabled again (waiting for a running poll): no more polls.
    napi.disable();
    let seen = polls();
    napi.schedule();
    support::time::sleep_ms_interruptible(20)?;
    kassert_eq!(polls(), seen);
    // Enabling twice or dropping an enabled context is safe.
    napi.enable();
    napi.enable();
    drop(napi);
    drop(reg);
    Ok(())
}

fn rtnl_try_lock_fails_without_unlocking() -> Result {
    let mut held = None;
    for _ in 0..200 {
        held = RtnlGuard::try_lock();
        if held.is_some() {
            break;
        }
        support::time::sleep_ms_interruptible(5)?;
    }
    kassert!(held.is_some(), "RTNL busy for a second");
    // Held: a second try fails, and failing leaves it held.
    kassert!(RtnlGuard::try_lock().is_none());
    kassert!(RtnlGuard::try_lock().is_none());
    drop(held);
    let again = RtnlGuard::try_lock();
    kassert!(again.is_some());
    Ok(())
}

kunit_tests!(
    cxlfabric_support_netdev,
    [
        netdev_callbacks_reach_the_driver_until_unregistered,
        napi_polls_only_while_enabled,
        rtnl_try_lock_fails_without_unlocking,
        netdev_tx_watchdog_names_a_stopped_queue
    ]
);
