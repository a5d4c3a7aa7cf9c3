//! The destination's end of a pair: the `ref_queue` it consumes, its
//! lend table and the return ring it produces.

use crate::counters::{add, bump, Counters, Fault};
use crate::layout::{
    refusal, DstLine, Geometry, RefEntry, SrcLine, FRAGS_MAX, LINE, REF_BY_VALUE, REF_CSUM_PARTIAL,
};
use crate::lend::LendTable;
use crate::mem::{fetch, publish, OutOfBounds, PoolMem};
use crate::nic::Port;
use crate::refq::{Consumer, Producer, RefQueue};
use crate::retring::ReturnRing;
use crate::validate::{check_entry, check_frame, EntryCtx};

use super::frame::Frame;
use super::session::{dst_line_at, held_at, src_line_at, Session};

/// What [`DstEnd::recv`] does with a rejected entry's buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Salvage {
    /// Nothing: an intact entry of the session with no buffer to give
    /// back (by value), or naming one we hold, which goes back when we
    /// let go of it (a notice would free it while the stack holds it).
    No,
    /// Give it back (an honest source's buffer in a bad frame).
    Yes(u16),
    /// Refuse the entry by its position: we cannot trust the buffer it
    /// names (its CRC failed, or it is not the source's entry of this
    /// session at this position), so the source takes back the buffer
    /// it placed there.
    Refuse,
}

/// The destination's end of pair (peer, me).
pub struct DstEnd {
    geom: Geometry,
    me: u32,
    peer: u32,
    pair: u32,
    epoch: u32,
    state: Session,
    acked_src_epoch: u32,
    peer_tail: u32,
    ready: u32,
    cons: Consumer,
    queue: RefQueue,
    ret: Producer,
    rets: ReturnRing,
    lend: LendTable,
    dirty: bool,
    /// The source withdrew its acknowledgement of our epoch while up: it
    /// declared this host dead (see [`DstEnd::dropped`]).
    dropped: bool,
    /// What happened.
    pub counters: Counters,
}

impl DstEnd {
    /// Host `me`'s end for frames from `peer`, in epoch `epoch`, lending
    /// at most `cap` buffers to the stack at once. `None` for a pair not
    /// in `geom` or epoch 0. Call [`DstEnd::start`] next.
    pub fn new(geom: Geometry, me: u32, peer: u32, epoch: u32, cap: u32) -> Option<DstEnd> {
        let pair = geom.pair(peer, me)?;
        if epoch == 0 {
            return None;
        }
        Some(DstEnd {
            geom,
            me,
            peer,
            pair,
            epoch,
            state: Session::Syncing,
            acked_src_epoch: 0,
            peer_tail: 0,
            ready: 0,
            cons: Consumer {
                slots: geom.ref_slots(),
                head: 0,
            },
            queue: RefQueue::new(geom, pair),
            ret: Producer::new(geom.bufs(), 0),
            rets: ReturnRing::new(geom, pair),
            lend: LendTable::new(geom.bufs(), cap),
            dirty: false,
            dropped: false,
            counters: Counters::default(),
        })
    }

    /// Before [`DstEnd::start`]: buffer `buf` of this pair is still held
    /// by this host's stack (its page referenced), lent by an earlier
    /// load of the module. It stays lent (old) in the held bitmap, so the
    /// source does not send in it, until the stack lets go. False if out
    /// of range or already adopted.
    pub fn adopt(&mut self, buf: u16) -> bool {
        self.lend.adopt(buf)
    }

    /// Publishes our line and held bitmap (a fresh join: nothing held but
    /// what was adopted, no source acknowledged).
    pub fn start<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<(), OutOfBounds> {
        publish(m, held_at(&self.geom, self.pair)?, &self.lend.held())?;
        self.publish(m)
    }

    /// The session's state.
    pub fn session(&self) -> Session {
        self.state
    }
    /// The pair index.
    pub fn pair(&self) -> u32 {
        self.pair
    }
    /// The region's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }
    /// The lend table.
    pub fn lends(&self) -> &LendTable {
        &self.lend
    }

    /// Writes back our line: epoch, acknowledged source epoch, head and
    /// return tail. After frames are copied out (by-value slots are free
    /// once the head passed them) and after returns.
    pub fn publish<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<(), OutOfBounds> {
        self.dirty = false;
        // Down (the source declared dead) the acknowledgement is
        // withdrawn: a source that did not die sees it and rejoins.
        let ack = if self.state == Session::Down {
            0
        } else {
            self.acked_src_epoch
        };
        let l = DstLine {
            dst_epoch: self.epoch,
            ack_src_epoch: ack,
            head: self.cons.head,
            ret_tail: self.ret.tail,
        };
        publish(m, dst_line_at(&self.geom, self.pair)?, &l.encode())
    }

