//! This host's lease, its view of the others', and the tick that drives
//! the protocol (including when this host may act as manager).

#![deny(clippy::arithmetic_side_effects)]

use super::super::leases::{lease_ns, manager_may_write, scan_bound_ns, HostSlot, Liveness};
use super::super::leases::{SlotError, SlotState, SLOT_BYTES};
use super::super::mailbox::boot_tag;
use super::super::objects::Slot;
use super::{read_superblock, Engine, Errno, Memory, Peer, State, READ_TRIES};

/// Bytes of a host slot that hold the lease record (its first line, up to
/// the request).
const LEASE_BYTES: usize = super::super::mailbox::REQUEST_OFF as usize;

/// What a tick saw and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TickReport {
    /// This host's lease ran out (or another host writes its slot): drop
    /// every mapping and handle, then `reattach`.
    pub lease_lost: bool,
    /// Another incarnation writes this host's slot (two hosts use one
    /// index); `lease_lost` is set too.
    pub slot_conflict: bool,
    /// The superblock changed under us (reformatted or damaged).
    pub pool_changed: bool,
    /// This host took over as manager in this tick.
    pub became_manager: bool,
    /// The tables failed validation when this host took over.
    pub corrupt: Option<&'static str>,
    /// Requests served, as manager.
    pub served: u32,
    /// Objects freed or released for dead or departed hosts.
    pub reclaimed: u32,
}

/// How long a host must have heartbeated without a gap before it may act
/// as manager: by then every other host has seen it live, and it has
/// observed every other host for a full expiry period.
pub fn expiry_ns(lease_ms: u32) -> u64 {
    super::super::leases::expiry_ns(lease_ms)
}

