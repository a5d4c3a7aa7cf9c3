// SPDX-License-Identifier: GPL-2.0

//! What an administrator does to the pool: format it, and reclaim a host
//! that is not live.
//!
//! Lock order: see `mod.rs`. Both take `calls` (through
//! `PoolDevice::lock_calls`); format then holds `inner` under it for the
//! whole format, after a reaper pass that takes and drops both.

use super::state::{errno, new_boot_id, Inner, PoolDevice, Status};
use crate::pool::engine::{self, Call};
use crate::pool::layout::{Geometry, Superblock};
use crate::pool::leases::Liveness;
use crate::support::time;
use kernel::prelude::*;

impl PoolDevice {
    /// Reclaims a host that is not live (admin).
    pub(crate) fn force_reclaim(&self, host: u32) -> Result<u32> {
        let calls = self.lock_calls();
        let handle = calls.call(Call::Reclaim { host }, true)?;
        pr_info!(
            "{}: host {} reclaimed by an administrator ({} objects)\n",
            self.name(),
            host,
            handle.object
        );
        Ok(handle.object)
    }

    /// Formats the pool (admin). Refused while this host holds objects or
    /// another host is live.
    pub(crate) fn format(&self, max_hosts: u32, max_objects: u32) -> Result {
        // Holdings nobody uses any more go first.
        self.reap();
        let _calls = self.lock_calls();
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        let generation = self.format_allowed(inner)?;
        if inner.mem.is_none() {
            return Err(ENODEV);
        }
        let geometry = self.format_geometry(max_hosts, max_objects)?;
        if let (Some(mem), Some(mut engine)) = (inner.mem.as_ref(), inner.engine.take()) {
            let _ = engine.detach(mem, time::boottime_ns());
        }
        self.map_metadata(inner, &geometry)?;
        let sb = self.write_format(inner, max_hosts, max_objects, generation)?;
        pr_info!(
            "{}: formatted: generation {}, {} sections, {} hosts, {} objects\n",
            self.name(),
            sb.generation,
            sb.section_count,
            max_hosts,
            max_objects
        );
        self.attach(inner)
    }

    /// Whether this host may format now (unbound, holding objects, other
    /// hosts live: no); the generation after the attached pool's, or 1.
    fn format_allowed(&self, inner: &Inner) -> Result<u64> {
        if inner.status == Status::Gone {
            return Err(ENODEV);
        }
        if !inner.held.is_empty() {
            pr_err!("{}: format refused: this host holds objects\n", self.name());
            return Err(EBUSY);
        }
        let Some(engine) = inner.engine.as_ref() else {
            return Ok(1);
        };
        let others_live = engine
            .liveness()
            .iter()
            .enumerate()
            .any(|(i, l)| i as u32 != engine.index() && *l == Liveness::Live);
        if others_live {
            pr_err!(
                "{}: format refused: other hosts are attached\n",
                self.name()
            );
            return Err(EBUSY);
        }
        self.generation_after(engine.superblock().generation)
    }

    /// The generation after `generation`, unless it is the last one.
    fn generation_after(&self, generation: u64) -> Result<u64> {
        generation.checked_add(1).ok_or_else(|| {
            pr_err!("{}: format refused: generation exhausted\n", self.name());
            EINVAL
        })
    }

    /// The layout of this device for `max_hosts` and `max_objects`.
    fn format_geometry(&self, max_hosts: u32, max_objects: u32) -> Result<Geometry> {
        Geometry::new(self.size, max_hosts, max_objects).map_err(|e| {
            pr_err!(
                "{}: cannot lay out {} bytes for {} hosts and {} objects: {:?}\n",
                self.name(),
                self.size,
                max_hosts,
                max_objects,
                e
            );
            EINVAL
        })
    }

    /// Writes the new superblock and empty tables, with a generation past
    /// both `generation` and the one the pool holds now (if valid).
    fn write_format(
        &self,
        inner: &Inner,
        max_hosts: u32,
        max_objects: u32,
        mut generation: u64,
    ) -> Result<Superblock> {
        let mem = inner.mem.as_ref().ok_or(ENODEV)?;
        if let Ok(old) = engine::read_superblock(mem, self.size) {
            generation = generation.max(self.generation_after(old.generation)?);
        }
        engine::format(
            mem,
            self.size,
            max_hosts,
            max_objects,
            new_boot_id(),
            generation,
        )
        .map_err(|e| {
            pr_err!(
                "{}: cannot format {} bytes for {} hosts and {} objects\n",
                self.name(),
                self.size,
                max_hosts,
                max_objects
            );
            errno(e)
        })
    }
}
