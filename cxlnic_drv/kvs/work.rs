// SPDX-License-Identifier: GPL-2.0

//! The offload's periodic work, every [`TICK_MS`] while the NIC is
//! bound (up or down): late config answers, the heartbeat (a device back
//! from a reset gets the config again), and the log applied so that it
//! never fills while nobody calls.

use super::state::Kvs;
use crate::support::netdev::NetdevRef;
use crate::support::workqueue::{Periodic, PeriodicWork};
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

/// How often the work runs, milliseconds (as the port's watch).
pub(crate) const TICK_MS: u32 = 50;

pub(crate) struct KvsWork {
    kvs: Arc<Kvs>,
    /// For the log lines; dropped with the work, before the interface
    /// is unregistered.
    dev: NetdevRef,
}

impl KvsWork {
    /// Starts the work of a device with the offload (none without).
    pub(crate) fn start(kvs: &Arc<Kvs>, dev: NetdevRef) -> Result<Option<Periodic<KvsWork>>> {
        if kvs.area.is_none() {
            return Ok(None);
        }
        let w = Arc::new(
            KvsWork {
                kvs: kvs.clone(),
                dev,
            },
            GFP_KERNEL,
        )?;
        // Its own queue: a run may wait a second for the device.
        Ok(Some(Periodic::start_own_queue(
            w,
            TICK_MS,
            c_str!("cxlnic_kvs"),
        )?))
    }
}

impl PeriodicWork for KvsWork {
    fn run(&self) -> u32 {
        self.kvs.tick(self.dev.get().name());
        TICK_MS
    }
}
