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

use super::layout::{Geometry, LayoutError, Superblock, MAX_HOSTS, SUPERBLOCK_BYTES};
use super::leases::{manager_may_write, HostSlot, LeaseTracker, Liveness, SlotState};
use super::leases::{LEASE_MS_RANGE, SLOT_BYTES};
use super::mailbox::{boot_tag, Op, Reply, Request, REPLY_BYTES, REPLY_OFF, REQUEST_BYTES};
use super::mailbox::{REQUEST_OFF, REQ_ADMIN};
use super::objects::{Name, ObjectEntry, ObjectError, Slot, ENTRY_BYTES, FLAG_SHARED};
use super::sections::{AllocError, Extent, SectionMap};

/// Access to the pool. Implementations keep the flush discipline: a read
/// invalidates the lines first, a write stores, writes back and fences.
pub trait Memory {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), Fault>;
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Fault>;
}

/// An access outside the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault;

/// A pool in ordinary memory, shared by the engines of simulated hosts
/// (host tests, KUnit): plain copies, no flushes needed.
pub struct SliceMemory<'a> {
    bytes: core::cell::RefCell<&'a mut [u8]>,
}

impl<'a> SliceMemory<'a> {
    pub fn new(bytes: &'a mut [u8]) -> SliceMemory<'a> {
        SliceMemory {
            bytes: core::cell::RefCell::new(bytes),
        }
    }
}

impl Memory for SliceMemory<'_> {
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), Fault> {
        // `try_`: no panic paths in kernel code.
        let bytes = self.bytes.try_borrow().map_err(|_| Fault)?;
        let start = usize::try_from(offset).map_err(|_| Fault)?;
        let end = start.checked_add(buf.len()).ok_or(Fault)?;
        buf.copy_from_slice(bytes.get(start..end).ok_or(Fault)?);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Fault> {
        let mut bytes = self.bytes.try_borrow_mut().map_err(|_| Fault)?;
        let start = usize::try_from(offset).map_err(|_| Fault)?;
        let end = start.checked_add(data.len()).ok_or(Fault)?;
        bytes
            .get_mut(start..end)
            .ok_or(Fault)?
            .copy_from_slice(data);
        Ok(())
    }
}

/// A positive errno value, as carried in replies and returned to callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub u32);

impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const EIO: Errno = Errno(5);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const EINVAL: Errno = Errno(22);
    pub const ENOSPC: Errno = Errno(28);
    pub const ESTALE: Errno = Errno(116);
    pub const EUCLEAN: Errno = Errno(117);
}

impl From<Fault> for Errno {
    fn from(_: Fault) -> Errno {
        Errno::EIO
    }
}

const MS: u64 = 1_000_000;
const HOSTS: usize = MAX_HOSTS as usize;
/// Reads of a record that keep failing their checksum before giving up
/// for this round (a writer is mid-update, or the record is corrupt).
const READ_TRIES: usize = 3;
const SECTION_ENTRY: usize = 16;

/// How long a host must have heartbeated without a gap before it may act
/// as manager: by then every other host has seen it live, and it has
/// observed every other host for a full expiry period.
pub fn expiry_ns(lease_ms: u32) -> u64 {
    let lease = lease_ms as u64 * MS;
    lease + lease * LeaseTracker::MARGIN_PERMILLE / 1000
}

/// Reads and validates the superblock.
pub fn read_superblock<M: Memory>(mem: &M, device_size: u64) -> Result<Superblock, LayoutError> {
    let mut bytes = [0u8; SUPERBLOCK_BYTES];
    mem.read(0, &mut bytes)
        .map_err(|_| LayoutError::Truncated)?;
    Superblock::decode(&bytes, device_size)
}

