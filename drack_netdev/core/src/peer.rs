//! The two ends of a pair (src, dst) and their sessions: [`SrcEnd`] at
//! the source (its buffers, the `ref_queue` it produces, the return ring
//! it consumes) and [`DstEnd`] at the destination (the `ref_queue` it
//! consumes, its lend table, the return ring it produces); and the
//! region's header and heartbeat lines.
//!
//! # Epochs and sessions
//!
//! Each host has an epoch, one more at each join (its heartbeat line).
//! A session of the pair is a pair of epochs (e_src, e_dst), agreed on
//! in two steps, each in a line only its writer writes:
//!
//! 1. The source sees a destination epoch it has not reset for (in the
//!    destination line): it suspects all its buffers that were not free,
//!    restarts both rings at its start position and publishes
//!    `ack_dst_epoch = e_dst` with its own epoch (source line).
//! 2. The destination sees a source epoch it has not acknowledged whose
//!    source line acknowledges its own epoch: it drops what is left of
//!    the old queue, takes the source's positions, publishes its held
//!    bitmap (the lend table: buffers of the source its stack still holds,
//!    of any session) and `ack_src_epoch = e_src`.
//! 3. The source sees the acknowledgement: the held buffers are reserved
//!    (they come back tagged 0, "an earlier session"), the rest free.
//!    Up. At step 2 the destination marks everything it holds old.
//!
//! A host that rejoins (new epoch, after a crash or reload) thus resets
//! the queues of all its pairs without either side reloading. A peer is
//! dead only when its lease expired (beluga's, observed by the module):
//! then [`SrcEnd::peer_dead`] reclaims every buffer and
//! [`DstEnd::peer_dead`] stops reading the queue; the lend table stays
//! until the stack lets go and gives back at the next session. Until
//! the dead peer rejoins with a new epoch, its lines are ignored.

use super::alloc::{BufState, TxBuffers};
use super::counters::{add, bump, Counters, Fault};
use super::layout::{
    DstLine, Geometry, GeometryError, Header, Heartbeat, RefEntry, SrcLine, BUF_BYTES, DST_LINE_AT,
    FRAGS_MAX, FRAME_MAX, FRAME_MIN, HELD_AT, LINE, REF_BY_VALUE, REF_CSUM_PARTIAL, SRC_LINE_AT,
};
use super::lend::LendTable;
use super::mem::{fetch, publish, OutOfBounds, PoolMem};
use super::refq::{distance, Consumer, Producer, RefQueue};
use super::retring::{seq_of, ReturnRing};
use super::validate::{check_entry, check_frame, value_slot_of, EntryCtx};

/// Formats the region: writes `geom`'s header line (the region's other
/// lines must be zero).
pub fn format<M: PoolMem + ?Sized>(m: &M, geom: &Geometry) -> Result<(), GeometryError> {
    if geom.total_bytes() > m.len() {
        return Err(GeometryError::TooLarge);
    }
    publish(m, 0, &geom.header().encode()).map_err(|_| GeometryError::TooLarge)
}

/// The geometry of a formatted region.
pub fn attach<M: PoolMem + ?Sized>(m: &M) -> Result<Geometry, GeometryError> {
    let b: [u8; LINE as usize] = fetch(m, 0).map_err(|_| GeometryError::TooLarge)?;
    Header::decode(&b, m.len())
}

/// Host `host`'s heartbeat line, fresh.
pub fn heartbeat<M: PoolMem + ?Sized>(m: &M, geom: &Geometry, host: u32) -> Option<Heartbeat> {
    let at = geom.heartbeat(host)?;
    let b: [u8; LINE as usize] = fetch(m, at).ok()?;
    Heartbeat::decode(&b).filter(|h| h.host == host)
}

/// Writes host `me`'s heartbeat line.
pub fn beat<M: PoolMem + ?Sized>(
    m: &M,
    geom: &Geometry,
    me: u32,
    epoch: u32,
    beat: u64,
) -> Result<(), OutOfBounds> {
    let at = geom.heartbeat(me).ok_or(OutOfBounds)?;
    let h = Heartbeat {
        epoch,
        host: me,
        beat,
    };
    publish(m, at, &h.encode())
}

/// Host `me` joins: its next epoch (one more than its line says, never
/// 0), written to its heartbeat line.
pub fn join<M: PoolMem + ?Sized>(m: &M, geom: &Geometry, me: u32) -> Result<u32, OutOfBounds> {
    let last = heartbeat(m, geom, me).map_or(0, |h| h.epoch);
    let epoch = match last.wrapping_add(1) {
        0 => 1,
        e => e,
    };
    beat(m, geom, me, epoch, 0)?;
    Ok(epoch)
}

