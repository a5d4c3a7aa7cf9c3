// SPDX-License-Identifier: GPL-2.0

//! One pool bound to `beluga_dax`: its memory, its protocol engine, the
//! objects this host holds, and the periodic tick that keeps the lease.
//!
//! Lock order (outer first): `calls` -> `inner` -> a holding's `revoked`.
//! - `calls` serialises everything that talks to the manager (one request
//!   in flight per host) together with the local bookkeeping of its
//!   answer, so no other call can run between an action and its record
//!   (an ALLOC and the holding it creates, a release and the holding it
//!   forgets). It is held across the wait for the answer.
//! - `inner` guards the engine and the holdings. It is held for short
//!   steps that may sleep briefly (a mutex: the pool is read and written
//!   through it, and the manager clears sections under it), never across
//!   a user copy or the wait for an answer. The mmap lock is never taken
//!   under it; `mmap` and faults take neither `calls` nor `inner`.
//! - The tick takes `inner` only; the reaper takes `calls`, then `inner`.

use crate::mapping::{HoldRef, Holding};
use crate::pool::engine::TickReport;
use crate::pool::engine::{self, pace, Call, Engine, Errno, Fault, Handle, Memory, Peer, Stats};
use crate::pool::layout::{Geometry, SUPERBLOCK_RESERVED};
use crate::pool::layout::{LayoutError, Superblock};
use crate::pool::leases::Liveness;
use crate::pool::objects::{Name, Slot, FLAG_CLEARING};
use crate::support::error::etimedout;
use crate::support::fs::{File, InodeRef};
use crate::support::kvec::VecExt;
use crate::support::pagemap::DevicePages;
use crate::support::sharedmem::{ClaimedRange, SharedMem};
use crate::support::time;
use crate::support::workqueue::PeriodicWork;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::alloc::KVVec;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::lock::{mutex::MutexBackend, Guard};
use kernel::sync::{Arc, Mutex};

/// Pool memory: the metadata as the engine sees it, through the flushed
/// accessor; the pages of the whole range, whose direct map this host
/// clears new objects through (outside every lock but `calls`).
pub(crate) struct PoolMem {
    meta: SharedMem,
    pages: Arc<DevicePages>,
}

impl Memory for PoolMem {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), Fault> {
        let offset = usize::try_from(offset).map_err(|_| Fault)?;
        self.meta.read(offset, buf).map_err(|_| Fault)
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Fault> {
        let offset = usize::try_from(offset).map_err(|_| Fault)?;
        self.meta.write(offset, data).map_err(|_| Fault)
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
    /// Unbound: nothing is served; the memory is released, or will be
    /// once no page is referenced.
    Gone,
}

pub(crate) struct Inner {
    status: Status,
    engine: Option<KBox<PoolEngine>>,
    /// The objects this host holds in the pool, used or not.
    held: KVec<Arc<Holding>>,
    /// A call was abandoned (timeout, signal): the pool may record holds
    /// this host does not know of. `Some(seq)` if it was an ALLOC.
    reconcile: Option<Option<u64>>,
    /// The kernel's mapping of the metadata (superblock and tables) and
    /// the pages of the whole range. Dropped before `claim`.
    mem: Option<PoolMem>,
    /// The pool's range, claimed until unbind.
    claim: Option<ClaimedRange>,
    /// Manager index last logged, to log changes only.
    logged_manager: Option<u32>,
    /// Tick fast until then: requests were served recently.
    busy_until_ns: u64,
    /// When this host last served a request as manager (0: never); the
    /// tick polls the mailboxes between ticks for a while after it
    /// (`engine::pace`).
    last_served_ns: u64,
    /// Unbound: the engine, kept (and stepped, for the lease) until no
    /// page is referenced; calls see no engine.
    draining: Option<KBox<PoolEngine>>,
    /// Unbound with pages still referenced: when that was last logged.
    drain_logged_ns: Option<u64>,
}

impl Inner {
    /// Notes a request served at `now`: tick fast, and poll between ticks.
    fn served_at(&mut self, now: u64) {
        self.busy_until_ns = now.saturating_add(pace::BUSY_WINDOW_NS);
        self.last_served_ns = now;
    }
}

/// A caller polls its reply every `REPLY_POLL_US` at first, then every
/// `REPLY_POLL_SLOW_US` once the call took longer than `REPLY_FAST_NS`.
const REPLY_POLL_US: u32 = 10;
const REPLY_POLL_SLOW_US: u32 = 100;
const REPLY_FAST_NS: u64 = 2_000_000;

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
    /// NUMA node of the pages (the dax instance's).
    nid: i32,
    /// The dax device's inode: every open file's mappings live in its
    /// address space, so that revoking reaches every mapping.
    inode: InodeRef,
    /// Bytes this host cleared before they changed owner, and the time
    /// it took (sysfs, for `bench`).
    cleared_bytes: AtomicU64,
    clear_ns: AtomicU64,
    /// Time the periodic work (tick, polling between ticks, the reaper's
    /// scan) spent running, from each lock taken to its release: what
    /// keeping the pool costs this host's CPU (sysfs, for `bench`). A
    /// lower bound: the wakeups between polls are not in it.
    work_ns: AtomicU64,
    /// Set before the tick is stopped: no more polling between steps.
    stopping: AtomicBool,
    #[pin]
    calls: Mutex<()>,
    #[pin]
    inner: Mutex<Inner>,
}

