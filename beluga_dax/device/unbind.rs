// SPDX-License-Identifier: GPL-2.0

//! Unbind: every mapping revoked, and the pool left and its memory
//! released, at once or, while pages are still referenced (pinned), by
//! the drain's steps (`drain.rs`) once they are not.
//!
//! Lock order: see `mod.rs`. Unbind and the drain take `inner` only,
//! never `calls`: a caller waiting for a manager that does not answer
//! would hold up the unbind; it sees the engine gone at its next poll.

use super::state::{Inner, PoolDevice, Status};
use crate::support::time;
use kernel::prelude::*;

/// An unbound pool with referenced pages says so this often.
const DRAIN_LOG_NS: u64 = 10_000_000_000;
/// The longest time between two drain steps.
const DRAIN_STEP_MS: u32 = 100;

impl PoolDevice {
    /// Unbind: no more ticks run (the caller stopped them). Revokes every
    /// mapping; if no page is referenced any more, leaves the pool and
    /// releases the memory, and returns true. Otherwise (a pin: O_DIRECT
    /// in flight, io_uring buffers, RDMA) the memory stays claimed and
    /// this host in the pool: the caller calls [`PoolDevice::drain_step`]
    /// until it returns true. Unbind does not wait here: the pin may be
    /// held by the very task that unbinds (a child that inherited an
    /// io_uring ring), which would then wait forever.
    pub(crate) fn shutdown(&self) -> bool {
        // Not `calls`: a caller waiting for a manager that does not answer
        // would hold up the unbind; it sees the engine gone at its next poll.
        {
            let mut guard = self.inner.lock();
            let inner = &mut *guard;
            self.revoke_all(inner);
            // INVARIANT: from here on no call, format or attach finds an
            // engine, and the status says why (ENODEV).
            inner.draining = inner.engine.take();
            inner.status = Status::Gone;
        }
        self.drain_step()
    }

    /// One step of an unbound pool whose pages may still be referenced:
    /// keeps its lease (another host must not reuse pinned sections), and
    /// once nothing references a page, leaves the pool and releases the
    /// memory. True once released.
    pub(crate) fn drain_step(&self) -> bool {
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        let Some(mem) = inner.mem.as_ref() else {
            return true;
        };
        let now = time::boottime_ns();
        let report = inner.draining.as_mut().map(|e| e.tick(mem, now));
        if report.is_some_and(|r| r.lease_lost) {
            pr_warn!(
                "{}: lease lost while pinned pages wait; other hosts may reuse them\n",
                self.name()
            );
        }
        let pinned = mem.pages.referenced(0, self.size).unwrap_or(0);
        if pinned > 0 {
            self.log_pinned(inner, pinned, now);
            return false;
        }
        self.release_memory(inner);
        true
    }

    /// Says, at most every `DRAIN_LOG_NS`, that `pinned` pages hold the
    /// memory.
    fn log_pinned(&self, inner: &mut Inner, pinned: u64, now: u64) {
        let due = inner
            .drain_logged_ns
            .map_or(true, |t| now.saturating_sub(t) >= DRAIN_LOG_NS);
        if due {
            inner.drain_logged_ns = Some(now);
            pr_warn!(
                "{}: unbound with {} pages still referenced (pinned by a process or a driver); the memory stays claimed and this host in the pool until they are released\n",
                self.name(),
                pinned
            );
        }
    }

    /// Leaves the pool (the host slot marked detached) and releases the
    /// memory: nothing references a page any more.
    fn release_memory(&self, inner: &mut Inner) {
        if let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.draining.as_mut()) {
            if engine.detach(mem, time::boottime_ns()).is_err() {
                pr_warn!("{}: could not mark the host slot detached\n", self.name());
            }
        }
        inner.draining = None;
        inner.mem = None;
        inner.claim = None;
        pr_info!("{}: released\n", self.name());
    }

    /// Left the pool and released the memory (unbound, nothing pinned).
    pub(crate) fn released(&self) -> bool {
        self.inner.lock().mem.is_none()
    }

    /// How often a drain steps (well within the shortest lease).
    pub(crate) fn drain_step_ms(&self) -> u32 {
        self.idle_tick_ms().min(DRAIN_STEP_MS)
    }
}
