// SPDX-License-Identifier: GPL-2.0

//! Pools unbound while some of their pages are still referenced (a
//! long-term pin: io_uring buffers, RDMA, O_DIRECT in flight). Unbind
//! revokes every mapping and returns; such a pool keeps its range claimed
//! and its host slot leased (another host must not reuse sections that are
//! still pinned here), stepped by a periodic work of its own, until the
//! last reference goes; then it leaves the pool and releases its memory.
//! Unbind cannot wait for that itself: the pin may be held by the task
//! that unbinds (a child that inherited an io_uring ring), which would
//! then wait forever. Module unload waits for every drain.
//!
//! Lock order: `list`, then a pool's `inner` (in `drain_step`).

use crate::device::PoolDevice;
use crate::support::time;
use crate::support::workqueue::{Periodic, PeriodicWork};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// One draining pool's periodic step.
struct Draining(Arc<PoolDevice>);

/// A released pool's work stays idle, this long between runs, until the
/// next adoption or the module's unload drops it.
const IDLE_MS: u32 = 60_000;

impl PeriodicWork for Draining {
    fn run(&self) -> u32 {
        if self.0.drain_step() {
            IDLE_MS
        } else {
            self.0.drain_step_ms()
        }
    }
}

/// The pools being drained.
#[pin_data]
pub(crate) struct Drains {
    #[pin]
    list: Mutex<KVec<(Arc<PoolDevice>, Periodic<Draining>)>>,
}

impl Drains {
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Drains {
            list <- new_mutex!(KVec::new(), "beluga:drains"),
        })
    }

    /// Takes over `dev`, unbound with pages still referenced. On failure
    /// (no memory) the caller must drain it itself.
    pub(crate) fn adopt(&self, dev: &Arc<PoolDevice>) -> Result {
        let mut list = self.list.lock();
        Self::forget_released(&mut list);
        list.reserve(1, GFP_KERNEL)?;
        let work = Periodic::start(Arc::new(Draining(dev.clone()), GFP_KERNEL)?, 0)?;
        list.push((dev.clone(), work), GFP_KERNEL)?;
        Ok(())
    }

    /// Drops the works of pools that are released (their last run
    /// returned; stopping waits for a run in progress).
    fn forget_released(list: &mut KVec<(Arc<PoolDevice>, Periodic<Draining>)>) {
        let all = core::mem::replace(list, KVec::new());
        for (dev, work) in all {
            if dev.released() {
                drop(work);
            } else {
                // Cannot fail: the vector had room for all of them before.
                let _ = list.push((dev, work), GFP_KERNEL);
            }
        }
    }

    /// Waits until every pool is released (module unload).
    pub(crate) fn wait_all(&self) {
        let mut waited_ms: u32 = 0;
        loop {
            let left = {
                let mut list = self.list.lock();
                Self::forget_released(&mut list);
                list.len()
            };
            if left == 0 {
                return;
            }
            if waited_ms % 10_000 == 0 {
                pr_warn!(
                    "unload waits for {} unbound pools whose pages are still referenced\n",
                    left
                );
            }
            time::sleep_ms(100);
            waited_ms = waited_ms.saturating_add(100);
        }
    }
}