/// Proof that the caller holds `calls`.
type Calls<'a> = Guard<'a, (), MutexBackend>;

/// Pages still referenced when a holding could be let go of, or at unbind.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReapReport {
    pub(crate) released: u32,
    pub(crate) pinned: u32,
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

/// The kernel error for an errno from the pool (a reply is pool content:
/// anything outside 1..=4095 is `EIO`).
fn errno(e: Errno) -> Error {
    match i32::try_from(e.0) {
        Ok(n) if (1..=4095).contains(&n) => Error::from_errno(-n),
        _ => EIO,
    }
}

fn new_boot_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    time::random_bytes(&mut id);
    id
}

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
                inner <- new_mutex!(Inner {
                    status: Status::Unformatted,
                    engine: None,
                    held: KVec::new(),
                    reconcile: None,
                    mem: Some(mem),
                    claim: Some(claim),
                    logged_manager: None,
                    busy_until_ns: 0,
                    last_served_ns: 0,
                    draining: None,
                    drain_logged_ns: None,
                }, "beluga:inner"),
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
        let mem = inner.mem.as_mut().ok_or(ENODEV)?;
        if mem.meta.len() < len {
            mem.meta = SharedMem::map(self.phys, len)?;
        }
        Ok(())
    }

    /// Every open file calls this from `open`: its mappings join the
    /// device's address space (the dax device's inode). The returned
    /// reference is the file's, for as long as it points there.
    pub(crate) fn adopt_file(&self, file: &File) -> InodeRef {
        let inode = self.inode.clone();
        file.share_mappings_of(&inode);
        inode
    }

    /// Revokes the holdings and unmaps them from every process.
    fn revoke(&self, holdings: &[Arc<Holding>]) {
        for h in holdings {
            h.revoke();
        }
        for h in holdings {
            self.inode.unmap_range(h.offset, h.size);
        }
    }

    fn revoke_all(&self, inner: &mut Inner) {
        let held = core::mem::replace(&mut inner.held, KVec::new());
        // A new incarnation holds nothing: nothing left to reconcile.
        inner.reconcile = None;
        self.revoke(&held);
        if let Some(mem) = inner.mem.as_ref() {
            let pinned: u64 = held
                .iter()
                .filter_map(|h| mem.pages.referenced(h.offset, h.size))
                .sum();
            if pinned > 0 {
                // Documented limit: pins (io_uring, RDMA) cannot be taken
                // back; once the lease is gone, another host may reuse
                // the sections.
                pr_warn!(
                    "{}: {} pinned pages of revoked objects are still referenced\n",
                    self.name(),
                    pinned
                );
            }
        }
    }

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

    fn idle_tick_ms(&self) -> u32 {
        pace::idle_tick_ms(self.config.lease_ms)
    }

    /// Counts the time since `start` as periodic work.
    fn worked_since(&self, start: u64) {
        self.work_ns
            .fetch_add(time::boottime_ns().saturating_sub(start), Ordering::Relaxed);
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
            let mut guard = self.inner.lock();
            // After the lock: the lease check in `serve_mailboxes` must not
            // see a time from before a wait for it.
            let now = time::boottime_ns();
            let inner = &mut *guard;
            let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
                return false;
            };
            if engine.serve_mailboxes(mem, now) > 0 {
                last_served = now;
                inner.served_at(now);
            }
            drop(guard);
            self.worked_since(now);
        }
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
            pr_err!(
                "{}: the superblock changed under this host; detaching\n",
                self.name()
            );
            inner.engine = None;
            self.revoke_all(inner);
            if let Err(e) = self.attach(inner) {
                pr_err!("{}: cannot reattach: {:?}\n", self.name(), e);
            }
            return;
        }
        if !report.lease_lost {
            return;
        }
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

    /// Runs `call` through the manager and waits for its answer. The
    /// caller holds `calls` across this and the bookkeeping of the answer.
    /// An abandoned call (timeout, signal) may be served later: the
    /// reaper then reconciles.
    fn call_locked(&self, _calls: &Calls<'_>, call: Call, admin: bool) -> Result<Handle> {
        let is_alloc = matches!(call, Call::Alloc { .. });
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
                    inner.reconcile = Some(is_alloc.then_some(seq));
                    pr_warn!("{}: no answer from the pool manager\n", self.name());
                    return Err(etimedout());
                }
            }
            let waited = time::boottime_ns().saturating_sub(start);
            let pause = if waited < REPLY_FAST_NS {
                REPLY_POLL_US
            } else {
                REPLY_POLL_SLOW_US
            };
            if let Err(e) = time::sleep_us_interruptible(pause) {
                let mut inner = self.inner.lock();
                if let Some(engine) = inner.engine.as_mut() {
                    engine.abandon(seq);
                    inner.reconcile = Some(is_alloc.then_some(seq));
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
                return Err(etimedout());
            }
            time::sleep_ms_interruptible(5)?;
        }
    }

    /// Allocates an object; the returned use holds it.
    pub(crate) fn alloc(
        &self,
        size: u64,
        flags: u32,
        mode: u32,
        name: Option<Name>,
        uid: u32,
    ) -> Result<HoldRef> {
        let sections = size
            .checked_add(crate::pool::layout::SECTION_SIZE - 1)
            .map(|s| s / crate::pool::layout::SECTION_SIZE)
            .and_then(|s| u32::try_from(s).ok())
            .filter(|&s| s > 0)
            .ok_or(EINVAL)?;
        let calls = self.calls.lock();
        let call = Call::Alloc {
            sections,
            flags,
            uid,
            mode,
            name,
        };
        let handle = self.call_locked(&calls, call, false)?;
        let hold = match self.hold(handle) {
            Ok(hold) => hold,
            Err(e) => {
                // Not recorded: undo the allocation (unlink; the pool
                // frees it with its last holder, which the reconciliation
                // lets go).
                let _ = self.call_locked(&calls, self.unlink_call(&handle), true);
                self.inner.lock().reconcile.get_or_insert(None);
                return Err(e);
            }
        };
        if handle.flags & FLAG_CLEARING != 0 {
            if let Err(e) = self.clear_and_publish(&calls, &hold) {
                // Unpublished, it goes with this host's hold.
                drop(hold);
                self.release_if_idle_locked(&calls, handle.object, handle.serial);
                return Err(e);
            }
        }
        Ok(hold)
    }

    /// Clears a new object's sections (they may hold an earlier owner's
    /// bytes) and publishes it. Only `calls` is held: a long clear holds
    /// up no lease and no other host.
    fn clear_and_publish(&self, calls: &Calls<'_>, hold: &HoldRef) -> Result {
        let pages = {
            let inner = self.inner.lock();
            inner.mem.as_ref().map(|m| m.pages.clone()).ok_or(ENODEV)?
        };
        let start = time::boottime_ns();
        hold.while_held(|| pages.clear(hold.offset, hold.size))?;
        drop(pages);
        self.clear_ns
            .fetch_add(time::boottime_ns().saturating_sub(start), Ordering::Relaxed);
        self.cleared_bytes.fetch_add(hold.size, Ordering::Relaxed);
        let publish = Call::Publish {
            object: hold.handle.object,
            serial: hold.handle.serial,
        };
        self.call_locked(calls, publish, false)?;
        Ok(())
    }

    /// Opens a named object (shared, or private to this host); the
    /// returned use holds it.
    pub(crate) fn open(&self, name: Name, uid: u32, admin: bool) -> Result<HoldRef> {
        let calls = self.calls.lock();
        let handle = self.call_locked(&calls, Call::Open { name, uid }, admin)?;
        self.hold(handle).inspect_err(|_| {
            self.inner.lock().reconcile.get_or_insert(None);
        })
    }

    fn unlink_call(&self, handle: &Handle) -> Call {
        Call::Free {
            object: handle.object,
            serial: handle.serial,
            uid: handle.uid,
        }
    }

    /// Records the hold the manager granted (the caller holds `calls`).
    fn hold(&self, handle: Handle) -> Result<HoldRef> {
        let mut inner = self.inner.lock();
        if let Some(h) = inner
            .held
            .iter()
            .find(|h| h.same_object(handle.object, handle.serial) && !h.is_revoked())
        {
            return Ok(HoldRef::new(h));
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
        Ok(HoldRef::new(&holding))
    }

    /// Unlinks an object (FREE): its name goes at once, its sections when
    /// the last user on every host lets go. Nothing is revoked.
    pub(crate) fn free(&self, object: u32, serial: u64, uid: u32, admin: bool) -> Result {
        let calls = self.calls.lock();
        let call = Call::Free {
            object,
            serial,
            uid,
        };
        self.call_locked(&calls, call, admin)?;
        Ok(())
    }

    /// Lets go of the holding of `(object, serial)` at once if nothing on
    /// this host uses it any more (after FREE dropped the caller's use),
    /// so that a FREE by the only user returns the sections at once.
    pub(crate) fn release_if_idle(&self, object: u32, serial: u64) {
        let calls = self.calls.lock();
        self.release_if_idle_locked(&calls, object, serial);
    }

    fn release_if_idle_locked(&self, calls: &Calls<'_>, object: u32, serial: u64) {
        let idle = {
            let mut inner = self.inner.lock();
            let Some(mem) = inner.mem.as_ref() else {
                return;
            };
            let Some(at) = inner.held.iter().position(|h| {
                h.same_object(object, serial)
                    && h.unused()
                    && mem.pages.referenced(h.offset, h.size) == Some(0)
            }) else {
                return;
            };
            match inner.held.swap_remove(at) {
                Some(h) => h,
                None => return,
            }
        };
        idle.revoke();
        self.release(calls, &idle);
    }

    /// Tells the manager this host no longer holds `h`.
    fn release(&self, calls: &Calls<'_>, h: &Holding) -> bool {
        let call = Call::Release {
            object: h.handle.object,
            serial: h.handle.serial,
        };
        match self.call_locked(calls, call, false) {
            Ok(_) => true,
            // Someone else already took it (reclaim): nothing to do.
            Err(e) if e == ENOENT => false,
            Err(_) => {
                self.inner.lock().reconcile.get_or_insert(None);
                false
            }
        }
    }

    /// The reaper's pass: lets go of holdings nothing on this host uses
    /// (no file, mapping or kernel user, no referenced page), and
    /// reconciles after an abandoned call.
    pub(crate) fn reap(&self) -> ReapReport {
        let calls = self.calls.lock();
        let mut report = ReapReport::default();
        let (idle, start) = {
            let mut guard = self.inner.lock();
            // The scan is upkeep (`work_ns`, from here: a wait for the
            // lock is not work); releases and reconciling are this host's
            // own calls, and sleep while the manager answers.
            let start = time::boottime_ns();
            let inner = &mut *guard;
            let Some(mem) = inner.mem.as_ref() else {
                drop(guard);
                self.worked_since(start);
                return report;
            };
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
            (idle, start)
        };
        self.worked_since(start);
        for h in idle.iter() {
            // No user left, so no mapping to unmap; revoked so that a
            // stray lookup cannot revive it.
            h.revoke();
            if self.release(&calls, h) {
                report.released = report.released.saturating_add(1);
            }
        }
        self.reconcile(&calls);
        report
    }

    /// After an abandoned call: lets go of every hold the pool records
    /// for this host that it has no holding for, and unlinks the object
    /// an abandoned ALLOC created. First a barrier call, whose answer
    /// proves the abandoned request will not be served any more (the
    /// manager serves a host's requests in order, one at a time).
    fn reconcile(&self, calls: &Calls<'_>) {
        let Some(abandoned_alloc) = self.inner.lock().reconcile else {
            return;
        };
        let barrier = Call::Release {
            object: u32::MAX,
            serial: 0,
        };
        match self.call_locked(calls, barrier, false) {
            Ok(_) => {}
            Err(e) if e == ENOENT || e == EINVAL => {}
            // No answer yet: the next pass tries again.
            Err(_) => return,
        }
        let mut orphans = KVec::new();
        {
            let mut guard = self.inner.lock();
            let inner = &mut *guard;
            let (Some(mem), Some(engine)) = (inner.mem.as_ref(), inner.engine.as_mut()) else {
                return;
            };
            if engine.refresh(mem).is_err() {
                return;
            }
            let me = engine.index();
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
                    && abandoned_alloc
                        .is_some_and(|seq| u64::from(e.request_seq) == seq & 0xffff_ffff);
                if orphans
                    .push((index, e.serial, e.uid, ours), GFP_KERNEL)
                    .is_err()
                {
                    return;
                }
            }
            inner.reconcile = None;
        }
        for (object, serial, uid, ours) in orphans {
            if ours {
                let _ = self.call_locked(
                    calls,
                    Call::Free {
                        object,
                        serial,
                        uid,
                    },
                    true,
                );
            }
            if self
                .call_locked(calls, Call::Release { object, serial }, false)
                .is_err()
            {
                self.inner.lock().reconcile.get_or_insert(None);
            }
            pr_info!(
                "{}: let go of object {} that an abandoned call left held\n",
                self.name(),
                object
            );
        }
    }

    /// Reclaims a host that is not live (admin).
    pub(crate) fn force_reclaim(&self, host: u32) -> Result<u32> {
        let calls = self.calls.lock();
        let handle = self.call_locked(&calls, Call::Reclaim { host }, true)?;
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
        let _serial = self.calls.lock();
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        if inner.status == Status::Gone {
            return Err(ENODEV);
        }
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
            generation = engine
                .superblock()
                .generation
                .checked_add(1)
                .ok_or_else(|| {
                    pr_err!("{}: format refused: generation exhausted\n", self.name());
                    EINVAL
                })?;
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
            let next = old.generation.checked_add(1).ok_or_else(|| {
                pr_err!("{}: format refused: generation exhausted\n", self.name());
                EINVAL
            })?;
            generation = generation.max(next);
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

    /// Nanoseconds the periodic work has run (see `work_ns`).
    pub(crate) fn work_ns(&self) -> u64 {
        self.work_ns.load(Ordering::Relaxed)
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
            return false;
        }
        if let Some(engine) = inner.draining.as_mut() {
            if engine.detach(mem, time::boottime_ns()).is_err() {
                pr_warn!("{}: could not mark the host slot detached\n", self.name());
            }
        }
        inner.draining = None;
        inner.mem = None;
        inner.claim = None;
        pr_info!("{}: released\n", self.name());
        true
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

/// An unbound pool with referenced pages says so this often.
const DRAIN_LOG_NS: u64 = 10_000_000_000;
/// The longest time between two drain steps.
const DRAIN_STEP_MS: u32 = 100;

impl PeriodicWork for PoolDevice {
    fn run(&self) -> u32 {
        self.tick()
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

/// How often the reaper looks for holdings to let go of.
const REAP_MS: u32 = 20;
