//! The source's end of a pair: its buffers, the `ref_queue` it
//! produces and the return ring it consumes.

use crate::alloc::{BufState, TxBuffers, AGE_EVERY};
use crate::counters::{add, bump, Counters, Fault};
use crate::layout::{
    DstLine, Geometry, RefEntry, ReturnEntry, SrcLine, BUF_BYTES, FRAGS_MAX, FRAME_MAX, FRAME_MIN,
    LINE, REF_BY_VALUE, REF_CSUM_PARTIAL, RET_REFUSED_POS,
};
use crate::mem::{fetch, publish, OutOfBounds, PoolMem};
use crate::nic::Port;
use crate::refq::{distance, Producer, RefQueue};
use crate::retring::{seq_of, ReturnRing};
use crate::validate::value_slot_of;

use super::frame::{Frame, TxError};
use super::session::{dst_line_at, held_at, src_line_at, Session};

/// The source's end of pair (me, peer).
pub struct SrcEnd {
    geom: Geometry,
    me: u32,
    peer: u32,
    pair: u32,
    epoch: u32,
    state: Session,
    /// Bumped by every reset and peer death: a reservation of an earlier
    /// session is stale even where the tail came back to where it was.
    generation: u32,
    acked_dst_epoch: u32,
    /// The destination withdrew its acknowledgement of our epoch while
    /// up: it declared this host dead (see [`SrcEnd::dropped`]).
    dropped: bool,
    start: u32,
    ring: Producer,
    queue: RefQueue,
    ret_head: u32,
    rets: ReturnRing,
    bufs: TxBuffers,
    /// What happened.
    pub counters: Counters,
}

impl SrcEnd {
    /// Host `me`'s end towards `peer` in epoch `epoch` (from [`join`](super::join));
    /// `None` for a pair not in `geom` or epoch 0. Call
    /// [`SrcEnd::start`] next.
    pub fn new(geom: Geometry, me: u32, peer: u32, epoch: u32) -> Option<SrcEnd> {
        let pair = geom.pair(me, peer)?;
        if epoch == 0 {
            return None;
        }
        Some(SrcEnd {
            geom,
            me,
            peer,
            pair,
            epoch,
            state: Session::Syncing,
            generation: 0,
            acked_dst_epoch: 0,
            dropped: false,
            start: 0,
            ring: Producer::new(geom.ref_slots(), 0),
            queue: RefQueue::new(geom, pair),
            ret_head: 0,
            rets: ReturnRing::new(geom, pair),
            // Held from our earlier lives, for all we know.
            bufs: TxBuffers::new(geom.bufs(), BufState::Unknown),
            counters: Counters::default(),
        })
    }

    /// Sessions start both rings at `pos` (tests start near the wrap).
    pub fn set_start(&mut self, pos: u32) {
        self.start = pos;
    }

