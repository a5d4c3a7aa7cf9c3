// SPDX-License-Identifier: GPL-2.0

//! The pool device: its parameters, its memory, and the state `inner`
//! guards. Every other file of `device/` builds on this one.
//!
//! Lock order: see `mod.rs` (`calls` -> `inner` -> a holding's
//! `revoked`). Nothing here takes a lock; it declares `calls` and
//! `inner`.

use crate::mapping::Holding;
use crate::pool::engine::{pace, Engine, Errno, Fault, Memory, Peer};
use crate::pool::layout::LayoutError;
use crate::pool::objects::Slot;
use crate::support::fs::InodeRef;
use crate::support::pagemap::DevicePages;
use crate::support::sharedmem::{ClaimedRange, SharedMem};
use crate::support::time;
use core::sync::atomic::{AtomicBool, AtomicU64};
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{Arc, Mutex};

/// Pool memory: the metadata as the engine sees it, through the flushed
/// accessor; the pages of the whole range, whose direct map this host
/// clears new objects through (outside every lock but `calls`).
pub(crate) struct PoolMem {
    pub(super) meta: SharedMem,
    pub(super) pages: Arc<DevicePages>,
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

pub(super) type PoolEngine = Engine<KVVec<Slot>, KVVec<u32>, KVec<Peer>>;

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
    pub(super) status: Status,
    pub(super) engine: Option<KBox<PoolEngine>>,
    /// The objects this host holds in the pool, used or not.
    pub(super) held: KVec<Arc<Holding>>,
    /// A call was abandoned (timeout, signal): the pool may record holds
    /// this host does not know of. `Some(seq)` if it was an ALLOC.
    pub(super) reconcile: Option<Option<u64>>,
    /// The kernel's mapping of the metadata (superblock and tables) and
    /// the pages of the whole range. Dropped before `claim`.
    pub(super) mem: Option<PoolMem>,
    /// The pool's range, claimed until unbind.
    pub(super) claim: Option<ClaimedRange>,
    /// Manager index last logged, to log changes only.
    pub(super) logged_manager: Option<u32>,
    /// Tick fast until then: requests were served recently.
    pub(super) busy_until_ns: u64,
    /// When this host last served a request as manager (0: never); the
    /// tick polls the mailboxes between ticks for a while after it
    /// (`engine::pace`).
    pub(super) last_served_ns: u64,
    /// Unbound: the engine, kept (and stepped, for the lease) until no
    /// page is referenced; calls see no engine.
    pub(super) draining: Option<KBox<PoolEngine>>,
    /// Unbound with pages still referenced: when that was last logged.
    pub(super) drain_logged_ns: Option<u64>,
}

impl Inner {
    /// The state of a pool not yet judged, over `mem` and `claim`.
    pub(super) fn new(mem: PoolMem, claim: ClaimedRange) -> Inner {
        Inner {
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
        }
    }

    /// Notes a request served at `now`: tick fast, and poll between ticks.
    pub(super) fn served_at(&mut self, now: u64) {
        self.busy_until_ns = now.saturating_add(pace::BUSY_WINDOW_NS);
        self.last_served_ns = now;
    }
}

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
    pub(super) nid: i32,
    /// The dax device's inode: every open file's mappings live in its
    /// address space, so that revoking reaches every mapping.
    pub(super) inode: InodeRef,
    /// Bytes this host cleared before they changed owner, and the time
    /// it took (sysfs, for `bench`).
    pub(super) cleared_bytes: AtomicU64,
    pub(super) clear_ns: AtomicU64,
    /// Time the periodic work (tick, polling between ticks, the reaper's
    /// scan) spent running, from each lock taken to its release: what
    /// keeping the pool costs this host's CPU (sysfs, for `bench`). A
    /// lower bound: the wakeups between polls are not in it.
    pub(super) work_ns: AtomicU64,
    /// Set before the tick is stopped: no more polling between steps.
    pub(super) stopping: AtomicBool,
    /// Serialises calls to the manager. Locked only by
    /// `PoolDevice::lock_calls` (`calls.rs`), whose `Calls` proves it.
    #[pin]
    pub(super) calls: Mutex<()>,
    #[pin]
    pub(super) inner: Mutex<Inner>,
}

/// The kernel error for an errno from the pool (a reply is pool content:
/// anything outside 1..=4095 is `EIO`).
pub(super) fn errno(e: Errno) -> Error {
    match i32::try_from(e.0) {
        Ok(n) if (1..=4095).contains(&n) => Error::from_errno(-n),
        _ => EIO,
    }
}

pub(super) fn new_boot_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    time::random_bytes(&mut id);
    id
}

impl PoolDevice {
    pub(crate) fn name(&self) -> &CStr {
        &self.config.name
    }

    /// Why no engine runs: unbound (`ENODEV`) or not attached (`ENXIO`).
    pub(super) fn not_attached(&self, status: Status) -> Error {
        match status {
            Status::Gone => ENODEV,
            _ => ENXIO,
        }
    }
}