    /// Reads the source's line and acts on it: a source epoch that
    /// acknowledges ours starts a session, and up, the tail says what is
    /// ready and the return head frees return slots (released buffers go
    /// out). Publishes our line if anything changed.
    pub fn poll<M: PoolMem + ?Sized>(&mut self, m: &M) -> Session {
        let r = self
            .poll_inner(m)
            .and_then(|()| if self.dirty { self.publish(m) } else { Ok(()) });
        if r.is_err() {
            self.counters.count(Fault::Access);
        }
        self.state
    }

    fn poll_inner<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<(), OutOfBounds> {
        let b: [u8; LINE as usize] = fetch(m, src_line_at(&self.geom, self.pair)?)?;
        self.ready = 0;
        let Some(s) = SrcLine::decode(&b) else {
            return Ok(());
        };
        if s.src_epoch == 0 {
            return Ok(());
        }
        if s.src_epoch != self.acked_src_epoch {
            if s.ack_dst_epoch == self.epoch {
                // A new session: drop the old queue, take the source's
                // positions, tell it what we hold.
                self.cons.head = s.tail;
                self.ret = Producer::new(self.geom.bufs(), s.ret_head);
                self.acked_src_epoch = s.src_epoch;
                self.lend.age();
                self.state = Session::Up;
                bump(&mut self.counters.resets);
                publish(m, held_at(&self.geom, self.pair)?, &self.lend.held())?;
                self.publish(m)?;
                return self.flush(m);
            }
            if self.state == Session::Up {
                // The source rejoined and has not reset for us yet.
                self.state = Session::Syncing;
            }
            return Ok(());
        }
        if self.state != Session::Up {
            // Down: a dead source's lines, until it rejoins.
            return Ok(());
        }
        if s.ack_dst_epoch == 0 {
            // Withdrawn: it declared us dead.
            self.dropped = true;
            return Ok(());
        }
        if s.ack_dst_epoch != self.epoch {
            self.counters.count(Fault::Desync);
            return Ok(());
        }
        match self.cons.ready(s.tail) {
            Ok(n) => {
                self.peer_tail = s.tail;
                self.ready = n;
            }
            Err(f) => self.counters.count(f),
        }
        match self.ret.consumed(s.ret_head) {
            Ok(()) => self.flush(m),
            Err(f) => {
                self.counters.count(f);
                Ok(())
            }
        }
    }

    /// The source's lease expired: stop reading its queue. Lent buffers
    /// stay lent; given back at its next session. Our line withdraws its
    /// acknowledgement, so a source that only stalled learns it was
    /// declared dead.
    pub fn peer_dead<M: PoolMem + ?Sized>(&mut self, m: &M) {
        self.state = Session::Down;
        self.ready = 0;
        if self.publish(m).is_err() {
            self.counters.count(Fault::Access);
        }
    }

    /// Whether the source declared this host dead while the session was
    /// up: this host must rejoin with a new epoch ([`DstEnd::rejoin`]).
    pub fn dropped(&self) -> bool {
        self.dropped
    }

    /// This host rejoined in `epoch` (from [`join`](super::join)): a new
    /// session, in place. What the stack holds stays lent, old from now
    /// on, and is in the held bitmap the source resolves by.
    pub fn rejoin<M: PoolMem + ?Sized>(&mut self, m: &M, epoch: u32) -> Result<(), OutOfBounds> {
        self.epoch = epoch;
        self.acked_src_epoch = 0;
        self.dropped = false;
        self.state = Session::Syncing;
        self.ready = 0;
        self.lend.age();
        publish(m, held_at(&self.geom, self.pair)?, &self.lend.held())?;
        self.publish(m)
    }

    fn ctx(&self, pos: u32) -> EntryCtx {
        EntryCtx {
            geom: self.geom,
            dst: self.me,
            src: self.peer,
            epoch: self.acked_src_epoch,
            pos,
        }
    }

    /// What to do with the buffer of entry `e`, rejected at `pos`;
    /// `taken` the buffers given back for the entries before it in the
    /// same rejection.
    fn salvage(&self, e: &RefEntry, pos: u32, intact: bool, taken: &[Option<u16>]) -> Salvage {
        let session = intact
            && e.seq == pos
            && e.epoch == self.acked_src_epoch
            && u32::from(e.src) == self.peer
            && u32::from(e.dst) == self.me;
        if !session {
            Salvage::Refuse
        } else if e.flags & REF_BY_VALUE == 0
            && self.lend.is_idle(e.buffer)
            && !taken.contains(&Some(e.buffer))
        {
            Salvage::Yes(e.buffer)
        } else {
            Salvage::No
        }
    }

