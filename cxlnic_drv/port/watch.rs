// SPDX-License-Identifier: GPL-2.0

//! The watch: every [`WATCH_MS`] it frees the rings the device let go of,
//! follows the heartbeat (carrier off when it stands still, the device
//! configured afresh when it beats again or never took a config), sets
//! the carrier from the link, and restarts the rings when a queue pair
//! stalled (`recovery.rs`), paced.
//!
//! Locks: `watch` only around starting and stopping it (a run holds
//! none of the port's on entry). A run tries RTNL, never waits for it
//! (`stop` and `apply` hold it while they wait for the run), and then
//! takes `up` through `restart`; `stalled` takes `up`, then each
//! queue's `health`.

use super::state::{now_ms, Port, Watch, RETRY_FIRST_MS, RETRY_MAX_MS, WATCH_MS};
use crate::recovery::Why;
use crate::ring::device::{header, HEARTBEAT_TIMEOUT_MS, LINK_UP};
use crate::support::netdev::{Netdev, RtnlGuard};
use crate::support::workqueue::{Periodic, PeriodicWork};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

impl Port {
    /// The first stall of a running queue pair, if any (every queue's
    /// detector takes its look): the stack's TX watchdog first, then the
    /// ring core's rules.
    fn stalled(&self, now: u64, beat: u32) -> Option<(u32, Why)> {
        let up = self.up.lock();
        let up = up.as_ref().filter(|u| u.configured)?;
        let mut found = None;
        for (q, lane) in (0u32..).zip(up.lanes.iter()) {
            let stall = lane.napi.data().stalled(now, beat);
            if found.is_none() {
                found = stall.map(|s| (q, Why::Stalled(s)));
            }
        }
        let timed_out = self.timed_out.load(Ordering::Relaxed);
        if timed_out != 0 {
            return Some((timed_out.trailing_zeros(), Why::TxTimeout));
        }
        found
    }

    /// Starts the watch of an interface that is up.
    pub(super) fn start_watch(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        let w = Watch {
            port: this.clone(),
            dev: dev.hold(),
            beat: AtomicU32::new(this.io.heartbeat()),
            since_ms: AtomicU64::new(now_ms()),
            lost: AtomicBool::new(false),
            retry_ms: AtomicU64::new(0),
            backoff_ms: AtomicU64::new(RETRY_FIRST_MS),
        };
        // Its own queue: a restart waits on the device for up to seconds.
        let w =
            Periodic::start_own_queue(Arc::new(w, GFP_KERNEL)?, WATCH_MS, c_str!("cxlnic_watch"))?;
        *this.watch.lock() = Some(w);
        Ok(())
    }

    /// Stops the watch (waiting for a run in progress).
    pub(super) fn stop_watch(&self) {
        let w = self.watch.lock().take();
        drop(w);
    }
}

impl Watch {
    /// Configures the device afresh, under RTNL (as `open` does; the
    /// NAPI list changes). Not if RTNL is busy: `stop` and `apply` hold
    /// it while they wait for this watch. False if it should be tried
    /// again.
    fn reconfigure(&self, dev: &Netdev<'_>, now: u64, holding: bool) -> bool {
        if holding || now < self.retry_ms.load(Ordering::Relaxed) {
            return false;
        }
        let Some(_rtnl) = RtnlGuard::try_lock() else {
            return false;
        };
        pr_info!("{}: the device is running: configuring it\n", dev.name());
        let ok = self.port.restart(dev).is_ok() && self.port.configured();
        let backoff = self.backoff_ms.load(Ordering::Relaxed);
        if ok {
            self.backoff_ms.store(RETRY_FIRST_MS, Ordering::Relaxed);
        } else {
            self.retry_ms
                .store(now.saturating_add(backoff), Ordering::Relaxed);
            self.backoff_ms.store(
                backoff.saturating_mul(2).min(RETRY_MAX_MS),
                Ordering::Relaxed,
            );
        }
        ok
    }

    /// Restarts the rings of a port whose queue pair `q` stalled (`why`),
    /// under RTNL (as `reconfigure`), paced (`Pace`). Not if RTNL is
    /// busy: the stall shows again on the next run.
    fn reset(&self, dev: &Netdev<'_>, q: u32, why: Why, now: u64) {
        let port = &self.port;
        if !port.pace.allows(now) {
            return;
        }
        let Some(_rtnl) = RtnlGuard::try_lock() else {
            return;
        };
        // Counted, paced and logged as it starts; the watchdog's marks
        // are answered by it.
        port.resets.count(why);
        port.pace.note(now);
        port.timed_out.store(0, Ordering::Relaxed);
        crate::support::pr_info_ratelimited!(
            "{}: queue {}: {}: restarting the rings of every queue pair\n",
            dev.name(),
            q,
            why
        );
        // A device that does not take the new config is retried as any.
        let _ = port.restart(dev);
    }

    /// Takes the heartbeat `beat` at `now`: a device that beats again
    /// after it was lost, or that never took a config, is configured
    /// afresh (not while rings are `holding`); one that stood still for
    /// [`HEARTBEAT_TIMEOUT_MS`] is lost.
    fn follow_heartbeat(&self, dev: &Netdev<'_>, beat: u32, now: u64, holding: bool) {
        if beat != self.beat.swap(beat, Ordering::Relaxed) {
            self.since_ms.store(now, Ordering::Relaxed);
            if (self.lost.load(Ordering::Relaxed) || !self.port.configured())
                && self.reconfigure(dev, now, holding)
            {
                self.lost.store(false, Ordering::Relaxed);
            }
        } else if !self.lost.load(Ordering::Relaxed)
            && now.saturating_sub(self.since_ms.load(Ordering::Relaxed))
                >= u64::from(HEARTBEAT_TIMEOUT_MS)
        {
            pr_info!(
                "{}: the device's heartbeat stood still for {} ms: carrier off\n",
                dev.name(),
                HEARTBEAT_TIMEOUT_MS
            );
            self.lost.store(true, Ordering::Relaxed);
        }
    }

    /// Carrier on while the device beats, took the config and has link.
    fn follow_link(&self, dev: &Netdev<'_>, lost: bool) {
        let io = &self.port.io;
        let link = !lost && self.port.configured() && io.header32(header::LINK) == LINK_UP;
        if link != dev.carrier_ok() {
            dev.set_carrier(link);
        }
    }
}

impl PeriodicWork for Watch {
    fn run(&self) -> u32 {
        let dev = self.dev.get();
        let holding = self.port.reap(&dev);
        let beat = self.port.io.heartbeat();
        let now = now_ms();
        self.follow_heartbeat(&dev, beat, now, holding);
        let lost = self.lost.load(Ordering::Relaxed);
        self.follow_link(&dev, lost);
        // A device that runs but whose queues stalled (a device that
        // stopped is the heartbeat's business).
        if !lost {
            if let Some((q, why)) = self.port.stalled(now, beat) {
                if !holding {
                    self.reset(&dev, q, why, now);
                }
            }
        }
        WATCH_MS
    }
}
