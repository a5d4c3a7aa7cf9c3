// SPDX-License-Identifier: GPL-2.0

//! The reaper: lets go of holdings nothing on this host uses any more,
//! and reconciles with the pool after an abandoned call. It runs off the
//! tick, since it may wait for the manager.
//!
//! Lock order: see `mod.rs`. A pass takes `calls` (through
//! `PoolDevice::lock_calls`) for its whole length, and `inner` under it
//! for each scan; the calls it makes take `inner` the same way.

use super::calls::Calls;
use super::state::{Inner, PoolDevice};
use crate::mapping::Holding;
use crate::pool::engine::Call;
use crate::pool::objects::Slot;
use crate::support::time;
use crate::support::workqueue::PeriodicWork;
use kernel::prelude::*;
use kernel::sync::Arc;

/// How often the reaper looks for holdings to let go of.
const REAP_MS: u32 = 20;

/// Pages still referenced when a holding could be let go of, or at unbind.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ReapReport {
    pub(super) released: u32,
    pub(super) pinned: u32,
}

/// An object the pool says this host holds, with no holding for it.
struct Orphan {
    object: u32,
    serial: u64,
    uid: u32,
    /// Created by the abandoned ALLOC: unlinked too.
    ours: bool,
}

impl PoolDevice {
    /// The reaper's pass: lets go of holdings nothing on this host uses
    /// (no file, mapping or kernel user, no referenced page), and
    /// reconciles after an abandoned call.
    pub(super) fn reap(&self) -> ReapReport {
        let calls = self.lock_calls();
        let mut report = ReapReport::default();
        let Some(idle) = calls.take_idle(&mut report) else {
            return report;
        };
        for h in idle.iter() {
            // No user left, so no mapping to unmap; revoked so that a
            // stray lookup cannot revive it.
            h.revoke();
            if calls.release(h) {
                report.released = report.released.saturating_add(1);
            }
        }
        calls.reconcile();
        report
    }
}

/// Moves the holdings nothing uses and no page of which is referenced
/// out of `held`; counts the others that nothing uses as pinned. `None`
/// without memory.
fn split_idle(inner: &mut Inner, report: &mut ReapReport) -> Option<KVec<Arc<Holding>>> {
    let mem = inner.mem.as_ref()?;
    let mut idle = KVec::new();
    let mut keep = KVec::new();
    for h in core::mem::replace(&mut inner.held, KVec::new()) {
        // Pages are scanned only for holdings nothing else keeps
        // (the pass runs every 20 ms; a used holding stays anyway).
        let pinned = h.unused() && mem.pages.referenced(h.offset, h.size) != Some(0);
        if pinned {
            report.pinned = report.pinned.saturating_add(1);
        }
        let target = if h.unused() && !pinned {
            &mut idle
        } else {
            &mut keep
        };
        if target.push(h, GFP_KERNEL).is_err() {
            // Out of memory: try again next pass.
            report.pinned = report.pinned.saturating_add(1);
        }
    }
    inner.held = keep;
    Some(idle)
}

impl Calls<'_> {
    /// The scan of a pass: the idle holdings, taken out of `held`.
    fn take_idle(&self, report: &mut ReapReport) -> Option<KVec<Arc<Holding>>> {
        let dev = self.dev();
        let mut guard = dev.inner.lock();
        // The scan is upkeep (`work_ns`, from here: a wait for the
        // lock is not work); releases and reconciling are this host's
        // own calls, and sleep while the manager answers.
        let start = time::boottime_ns();
        let idle = split_idle(&mut guard, report);
        drop(guard);
        dev.worked_since(start);
        idle
    }

    /// After an abandoned call: lets go of every hold the pool records
    /// for this host that it has no holding for, and unlinks the object
    /// an abandoned ALLOC created. First a barrier call, whose answer
    /// proves the abandoned request will not be served any more (the
    /// manager serves a host's requests in order, one at a time).
    fn reconcile(&self) {
        let Some(abandoned_alloc) = self.dev().inner.lock().reconcile else {
            return;
        };
        let barrier = Call::Release {
            object: u32::MAX,
            serial: 0,
        };
        match self.call(barrier, false) {
            Ok(_) => {}
            Err(e) if e == ENOENT || e == EINVAL => {}
            // No answer yet: the next pass tries again.
            Err(_) => return,
        }
        let Some(orphans) = self.orphans(abandoned_alloc) else {
            return;
        };
        for orphan in orphans {
            self.let_go(orphan);
        }
    }

    /// The holds the pool records for this host that it has no holding
    /// for; clears the need to reconcile. `None` if the tables cannot be
    /// read (or no memory): the next pass tries again.
    fn orphans(&self, abandoned_alloc: Option<u64>) -> Option<KVec<Orphan>> {
        let mut guard = self.dev().inner.lock();
        let inner = &mut *guard;
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return None;
        };
        engine.refresh(mem).ok()?;
        let me = engine.index();
        let mut orphans = KVec::new();
        for (index, slot) in engine.objects().iter().enumerate() {
            let Slot::Live(e) = slot else { continue };
            let held_here = e.holders.checked_shr(me).is_some_and(|bits| bits & 1 != 0);
            let Ok(index) = u32::try_from(index) else {
                continue;
            };
            if !held_here || inner.held.iter().any(|h| h.same_object(index, e.serial)) {
                continue;
            }
            let ours = e.owner_host == me
                && abandoned_alloc.is_some_and(|seq| u64::from(e.request_seq) == seq & 0xffff_ffff);
            let orphan = Orphan {
                object: index,
                serial: e.serial,
                uid: e.uid,
                ours,
            };
            orphans.push(orphan, GFP_KERNEL).ok()?;
        }
        inner.reconcile = None;
        Some(orphans)
    }

    /// Lets go of an orphan hold (and unlinks it if it is ours).
    fn let_go(&self, orphan: Orphan) {
        let Orphan {
            object,
            serial,
            uid,
            ours,
        } = orphan;
        if ours {
            let _ = self.call(
                Call::Free {
                    object,
                    serial,
                    uid,
                },
                true,
            );
        }
        if self.call(Call::Release { object, serial }, false).is_err() {
            self.dev().inner.lock().reconcile.get_or_insert(None);
        }
        pr_info!(
            "{}: let go of object {} that an abandoned call left held\n",
            self.dev().name(),
            object
        );
    }
}

/// Lets go of holdings nothing uses any more, off the tick (it may wait
/// for the manager).
pub(crate) struct Reaper(pub(crate) Arc<PoolDevice>);

impl PeriodicWork for Reaper {
    fn run(&self) -> u32 {
        let report = self.0.reap();
        if report.released > 0 {
            10
        } else {
            REAP_MS
        }
    }
}