    /// Skips the rejected `entries` from the head after fault `fault`
    /// (all intact but maybe the last, `last_intact`): an honest source's
    /// buffers in intact entries go back, the other entries are refused by a notice each on the
    /// return ring, written before the head passes them (the source
    /// relies on that order). Without room for the notices nothing is
    /// skipped (counted `refused_no_room`): the entries wait until the
    /// source takes returns, which it does whatever we do, so no buffer
    /// stays out.
    fn reject<M: PoolMem + ?Sized>(
        &mut self,
        m: &M,
        entries: &[RefEntry],
        last_intact: bool,
        fault: Fault,
    ) -> Result<(), OutOfBounds> {
        let mut verdicts = [Salvage::No; FRAGS_MAX as usize];
        let mut taken = [None; FRAGS_MAX as usize];
        let mut refusals = 0u32;
        let head = self.cons.head;
        let last = entries.len().saturating_sub(1);
        for (k, e) in entries.iter().enumerate().take(FRAGS_MAX as usize) {
            let intact = k < last || last_intact;
            let pos = head.wrapping_add(k as u32);
            let v = self.salvage(e, pos, intact, taken.get(..k).unwrap_or(&[]));
            match v {
                Salvage::Yes(b) => {
                    if let Some(t) = taken.get_mut(k) {
                        *t = Some(b);
                    }
                }
                Salvage::Refuse => refusals = refusals.saturating_add(1),
                Salvage::No => {}
            }
            if let Some(slot) = verdicts.get_mut(k) {
                *slot = v;
            }
        }
        if self.ret.space() < refusals {
            bump(&mut self.counters.refused_no_room);
            self.ready = 0;
            return Ok(());
        }
        self.counters.count(fault);
        for (k, v) in verdicts.iter().enumerate().take(entries.len()) {
            match *v {
                Salvage::Yes(b) => {
                    self.lend.hold(b);
                }
                Salvage::Refuse => {
                    let pos = head.wrapping_add(k as u32);
                    let epoch = self.acked_src_epoch;
                    self.rets.put(m, self.ret.tail, refusal(pos), epoch)?;
                    self.ret.tail = self.ret.tail.wrapping_add(1);
                    bump(&mut self.counters.refused);
                }
                Salvage::No => {}
            }
        }
        self.skip(u32::try_from(entries.len()).unwrap_or(u32::MAX));
        Ok(())
    }

    fn skip(&mut self, n: u32) {
        self.dirty = true;
        self.cons.head = self.cons.head.wrapping_add(n);
        self.ready = self.ready.saturating_sub(n);
    }

    /// The next valid frame below the tail read by the last
    /// [`DstEnd::poll`], or `None`. Invalid entries are skipped and
    /// counted; buffers of an honest source in them are given back, and
    /// entries whose buffer cannot be trusted are refused by position.
    ///
    /// The head moves here but is published only by [`DstEnd::publish`]
    /// or the next [`DstEnd::poll`]: copy by-value frames out (and
    /// invalidate a by-reference frame's lines before reading them)
    /// before either.
    pub fn recv<M: PoolMem + ?Sized>(&mut self, m: &M) -> Option<Frame> {
        if self.state != Session::Up {
            return None;
        }
        while self.ready > 0 {
            match self.recv_one(m) {
                Ok(Some(f)) => return Some(f),
                Ok(None) => {}
                Err(_) => {
                    self.counters.count(Fault::Access);
                    return None;
                }
            }
        }
        None
    }