/// Formats the pool: tables emptied, then the superblock. The old
/// superblock is destroyed first, so a host attaching meanwhile sees an
/// unformatted pool rather than half-written tables. Only for a pool no
/// other host uses (the driver checks what it can see).
pub fn format<M: Memory>(
    mem: &M,
    device_size: u64,
    max_hosts: u32,
    max_objects: u32,
    uuid: [u8; 16],
    generation: u64,
) -> Result<Superblock, Errno> {
    let geometry = Geometry::new(device_size, max_hosts, max_objects).map_err(|_| Errno::EINVAL)?;
    mem.write(0, &[0u8; SUPERBLOCK_BYTES])?;
    let zeros = [0u8; 512];
    let mut offset = geometry.host_table_off;
    // Host slots and the section table are free when zero.
    while offset < geometry.object_table_off {
        let len = (geometry.object_table_off - offset).min(zeros.len() as u64);
        mem.write(offset, &zeros[..len as usize])?;
        offset += len;
    }
    let free = Slot::Free.encode();
    let mut chunk = [0u8; 4 * ENTRY_BYTES];
    for entry in chunk.chunks_mut(ENTRY_BYTES) {
        entry.copy_from_slice(&free);
    }
    let mut index = 0;
    while index < max_objects {
        let n = (max_objects - index).min(4);
        let at = geometry.object_table_off + index as u64 * ENTRY_BYTES as u64;
        mem.write(at, &chunk[..n as usize * ENTRY_BYTES])?;
        index += n;
    }
    let superblock = Superblock::new(&geometry, uuid, generation);
    mem.write(0, &superblock.encode())?;
    Ok(superblock)
}

/// What a caller asks of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Alloc {
        sections: u32,
        flags: u32,
        uid: u32,
        mode: u32,
        name: Option<Name>,
    },
    Open {
        name: Name,
        uid: u32,
    },
    Free {
        object: u32,
        serial: u64,
        uid: u32,
    },
    Reclaim {
        host: u32,
    },
}

/// A served call: the object it concerns, already checked against the
/// geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    pub object: u32,
    pub serial: u64,
    pub extent: Extent,
    pub flags: u32,
    pub uid: u32,
    pub mode: u32,
}

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

/// What a tick saw and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickReport {
    /// This host's lease ran out (or another host writes its slot): drop
    /// every mapping and handle, then `reattach`.
    pub lease_lost: bool,
    pub slot_conflict: bool,
    /// The superblock changed under us (reformatted or damaged).
    pub pool_changed: bool,
    pub became_manager: bool,
    /// The tables failed validation when this host took over.
    pub corrupt: Option<&'static str>,
    pub served: u32,
    /// Objects freed or released for dead or departed hosts.
    pub reclaimed: u32,
}

