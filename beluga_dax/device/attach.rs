// SPDX-License-Identifier: GPL-2.0

//! Binding a pool: claiming its memory, judging its superblock and, on a
//! formatted pool, joining it with an engine.
//!
//! Lock order: see `mod.rs`. `new` takes `inner` alone; `attach` and
//! `map_metadata` run under `inner`, which their caller holds.

use super::state::{errno, new_boot_id, Config, Inner, PoolDevice, PoolMem, Status};
use crate::pool::engine::{self, Engine, Peer};
use crate::pool::layout::{Geometry, LayoutError, Superblock, SUPERBLOCK_RESERVED};
use crate::pool::objects::Slot;
use crate::support::fs::InodeRef;
use crate::support::pagemap::DevicePages;
use crate::support::sharedmem::{ClaimedRange, SharedMem};
use crate::support::time;
use core::sync::atomic::{AtomicBool, AtomicU64};
use kernel::alloc::KVVec;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Arc;

impl PoolDevice {
    pub(crate) fn new(
        config: Config,
        claim: ClaimedRange,
        inode: InodeRef,
        nid: i32,
    ) -> Result<Arc<PoolDevice>> {
        let phys = claim.start();
        let size = claim.len() as u64;
        let pages = Arc::new(DevicePages::new(phys, size, nid)?, GFP_KERNEL)?;
        let meta = SharedMem::map(phys, (SUPERBLOCK_RESERVED as usize).min(claim.len()))?;
        let mem = PoolMem { meta, pages };
        let dev = Arc::pin_init(
            pin_init!(PoolDevice {
                config,
                phys,
                size,
                nid,
                inode,
                cleared_bytes: AtomicU64::new(0),
                clear_ns: AtomicU64::new(0),
                work_ns: AtomicU64::new(0),
                stopping: AtomicBool::new(false),
                calls <- new_mutex!((), "beluga:calls"),
                inner <- new_mutex!(Inner::new(mem, claim), "beluga:inner"),
            }),
            GFP_KERNEL,
        )?;
        {
            let mut inner = dev.inner.lock();
            dev.attach(&mut inner)?;
        }
        Ok(dev)
    }

    /// Judges the superblock and, on a formatted pool, starts an engine.
    pub(super) fn attach(&self, inner: &mut Inner) -> Result {
        let Some(sb) = self.judge_superblock(inner)? else {
            return Ok(());
        };
        self.map_metadata(inner, &sb.geometry())?;
        self.start_engine(inner, sb)
    }

    /// The pool's superblock if it is valid; otherwise `None`, with the
    /// status saying why (unformatted or refused).
    fn judge_superblock(&self, inner: &mut Inner) -> Result<Option<Superblock>> {
        let mem = inner.mem.as_ref().ok_or(ENODEV)?;
        match engine::read_superblock(mem, self.size) {
            Ok(sb) => Ok(Some(sb)),
            Err(LayoutError::BadMagic) => {
                pr_info!(
                    "{}: not formatted ({} bytes at {:#x})\n",
                    self.name(),
                    self.size,
                    self.phys
                );
                inner.status = Status::Unformatted;
                Ok(None)
            }
            Err(e) => {
                pr_err!("{}: superblock refused: {:?}\n", self.name(), e);
                inner.status = Status::Refused(e);
                Ok(None)
            }
        }
    }

    /// Joins the pool of `sb` as this host: a new engine, attached.
    fn start_engine(&self, inner: &mut Inner, sb: Superblock) -> Result {
        let mem = inner.mem.as_ref().ok_or(ENODEV)?;
        let objects = KVVec::from_elem(Slot::Free, sb.max_objects as usize, GFP_KERNEL)?;
        let sections = KVVec::from_elem(0u32, sb.section_count as usize, GFP_KERNEL)?;
        let peers = KVec::from_elem(Peer::default(), sb.max_hosts as usize, GFP_KERNEL)?;
        let engine = Engine::attach(
            mem,
            sb,
            self.config.host_index,
            new_boot_id(),
            self.config.lease_ms,
            time::boottime_ns(),
            objects,
            sections,
            peers,
        )
        .map_err(|e| {
            pr_err!(
                "{}: cannot attach as host {} (max {} hosts) with a {} ms lease\n",
                self.name(),
                self.config.host_index,
                sb.max_hosts,
                self.config.lease_ms
            );
            errno(e)
        })?;
        pr_info!(
            "{}: attached as host {}: generation {}, {} sections of 2 MiB, up to {} hosts, lease {} ms\n",
            self.name(),
            self.config.host_index,
            sb.generation,
            sb.section_count,
            sb.max_hosts,
            self.config.lease_ms
        );
        inner.engine = Some(KBox::new(engine, GFP_KERNEL)?);
        inner.status = Status::Attached;
        Ok(())
    }

    /// Maps the metadata of a pool of `geometry` (everything before the
    /// data area), replacing a smaller mapping.
    pub(super) fn map_metadata(&self, inner: &mut Inner, geometry: &Geometry) -> Result {
        let len = usize::try_from(geometry.data_off).map_err(|_| EINVAL)?;
        let mem = inner.mem.as_mut().ok_or(ENODEV)?;
        if mem.meta.len() < len {
            mem.meta = SharedMem::map(self.phys, len)?;
        }
        Ok(())
    }
}
