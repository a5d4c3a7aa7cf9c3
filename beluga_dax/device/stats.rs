// SPDX-License-Identifier: GPL-2.0

//! What the pool looks like from this host, for `GET_INFO`, `LIST` and
//! sysfs, and the counters of what keeping it costs.
//!
//! Lock order: see `mod.rs`. This file takes `inner` only, for short
//! reads; the counters are atomics.

use super::state::{errno, PoolDevice, Status};
use crate::pool::engine::Stats;
use crate::pool::layout::Superblock;
use crate::pool::leases::Liveness;
use crate::pool::objects::Slot;
use crate::support::time;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// A snapshot for `GET_INFO` and sysfs.
pub(crate) struct Info {
    pub(crate) status: Status,
    pub(crate) ready: bool,
    pub(crate) lease_lost: bool,
    pub(crate) superblock: Option<Superblock>,
    pub(crate) stats: Option<Stats>,
    pub(crate) manager: Option<u32>,
    pub(crate) lease: [Liveness; 64],
}

impl PoolDevice {
    /// A snapshot of the pool as this host sees it. Reads the tables from
    /// the pool when another host manages them.
    pub(crate) fn info(&self) -> Info {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let mut info = Info {
            status: inner.status,
            ready: false,
            lease_lost: false,
            superblock: None,
            stats: None,
            manager: None,
            lease: [Liveness::Absent; 64],
        };
        if let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) {
            info.ready = engine.is_ready();
            info.lease_lost = engine.lease_lost();
            info.superblock = Some(*engine.superblock());
            info.manager = engine.manager();
            for (i, l) in engine.liveness().iter().enumerate() {
                info.lease[i] = *l;
            }
            if engine.refresh(mem).is_ok() {
                info.stats = Some(engine.stats());
            }
        }
        info
    }

    /// Live objects from index `start`, at most `max` of them, with the
    /// index to continue from.
    pub(crate) fn list(&self, start: u32, max: usize) -> Result<(KVec<(u32, Slot)>, u32)> {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return Err(self.not_attached(inner.status));
        };
        engine.refresh(mem).map_err(errno)?;
        let objects = engine.objects();
        let mut out = KVec::new();
        let mut next = u32::try_from(objects.len()).unwrap_or(u32::MAX);
        for (i, slot) in objects.iter().enumerate().skip(start as usize) {
            if matches!(slot, Slot::Free) {
                continue;
            }
            let Ok(index) = u32::try_from(i) else { break };
            if out.len() == max {
                next = index;
                break;
            }
            out.push((index, *slot), GFP_KERNEL)?;
        }
        Ok((out, next))
    }

    /// Bytes cleared before changing owner, and the nanoseconds it took.
    pub(crate) fn clear_stats(&self) -> (u64, u64) {
        (
            self.cleared_bytes.load(Ordering::Relaxed),
            self.clear_ns.load(Ordering::Relaxed),
        )
    }

    /// Counts `bytes` cleared from `start` until now.
    pub(super) fn cleared_since(&self, start: u64, bytes: u64) {
        self.clear_ns
            .fetch_add(time::boottime_ns().saturating_sub(start), Ordering::Relaxed);
        self.cleared_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Nanoseconds the periodic work has run (see `work_ns`).
    pub(crate) fn work_ns(&self) -> u64 {
        self.work_ns.load(Ordering::Relaxed)
    }

    /// Counts the time since `start` as periodic work.
    pub(super) fn worked_since(&self, start: u64) {
        self.work_ns
            .fetch_add(time::boottime_ns().saturating_sub(start), Ordering::Relaxed);
    }

    /// Holdings this host keeps for objects nobody here uses because a
    /// page is still referenced (pinned).
    pub(crate) fn pinned_holdings(&self) -> usize {
        let inner = self.inner.lock();
        let Some(mem) = inner.mem.as_ref() else {
            return 0;
        };
        inner
            .held
            .iter()
            .filter(|h| h.unused() && mem.pages.referenced(h.offset, h.size).unwrap_or(0) > 0)
            .count()
    }
}