impl<O, S, P> Engine<O, S, P>
where
    O: core::ops::DerefMut<Target = [Slot]>,
    S: core::ops::DerefMut<Target = [u32]>,
    P: core::ops::DerefMut<Target = [Peer]>,
{
    pub(super) fn write_lease<M: Memory>(
        &mut self,
        mem: &M,
        state: SlotState,
        now_ns: u64,
    ) -> Result<(), Errno> {
        // Observers look for a change, not an increase: wrapping is fine.
        self.heartbeat = self.heartbeat.wrapping_add(1);
        let slot = HostSlot {
            state,
            host_index: self.index,
            boot_id: self.boot_id,
            heartbeat: self.heartbeat,
            lease_ms: self.lease_ms,
            generation: self.superblock.generation,
        };
        let record = slot.encode();
        let line = record.get(..LEASE_BYTES).ok_or(Errno::EIO)?;
        mem.write(self.slot_off(self.index, 0)?, line)?;
        self.last_beat_ns = now_ns;
        Ok(())
    }

    /// The lease record of `host`, if it reads valid (a torn read is read
    /// again; an empty or corrupt record is `None`).
    fn read_slot<M: Memory>(&self, mem: &M, host: u32) -> Option<HostSlot> {
        let mut bytes = [0u8; SLOT_BYTES];
        let at = self.slot_off(host, 0).ok()?;
        for _ in 0..READ_TRIES {
            mem.read(at, bytes.get_mut(..LEASE_BYTES)?).ok()?;
            match HostSlot::decode(&bytes, host, self.geometry.max_hosts) {
                Ok(slot) => return Some(slot),
                Err(SlotError::Empty) => return None,
                Err(_) => {}
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
        let lease_ns = lease_ns(self.lease_ms);
        if now_ns.saturating_sub(self.counted_beat_ns) > lease_ns {
            // Others may already have expired us and reclaimed our objects
            // (a beat nobody saw does not count).
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
        let own = self.read_slot(mem, self.index);
        if let Some(own) = own {
            if own.boot_id != self.boot_id {
                self.lose_lease();
                report.lease_lost = true;
                report.slot_conflict = true;
                return report;
            }
        }
        // A lease line that does not read back as written was damaged:
        // rewrite it now rather than at the next beat (observers judge
        // only by valid records, so until then they see no change).
        let intact = own.is_some_and(|own| own.heartbeat == self.heartbeat);
        // A beat counts once it stayed intact for a scan bound: every
        // observer that counts our silence looked at it in that time. One
        // destroyed sooner may never have been seen, and one written after
        // a stall is not counted before it is seen either.
        let seen_by_all = now_ns.saturating_sub(self.last_beat_ns) >= scan_bound_ns(self.lease_ms);
        if intact && seen_by_all {
            self.counted_beat_ns = self.last_beat_ns;
        }
        let beat_due = now_ns.saturating_sub(self.last_beat_ns) >= lease_ns / 4;
        if (beat_due || !intact) && self.write_lease(mem, SlotState::Attached, now_ns).is_err() {
            self.lose_lease();
            report.lease_lost = true;
            return report;
        }
        self.observe(mem, now_ns);
        self.last_scan_ns = now_ns;

        let eligible = self.manager() == Some(self.index)
            && now_ns.saturating_sub(self.beating_since_ns) >= expiry_ns(self.lease_ms)
            && manager_may_write(self.counted_beat_ns, now_ns, self.lease_ms);
        if eligible && !self.managing {
            match self.load_tables(mem) {
                Ok(()) => {
                    self.managing = true;
                    report.became_manager = true;
                    // The object table is the truth; the section table is
                    // an index of it, rewritten at every takeover.
                    let _ = self.write_sections(mem, 0, self.geometry.section_count);
                    let collected = self.collect_garbage(mem);
                    report.reclaimed = report.reclaimed.saturating_add(collected);
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
                let liveness = self.liveness_of(host);
                let dead = matches!(liveness, Liveness::Expired | Liveness::Detached);
                if host != self.index && dead && self.holds_anything(host) {
                    let reclaimed = self.reclaim_host(mem, host);
                    report.reclaimed = report.reclaimed.saturating_add(reclaimed);
                    if liveness == Liveness::Expired {
                        if let Some(peer) = self.peer_mut(host) {
                            peer.reclaimed = Some(boot_tag(&peer.tracker.boot_id()));
                        }
                    }
                }
            }
            report.served = self.serve_live(mem);
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

    pub(super) fn lose_lease(&mut self) {
        self.state = State::LeaseLost;
        self.managing = false;
        self.outstanding = None;
    }

    fn observe<M: Memory>(&mut self, mem: &M, now_ns: u64) {
        // After a gap in our own scans, silence we did not watch is no
        // evidence: a heartbeat may have come and been destroyed unseen.
        let blind = now_ns.saturating_sub(self.last_scan_ns) > scan_bound_ns(self.lease_ms);
        for host in 0..self.geometry.max_hosts {
            let liveness = if host == self.index {
                Liveness::Live
            } else {
                let read = self.read_slot(mem, host);
                let generation = self.superblock.generation;
                let Some(peer) = self.peer_mut(host) else {
                    continue;
                };
                match read {
                    // Evidence: a valid record of this format that is a
                    // heartbeat (or a new incarnation) or a clean detach.
                    Some(slot)
                        if slot.generation == generation && slot.state != SlotState::Free =>
                    {
                        peer.tracker.observe(&slot, now_ns)
                    }
                    // No evidence: an empty, torn, corrupt or unreadable
                    // record, one of another format, or one saying Free
                    // (no host writes that). A peer seen before is judged
                    // on what was seen (its lease expires by this host's
                    // clock unless a valid heartbeat change arrives); one
                    // never seen stays Absent. Resetting the tracker here
                    // would make a live manager Absent at once, and the
                    // next host a second manager.
                    _ => {}
                }
                if blind {
                    peer.tracker.restart(now_ns);
                }
                peer.tracker.liveness(now_ns)
            };
            if let Some(l) = usize::try_from(host)
                .ok()
                .and_then(|h| self.liveness.get_mut(h))
            {
                *l = liveness;
            }
        }
    }

    /// The manager's fast path between ticks: serves every live host's
    /// mailbox, if this host may write the tables right now (it manages,
    /// its lease is fresh, and its last scan of the other slots is recent:
    /// a tick in the last quarter lease). Returns how many it served. The
    /// driver calls it every few tens of microseconds while requests
    /// arrive, so a remote call waits for no tick.
    pub fn serve_mailboxes<M: Memory>(&mut self, mem: &M, now_ns: u64) -> u32 {
        if !self.may_manage_now(now_ns) {
            return 0;
        }
        self.serve_live(mem)
    }

    fn serve_live<M: Memory>(&mut self, mem: &M) -> u32 {
        let mut served = 0u32;
        for host in 0..self.geometry.max_hosts {
            if self.liveness_of(host) == Liveness::Live && self.serve(mem, host) {
                served = served.saturating_add(1);
            }
        }
        served
    }

    /// Whether this host may write the tables right now: it manages, its
    /// own lease is fresh enough that nobody can have expired it, and it
    /// read the other slots recently (a lower host may have come back).
    pub(super) fn may_manage_now(&self, now_ns: u64) -> bool {
        let lease_ns = lease_ns(self.lease_ms);
        self.managing
            && manager_may_write(self.counted_beat_ns, now_ns, self.lease_ms)
            && now_ns.saturating_sub(self.last_scan_ns) < lease_ns / 4
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::super::super::layout::Geometry;
    use super::super::super::layout::Superblock;
    use super::super::{format, Engine, Peer, SliceMemory};
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_heartbeat_wraps_and_observers_still_see_it_change() {
        let mut bytes = std::vec![0u8; 8 << 20];
        let mem = SliceMemory::new(&mut bytes);
        let sb: Superblock = format(&mem, 8 << 20, 2, 4, [1; 16], 1).unwrap();
        let g: Geometry = sb.geometry();
        let (mut o0, mut s0, mut p0) = ([Slot::Free; 4], [0u32; 3], [Peer::default(); 2]);
        let (mut o1, mut s1, mut p1) = ([Slot::Free; 4], [0u32; 3], [Peer::default(); 2]);
        assert_eq!(g.section_count, 3);
        let lease = 100;
        let mut a = Engine::attach(
            &mem,
            sb,
            0,
            [1; 16],
            lease,
            0,
            &mut o0[..],
            &mut s0[..],
            &mut p0[..],
        )
        .unwrap();
        let mut b = Engine::attach(
            &mem,
            sb,
            1,
            [2; 16],
            lease,
            0,
            &mut o1[..],
            &mut s1[..],
            &mut p1[..],
        )
        .unwrap();
        a.heartbeat = u64::MAX - 2;
        let mut now = 0;
        for _ in 0..1000 {
            now += MS;
            a.tick(&mem, now);
            b.tick(&mem, now);
        }
        assert!(a.heartbeat < 100, "wrapped");
        assert_eq!(b.liveness()[0], Liveness::Live);
        assert!(a.is_managing());
    }
}
