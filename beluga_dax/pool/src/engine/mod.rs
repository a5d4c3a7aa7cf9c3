//! The pool engine: one host's side of the Beluga protocol.
//!
//! Every host runs an `Engine` over the same pool. It keeps its lease
//! (heartbeat in its host slot), watches the other hosts' leases, and sends
//! its allocation requests through its mailbox. The live host with the
//! lowest slot index is the manager: it alone writes the object and section
//! tables and the replies, so no pool word ever has two writers and the
//! protocol needs no cross-host atomics. See
//! `Documentation/cxlfabric/beluga.rst` for why this is safe.
//!
//! The engine is plain logic over a [`Memory`] (the driver's flushed
//! accessor, or a buffer in the host tests) and a clock the caller passes
//! in. It never allocates: the caller lends the table storage, sized from
//! the superblock.
//!
//! One concern per file: `errno` and `memory` (what the engine returns and
//! what it runs on), `format` (superblock and formatting), `lease` (own
//! heartbeat, watching the others, the tick and manager eligibility),
//! `client` (calls through this host's mailbox), `manager` (serving
//! requests, reclaim), `pace` (how often the manager polls between ticks)
//! and `tables` (the object and section tables).

#![deny(clippy::arithmetic_side_effects)]

mod client;
mod errno;
mod format;
mod lease;
mod manager;
mod memory;
pub mod pace;
mod tables;

// The public API, as it was when this was one file. In the kernel the
// pool is a private module of each .ko, which uses only part of it.
#[allow(unused_imports)]
pub use client::{Call, Handle};
#[allow(unused_imports)]
pub use errno::{errno_for_status, Errno};
#[allow(unused_imports)]
pub use format::{format, next_generation, read_superblock};
#[allow(unused_imports)]
pub use lease::{expiry_ns, TickReport};
#[allow(unused_imports)]
pub use memory::{Fault, Memory, SliceMemory};
#[allow(unused_imports)]
pub use tables::Stats;

use super::layout::{Geometry, Superblock, MAX_HOSTS};
use super::leases::{lease_ns, LeaseTracker, Liveness, SlotState, LEASE_MS_RANGE};
use super::mailbox::{Op, Request};
use super::objects::Slot;

const HOSTS: usize = MAX_HOSTS as usize;
/// Reads of a record that keep failing their checksum before giving up
/// for this round (a writer is mid-update, or the record is corrupt).
const READ_TRIES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the reply to the attach request `seq`.
    Attaching(u64),
    Ready,
    /// The lease ran out (or another host writes this slot): everything
    /// this incarnation held may have been reclaimed. Reattach.
    LeaseLost,
    Detached,
}

/// One host's engine.
///
/// # Invariants
///
/// `objects.len() == geometry.max_objects`,
/// `sections.len() == geometry.section_count` and
/// `peers.len() == geometry.max_hosts`; while `managing`, the first two are
/// the pool's tables and `check_tables` holds for them.
pub struct Engine<O, S, P> {
    geometry: Geometry,
    superblock: Superblock,
    index: u32,
    boot_id: [u8; 16],
    lease_ms: u32,
    heartbeat: u64,
    /// When the last heartbeat was written (the next is due a quarter
    /// lease later).
    last_beat_ns: u64,
    /// When the heartbeat this host counts its lease from was written: the
    /// last one read back intact a scan bound after writing it, so every
    /// observer that could expire this host has seen it (`scan_bound_ns`).
    counted_beat_ns: u64,
    beating_since_ns: u64,
    /// When the other hosts' slots were last read (manager checks).
    last_scan_ns: u64,
    liveness: [Liveness; HOSTS],
    state: State,
    next_seq: u64,
    outstanding: Option<u64>,
    managing: bool,
    objects: O,
    sections: S,
    /// The serial of the next object; `None` once `u64::MAX` has been
    /// given (or seen in the table): no more allocations until a format.
    next_serial: Option<u64>,
    peers: P,
}

/// What a host knows of another host. Kept in storage the caller lends
/// (one per host slot), so that an `Engine` stays small enough for a
/// kernel stack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peer {
    tracker: LeaseTracker,
    /// Last request served: (seq, boot tag).
    served: (u64, [u8; 8]),
    /// Incarnation whose resources were reclaimed after its lease ran out:
    /// its further requests are answered with `ESTALE`.
    reclaimed: Option<[u8; 8]>,
}

