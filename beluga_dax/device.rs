// SPDX-License-Identifier: GPL-2.0

//! One pool bound to `beluga_dax`: its memory, its protocol engine, the
//! objects this host holds, and the periodic tick that keeps the lease.
//!
//! Locking: `calls` serialises callers that talk to the manager (one
//! request in flight per host) and is held across the wait; `inner` is
//! held only for short steps, never across a sleep or a user copy (a user
//! copy can fault, and `mmap` takes `inner` under the mmap lock). The
//! periodic tick takes `inner` only.

use crate::mapping::Holding;
use crate::pool::engine::{self, Call, Engine, Errno, Fault, Handle, Memory, Peer, Stats};
use crate::pool::layout::{Geometry, SUPERBLOCK_RESERVED};
use crate::pool::layout::{LayoutError, Superblock};
use crate::pool::leases::Liveness;
use crate::pool::objects::{Name, Slot};
use crate::support::fs::{File, InodeRef};
use crate::support::sharedmem::{ClaimedRange, SharedMem};
use crate::support::time;
use crate::support::workqueue::PeriodicWork;
use kernel::alloc::KVVec;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{Arc, Mutex};

/// Pool memory, seen by the engine through the flushed accessor.
pub(crate) struct PoolMem(pub(crate) SharedMem);

impl Memory for PoolMem {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), Fault> {
        let offset = usize::try_from(offset).map_err(|_| Fault)?;
        self.0.read(offset, buf).map_err(|_| Fault)
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Fault> {
        let offset = usize::try_from(offset).map_err(|_| Fault)?;
        self.0.write(offset, data).map_err(|_| Fault)
    }
}

type PoolEngine = Engine<KVVec<Slot>, KVVec<u32>, KVec<Peer>>;

/// What this host can do with the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Unformatted,
    Refused(LayoutError),
    /// The tables failed validation when this host was to manage them.
    Corrupt(&'static str),
    Attached,
    /// Unbound: the memory is released.
    Gone,
}

pub(crate) struct Inner {
    /// The pool's range, claimed until unbind.
    claim: Option<ClaimedRange>,
    /// The kernel's mapping of the metadata (superblock and tables) only:
    /// the data area keeps no kernel mapping, so user mappings of objects
    /// can choose their memory type.
    mem: Option<PoolMem>,
    status: Status,
    engine: Option<KBox<PoolEngine>>,
    held: KVec<Arc<Holding>>,
    /// Manager index last logged, to log changes only.
    logged_manager: Option<u32>,
    /// Tick fast until then: requests were served recently.
    busy_until_ns: u64,
}

/// Ticks while idle, and for a while after serving a request (the
/// latency of calls from other hosts is about one tick).
const IDLE_TICK_MS: u32 = 5;
const BUSY_TICK_MS: u32 = 1;
const BUSY_WINDOW_NS: u64 = 200_000_000;

/// Parameters of a bound pool.
pub(crate) struct Config {
    pub(crate) name: CString,
    pub(crate) host_index: u32,
    pub(crate) lease_ms: u32,
}

#[pin_data]
pub(crate) struct PoolDevice {
    pub(crate) config: Config,
    pub(crate) phys: u64,
    pub(crate) size: u64,
    #[pin]
    calls: Mutex<()>,
    #[pin]
    inner: Mutex<Inner>,
    /// The address space every open file's mappings share (the inode of
    /// the first open), so that revoking reaches every mapping.
    #[pin]
    mappings: Mutex<Option<InodeRef>>,
}

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

/// `ETIMEDOUT` (not among the 6.12 error constants).
fn timed_out() -> Error {
    Error::from_errno(-110)
}

fn errno(e: Errno) -> Error {
    Error::from_errno(-(e.0 as i32))
}

fn new_boot_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    time::random_bytes(&mut id);
    id
}

