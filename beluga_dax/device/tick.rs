// SPDX-License-Identifier: GPL-2.0

//! The periodic step (lease, watching, managing), its reactions, and its
//! pacing: ticks every `engine::pace` interval, faster while requests are
//! served, and the mailboxes polled between steps while they keep coming.
//!
//! Lock order: see `mod.rs`. The tick takes `inner` only, never `calls`
//! (a call waits for the manager, which may be this very tick), and
//! revokes holdings under it; it drops `inner` for every sleep.

use super::state::{new_boot_id, Inner, PoolDevice, Status};
use crate::pool::engine::{pace, TickReport};
use crate::support::time;
use crate::support::workqueue::PeriodicWork;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

impl PoolDevice {
    /// The periodic step: lease, watching, managing; and the reactions to
    /// what it found. While requests keep coming (`engine::pace`), it
    /// polls the mailboxes between steps and takes a step every slice
    /// itself, so no request waits for the workqueue.
    fn tick(&self) -> u32 {
        loop {
            let (next, last_served) = self.step_and_react();
            if last_served == 0 || !self.serve_hot(last_served) {
                return next;
            }
        }
    }

    /// Ends polling between steps (see `tick`), for good.
    pub(crate) fn stop_polling(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// One step and its reactions: when to tick next, and when this host
    /// last served a request (0: never).
    fn step_and_react(&self) -> (u32, u64) {
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        let now = time::boottime_ns();
        let Some(report) = Self::step(inner, now) else {
            drop(guard);
            self.worked_since(now);
            return (self.idle_tick_ms(), 0);
        };
        self.log_report(inner, &report);
        self.react(inner, &report, now);
        if report.served > 0 {
            inner.served_at(now);
        }
        let next = if now < inner.busy_until_ns {
            pace::BUSY_TICK_MS
        } else {
            self.idle_tick_ms()
        };
        let last_served = inner.last_served_ns;
        drop(guard);
        self.worked_since(now);
        (next, last_served)
    }

    /// The tick's period while no request is served.
    pub(super) fn idle_tick_ms(&self) -> u32 {
        pace::idle_tick_ms(self.config.lease_ms)
    }

    /// Polls the mailboxes for one slice at the pace `engine::pace` sets
    /// from the time since the last request (`last_served`). True if the
    /// slice ended with the window still open: step, then poll again.
    /// `inner` is free during each sleep.
    fn serve_hot(&self, mut last_served: u64) -> bool {
        let start = time::boottime_ns();
        loop {
            let now = time::boottime_ns();
            if self.stopping.load(Ordering::Relaxed) {
                return false;
            }
            let Some(pause) = pace::hot_pause_us(now.saturating_sub(last_served)) else {
                return false;
            };
            if now.saturating_sub(start) > pace::HOT_SLICE_NS {
                return true;
            }
            time::sleep_us(pause);
            if !self.serve_mailboxes(&mut last_served) {
                return false;
            }
        }
    }

    /// Serves the requests waiting in the mailboxes (the manager's part
    /// of a step); moves `last_served` if it served one. False while no
    /// engine runs.
    fn serve_mailboxes(&self, last_served: &mut u64) -> bool {
        let mut guard = self.inner.lock();
        // After the lock: the lease check in `serve_mailboxes` must not
        // see a time from before a wait for it.
        let now = time::boottime_ns();
        let inner = &mut *guard;
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return false;
        };
        if engine.serve_mailboxes(mem, now) > 0 {
            *last_served = now;
            inner.served_at(now);
        }
        drop(guard);
        self.worked_since(now);
        true
    }

    /// Steps the engine: lease, watching, managing. `None` while no
    /// engine runs (unformatted, refused, unbound).
    fn step(inner: &mut Inner, now: u64) -> Option<TickReport> {
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return None;
        };
        Some(engine.tick(mem, now))
    }

    /// Says what changed: the manager role, reclaims, refused tables.
    fn log_report(&self, inner: &mut Inner, report: &TickReport) {
        let Some(engine) = inner.engine.as_ref() else {
            return;
        };
        if report.became_manager {
            pr_info!(
                "{}: host {} manages the pool\n",
                self.name(),
                engine.index()
            );
        }
        if report.reclaimed > 0 {
            pr_info!(
                "{}: reclaimed {} objects of departed or expired hosts\n",
                self.name(),
                report.reclaimed
            );
        }
        let manager = engine.manager();
        if manager != inner.logged_manager {
            inner.logged_manager = manager;
            if let Some(m) = manager {
                pr_info!("{}: manager is host {}\n", self.name(), m);
            }
        }
        if let Some(why) = report.corrupt {
            if inner.status != Status::Corrupt(why) {
                pr_err!(
                    "{}: pool tables refused ({}); not managing\n",
                    self.name(),
                    why
                );
                inner.status = Status::Corrupt(why);
            }
        }
    }

    /// Acts on what the step reported: a changed pool detaches and
    /// attaches again; a lost lease revokes everything and rejoins.
    fn react(&self, inner: &mut Inner, report: &TickReport, now: u64) {
        if report.pool_changed {
            self.reattach(inner);
        } else if report.lease_lost {
            self.rejoin(inner, report, now);
        }
    }

    /// The superblock changed under this host: detach, revoke, attach to
    /// what the pool is now.
    fn reattach(&self, inner: &mut Inner) {
        pr_err!(
            "{}: the superblock changed under this host; detaching\n",
            self.name()
        );
        inner.engine = None;
        self.revoke_all(inner);
        if let Err(e) = self.attach(inner) {
            pr_err!("{}: cannot reattach: {:?}\n", self.name(), e);
        }
    }

    /// The lease is lost: rejoin as a new incarnation, revoking every
    /// holding of the old one.
    fn rejoin(&self, inner: &mut Inner, report: &TickReport, now: u64) {
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return;
        };
        if report.slot_conflict {
            pr_err!(
                "{}: another host writes host slot {}; check host_index on every host\n",
                self.name(),
                engine.index()
            );
        } else {
            pr_warn!(
                "{}: lease lost (no heartbeat for over {} ms); mappings revoked, rejoining\n",
                self.name(),
                engine.lease_ms()
            );
        }
        let reattached = engine.reattach(mem, new_boot_id(), now);
        self.revoke_all(inner);
        if reattached.is_err() {
            pr_err!("{}: cannot rejoin the pool\n", self.name());
        }
    }
}

impl PeriodicWork for PoolDevice {
    fn run(&self) -> u32 {
        self.tick()
    }
}