impl<O, S, P> Engine<O, S, P>
where
    O: core::ops::DerefMut<Target = [Slot]>,
    S: core::ops::DerefMut<Target = [u32]>,
    P: core::ops::DerefMut<Target = [Peer]>,
{
    /// Attaches host `index` to a formatted pool: writes its lease and its
    /// attach request. The caller lends the tables, sized from the
    /// superblock (`max_objects` entries, `section_count` sections,
    /// `max_hosts` peers).
    #[allow(clippy::too_many_arguments)]
    pub fn attach<M: Memory>(
        mem: &M,
        superblock: Superblock,
        index: u32,
        boot_id: [u8; 16],
        lease_ms: u32,
        now_ns: u64,
        objects: O,
        sections: S,
        peers: P,
    ) -> Result<Self, Errno> {
        // Normally read with `read_superblock`; one built otherwise gets
        // the same checks, so every offset derived from it is in range.
        if Superblock::decode(&superblock.encode(), superblock.pool_size) != Ok(superblock) {
            return Err(Errno::EINVAL);
        }
        let geometry = superblock.geometry();
        if index >= geometry.max_hosts || !LEASE_MS_RANGE.contains(&lease_ms) {
            return Err(Errno::EINVAL);
        }
        if objects.len() != geometry.max_objects as usize
            || sections.len() != geometry.section_count as usize
            || peers.len() != geometry.max_hosts as usize
        {
            return Err(Errno::EINVAL);
        }
        let mut engine = Engine {
            geometry,
            superblock,
            index,
            boot_id,
            lease_ms,
            heartbeat: 0,
            last_beat_ns: now_ns,
            counted_beat_ns: now_ns,
            beating_since_ns: now_ns,
            last_scan_ns: 0,
            liveness: [Liveness::Absent; HOSTS],
            state: State::Detached,
            next_seq: 1,
            outstanding: None,
            managing: false,
            objects,
            sections,
            next_serial: Some(1),
            peers,
        };
        engine.start_incarnation(mem, boot_id, now_ns)?;
        Ok(engine)
    }

    /// After a lost lease: a new incarnation with a fresh boot id.
    pub fn reattach<M: Memory>(
        &mut self,
        mem: &M,
        boot_id: [u8; 16],
        now_ns: u64,
    ) -> Result<(), Errno> {
        self.start_incarnation(mem, boot_id, now_ns)
    }

    fn start_incarnation<M: Memory>(
        &mut self,
        mem: &M,
        boot_id: [u8; 16],
        now_ns: u64,
    ) -> Result<(), Errno> {
        self.boot_id = boot_id;
        self.managing = false;
        self.outstanding = None;
        self.beating_since_ns = now_ns;
        // Nothing can be expired before anyone has seen this incarnation,
        // and it holds nothing before the manager answers its attach.
        self.counted_beat_ns = now_ns;
        for peer in self.peers.iter_mut() {
            peer.tracker = LeaseTracker::default();
        }
        self.liveness = [Liveness::Absent; HOSTS];
        self.write_lease(mem, SlotState::Attached, now_ns)?;
        let seq = self.send(mem, Op::Attach, &Request::empty(Op::Attach), now_ns)?;
        self.state = State::Attaching(seq);
        Ok(())
    }

    /// Leaves the pool cleanly: the manager reclaims this host's private
    /// objects and holds at once instead of after the lease.
    pub fn detach<M: Memory>(&mut self, mem: &M, now_ns: u64) -> Result<(), Errno> {
        self.managing = false;
        self.state = State::Detached;
        self.write_lease(mem, SlotState::Detached, now_ns)
    }

    /// The pool's layout, from the superblock attached to.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The superblock this host attached to.
    pub fn superblock(&self) -> &Superblock {
        &self.superblock
    }

    /// This host's slot index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// This host's lease period, in ms.
    pub fn lease_ms(&self) -> u32 {
        self.lease_ms
    }

    /// Whether the attach was answered, so calls may be submitted.
    pub fn is_ready(&self) -> bool {
        self.state == State::Ready
    }

    /// Whether this incarnation is over (lease expired, slot taken, pool
    /// changed, or attach refused): `reattach`.
    pub fn lease_lost(&self) -> bool {
        self.state == State::LeaseLost
    }

    /// Whether this host still holds its lease at `now_ns` by its own
    /// clock: what it holds is still its own. Past this point other hosts
    /// may reclaim it (they wait a margin longer).
    pub fn lease_valid(&self, now_ns: u64) -> bool {
        matches!(self.state, State::Ready | State::Attaching(_))
            && now_ns.saturating_sub(self.counted_beat_ns) <= lease_ns(self.lease_ms)
    }

    /// Whether this host is the manager now (writes the tables and the
    /// replies).
    pub fn is_managing(&self) -> bool {
        self.managing
    }

    /// This host's view of every host (its own entry is always live).
    pub fn liveness(&self) -> &[Liveness] {
        let hosts = usize::try_from(self.geometry.max_hosts).unwrap_or(HOSTS);
        self.liveness.get(..hosts).unwrap_or(&self.liveness)
    }

    /// The manager by this host's view: the lowest-indexed live host.
    pub fn manager(&self) -> Option<u32> {
        self.liveness()
            .iter()
            .position(|l| *l == Liveness::Live)
            .map(|i| i as u32)
    }

    /// Offset of byte `within` of host `host`'s slot.
    fn slot_off(&self, host: u32, within: u64) -> Result<u64, Fault> {
        self.geometry
            .host_slot_offset(host)
            .and_then(|slot| slot.checked_add(within))
            .ok_or(Fault)
    }

    fn peer(&self, host: u32) -> Option<&Peer> {
        self.peers.get(usize::try_from(host).ok()?)
    }

    fn peer_mut(&mut self, host: u32) -> Option<&mut Peer> {
        self.peers.get_mut(usize::try_from(host).ok()?)
    }

    fn liveness_of(&self, host: u32) -> Liveness {
        usize::try_from(host)
            .ok()
            .and_then(|h| self.liveness.get(h))
            .copied()
            .unwrap_or(Liveness::Absent)
    }
}