impl PoolDevice {
    pub(crate) fn new(config: Config, claim: ClaimedRange) -> Result<Arc<PoolDevice>> {
        let phys = claim.start();
        let size = claim.len() as u64;
        let mem = PoolMem(SharedMem::map(
            phys,
            (SUPERBLOCK_RESERVED as usize).min(claim.len()),
        )?);
        let dev = Arc::pin_init(
            pin_init!(PoolDevice {
                config,
                phys,
                size,
                calls <- new_mutex!(()),
                inner <- new_mutex!(Inner {
                    claim: Some(claim),
                    mem: Some(mem),
                    status: Status::Unformatted,
                    engine: None,
                    held: KVec::new(),
                    logged_manager: None,
                    busy_until_ns: 0,
                }),
                mappings <- new_mutex!(None),
            }),
            GFP_KERNEL,
        )?;
        {
            let mut inner = dev.inner.lock();
            dev.attach(&mut inner)?;
        }
        Ok(dev)
    }

    pub(crate) fn name(&self) -> &CStr {
        &self.config.name
    }

    /// Judges the superblock and, on a formatted pool, starts an engine.
    fn attach(&self, inner: &mut Inner) -> Result {
        let mem = inner.mem.as_ref().ok_or(ENODEV)?;
        let sb = match engine::read_superblock(mem, self.size) {
            Ok(sb) => sb,
            Err(LayoutError::BadMagic) => {
                pr_info!(
                    "{}: not formatted ({} bytes at {:#x})\n",
                    self.name(),
                    self.size,
                    self.phys
                );
                inner.status = Status::Unformatted;
                return Ok(());
            }
            Err(e) => {
                pr_err!("{}: superblock refused: {:?}\n", self.name(), e);
                inner.status = Status::Refused(e);
                return Ok(());
            }
        };
        self.map_metadata(inner, &sb.geometry())?;
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
    fn map_metadata(&self, inner: &mut Inner, geometry: &Geometry) -> Result {
        let len = usize::try_from(geometry.data_off).map_err(|_| EINVAL)?;
        if inner.mem.as_ref().is_some_and(|m| m.0.len() >= len) {
            return Ok(());
        }
        inner.mem = Some(PoolMem(SharedMem::map(self.phys, len)?));
        Ok(())
    }

    /// Every open file calls this from `open`: its mappings join the
    /// shared address space.
    pub(crate) fn adopt_file(&self, file: &File) {
        let mut mappings = self.mappings.lock();
        if mappings.is_none() {
            *mappings = Some(file.inode());
        }
        if let Some(inode) = mappings.as_ref() {
            file.share_mappings_of(inode);
        }
    }

    /// Revokes the holdings and unmaps them from every process.
    fn revoke(&self, holdings: &[Arc<Holding>]) {
        for h in holdings {
            h.revoke();
        }
        if let Some(inode) = self.mappings.lock().as_ref() {
            for h in holdings {
                inode.unmap_range(h.offset, h.size);
            }
        }
    }

    fn revoke_all(&self, inner: &mut Inner) {
        let held = core::mem::replace(&mut inner.held, KVec::new());
        self.revoke(&held);
    }

    /// The periodic step: lease, watching, managing; and the reactions to
    /// what it found.
    fn tick(&self) -> u32 {
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
            return IDLE_TICK_MS;
        };
        let now = time::boottime_ns();
        let report = engine.tick(mem, now);
        if report.served > 0 {
            inner.busy_until_ns = now + BUSY_WINDOW_NS;
        }
        let next = if now < inner.busy_until_ns {
            BUSY_TICK_MS
        } else {
            IDLE_TICK_MS
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
        let manager = engine.manager();
        if manager != inner.logged_manager {
            inner.logged_manager = manager;
            if let Some(m) = manager {
                pr_info!("{}: manager is host {}\n", self.name(), m);
            }
        }
        if report.pool_changed {
            pr_err!(
                "{}: the superblock changed under this host; detaching\n",
                self.name()
            );
            inner.engine = None;
            self.revoke_all(inner);
            if let Err(e) = self.attach(inner) {
                pr_err!("{}: cannot reattach: {:?}\n", self.name(), e);
            }
        } else if report.lease_lost {
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
            let boot = new_boot_id();
            let reattached = engine.reattach(mem, boot, now);
            self.revoke_all(inner);
            if reattached.is_err() {
                pr_err!("{}: cannot rejoin the pool\n", self.name());
            }
        }
        next
    }

    /// Runs `call` through the manager and waits for its answer.
    pub(crate) fn call(&self, call: Call, admin: bool) -> Result<Handle> {
        let _serial = self.calls.lock();
        let timeout_ns = engine::expiry_ns(self.config.lease_ms) * 4;
        let start = time::boottime_ns();
        let seq = {
            let mut inner = self.inner.lock();
            let inner = &mut *inner;
            let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
                return Err(self.not_attached(inner.status));
            };
            engine.submit(mem, call, admin, start).map_err(errno)?
        };
        loop {
            {
                let mut inner = self.inner.lock();
                let inner = &mut *inner;
                let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
                    return Err(ENODEV);
                };
                if let Some(answer) = engine.poll(mem, seq) {
                    return answer.map_err(errno);
                }
                if time::boottime_ns().saturating_sub(start) > timeout_ns {
                    engine.abandon(seq);
                    pr_warn!("{}: no answer from the pool manager\n", self.name());
                    return Err(timed_out());
                }
            }
            if let Err(e) = time::sleep_us_interruptible(100) {
                if let Some(engine) = self.inner.lock().engine.as_mut() {
                    engine.abandon(seq);
                }
                return Err(e);
            }
        }
    }

    fn not_attached(&self, status: Status) -> Error {
        match status {
            Status::Gone => ENODEV,
            _ => ENXIO,
        }
    }

    /// Waits until the manager has acknowledged this host.
    pub(crate) fn wait_ready(&self) -> Result {
        let timeout_ns = engine::expiry_ns(self.config.lease_ms) * 4;
        let start = time::boottime_ns();
        loop {
            {
                let inner = self.inner.lock();
                match (&inner.engine, inner.status) {
                    (Some(e), _) if e.is_ready() => return Ok(()),
                    (_, Status::Gone) => return Err(ENODEV),
                    (None, _) => return Err(ENXIO),
                    _ => {}
                }
            }
            if time::boottime_ns().saturating_sub(start) > timeout_ns {
                return Err(timed_out());
            }
            time::sleep_ms_interruptible(5)?;
        }
    }

    /// Allocates an object and holds it.
    pub(crate) fn alloc(
        &self,
        size: u64,
        flags: u32,
        mode: u32,
        name: Option<Name>,
        uid: u32,
    ) -> Result<Arc<Holding>> {
        let sections = size
            .checked_add(crate::pool::layout::SECTION_SIZE - 1)
            .map(|s| s / crate::pool::layout::SECTION_SIZE)
            .and_then(|s| u32::try_from(s).ok())
            .filter(|&s| s > 0)
            .ok_or(EINVAL)?;
        let handle = self.call(
            Call::Alloc {
                sections,
                flags,
                uid,
                mode,
                name,
            },
            false,
        )?;
        self.hold(handle)
    }

    /// Opens a named object (shared, or private to this host) and holds it.
    pub(crate) fn open(&self, name: Name, uid: u32, admin: bool) -> Result<Arc<Holding>> {
        let handle = self.call(Call::Open { name, uid }, admin)?;
        self.hold(handle)
    }

    fn hold(&self, handle: Handle) -> Result<Arc<Holding>> {
        let mut inner = self.inner.lock();
        if let Some(h) = inner.held.iter().find(|h| h.same_object(&handle)) {
            return Ok(h.clone());
        }
        let data_off = match inner.engine.as_ref() {
            Some(e) => e.geometry().data_off,
            None => return Err(ENODEV),
        };
        let holding = Holding::new(handle, data_off, self.phys)?;
        if holding
            .offset
            .checked_add(holding.size)
            .map_or(true, |end| end > self.size)
        {
            return Err(EIO);
        }
        inner.held.push(holding.clone(), GFP_KERNEL)?;
        Ok(holding)
    }

    /// Frees (or, for a shared object, lets go of) an object this host
    /// holds; its mappings on this host are revoked.
    pub(crate) fn free(&self, object: u32, serial: u64, uid: u32, admin: bool) -> Result {
        self.call(
            Call::Free {
                object,
                serial,
                uid,
            },
            admin,
        )?;
        let gone = {
            let mut inner = self.inner.lock();
            let all = core::mem::replace(&mut inner.held, KVec::new());
            let mut gone = KVec::new();
            for h in all {
                if h.handle.object == object && h.handle.serial == serial {
                    gone.push(h, GFP_KERNEL)?;
                } else {
                    inner.held.push(h, GFP_KERNEL)?;
                }
            }
            gone
        };
        self.revoke(&gone);
        Ok(())
    }

    /// Reclaims a host that is not live (admin).
    pub(crate) fn force_reclaim(&self, host: u32) -> Result<u32> {
        let handle = self.call(Call::Reclaim { host }, true)?;
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
        let _serial = self.calls.lock();
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        if !inner.held.is_empty() {
            pr_err!("{}: format refused: this host holds objects\n", self.name());
            return Err(EBUSY);
        }
        let mut generation = 1;
        if let Some(engine) = inner.engine.as_ref() {
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
            generation = engine.superblock().generation + 1;
        }
        if inner.mem.is_none() {
            return Err(ENODEV);
        }
        let geometry = Geometry::new(self.size, max_hosts, max_objects).map_err(|e| {
            pr_err!(
                "{}: cannot lay out {} bytes for {} hosts and {} objects: {:?}\n",
                self.name(),
                self.size,
                max_hosts,
                max_objects,
                e
            );
            EINVAL
        })?;
        if let (Some(mem), Some(mut engine)) = (inner.mem.as_ref(), inner.engine.take()) {
            let _ = engine.detach(mem, time::boottime_ns());
        }
        self.map_metadata(inner, &geometry)?;
        let mem = inner.mem.as_ref().ok_or(ENODEV)?;
        if let Ok(old) = engine::read_superblock(mem, self.size) {
            generation = generation.max(old.generation + 1);
        }
        let sb = engine::format(
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
        })?;
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
        let mut next = objects.len() as u32;
        for (i, slot) in objects.iter().enumerate().skip(start as usize) {
            if matches!(slot, Slot::Free) {
                continue;
            }
            if out.len() == max {
                next = i as u32;
                break;
            }
            out.push((i as u32, *slot), GFP_KERNEL)?;
        }
        Ok((out, next))
    }

    /// The holding that covers `[offset, offset + len)` of the pool.
    pub(crate) fn find_holding(&self, offset: u64, len: u64) -> Option<Arc<Holding>> {
        let inner = self.inner.lock();
        inner.held.iter().find(|h| h.covers(offset, len)).cloned()
    }

    /// Unbind: no more ticks run (the caller stopped them). Revokes every
    /// mapping, leaves the pool cleanly, and releases the memory.
    pub(crate) fn shutdown(&self) {
        // Not `calls`: a caller waiting for a manager that does not answer
        // would hold up the unbind; it sees the engine gone at its next poll.
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        self.revoke_all(inner);
        if let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) {
            if engine.detach(mem, time::boottime_ns()).is_err() {
                pr_warn!("{}: could not mark the host slot detached\n", self.name());
            }
        }
        inner.engine = None;
        inner.mem = None;
        inner.claim = None;
        inner.status = Status::Gone;
    }
}

impl PeriodicWork for PoolDevice {
    fn run(&self) -> u32 {
        self.tick()
    }
}