    /// Publishes our line (a fresh join: no destination epoch yet).
    pub fn start<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<(), OutOfBounds> {
        self.ring = Producer::new(self.geom.ref_slots(), self.start);
        self.ret_head = self.start;
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
    /// Our epoch.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }
    /// The buffers' bookkeeping.
    pub fn buffers(&self) -> &TxBuffers {
        &self.bufs
    }
    /// Free `ref_queue` slots.
    pub fn space(&self) -> u32 {
        self.ring.space()
    }

    /// Writes back our line: epoch, acknowledged destination epoch, tail
    /// and return head.
    pub fn publish<M: PoolMem + ?Sized>(&self, m: &M) -> Result<(), OutOfBounds> {
        // Down (the destination declared dead) the acknowledgement is
        // withdrawn: a destination that did not die sees it and rejoins.
        let ack = if self.state == Session::Down {
            0
        } else {
            self.acked_dst_epoch
        };
        let l = SrcLine {
            src_epoch: self.epoch,
            ack_dst_epoch: ack,
            tail: self.ring.tail,
            ret_head: self.ret_head,
        };
        publish(m, src_line_at(&self.geom, self.pair)?, &l.encode())
    }

    /// What was out with the destination is unknown until its held
    /// bitmap says (counted in `reclaimed`).
    fn suspect(&mut self) {
        let n = self.bufs.suspect_all();
        add(&mut self.counters.reclaimed, u64::from(n));
    }

    fn reset<M: PoolMem + ?Sized>(&mut self, m: &M, dst_epoch: u32) -> Result<(), OutOfBounds> {
        self.suspect();
        self.ring = Producer::new(self.geom.ref_slots(), self.start);
        self.ret_head = self.start;
        self.acked_dst_epoch = dst_epoch;
        self.state = Session::Syncing;
        self.generation = self.generation.wrapping_add(1);
        bump(&mut self.counters.resets);
        self.publish(m)
    }

    /// Reads the destination's line and acts on it: a new destination
    /// epoch resets the session, an acknowledgement brings it up, and up,
    /// the head frees queue slots and returned buffers come back.
    pub fn poll<M: PoolMem + ?Sized>(&mut self, m: &M) -> Session {
        if self.poll_inner(m).is_err() {
            self.counters.count(Fault::Access);
        }
        self.state
    }

    fn poll_inner<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<(), OutOfBounds> {
        let b: [u8; LINE as usize] = fetch(m, dst_line_at(&self.geom, self.pair)?)?;
        let Some(d) = DstLine::decode(&b) else {
            return Ok(());
        };
        if d.dst_epoch == 0 {
            return Ok(());
        }
        if d.dst_epoch != self.acked_dst_epoch {
            return self.reset(m, d.dst_epoch);
        }
        match self.state {
            Session::Down => Ok(()),
            Session::Syncing => {
                if d.ack_src_epoch != self.epoch {
                    return Ok(());
                }
                if d.head != self.ring.tail {
                    self.counters.count(Fault::Desync);
                    return Ok(());
                }
                let held: [u8; LINE as usize] = fetch(m, held_at(&self.geom, self.pair)?)?;
                // Unknown buffers it does not hold are ours again.
                self.bufs.resolve(&held);
                self.state = Session::Up;
                // The destination gives back what it released at once
                // (no entry consumed yet: nothing to refuse).
                let head = self.ring.head;
                self.take_returns(m, d.ret_tail, head)
            }
            Session::Up => {
                if d.ack_src_epoch == 0 {
                    // Withdrawn: it declared us dead (our epoch is a
                    // zombie's to it until we rejoin).
                    self.dropped = true;
                    return Ok(());
                }
                if d.ack_src_epoch != self.epoch {
                    self.counters.count(Fault::Desync);
                    return Ok(());
                }
                let from = self.ring.head;
                if let Err(f) = self.ring.consumed(d.head) {
                    self.counters.count(f);
                }
                self.take_returns(m, d.ret_tail, from)
            }
        }
    }

    /// Takes the returns below `tail`; `from` is the head before this
    /// poll's: refusals may name only entries consumed in it.
    fn take_returns<M: PoolMem + ?Sized>(
        &mut self,
        m: &M,
        tail: u32,
        from: u32,
    ) -> Result<(), OutOfBounds> {
        let n = distance(self.ret_head, tail);
        if n == 0 {
            return Ok(());
        }
        if n > self.rets.slots() {
            self.counters.count(Fault::Head);
            return Ok(());
        }
        for _ in 0..n {
            let pos = self.ret_head;
            let e = self.rets.get(m, pos)?;
            let r = if e.seq != seq_of(pos) {
                Err(Fault::Seq)
            } else if let Some(bits) = e.refused() {
                self.refused(&e, bits, from)
            } else {
                self.bufs
                    .returned(e.buffer, e.epoch, self.epoch)
                    .map(|()| bump(&mut self.counters.returned))
            };
            if let Err(f) = r {
                self.counters.count(f);
            }
            self.ret_head = pos.wrapping_add(1);
        }
        self.publish(m)
    }

    /// A refusal notice `e` for the entry whose position ends in `bits`,
    /// consumed by the head this poll took (from `from`): the buffer
    /// placed there comes back (counted `refused`). A by-value entry's
    /// has none: a bad return, as a bogus notice (we keep no record of
    /// which entries were by value; the head freed the slot).
    ///
    /// The slot was not reused since: the destination wrote the notice
    /// before it published a head past the entry (line after entry, each
    /// written back), the line carries both, and we take the returns in
    /// the poll that first takes that head, before any reservation could
    /// use the slots it frees. So the entry lies in `from..head`, fewer
    /// than `ref_slots` <= 4096 positions, which the notice's 15 bits
    /// tell apart, and the buffer placed there is still out.
    fn refused(&mut self, e: &ReturnEntry, bits: u16, from: u32) -> Result<(), Fault> {
        if e.epoch != self.epoch {
            return Err(Fault::Epoch);
        }
        let mask = u32::from(RET_REFUSED_POS);
        let pos = from.wrapping_add(u32::from(bits).wrapping_sub(from) & mask);
        if distance(from, pos) >= distance(from, self.ring.head) {
            return Err(Fault::Return);
        }
        self.bufs.refused(pos)?;
        bump(&mut self.counters.refused);
        Ok(())
    }

    /// The destination's lease expired: nothing is sent until it rejoins
    /// with a new epoch. What it had is unknown until then, not ours: a
    /// host whose module went (not its stack) may still hold pages it
    /// lent; its held bitmap at the next session says which. Our line
    /// withdraws its acknowledgement, so a destination that only stalled
    /// learns it was declared dead.
    pub fn peer_dead<M: PoolMem + ?Sized>(&mut self, m: &M) {
        self.suspect();
        self.state = Session::Down;
        self.generation = self.generation.wrapping_add(1);
        if self.publish(m).is_err() {
            self.counters.count(Fault::Access);
        }
    }

    /// Whether the destination declared this host dead while the session
    /// was up (it withdrew its acknowledgement of our epoch): this host
    /// must rejoin with a new epoch ([`SrcEnd::rejoin`]) to be heard.
    pub fn dropped(&self) -> bool {
        self.dropped
    }

    /// This host rejoined in `epoch` (from [`join`](super::join); it was
    /// declared dead, or its own beats lapsed): a new session, in place.
    /// What was out is unknown until the destination's held bitmap.
    pub fn rejoin<M: PoolMem + ?Sized>(&mut self, m: &M, epoch: u32) -> Result<(), OutOfBounds> {
        self.suspect();
        self.epoch = epoch;
        self.generation = self.generation.wrapping_add(1);
        self.acked_dst_epoch = 0;
        self.dropped = false;
        self.state = Session::Syncing;
        self.ring = Producer::new(self.geom.ref_slots(), self.start);
        self.ret_head = self.start;
        self.publish(m)
    }

    /// Whether [`SrcEnd::reserve`] would now take a frame of `len` bytes
    /// (the session up, queue slots and buffers for it): a transmit
    /// queue stops when a maximal frame no longer fits.
    pub fn fits(&self, len: u32, by_value: bool) -> bool {
        if self.state != Session::Up || (by_value && !self.geom.by_value()) {
            return false;
        }
        let n = len.div_ceil(BUF_BYTES as u32);
        self.ring.space() >= n && (by_value || self.bufs.has_free(n))
    }

    /// Reserves the next frame of `len` bytes: buffers (or by-value slots)
    /// and their offsets, to be filled, written back and then
    /// [`SrcEnd::commit`]ted (or [`SrcEnd::abort`]ed) before the next.
    pub fn reserve(&mut self, len: u32, by_value: bool) -> Result<Frame, TxError> {
        if self.state != Session::Up {
            return Err(TxError::NotUp);
        }
        if !(FRAME_MIN..=FRAME_MAX).contains(&len) {
            return Err(TxError::Len);
        }
        if by_value && !self.geom.by_value() {
            return Err(TxError::NoValueSlots);
        }
        let n = len.div_ceil(BUF_BYTES as u32);
        if self.ring.space() < n {
            bump(&mut self.counters.ring_full);
            return Err(TxError::RingFull);
        }
        let mut f = Frame {
            n: 0,
            bufs: [0; FRAGS_MAX as usize],
            offs: [0; FRAGS_MAX as usize],
            lens: [0; FRAGS_MAX as usize],
            len,
            by_value,
            csum: None,
            pos: self.ring.tail,
            epoch: self.epoch,
            generation: self.generation,
            port: Port::Link,
        };
        let mut left = len;
        for i in 0..n {
            let pos = self.ring.tail.wrapping_add(i);
            let got = if by_value {
                let slot = value_slot_of(&self.geom, pos);
                u16::try_from(slot)
                    .ok()
                    .zip(self.geom.value_slot(self.pair, slot))
            } else {
                self.bufs
                    .take(pos)
                    .and_then(|b| Some(b).zip(self.geom.buffer(self.pair, u32::from(b))))
            };
            let Some((b, off)) = got else {
                self.abort(&f);
                bump(&mut self.counters.no_buffer);
                return Err(TxError::NoBuffer);
            };
            let part = left.min(BUF_BYTES as u32);
            left = left.saturating_sub(part);
            let k = i as usize;
            if let (Some(bb), Some(o), Some(l)) =
                (f.bufs.get_mut(k), f.offs.get_mut(k), f.lens.get_mut(k))
            {
                *bb = b;
                *o = off;
                *l = u16::try_from(part).unwrap_or(0);
            }
            f.n = f.n.saturating_add(1);
        }
        Ok(f)
    }

    /// Gives a reserved frame's buffers back unsent. Nothing for one of
    /// an earlier session: its buffers were resolved again since (some
    /// maybe taken anew), and giving them back would free them.
    pub fn abort(&mut self, f: &Frame) {
        if !f.by_value && f.generation == self.generation {
            for (b, _, _) in f.parts() {
                self.bufs.untake(b);
            }
        }
    }

    /// Queues a reserved frame whose payload is written back: writes and
    /// writes back its entries (`csum`: the checksum hints, if partial).
    /// [`SrcEnd::publish`] makes them visible.
    pub fn commit<M: PoolMem + ?Sized>(
        &mut self,
        m: &M,
        f: &Frame,
        csum: Option<(u16, u16)>,
    ) -> Result<(), TxError> {
        // The generation, not the position: a reset puts the tail back at
        // `start`, and a reservation taken there before the reset would
        // pass a position check.
        if f.generation != self.generation
            || f.pos != self.ring.tail
            || f.epoch != self.epoch
            || self.state != Session::Up
        {
            self.abort(f);
            return Err(TxError::Stale);
        }
        let mut flags = if f.by_value { REF_BY_VALUE } else { 0 };
        if csum.is_some() {
            flags |= REF_CSUM_PARTIAL;
        }
        let (cs, co) = csum.unwrap_or((0, 0));
        for (i, (b, _, l)) in f.parts().enumerate() {
            let e = RefEntry {
                seq: f.pos.wrapping_add(i as u32),
                epoch: self.epoch,
                dst: u8::try_from(self.peer).unwrap_or(u8::MAX),
                src: u8::try_from(self.me).unwrap_or(u8::MAX),
                frag: u8::try_from(i).unwrap_or(u8::MAX),
                frags: f.n,
                flags,
                buffer: b,
                len: l,
                frame_len: u16::try_from(f.len).unwrap_or(0),
                csum_start: cs,
                csum_offset: co,
                port: f.port.encode(),
            };
            self.queue.put(m, &e)?;
        }
        let tail = self.ring.tail.wrapping_add(u32::from(f.n));
        if (tail ^ self.ring.tail) & !AGE_EVERY.wrapping_sub(1) != 0 {
            // The tail crossed a multiple of AGE_EVERY.
            self.bufs.age(tail);
        }
        self.ring.tail = tail;
        bump(&mut self.counters.frames);
        add(&mut self.counters.bytes, u64::from(f.len));
        Ok(())
    }

    /// Reserves, copies `payload` in (written back), commits and
    /// publishes: one frame of drack0's.
    pub fn send<M: PoolMem + ?Sized>(
        &mut self,
        m: &M,
        payload: &[u8],
        by_value: bool,
        csum: Option<(u16, u16)>,
    ) -> Result<Frame, TxError> {
        self.send_port(m, payload, by_value, csum, Port::Link)
    }

    /// [`SrcEnd::send`] on `port`.
    pub fn send_port<M: PoolMem + ?Sized>(
        &mut self,
        m: &M,
        payload: &[u8],
        by_value: bool,
        csum: Option<(u16, u16)>,
        port: Port,
    ) -> Result<Frame, TxError> {
        let len = u32::try_from(payload.len()).map_err(|_| TxError::Len)?;
        let mut f = self.reserve(len, by_value)?;
        f.port = port;
        let mut at = 0usize;
        for (_, off, l) in f.parts() {
            let end = at.saturating_add(usize::from(l));
            let part = payload.get(at..end).unwrap_or(&[]);
            if let Err(e) = publish(m, off, part) {
                self.abort(&f);
                return Err(e.into());
            }
            at = end;
        }
        self.commit(m, &f, csum)?;
        self.publish(m)?;
        Ok(f)
    }
}
