// SPDX-License-Identifier: GPL-2.0

//! Rings the device has not let go of yet (`recovery.rs`'s rule): the
//! off config that asks for them back, and freeing them once it answers.
//!
//! Locks: `held`, a leaf: `release` takes it under `up` when a restart
//! finishes the old queues, `reap` (`open`, the watch) alone.

use super::state::Port;
use crate::config;
use crate::recovery::Lent;
use crate::ring::device::{DriverConfig, MODE_OFF};
use crate::support::kvec::VecExt;
use crate::support::netdev::Netdev;
use kernel::prelude::*;

impl Port {
    /// Configures the device off and frees `lent` if it answered; else
    /// holds it until the device answers this or a later config. A
    /// heartbeat that stands still is no answer: a device that only hung
    /// may resume where it stopped, writing into the rings.
    pub(super) fn release(&self, dev: &Netdev<'_>, lent: Lent) {
        let beat = self.io.heartbeat();
        let off = DriverConfig {
            mode: MODE_OFF,
            ..DriverConfig::default()
        };
        let sent = config::exchange(&self.io, &off);
        let Err(lent) = lent.release(&self.io) else {
            return;
        };
        let why = match sent {
            Err(_) => "the off config was not written",
            Ok(_) if self.io.heartbeat() == beat => "no answer, no heartbeat",
            Ok(_) => "no answer while running",
        };
        pr_warn!(
            "{}: the device has not let go of its rings ({}): holding {} KiB until it does\n",
            dev.name(),
            why,
            lent.bytes() >> 10
        );
        // Pushed or, without memory, dropped: kept for good either way.
        let _ = self.held.lock().push(lent, GFP_KERNEL);
    }

    /// Frees the held rings the device has let go of since; whether any
    /// are still held.
    pub(super) fn reap(&self, dev: &Netdev<'_>) -> bool {
        let mut held = self.held.lock();
        let mut freed = 0usize;
        let mut i = held.len();
        while let Some(at) = i.checked_sub(1) {
            i = at;
            let Some(lent) = held.swap_remove(at) else {
                continue;
            };
            match lent.release(&self.io) {
                Ok(bytes) => freed = freed.saturating_add(bytes),
                // Into the room it left: no allocation.
                Err(lent) => {
                    let _ = held.push(lent, GFP_KERNEL);
                }
            }
        }
        if freed > 0 {
            pr_info!(
                "{}: the device let go of its rings: {} KiB freed\n",
                dev.name(),
                freed >> 10
            );
        }
        !held.is_empty()
    }
}