/// Where an end is with its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    /// The peer is dead (lease expired): nothing until it rejoins.
    Down,
    /// Waiting for the peer's side of a new session.
    Syncing,
    /// Frames flow.
    Up,
}

/// Why a send is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxError {
    /// No session with the destination.
    NotUp,
    /// Not a frame length, or not what was reserved.
    Len,
    /// The `ref_queue` has no room for the frame's entries.
    RingFull,
    /// Not enough free buffers.
    NoBuffer,
    /// The pool has no by-value slots.
    NoValueSlots,
    /// The reservation is not the next frame of the queue.
    Stale,
    /// The pool refused an access.
    Access,
}

impl From<OutOfBounds> for TxError {
    fn from(_: OutOfBounds) -> TxError {
        TxError::Access
    }
}

/// A frame's place in the pool: up to [`FRAGS_MAX`] buffers (or by-value
/// slots), each with its offset and the frame's bytes in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Buffers (or slots) used.
    pub n: u8,
    /// Their indices.
    pub bufs: [u16; FRAGS_MAX as usize],
    /// Their offsets in the region.
    pub offs: [u64; FRAGS_MAX as usize],
    /// The frame's bytes in each.
    pub lens: [u16; FRAGS_MAX as usize],
    /// Bytes of the frame.
    pub len: u32,
    /// By value (slots) rather than by reference (buffers).
    pub by_value: bool,
    /// Checksum hints (`csum_start`, `csum_offset`), if partial.
    pub csum: Option<(u16, u16)>,
    /// The queue position of its first entry.
    pub pos: u32,
    /// The source epoch of its session.
    pub epoch: u32,
}

impl Frame {
    /// The used (buffer, offset, length) triples.
    pub fn parts(&self) -> impl Iterator<Item = (u16, u64, u16)> + '_ {
        self.bufs
            .iter()
            .zip(self.offs.iter())
            .zip(self.lens.iter())
            .take(usize::from(self.n))
            .map(|((b, o), l)| (*b, *o, *l))
    }
}

fn src_line_at(geom: &Geometry, pair: u32) -> Result<u64, OutOfBounds> {
    geom.ctl(pair)
        .map(|c| c.saturating_add(SRC_LINE_AT))
        .ok_or(OutOfBounds)
}
fn dst_line_at(geom: &Geometry, pair: u32) -> Result<u64, OutOfBounds> {
    geom.ctl(pair)
        .map(|c| c.saturating_add(DST_LINE_AT))
        .ok_or(OutOfBounds)
}
fn held_at(geom: &Geometry, pair: u32) -> Result<u64, OutOfBounds> {
    geom.ctl(pair)
        .map(|c| c.saturating_add(HELD_AT))
        .ok_or(OutOfBounds)
}

