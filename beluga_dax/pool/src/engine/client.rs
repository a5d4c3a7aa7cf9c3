//! Calls through this host's mailbox: write a request, poll for the reply.

#![deny(clippy::arithmetic_side_effects)]

use super::super::mailbox::{boot_tag, Op, Reply, Request, REPLY_BYTES, REPLY_OFF};
use super::super::mailbox::{REQUEST_OFF, REQ_ADMIN};
use super::super::objects::{Name, ObjectEntry, Slot};
use super::super::sections::Extent;
use super::{errno_for_status, Engine, Errno, Memory, Peer, State};

/// What a caller asks of the pool. Objects live like files: a name (until
/// FREE unlinks it) and the hosts that hold it (ALLOC and OPEN take a
/// hold, RELEASE drops it) keep an object; with neither, it is freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A new object of `sections` sections, held by this host. It carries
    /// `FLAG_CLEARING` (hidden from OPEN) until this host has zeroed its
    /// sections and sent `Publish`.
    Alloc {
        /// Size of the object, in sections.
        sections: u32,
        /// `FLAG_SHARED` or 0 (no other flag is accepted).
        flags: u32,
        /// Owner uid of the object (the caller's).
        uid: u32,
        /// Permission bits, at most `0o777`.
        mode: u32,
        /// Its name; a shared object needs one.
        name: Option<Name>,
    },
    /// The object named `name` (shared, or private to this host), held by
    /// this host from now on.
    Open {
        /// Name of the object.
        name: Name,
        /// The caller's uid, checked against the object's mode unless
        /// admin.
        uid: u32,
    },
    /// Unlinks the object: its name goes at once (a new object may take
    /// it); its sections go when no host holds it (at once if none does).
    /// For its uid (or admin); a shared object from any host, a private
    /// one from its owner host. Does not drop this host's hold.
    Free {
        /// Index of the object.
        object: u32,
        /// Its serial (a stale handle names no object: `ENOENT`).
        serial: u64,
        /// The caller's uid: the object's, unless admin.
        uid: u32,
    },
    /// Drops this host's hold (`ENOENT` if it holds none). The object is
    /// freed if no host holds it and it is unlinked or has no name; a
    /// named object persists and can be opened again.
    Release {
        /// Index of the object.
        object: u32,
        /// Its serial.
        serial: u64,
    },
    /// The caller (the owner host) has cleared the sections of the object
    /// it allocated: others may open it now.
    Publish {
        /// Index of the object.
        object: u32,
        /// Its serial.
        serial: u64,
    },
    /// Reclaims host `host` now (admin; the host must not be live).
    Reclaim {
        /// Index of the host's slot.
        host: u32,
    },
}

/// A served call: the object it concerns, already checked against the
/// geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    /// Index of the object; for a reclaim, the number of objects released
    /// or freed.
    pub object: u32,
    /// Its serial, unique per allocation.
    pub serial: u64,
    /// Its sections, inside the data area (empty for a reclaim).
    pub extent: Extent,
    /// Its flags (`FLAG_*` of `objects.rs`).
    pub flags: u32,
    /// Its owner uid.
    pub uid: u32,
    /// Its permission bits.
    pub mode: u32,
}

impl Handle {
    /// The handle of object `index`.
    pub fn of(index: u32, entry: &ObjectEntry) -> Handle {
        Handle {
            object: index,
            serial: entry.serial,
            extent: entry.extent,
            flags: entry.flags,
            uid: entry.uid,
            mode: entry.mode,
        }
    }
}

impl<O, S, P> Engine<O, S, P>
where
    O: core::ops::DerefMut<Target = [Slot]>,
    S: core::ops::DerefMut<Target = [u32]>,
    P: core::ops::DerefMut<Target = [Peer]>,
{
    pub(super) fn send<M: Memory>(
        &mut self,
        mem: &M,
        op: Op,
        template: &Request,
        now_ns: u64,
    ) -> Result<u64, Errno> {
        let seq = self.next_seq;
        // Seq 0 is never sent (an empty request line carries it).
        self.next_seq = self.next_seq.checked_add(1).unwrap_or(1);
        let request = Request {
            op,
            seq,
            boot_id: self.boot_id,
            ..*template
        };
        mem.write(self.slot_off(self.index, REQUEST_OFF)?, &request.encode())?;
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
            Call::Release { object, serial } => {
                request.object = object;
                request.serial = serial;
                Op::Release
            }
            Call::Publish { object, serial } => {
                request.object = object;
                request.serial = serial;
                Op::Publish
            }
            Call::Reclaim { host } => {
                request.object = host;
                Op::Reclaim
            }
        };
        self.send(mem, op, &request, now_ns)
    }

    /// The answer to call `seq`, if it has come: a handle, or the errno
    /// the manager (or a failed check of its reply) gives. The errno is
    /// always in `1..=Errno::MAX`: a reply status outside it is `EIO`
    /// (`errno_for_status`).
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
            return Some(Err(errno_for_status(reply.status)));
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

    pub(super) fn poll_raw<M: Memory>(&self, mem: &M, seq: u64) -> Result<Option<Reply>, Errno> {
        let mut bytes = [0u8; REPLY_BYTES];
        mem.read(self.slot_off(self.index, REPLY_OFF)?, &mut bytes)?;
        Ok(match Reply::decode(&bytes) {
            Ok(r) if r.seq == seq && r.boot_tag == boot_tag(&self.boot_id) => Some(r),
            _ => None,
        })
    }
}