    fn recv_one<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<Option<Frame>, OutOfBounds> {
        let head = self.cons.head;
        let mut entries = [RefEntry::default(); FRAGS_MAX as usize];
        let mut n: u32 = 1;
        let mut i: u32 = 0;
        while i < n {
            let pos = head.wrapping_add(i);
            let (e, intact) = self.queue.get(m, pos)?;
            let verdict = check_entry(&e, intact, &self.ctx(pos)).and_then(|()| {
                if i == 0 {
                    n = u32::from(e.frags);
                    // A frame starts at its first entry: the rest of one
                    // whose start was rejected goes entry by entry, and
                    // does not take the next frame's with it.
                    if n > self.ready || e.frag != 0 {
                        return Err(Fault::Frag);
                    }
                }
                Ok(())
            });
            if let Some(slot) = entries.get_mut(i as usize) {
                *slot = e;
            }
            if let Err(f) = verdict {
                let k = i.saturating_add(1) as usize;
                self.reject(m, entries.get(..k).unwrap_or(&[]), intact, f)?;
                return Ok(None);
            }
            i = i.saturating_add(1);
        }
        let entries = entries.get(..n as usize).unwrap_or(&[]);
        let first = entries.first().copied().unwrap_or_default();
        let by_value = first.flags & REF_BY_VALUE != 0;
        let mut verdict = check_frame(entries);
        if verdict.is_ok() && !by_value && entries.iter().any(|e| !self.lend.is_idle(e.buffer)) {
            verdict = Err(Fault::Lent);
        }
        if let Err(f) = verdict {
            self.reject(m, entries, true, f)?;
            return Ok(None);
        }
        let mut f = Frame {
            n: first.frags,
            bufs: [0; FRAGS_MAX as usize],
            offs: [0; FRAGS_MAX as usize],
            lens: [0; FRAGS_MAX as usize],
            len: u32::from(first.frame_len),
            by_value,
            csum: (first.flags & REF_CSUM_PARTIAL != 0)
                .then_some((first.csum_start, first.csum_offset)),
            pos: head,
            epoch: first.epoch,
            // The source's own bookkeeping, not in the entries.
            generation: 0,
            // `check_entry` refused a port this version does not know.
            port: Port::decode(first.port).unwrap_or_default(),
        };
        for (k, e) in entries.iter().enumerate() {
            let off = if by_value {
                self.geom.value_slot(self.pair, u32::from(e.buffer))
            } else {
                self.geom.buffer(self.pair, u32::from(e.buffer))
            };
            let off = off.ok_or(OutOfBounds)?;
            if let (Some(b), Some(o), Some(l)) =
                (f.bufs.get_mut(k), f.offs.get_mut(k), f.lens.get_mut(k))
            {
                *b = e.buffer;
                *o = off;
                *l = e.len;
            }
        }
        self.skip(n);
        bump(&mut self.counters.frames);
        add(&mut self.counters.bytes, u64::from(f.len));
        if by_value {
            bump(&mut self.counters.by_value);
        }
        Ok(Some(f))
    }

    /// Lends a received by-reference frame's buffers to the stack, if
    /// the cap allows: true. False: the driver copies the frame and calls
    /// [`DstEnd::copied`].
    pub fn lend(&mut self, f: &Frame) -> bool {
        if f.by_value || !self.lend.room(u32::from(f.n)) {
            return false;
        }
        if f.parts().any(|(b, _, _)| !self.lend.is_idle(b)) {
            return false;
        }
        for (b, _, _) in f.parts() {
            self.lend.lend(b);
        }
        bump(&mut self.counters.lent);
        true
    }

    /// A received frame was copied (not lent): its buffers go back now.
    /// By-value frames need nothing (the head frees their slots).
    pub fn copied<M: PoolMem + ?Sized>(&mut self, m: &M, f: &Frame) {
        if f.by_value {
            return;
        }
        bump(&mut self.counters.copied);
        for (b, _, _) in f.parts() {
            self.lend.hold(b);
        }
        if self.flush(m).is_err() {
            self.counters.count(Fault::Access);
        }
    }

    /// The stack let go of lent buffer `buf` (its page refcount is back):
    /// it goes back. False if it was not lent.
    pub fn release<M: PoolMem + ?Sized>(&mut self, m: &M, buf: u16) -> bool {
        if !self.lend.release(buf) {
            return false;
        }
        if self.flush(m).is_err() {
            self.counters.count(Fault::Access);
        }
        true
    }

    /// Puts released buffers on the return ring while it has room and
    /// the session is up (writes back each entry, not our line).
    pub fn flush<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<(), OutOfBounds> {
        if self.state != Session::Up {
            return Ok(());
        }
        let mut from = 0u16;
        while self.ret.space() > 0 {
            let Some((b, old)) = self.lend.next_released(from) else {
                break;
            };
            // Epoch 0 is no session's: only a reservation takes it back.
            let epoch = if old { 0 } else { self.acked_src_epoch };
            self.rets.put(m, self.ret.tail, b, epoch)?;
            self.ret.tail = self.ret.tail.wrapping_add(1);
            self.lend.given_back(b);
            self.dirty = true;
            bump(&mut self.counters.returned);
            from = b;
        }
        Ok(())
    }
}