/// The source's end of pair (me, peer).
pub struct SrcEnd {
    geom: Geometry,
    me: u32,
    peer: u32,
    pair: u32,
    epoch: u32,
    state: Session,
    acked_dst_epoch: u32,
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
    /// Host `me`'s end towards `peer` in epoch `epoch` (from [`join`]);
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
            acked_dst_epoch: 0,
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
        let l = SrcLine {
            src_epoch: self.epoch,
            ack_dst_epoch: self.acked_dst_epoch,
            tail: self.ring.tail,
            ret_head: self.ret_head,
        };
        publish(m, src_line_at(&self.geom, self.pair)?, &l.encode())
    }

    fn reset<M: PoolMem + ?Sized>(&mut self, m: &M, dst_epoch: u32) -> Result<(), OutOfBounds> {
        self.bufs.suspect_all();
        self.ring = Producer::new(self.geom.ref_slots(), self.start);
        self.ret_head = self.start;
        self.acked_dst_epoch = dst_epoch;
        self.state = Session::Syncing;
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
                self.bufs.resolve(&held);
                self.state = Session::Up;
                // The destination gives back what it released at once.
                self.take_returns(m, d.ret_tail)
            }
            Session::Up => {
                if d.ack_src_epoch != self.epoch {
                    self.counters.count(Fault::Desync);
                    return Ok(());
                }
                if let Err(f) = self.ring.consumed(d.head) {
                    self.counters.count(f);
                }
                self.take_returns(m, d.ret_tail)
            }
        }
    }

    fn take_returns<M: PoolMem + ?Sized>(&mut self, m: &M, tail: u32) -> Result<(), OutOfBounds> {
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
            } else {
                self.bufs.returned(e.buffer, e.epoch, self.epoch)
            };
            match r {
                Ok(()) => bump(&mut self.counters.returned),
                Err(f) => self.counters.count(f),
            }
            self.ret_head = pos.wrapping_add(1);
        }
        self.publish(m)
    }

    /// The destination's lease expired: every buffer is ours again and
    /// nothing is sent until it rejoins with a new epoch.
    pub fn peer_dead(&mut self) {
        add(
            &mut self.counters.reclaimed,
            u64::from(self.bufs.reclaim_all()),
        );
        self.state = Session::Down;
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
                    .take()
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

    /// Gives a reserved frame's buffers back unsent.
    pub fn abort(&mut self, f: &Frame) {
        if !f.by_value {
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
        if f.pos != self.ring.tail || f.epoch != self.epoch || self.state != Session::Up {
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
            };
            self.queue.put(m, &e)?;
        }
        self.ring.tail = self.ring.tail.wrapping_add(u32::from(f.n));
        bump(&mut self.counters.frames);
        add(&mut self.counters.bytes, u64::from(f.len));
        Ok(())
    }

    /// Reserves, copies `payload` in (written back), commits and
    /// publishes: one frame.
    pub fn send<M: PoolMem + ?Sized>(
        &mut self,
        m: &M,
        payload: &[u8],
        by_value: bool,
        csum: Option<(u16, u16)>,
    ) -> Result<Frame, TxError> {
        let len = u32::try_from(payload.len()).map_err(|_| TxError::Len)?;
        let f = self.reserve(len, by_value)?;
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

/// What [`DstEnd::recv`] does with a rejected entry's buffer.
enum Salvage {
    /// Nothing: not ours to give back.
    No,
    /// Give it back (an honest source's buffer in a bad frame).
    Yes(u16),
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
            counters: Counters::default(),
        })
    }

    /// Publishes our line and held bitmap (a fresh join: nothing held,
    /// no source acknowledged).
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
    /// The lend table.
    pub fn lends(&self) -> &LendTable {
        &self.lend
    }

    /// Writes back our line: epoch, acknowledged source epoch, head and
    /// return tail. After frames are copied out (by-value slots are free
    /// once the head passed them) and after returns.
    pub fn publish<M: PoolMem + ?Sized>(&mut self, m: &M) -> Result<(), OutOfBounds> {
        self.dirty = false;
        let l = DstLine {
            dst_epoch: self.epoch,
            ack_src_epoch: self.acked_src_epoch,
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
    /// stay lent; given back at its next session.
    pub fn peer_dead(&mut self) {
        self.state = Session::Down;
        self.ready = 0;
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

    fn salvage(&self, e: &RefEntry, intact: bool) -> Salvage {
        let ours = intact
            && e.epoch == self.acked_src_epoch
            && u32::from(e.src) == self.peer
            && u32::from(e.dst) == self.me
            && e.flags & REF_BY_VALUE == 0
            && self.lend.is_idle(e.buffer);
        if ours {
            Salvage::Yes(e.buffer)
        } else {
            Salvage::No
        }
    }

    fn give_back(&mut self, s: Salvage) {
        if let Salvage::Yes(b) = s {
            self.lend.hold(b);
        }
    }

    fn skip(&mut self, n: u32) {
        self.dirty = true;
        self.cons.head = self.cons.head.wrapping_add(n);
        self.ready = self.ready.saturating_sub(n);
    }

    /// The next valid frame below the tail read by the last
    /// [`DstEnd::poll`], or `None`. Invalid entries are skipped and
    /// counted; buffers of an honest source in them are given back.
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
                    if n > self.ready {
                        return Err(super::counters::Fault::Frag);
                    }
                }
                Ok(())
            });
            if let Err(f) = verdict {
                self.counters.count(f);
                let s = self.salvage(&e, intact);
                self.give_back(s);
                for p in entries.iter().take(i as usize) {
                    let s = self.salvage(p, true);
                    self.give_back(s);
                }
                self.skip(i.saturating_add(1));
                return Ok(None);
            }
            if let Some(slot) = entries.get_mut(i as usize) {
                *slot = e;
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
            self.counters.count(f);
            for e in entries {
                let s = self.salvage(e, true);
                self.give_back(s);
            }
            self.skip(n);
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