/// Pool usage, from the manager's tables or a validated read of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub sections: u32,
    pub free_sections: u32,
    pub largest_free_run: u32,
    pub fragmentation_permille: u32,
    pub objects: u32,
    /// Sections of the objects each host owns.
    pub used_by_host: [u32; HOSTS],
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
    last_beat_ns: u64,
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
    next_serial: u64,
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
            beating_since_ns: now_ns,
            last_scan_ns: 0,
            liveness: [Liveness::Absent; HOSTS],
            state: State::Detached,
            next_seq: 1,
            outstanding: None,
            managing: false,
            objects,
            sections,
            next_serial: 1,
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

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn superblock(&self) -> &Superblock {
        &self.superblock
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn lease_ms(&self) -> u32 {
        self.lease_ms
    }

    pub fn is_ready(&self) -> bool {
        self.state == State::Ready
    }

    pub fn lease_lost(&self) -> bool {
        self.state == State::LeaseLost
    }

    /// Whether this host still holds its lease at `now_ns` by its own
    /// clock: what it holds is still its own. Past this point other hosts
    /// may reclaim it (they wait a margin longer).
    pub fn lease_valid(&self, now_ns: u64) -> bool {
        matches!(self.state, State::Ready | State::Attaching(_))
            && now_ns.saturating_sub(self.last_beat_ns) <= self.lease_ms as u64 * MS
    }

    pub fn is_managing(&self) -> bool {
        self.managing
    }

    /// This host's view of every host (its own entry is always live).
    pub fn liveness(&self) -> &[Liveness] {
        &self.liveness[..self.geometry.max_hosts as usize]
    }

    pub fn manager(&self) -> Option<u32> {
        self.liveness()
            .iter()
            .position(|l| *l == Liveness::Live)
            .map(|i| i as u32)
    }

    fn slot_off(&self, host: u32) -> u64 {
        self.geometry.host_table_off + host as u64 * SLOT_BYTES as u64
    }

    fn write_lease<M: Memory>(
        &mut self,
        mem: &M,
        state: SlotState,
        now_ns: u64,
    ) -> Result<(), Errno> {
        self.heartbeat += 1;
        let slot = HostSlot {
            state,
            host_index: self.index,
            boot_id: self.boot_id,
            heartbeat: self.heartbeat,
            lease_ms: self.lease_ms,
            generation: self.superblock.generation,
        };
        mem.write(self.slot_off(self.index), &slot.encode()[..64])?;
        self.last_beat_ns = now_ns;
        Ok(())
    }

    fn read_slot<M: Memory>(&self, mem: &M, host: u32) -> Option<Result<HostSlot, ()>> {
        let mut bytes = [0u8; SLOT_BYTES];
        for _ in 0..READ_TRIES {
            if mem.read(self.slot_off(host), &mut bytes[..64]).is_err() {
                return None;
            }
            match HostSlot::decode(&bytes, host, self.geometry.max_hosts) {
                Ok(slot) => return Some(Ok(slot)),
                Err(super::leases::SlotError::Empty) => return Some(Err(())),
                Err(_) => continue,
            }
        }
        None
    }

    /// One round of the protocol, every few milliseconds: heartbeat,
    /// watch the other leases, and, as manager, reclaim and serve.
    pub fn tick<M: Memory>(&mut self, mem: &M, now_ns: u64) -> TickReport {
        let mut report = TickReport::default();
        if matches!(self.state, State::LeaseLost | State::Detached) {
            report.lease_lost = self.state == State::LeaseLost;
            return report;
        }
        let lease_ns = self.lease_ms as u64 * MS;
        if now_ns.saturating_sub(self.last_beat_ns) > lease_ns {
            // Others may already have expired us and reclaimed our objects.
            self.lose_lease();
            report.lease_lost = true;
            return report;
        }
        match read_superblock(mem, self.geometry.pool_size) {
            Ok(sb) if sb == self.superblock => {}
            _ => {
                self.lose_lease();
                report.lease_lost = true;
                report.pool_changed = true;
                return report;
            }
        }
        // Someone else writing our slot means two hosts share an index.
        if let Some(Ok(own)) = self.read_slot(mem, self.index) {
            if own.boot_id != self.boot_id {
                self.lose_lease();
                report.lease_lost = true;
                report.slot_conflict = true;
                return report;
            }
        }
        if now_ns.saturating_sub(self.last_beat_ns) >= lease_ns / 4
            && self.write_lease(mem, SlotState::Attached, now_ns).is_err()
        {
            self.lose_lease();
            report.lease_lost = true;
            return report;
        }
        self.observe(mem, now_ns);
        self.last_scan_ns = now_ns;

        let eligible = self.manager() == Some(self.index)
            && now_ns.saturating_sub(self.beating_since_ns) >= expiry_ns(self.lease_ms)
            && manager_may_write(self.last_beat_ns, now_ns, self.lease_ms);
        if eligible && !self.managing {
            match self.load_tables(mem) {
                Ok(()) => {
                    self.managing = true;
                    report.became_manager = true;
                    // The object table is the truth; the section table is
                    // an index of it, rewritten at every takeover.
                    let _ = self.write_sections(mem, 0, self.geometry.section_count);
                }
                Err(why) => report.corrupt = Some(why),
            }
        } else if !eligible {
            self.managing = false;
        }

        if self.managing {
            for host in 0..self.geometry.max_hosts {
                // Not `Absent`: a slot this host could not read is no
                // evidence of death (an admin can force that reclaim).
                let dead = matches!(
                    self.liveness[host as usize],
                    Liveness::Expired | Liveness::Detached
                );
                if host != self.index && dead && self.holds_anything(host) {
                    report.reclaimed += self.reclaim_host(mem, host);
                    if self.liveness[host as usize] == Liveness::Expired {
                        let peer = &mut self.peers[host as usize];
                        peer.reclaimed = Some(boot_tag(&peer.tracker.boot_id()));
                    }
                }
            }
            for host in 0..self.geometry.max_hosts {
                if self.liveness[host as usize] == Liveness::Live && self.serve(mem, host) {
                    report.served += 1;
                }
            }
        }

        if let State::Attaching(seq) = self.state {
            if let Ok(Some(reply)) = self.poll_raw(mem, seq) {
                self.outstanding = None;
                self.state = if reply.status == 0 {
                    State::Ready
                } else {
                    State::LeaseLost
                };
            }
        }
        report
    }

    fn lose_lease(&mut self) {
        self.state = State::LeaseLost;
        self.managing = false;
        self.outstanding = None;
    }

    fn observe<M: Memory>(&mut self, mem: &M, now_ns: u64) {
        for host in 0..self.geometry.max_hosts {
            let h = host as usize;
            if host == self.index {
                self.liveness[h] = Liveness::Live;
                continue;
            }
            match self.read_slot(mem, host) {
                Some(Ok(slot)) if slot.generation == self.superblock.generation => {
                    self.peers[h].tracker.observe(&slot, now_ns)
                }
                // A slot from another format of the pool, or never written.
                Some(_) => self.peers[h].tracker = LeaseTracker::default(),
                // Torn or unreadable this round: judged on what was seen.
                None => {}
            }
            self.liveness[h] = self.peers[h].tracker.liveness(now_ns);
        }
    }

    // ---- client side ----

    /// Whether this host may write the tables right now: it manages, its
    /// own lease is fresh enough that nobody can have expired it, and it
    /// read the other slots recently (a lower host may have come back).
    fn may_manage_now(&self, now_ns: u64) -> bool {
        let lease_ns = self.lease_ms as u64 * MS;
        self.managing
            && manager_may_write(self.last_beat_ns, now_ns, self.lease_ms)
            && now_ns.saturating_sub(self.last_scan_ns) < lease_ns / 4
    }

    fn send<M: Memory>(
        &mut self,
        mem: &M,
        op: Op,
        template: &Request,
        now_ns: u64,
    ) -> Result<u64, Errno> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let request = Request {
            op,
            seq,
            boot_id: self.boot_id,
            ..*template
        };
        mem.write(self.slot_off(self.index) + REQUEST_OFF, &request.encode())?;
        self.outstanding = Some(seq);
        // Served by the next tick otherwise.
        if self.may_manage_now(now_ns) {
            self.serve(mem, self.index);
        }
        Ok(seq)
    }

    /// Sends a call to the manager; `poll` with the returned sequence
    /// number until it is answered. One call at a time (`EBUSY`).
    pub fn submit<M: Memory>(
        &mut self,
        mem: &M,
        call: Call,
        admin: bool,
        now_ns: u64,
    ) -> Result<u64, Errno> {
        if !self.lease_valid(now_ns) {
            self.lose_lease();
        }
        match self.state {
            State::Ready => {}
            State::Attaching(_) => return Err(Errno::EAGAIN),
            State::LeaseLost | State::Detached => return Err(Errno::ESTALE),
        }
        if self.outstanding.is_some() {
            return Err(Errno::EBUSY);
        }
        let mut request = Request::empty(Op::Alloc);
        if admin {
            request.flags |= REQ_ADMIN;
        }
        let op = match call {
            Call::Alloc {
                sections,
                flags,
                uid,
                mode,
                name,
            } => {
                request.sections = sections;
                request.flags |= flags;
                request.uid = uid;
                request.mode = mode;
                request.name = name;
                Op::Alloc
            }
            Call::Open { name, uid } => {
                request.name = Some(name);
                request.uid = uid;
                Op::Open
            }
            Call::Free {
                object,
                serial,
                uid,
            } => {
                request.object = object;
                request.serial = serial;
                request.uid = uid;
                Op::Free
            }
            Call::Reclaim { host } => {
                request.object = host;
                Op::Reclaim
            }
        };
        self.send(mem, op, &request, now_ns)
    }

    /// The answer to call `seq`, if it has come: a handle, or the errno
    /// the manager (or a failed check of its reply) gives.
    pub fn poll<M: Memory>(&mut self, mem: &M, seq: u64) -> Option<Result<Handle, Errno>> {
        if self.outstanding != Some(seq) {
            return Some(Err(Errno::ESTALE));
        }
        let reply = match self.poll_raw(mem, seq) {
            Ok(Some(reply)) => reply,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        self.outstanding = None;
        if reply.status != 0 {
            return Some(Err(Errno(reply.status)));
        }
        let end = reply.extent.first.checked_add(reply.extent.count);
        let in_pool = matches!(end, Some(end) if end <= self.geometry.section_count);
        // A reclaim answers with a count, not an object.
        let plausible =
            reply.extent.count == 0 || (in_pool && reply.object < self.geometry.max_objects);
        if !plausible {
            return Some(Err(Errno::EIO));
        }
        Some(Ok(Handle {
            object: reply.object,
            serial: reply.serial,
            extent: reply.extent,
            flags: reply.flags,
            uid: reply.uid,
            mode: reply.mode,
        }))
    }

    /// Gives up on call `seq` (timed out): a later reply is ignored.
    pub fn abandon(&mut self, seq: u64) {
        if self.outstanding == Some(seq) {
            self.outstanding = None;
        }
    }

    fn poll_raw<M: Memory>(&self, mem: &M, seq: u64) -> Result<Option<Reply>, Errno> {
        let mut bytes = [0u8; REPLY_BYTES];
        mem.read(self.slot_off(self.index) + REPLY_OFF, &mut bytes)?;
        Ok(match Reply::decode(&bytes) {
            Ok(r) if r.seq == seq && r.boot_tag == boot_tag(&self.boot_id) => Some(r),
            _ => None,
        })
    }

    // ---- manager side ----

    /// Serves `host`'s mailbox if it holds a request not yet answered.
    fn serve<M: Memory>(&mut self, mem: &M, host: u32) -> bool {
        let h = host as usize;
        let expected_boot = if host == self.index {
            self.boot_id
        } else {
            self.peers[h].tracker.boot_id()
        };
        let mut bytes = [0u8; REQUEST_BYTES];
        let off = self.slot_off(host);
        if mem.read(off + REQUEST_OFF, &mut bytes).is_err() {
            return false;
        }
        let Ok(request) = Request::decode(&bytes) else {
            return false;
        };
        let tag = boot_tag(&request.boot_id);
        if request.boot_id != expected_boot || self.peers[h].served == (request.seq, tag) {
            return false;
        }
        let mut reply_bytes = [0u8; REPLY_BYTES];
        if mem.read(off + REPLY_OFF, &mut reply_bytes).is_err() {
            return false;
        }
        if let Ok(old) = Reply::decode(&reply_bytes) {
            if old.seq == request.seq && old.boot_tag == tag {
                self.peers[h].served = (request.seq, tag);
                return false;
            }
        }
        let mut reply = if self.peers[h].reclaimed == Some(tag) {
            Reply::error(Errno::ESTALE)
        } else {
            match self.execute(mem, host, &request) {
                Ok(reply) => reply,
                Err(e) => Reply::error(e),
            }
        };
        reply.seq = request.seq;
        reply.boot_tag = tag;
        if mem.write(off + REPLY_OFF, &reply.encode()).is_err() {
            return false;
        }
        self.peers[h].served = (request.seq, tag);
        true
    }

    fn execute<M: Memory>(
        &mut self,
        mem: &M,
        host: u32,
        request: &Request,
    ) -> Result<Reply, Errno> {
        let admin = request.flags & REQ_ADMIN != 0;
        match request.op {
            Op::Attach => {
                // Whatever the slot's earlier incarnations held is gone.
                self.reclaim_host(mem, host);
                self.peers[host as usize].reclaimed = None;
                Ok(Reply::error(Errno(0)))
            }
            Op::Alloc => self.alloc(mem, host, request),
            Op::Open => self.open(mem, host, request, admin),
            Op::Free => self.free(mem, host, request, admin),
            Op::Reclaim => {
                let target = request.object;
                if !admin {
                    return Err(Errno::EPERM);
                }
                if target >= self.geometry.max_hosts || target == host {
                    return Err(Errno::EINVAL);
                }
                if self.liveness[target as usize] == Liveness::Live {
                    return Err(Errno::EBUSY);
                }
                let count = self.reclaim_host(mem, target);
                let mut reply = Reply::error(Errno(0));
                reply.object = count;
                Ok(reply)
            }
        }
    }

    fn alloc<M: Memory>(&mut self, mem: &M, host: u32, request: &Request) -> Result<Reply, Errno> {
        let flags = request.flags & !REQ_ADMIN;
        if flags & !FLAG_SHARED != 0 || request.mode > 0o777 || request.sections == 0 {
            return Err(Errno::EINVAL);
        }
        if flags & FLAG_SHARED != 0 && request.name.is_none() {
            return Err(Errno::EINVAL);
        }
        // Served again after a manager change: the object is already there.
        let seq = request.seq as u32;
        if let Some((index, entry)) = self
            .live()
            .find(|(_, e)| e.owner_host == host && e.request_seq == seq)
        {
            return Ok(Reply::of(index, entry));
        }
        if let Some(name) = &request.name {
            if self.find_name(name).is_some() {
                return Err(Errno::EEXIST);
            }
        }
        let index = self
            .objects
            .iter()
            .position(|s| *s == Slot::Free)
            .ok_or(Errno::ENOSPC)? as u32;
        let max_objects = self.geometry.max_objects;
        let mut map =
            SectionMap::new(&mut self.sections, max_objects).map_err(|_| Errno::EUCLEAN)?;
        let extent = map.allocate(request.sections, index).map_err(|e| match e {
            AllocError::NoSpace { .. } => Errno::ENOSPC,
            _ => Errno::EINVAL,
        })?;
        let entry = ObjectEntry {
            extent,
            owner_host: host,
            flags,
            uid: request.uid,
            mode: request.mode,
            holders: 1u64 << host,
            generation: self.superblock.generation,
            serial: self.next_serial,
            request_seq: seq,
            name: request.name,
        };
        self.next_serial += 1;
        self.objects[index as usize] = Slot::Live(entry);
        // Entry first: a takeover rebuilds the section index from entries.
        self.write_object(mem, index)?;
        self.write_sections(mem, extent.first, extent.count)?;
        Ok(Reply::of(index, &entry))
    }

    fn open<M: Memory>(
        &mut self,
        mem: &M,
        host: u32,
        request: &Request,
        admin: bool,
    ) -> Result<Reply, Errno> {
        let name = request.name.as_ref().ok_or(Errno::EINVAL)?;
        let (index, mut entry) = self.find_name(name).ok_or(Errno::ENOENT)?;
        if entry.flags & FLAG_SHARED == 0 && entry.owner_host != host {
            return Err(Errno::ENOENT);
        }
        if !admin && !entry.may_map(request.uid, false) {
            return Err(Errno::EACCES);
        }
        if entry.holders & (1u64 << host) == 0 {
            entry.holders |= 1 << host;
            self.objects[index as usize] = Slot::Live(entry);
            self.write_object(mem, index)?;
        }
        Ok(Reply::of(index, &entry))
    }

    fn free<M: Memory>(
        &mut self,
        mem: &M,
        host: u32,
        request: &Request,
        admin: bool,
    ) -> Result<Reply, Errno> {
        let index = request.object;
        let entry = match self.objects.get(index as usize) {
            Some(Slot::Live(e)) if e.serial == request.serial => *e,
            _ => return Err(Errno::ENOENT),
        };
        if entry.holders & (1u64 << host) == 0 {
            return Err(Errno::ENOENT);
        }
        if !admin && request.uid != entry.uid {
            return Err(Errno::EPERM);
        }
        self.release(mem, index, host)?;
        Ok(Reply::of(index, &entry))
    }

    /// Drops `host`'s hold on object `index`; the object is freed when it
    /// is private or no host holds it any more. Returns whether it was.
    fn release<M: Memory>(&mut self, mem: &M, index: u32, host: u32) -> Result<bool, Errno> {
        let Some(Slot::Live(mut entry)) = self.objects.get(index as usize).copied() else {
            return Err(Errno::ENOENT);
        };
        entry.holders &= !(1u64 << host);
        let shared = entry.flags & FLAG_SHARED != 0;
        if shared && entry.holders != 0 {
            self.objects[index as usize] = Slot::Live(entry);
            self.write_object(mem, index)?;
            return Ok(false);
        }
        let max_objects = self.geometry.max_objects;
        let mut map =
            SectionMap::new(&mut self.sections, max_objects).map_err(|_| Errno::EUCLEAN)?;
        map.free(entry.extent, index).map_err(|_| Errno::EUCLEAN)?;
        self.objects[index as usize] = Slot::Free;
        // Sections first: they are free only once the entry says so, and a
        // takeover rebuilds them from the entries anyway.
        self.write_sections(mem, entry.extent.first, entry.extent.count)?;
        self.write_object(mem, index)?;
        Ok(true)
    }

    fn holds_anything(&self, host: u32) -> bool {
        self.live().any(|(_, e)| {
            e.holders & (1u64 << host) != 0 || e.owner_host == host && e.flags & FLAG_SHARED == 0
        })
    }

    /// Frees `host`'s private objects and drops its holds on shared ones.
    fn reclaim_host<M: Memory>(&mut self, mem: &M, host: u32) -> u32 {
        let mut count = 0;
        for index in 0..self.geometry.max_objects {
            let Some(Slot::Live(entry)) = self.objects.get(index as usize).copied() else {
                continue;
            };
            let private_of_host = entry.owner_host == host && entry.flags & FLAG_SHARED == 0;
            let held = private_of_host || entry.holders & (1u64 << host) != 0;
            if held && self.release(mem, index, host).is_ok() {
                count += 1;
            }
        }
        count
    }

    fn live(&self) -> impl Iterator<Item = (u32, &ObjectEntry)> + '_ {
        self.objects
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Slot::Live(e) => Some((i as u32, e)),
                Slot::Free => None,
            })
    }

    fn find_name(&self, name: &Name) -> Option<(u32, ObjectEntry)> {
        self.live()
            .find(|(_, e)| e.name.as_ref() == Some(name))
            .map(|(i, e)| (i, *e))
    }

    fn write_object<M: Memory>(&self, mem: &M, index: u32) -> Result<(), Errno> {
        let at = self.geometry.object_table_off + index as u64 * ENTRY_BYTES as u64;
        mem.write(at, &self.objects[index as usize].encode())?;
        Ok(())
    }

    /// Writes the section index entries `[first, first + count)`: owner
    /// (object + 1, 0 when free) and the owner's serial.
    fn write_sections<M: Memory>(&self, mem: &M, first: u32, count: u32) -> Result<(), Errno> {
        let mut buf = [0u8; 32 * SECTION_ENTRY];
        let mut done = 0;
        while done < count {
            let n = (count - done).min(32);
            for i in 0..n {
                let section = first + done + i;
                let owner = self.sections[section as usize];
                let serial = match owner
                    .checked_sub(1)
                    .and_then(|o| self.objects.get(o as usize))
                {
                    Some(Slot::Live(e)) => e.serial,
                    _ => 0,
                };
                let e = &mut buf[i as usize * SECTION_ENTRY..(i as usize + 1) * SECTION_ENTRY];
                e[0..4].copy_from_slice(&owner.to_le_bytes());
                e[4..8].fill(0);
                e[8..16].copy_from_slice(&serial.to_le_bytes());
            }
            let at = self.geometry.section_table_off + (first + done) as u64 * SECTION_ENTRY as u64;
            mem.write(at, &buf[..n as usize * SECTION_ENTRY])?;
            done += n;
        }
        Ok(())
    }

    /// Reads and validates the object table into the lent storage and
    /// rebuilds the section index from it.
    fn load_tables<M: Memory>(&mut self, mem: &M) -> Result<(), &'static str> {
        let mut chunk = [0u8; 8 * ENTRY_BYTES];
        let max_objects = self.geometry.max_objects;
        let mut index = 0;
        while index < max_objects {
            let n = (max_objects - index).min(8);
            let at = self.geometry.object_table_off + index as u64 * ENTRY_BYTES as u64;
            let bytes = &mut chunk[..n as usize * ENTRY_BYTES];
            let mut tries = 0;
            loop {
                if mem.read(at, bytes).is_err() {
                    return Err("object table outside the pool");
                }
                let mut torn = false;
                for (i, raw) in bytes.chunks(ENTRY_BYTES).enumerate() {
                    let slot = &mut self.objects[index as usize + i];
                    match Slot::decode(raw, self.geometry.section_count, self.geometry.max_hosts) {
                        Ok(decoded) => *slot = decoded,
                        Err(ObjectError::BadChecksum) => torn = true,
                        Err(ObjectError::Invalid(why)) => return Err(why),
                    }
                }
                tries += 1;
                if !torn {
                    break;
                }
                if tries == READ_TRIES {
                    return Err("object entry fails its checksum");
                }
            }
            index += n;
        }
        self.sections.fill(0);
        let mut next_serial = 1;
        for i in 0..max_objects as usize {
            let Slot::Live(e) = self.objects[i] else {
                continue;
            };
            let cells = &mut self.sections[e.extent.first as usize..e.extent.end() as usize];
            if cells.iter().any(|&c| c != 0) {
                return Err("two objects claim one section");
            }
            cells.fill(i as u32 + 1);
            next_serial = next_serial.max(e.serial + 1);
        }
        let map = SectionMap::new(&mut self.sections, max_objects).map_err(|_| "section index")?;
        super::objects::check_tables(&map, &self.objects).map_err(|_| "tables disagree")?;
        self.next_serial = self.next_serial.max(next_serial);
        Ok(())
    }

    /// Refreshes this host's copy of the tables from the pool (a manager's
    /// copy is the pool's already). Tolerates the manager writing
    /// meanwhile by reading again.
    pub fn refresh<M: Memory>(&mut self, mem: &M) -> Result<(), Errno> {
        if self.managing {
            return Ok(());
        }
        for _ in 0..READ_TRIES {
            if self.load_tables(mem).is_ok() {
                return Ok(());
            }
        }
        Err(Errno::EUCLEAN)
    }

    /// The tables as of the last `refresh` (or live, for the manager).
    pub fn objects(&self) -> &[Slot] {
        &self.objects
    }

    pub fn stats(&mut self) -> Stats {
        let max_objects = self.geometry.max_objects;
        let mut used_by_host = [0u32; HOSTS];
        let mut objects = 0;
        for (_, e) in self.live() {
            objects += 1;
            if let Some(used) = used_by_host.get_mut(e.owner_host as usize) {
                *used += e.extent.count;
            }
        }
        let sections = self.geometry.section_count;
        match SectionMap::new(&mut self.sections, max_objects) {
            Ok(map) => Stats {
                sections,
                free_sections: map.free_sections(),
                largest_free_run: map.largest_free_run(),
                fragmentation_permille: map.fragmentation_permille(),
                objects,
                used_by_host,
            },
            Err(_) => Stats {
                sections,
                free_sections: 0,
                largest_free_run: 0,
                fragmentation_permille: 0,
                objects,
                used_by_host,
            },
        }
    }
}

impl Request {
    fn empty(op: Op) -> Request {
        Request {
            op,
            seq: 0,
            boot_id: [0; 16],
            object: 0,
            sections: 0,
            serial: 0,
            flags: 0,
            uid: 0,
            mode: 0,
            name: None,
        }
    }
}

impl Reply {
    fn error(errno: Errno) -> Reply {
        Reply {
            seq: 0,
            boot_tag: [0; 8],
            status: errno.0,
            object: 0,
            extent: Extent { first: 0, count: 0 },
            flags: 0,
            serial: 0,
            uid: 0,
            mode: 0,
        }
    }

    fn of(index: u32, entry: &ObjectEntry) -> Reply {
        Reply {
            seq: 0,
            boot_tag: [0; 8],
            status: 0,
            object: index,
            extent: entry.extent,
            flags: entry.flags,
            serial: entry.serial,
            uid: entry.uid,
            mode: entry.mode,
        }
    }
}
