//! The manager's side: serving the mailboxes, and reclaiming what dead or
//! departed hosts held.

#![deny(clippy::arithmetic_side_effects)]

use super::super::leases::Liveness;
use super::super::mailbox::{boot_tag, Op, Reply, Request, REPLY_BYTES, REPLY_OFF};
use super::super::mailbox::{REQUEST_BYTES, REQUEST_OFF, REQ_ADMIN};
use super::super::objects::FLAG_UNLINKED;
use super::super::objects::{host_bit, ObjectEntry, Slot, FLAG_CLEARING, FLAG_SHARED};
use super::super::sections::{AllocError, SectionMap};
use super::{Engine, Errno, Memory, Peer};

impl<O, S, P> Engine<O, S, P>
where
    O: core::ops::DerefMut<Target = [Slot]>,
    S: core::ops::DerefMut<Target = [u32]>,
    P: core::ops::DerefMut<Target = [Peer]>,
{
    /// Serves `host`'s mailbox if it holds a request not yet answered.
    pub(super) fn serve<M: Memory>(&mut self, mem: &M, host: u32) -> bool {
        let Some(peer) = self.peer(host).copied() else {
            return false;
        };
        let expected_boot = if host == self.index {
            self.boot_id
        } else {
            peer.tracker.boot_id()
        };
        let (Ok(request_off), Ok(reply_off)) = (
            self.slot_off(host, REQUEST_OFF),
            self.slot_off(host, REPLY_OFF),
        ) else {
            return false;
        };
        let mut bytes = [0u8; REQUEST_BYTES];
        if mem.read(request_off, &mut bytes).is_err() {
            return false;
        }
        let Ok(request) = Request::decode(&bytes) else {
            return false;
        };
        let tag = boot_tag(&request.boot_id);
        if request.boot_id != expected_boot || peer.served == (request.seq, tag) {
            return false;
        }
        let mut reply_bytes = [0u8; REPLY_BYTES];
        if mem.read(reply_off, &mut reply_bytes).is_err() {
            return false;
        }
        if let Ok(old) = Reply::decode(&reply_bytes) {
            if old.seq == request.seq && old.boot_tag == tag {
                self.set_served(host, request.seq, tag);
                return false;
            }
        }
        let mut reply = if peer.reclaimed == Some(tag) {
            Reply::error(Errno::ESTALE)
        } else {
            match self.execute(mem, host, &request) {
                Ok(reply) => reply,
                Err(e) => Reply::error(e),
            }
        };
        reply.seq = request.seq;
        reply.boot_tag = tag;
        if mem.write(reply_off, &reply.encode()).is_err() {
            return false;
        }
        self.set_served(host, request.seq, tag);
        true
    }

    fn set_served(&mut self, host: u32, seq: u64, tag: [u8; 8]) {
        if let Some(peer) = self.peer_mut(host) {
            peer.served = (seq, tag);
        }
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
                if let Some(peer) = self.peer_mut(host) {
                    peer.reclaimed = None;
                }
                Ok(Reply::error(Errno(0)))
            }
            Op::Alloc => self.alloc(mem, host, request),
            Op::Open => self.open(mem, host, request, admin),
            Op::Free => self.unlink(mem, host, request, admin),
            Op::Release => self.release(mem, host, request),
            Op::Publish => self.publish(mem, host, request),
            Op::Reclaim => {
                let target = request.object;
                if !admin {
                    return Err(Errno::EPERM);
                }
                if target >= self.geometry.max_hosts || target == host {
                    return Err(Errno::EINVAL);
                }
                if self.liveness_of(target) == Liveness::Live {
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
        // Served again after a manager change: the object is already there,
        // still held by the asking incarnation (the attach of a later one
        // dropped the holds of the earlier ones, whose seqs it reuses).
        // Matched on the low 32 bits of the seq, which the entry keeps.
        let seq = request.seq as u32;
        if let Some((index, entry)) = self
            .live()
            .find(|(_, e)| e.owner_host == host && e.request_seq == seq && e.held_by(host))
        {
            return Ok(Reply::of(index, entry));
        }
        if let Some(name) = &request.name {
            if self.find_name(name).is_some() {
                return Err(Errno::EEXIST);
            }
        }
        // Serials never repeat: after the last one, the pool needs a format.
        let serial = self.next_serial.ok_or(Errno::EUCLEAN)?;
        let index = self
            .objects
            .iter()
            .position(|s| *s == Slot::Free)
            .and_then(|i| u32::try_from(i).ok())
            .ok_or(Errno::ENOSPC)?;
        let max_objects = self.geometry.max_objects;
        let mut map =
            SectionMap::new(&mut self.sections, max_objects).map_err(|_| Errno::EUCLEAN)?;
        let extent = map.allocate(request.sections, index).map_err(|e| match e {
            AllocError::NoSpace { .. } => Errno::ENOSPC,
            _ => Errno::EINVAL,
        })?;
        // The sections may hold an earlier owner's bytes: the owner host
        // clears them, off every lock the manager holds, and publishes
        // the object; until then nobody else can open it.
        let entry = ObjectEntry {
            extent,
            owner_host: host,
            flags: flags | FLAG_CLEARING,
            uid: request.uid,
            mode: request.mode,
            holders: host_bit(host),
            generation: self.superblock.generation,
            serial,
            request_seq: seq,
            name: request.name,
        };
        self.next_serial = serial.checked_add(1);
        // Entry first: a takeover rebuilds the section index from entries.
        self.store_object(mem, index, Slot::Live(entry))?;
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
        if !entry.is_shared() && entry.owner_host != host || entry.is_clearing() {
            return Err(Errno::ENOENT);
        }
        if !admin && !entry.may_map(request.uid, false) {
            return Err(Errno::EACCES);
        }
        if !entry.held_by(host) {
            entry.holders |= host_bit(host);
            self.store_object(mem, index, Slot::Live(entry))?;
        }
        Ok(Reply::of(index, &entry))
    }

    /// FREE: unlinks the object (for its uid or admin; a shared object
    /// from any host, a private one from its owner host). Its name goes at
    /// once; it is freed now if no host holds it, else with its last
    /// holder. The caller's hold stays.
    fn unlink<M: Memory>(
        &mut self,
        mem: &M,
        host: u32,
        request: &Request,
        admin: bool,
    ) -> Result<Reply, Errno> {
        let index = request.object;
        let mut entry = self.named_by(request, |e| !e.is_unlinked())?;
        if !entry.is_shared() && entry.owner_host != host {
            return Err(Errno::ENOENT);
        }
        if !admin && request.uid != entry.uid {
            return Err(Errno::EPERM);
        }
        entry.flags |= FLAG_UNLINKED;
        self.settle(mem, index, entry)?;
        Ok(Reply::of(index, &entry))
    }

    /// The live object a request names by (index, serial), if `accept`s
    /// it; `ENOENT` otherwise.
    fn named_by(
        &self,
        request: &Request,
        accept: impl FnOnce(&ObjectEntry) -> bool,
    ) -> Result<ObjectEntry, Errno> {
        self.object(request.object)
            .filter(|e| e.serial == request.serial && accept(e))
            .ok_or(Errno::ENOENT)
    }

    /// PUBLISH: the owner host cleared the object's sections; OPEN may find
    /// it from now on. Idempotent.
    fn publish<M: Memory>(
        &mut self,
        mem: &M,
        host: u32,
        request: &Request,
    ) -> Result<Reply, Errno> {
        let index = request.object;
        let mut entry = self.named_by(request, |e| e.owner_host == host)?;
        if entry.is_clearing() {
            entry.flags &= !FLAG_CLEARING;
            self.store_object(mem, index, Slot::Live(entry))?;
        }
        Ok(Reply::of(index, &entry))
    }

    /// RELEASE: drops the caller's hold (`ENOENT` if it has none).
    fn release<M: Memory>(
        &mut self,
        mem: &M,
        host: u32,
        request: &Request,
    ) -> Result<Reply, Errno> {
        let index = request.object;
        let mut entry = self.named_by(request, |e| e.held_by(host))?;
        entry.holders &= !host_bit(host);
        self.settle(mem, index, entry)?;
        Ok(Reply::of(index, &entry))
    }

    /// Records the new state of live object `index`: freed if nothing
    /// keeps it any more (no holder, and unlinked or unnamed), else
    /// written. Returns whether it was freed.
    fn settle<M: Memory>(
        &mut self,
        mem: &M,
        index: u32,
        entry: ObjectEntry,
    ) -> Result<bool, Errno> {
        if entry.is_garbage() {
            self.free_object(mem, index, &entry)?;
            return Ok(true);
        }
        self.store_object(mem, index, Slot::Live(entry))?;
        Ok(false)
    }

    /// Frees object `index`: its sections, then its entry.
    fn free_object<M: Memory>(
        &mut self,
        mem: &M,
        index: u32,
        entry: &ObjectEntry,
    ) -> Result<(), Errno> {
        let max_objects = self.geometry.max_objects;
        let mut map =
            SectionMap::new(&mut self.sections, max_objects).map_err(|_| Errno::EUCLEAN)?;
        map.free(entry.extent, index).map_err(|_| Errno::EUCLEAN)?;
        self.set_object(index, Slot::Free)?;
        // Sections first: they are free only once the entry says so, and a
        // takeover rebuilds them from the entries anyway.
        self.write_sections(mem, entry.extent.first, entry.extent.count)?;
        self.write_object(mem, index)?;
        Ok(())
    }

    pub(super) fn holds_anything(&self, host: u32) -> bool {
        self.live()
            .any(|(_, e)| e.held_by(host) || e.owner_host == host && !e.is_shared())
    }

    /// A dead or departed host (or an earlier incarnation of one): drops
    /// its hold on every object and frees its private objects, named or
    /// not; shared objects are then freed by the usual rule (no holder,
    /// and unlinked). Returns the number of objects released or freed.
    pub(super) fn reclaim_host<M: Memory>(&mut self, mem: &M, host: u32) -> u32 {
        let mut count = 0u32;
        for index in 0..self.geometry.max_objects {
            let Some(mut entry) = self.object(index) else {
                continue;
            };
            let private_of_host = entry.owner_host == host && !entry.is_shared();
            let done = if private_of_host {
                self.free_object(mem, index, &entry)
            } else if entry.held_by(host) {
                entry.holders &= !host_bit(host);
                self.settle(mem, index, entry).map(|_| ())
            } else {
                continue;
            };
            if done.is_ok() {
                count = count.saturating_add(1);
            }
        }
        count
    }

    /// Frees every object nothing keeps (none should exist; a manager
    /// taking over makes sure). Returns how many it freed.
    pub(super) fn collect_garbage<M: Memory>(&mut self, mem: &M) -> u32 {
        let mut count = 0u32;
        for index in 0..self.geometry.max_objects {
            let Some(entry) = self.object(index).filter(ObjectEntry::is_garbage) else {
                continue;
            };
            if self.free_object(mem, index, &entry).is_ok() {
                count = count.saturating_add(1);
            }
        }
        count
    }
}
