//! Shared cases of suite `drack_core_faults`: hostile entries and lines,
//! bad returns, a destination's death and a source's rejoin.

use super::super::alloc::{BufState, TxBuffers};
use super::super::counters::Fault;
use super::super::layout::{
    refusal, DstLine, RefEntry, SrcLine, DST_LINE_AT, REF_BY_VALUE, RET_REFUSED_POS, SRC_LINE_AT,
};
use super::super::lend::Lend;
use super::super::mem::{publish, PoolMem};
use super::super::model::Model;
use super::super::outcome::{Failure, Outcome};
use super::super::peer::{join, DstEnd, Frame, Session, SrcEnd, TxError};
use super::super::refq::RefQueue;
use super::super::retring::ReturnRing;
use super::{connect, geom, payload, payload_is, up};

/// The pair (0, 1).
fn p01() -> u32 {
    geom().pair(0, 1).unwrap_or(u32::MAX)
}

/// Writes a forged entry at `pos` as the source would (its cache, written
/// back).
fn forge<M: PoolMem>(m: &M, pos: u32, e: &RefEntry) -> Outcome {
    let at = ok!(RefQueue::new(geom(), p01()).at(pos));
    ok!(publish(m, at, &e.encode()));
    Ok(())
}

/// Writes `e` at position `seq`, with that sequence number.
fn forge_seq<M: PoolMem>(m: &M, seq: u32, e: &RefEntry) -> Outcome {
    forge(m, seq, &RefEntry { seq, ..*e })
}

/// Publishes a forged source line of session `epoch` with tail `tail`.
fn forge_tail<M: PoolMem>(m: &M, epoch: u32, tail: u32) -> Outcome {
    let l = SrcLine {
        src_epoch: epoch,
        ack_dst_epoch: 1,
        tail,
        ret_head: 0,
    };
    let at = ok!(geom().ctl(p01())) + SRC_LINE_AT;
    ok!(publish(m, at, &l.encode()));
    Ok(())
}

/// A valid one-buffer entry of session `epoch` (position 0) naming
/// `buffer`, of `len` bytes.
fn entry(epoch: u32, buffer: u16, len: u16) -> RefEntry {
    RefEntry {
        seq: 0,
        epoch,
        dst: 1,
        src: 0,
        frag: 0,
        frags: 1,
        flags: 0,
        buffer,
        len,
        frame_len: len,
        csum_start: 0,
        csum_offset: 0,
        port: 0,
    }
}

/// Host 0 sends a 64-byte frame to host 1, which receives and lends it.
/// The ends are the caller's: KUnit runs the cases on a 16 KiB stack,
/// where a copy of both ends per frame counts.
fn lend_one(model: &Model<'_>, s: &mut SrcEnd, d: &mut DstEnd) -> Result<Frame, Failure> {
    let (a, b) = (model.host(0), model.host(1));
    let mut buf = [0u8; 64];
    let n = payload(0, 64, &mut buf);
    let sent = ok!(s.send(&a, &buf[..n], false, None));
    d.poll(&b);
    let f = ok!(d.recv(&b));
    check!(d.lend(&f));
    Ok(sent)
}

pub fn hostile_entries_are_dropped_and_counted(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (s, mut d) = connect(&model, 8)?;
    let good = entry(s.epoch(), 0, 100);
    // Each field at an extreme, with a valid CRC: one fault each.
    let bad = [
        RefEntry {
            seq: u32::MAX,
            ..good
        },
        RefEntry {
            epoch: u32::MAX,
            ..good
        },
        RefEntry {
            dst: u8::MAX,
            ..good
        },
        RefEntry {
            src: u8::MAX,
            ..good
        },
        RefEntry {
            frags: u8::MAX,
            frag: 0,
            ..good
        },
        RefEntry {
            frag: u8::MAX,
            ..good
        },
        RefEntry {
            flags: u16::MAX,
            ..good
        },
        RefEntry {
            buffer: u16::MAX,
            ..good
        },
        RefEntry {
            len: u16::MAX,
            frame_len: u16::MAX,
            ..good
        },
        RefEntry { len: 0, ..good },
        RefEntry {
            frame_len: 99,
            ..good
        },
        RefEntry {
            flags: REF_BY_VALUE,
            buffer: 5,
            ..good
        },
    ];
    for (i, e) in bad.iter().enumerate().take(8) {
        let seq = if i == 0 { e.seq } else { i as u32 };
        forge(&a, i as u32, &RefEntry { seq, ..*e })?;
    }
    forge_tail(&a, s.epoch(), 8)?;
    d.poll(&b);
    check!(d.recv(&b).is_none(), "nothing valid in the first 8");
    check_eq!(d.counters.faults(), 8);
    check_eq!(
        (
            d.counters.seq,
            d.counters.epoch,
            d.counters.dst,
            d.counters.src,
            d.counters.frag
        ),
        (1, 1, 1, 1, 3)
    );
    check_eq!((d.counters.index, d.counters.len), (1, 0));
    // The rest, then a garbage tail.
    for (i, e) in bad.iter().enumerate().skip(8) {
        forge_seq(&a, i as u32, e)?;
    }
    forge_tail(&a, s.epoch(), 12)?;
    d.poll(&b);
    check!(d.recv(&b).is_none());
    check_eq!((d.counters.len, d.counters.index), (3, 2));
    forge_tail(&a, s.epoch(), 12 + 9)?;
    d.poll(&b);
    check!(d.recv(&b).is_none());
    check_eq!(d.counters.tail, 1, "a tail a ring ahead");
    // A torn entry: CRC.
    forge_seq(&a, 12, &good)?;
    let at = ok!(RefQueue::new(geom(), p01()).at(12));
    ok!(publish(&a, at + 16, &[0xff]));
    forge_tail(&a, s.epoch(), 13)?;
    d.poll(&b);
    check!(d.recv(&b).is_none());
    check_eq!(d.counters.crc, 1);
    check_eq!(d.lends().lent(), 0);
    // The source's buffers of intact, rejected entries of its session go
    // back, once per rejection while not held: buffer 0, in each batch (a
    // source that sent it once refuses the second return).
    ok!(d.publish(&b));
    check_eq!(d.counters.returned, 2);
    check_eq!((d.lends().released(), d.lends().lent()), (0, 0));
    check_eq!(model.conflicts(), 0);
    Ok(())
}

pub fn a_reference_to_a_lent_buffer_is_dropped(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let sent = lend_one(&model, &mut s, &mut d)?;
    // The source (hostile) refers to the same buffer again.
    let e = entry(s.epoch(), sent.bufs[0], 64);
    forge_seq(&a, 1, &e)?;
    // Two entries of one frame naming one buffer.
    let first = RefEntry {
        frags: 2,
        len: 4096,
        frame_len: 4196,
        buffer: 3,
        ..e
    };
    forge_seq(&a, 2, &first)?;
    forge_seq(
        &a,
        3,
        &RefEntry {
            frag: 1,
            len: 100,
            ..first
        },
    )?;
    forge_tail(&a, s.epoch(), 4)?;
    d.poll(&b);
    check!(d.recv(&b).is_none());
    check_eq!(d.counters.dup_lent, 2);
    check_eq!(d.lends().lent(), 1);
    check_eq!(d.lends().get(sent.bufs[0]), Some(Lend::Lent { old: false }));
    Ok(())
}

pub fn bad_returns_are_refused(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let sent = lend_one(&model, &mut s, &mut d)?;
    // The destination (hostile) returns the lent buffer twice, a free one,
    // one out of range, one of another epoch and one with a stale sequence.
    let r = ReturnRing::new(geom(), p01());
    let ep = s.epoch();
    ok!(r.put(&b, 0, sent.bufs[0], ep));
    ok!(r.put(&b, 1, sent.bufs[0], ep));
    ok!(r.put(&b, 2, sent.bufs[0] + 1, ep));
    // (The largest index that is not a refusal notice.)
    ok!(r.put(&b, 3, RET_REFUSED_POS, ep));
    ok!(r.put(&b, 4, sent.bufs[0], ep + 1));
    let dl = super::super::layout::DstLine {
        dst_epoch: 1,
        ack_src_epoch: ep,
        head: 1,
        ret_tail: 6,
    };
    let at = ok!(geom().ctl(p01())) + super::super::layout::DST_LINE_AT;
    ok!(publish(&b, at, &dl.encode()));
    s.poll(&a);
    check_eq!(s.counters.returned, 1);
    check_eq!(
        (s.counters.bad_return, s.counters.index, s.counters.seq),
        (3, 1, 1)
    );
    check_eq!(s.buffers().count(BufState::Free), 8);
    // A return tail more than a ring ahead changes nothing.
    let dl = super::super::layout::DstLine {
        ret_tail: 6 + 9,
        ..dl
    };
    ok!(publish(&b, at, &dl.encode()));
    s.poll(&a);
    check_eq!(s.counters.head, 1);
    Ok(())
}

pub fn a_dead_destination_gives_back_what_it_does_not_hold(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let mut buf = [0u8; 64];
    for k in 0..5 {
        let n = payload(k, 64, &mut buf);
        ok!(s.send(&a, &buf[..n], false, None));
    }
    d.poll(&b);
    let f = ok!(d.recv(&b));
    check!(d.lend(&f));
    check_eq!(s.buffers().count(BufState::Out), 5);
    // Its lease expired: nothing is sent, and what was out is unknown
    // (its host may live on with pages lent), not free.
    s.peer_dead(&a);
    check_eq!((s.session(), s.counters.reclaimed), (Session::Down, 5));
    check_eq!(s.buffers().count(BufState::Unknown), 5);
    check_eq!(s.buffers().count(BufState::Free), 3);
    check_eq!(s.reserve(64, false), Err(TxError::NotUp));
    // The zombie's return changes nothing.
    check!(d.release(&b, f.bufs[0]));
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!((s.session(), s.counters.returned), (Session::Down, 0));
    // It rejoins with a new epoch and nothing held (its host crashed):
    // all 5 are ours again.
    // In place: a second end in the frame would not fit KUnit's stack.
    let g = geom();
    d = ok!(DstEnd::new(g, 1, 0, ok!(join(&b, &g, 1)), 8));
    ok!(d.start(&b));
    up(&model, &mut s, &mut d)?;
    check_eq!(s.buffers().count(BufState::Free), 8);
    let n = payload(7, 64, &mut buf);
    ok!(s.send(&a, &buf[..n], false, None));
    d.poll(&b);
    let f = ok!(d.recv(&b));
    check!(ok!(payload_is(&b, &f, 7)));
    check_eq!(d.counters.faults(), 0);
    Ok(())
}

/// A destination whose module reloaded while its stack held a lent page
/// (a socket had not read it) adopts the buffer: the source keeps it
/// reserved, sends in the others only, and takes it back once let go.
pub fn a_reloaded_destination_keeps_what_its_stack_holds(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let mut buf = [0u8; 64];
    let n = payload(1, 64, &mut buf);
    ok!(s.send(&a, &buf[..n], false, None));
    d.poll(&b);
    let f = ok!(d.recv(&b));
    check!(d.lend(&f));
    let held = f.bufs[0];
    // The module goes (the page stays with the stack) and the source
    // sees the lease expire; the module loads again and finds the page
    // still referenced.
    s.peer_dead(&a);
    let g = geom();
    d = ok!(DstEnd::new(g, 1, 0, ok!(join(&b, &g, 1)), 8));
    check!(d.adopt(held));
    check!(!d.adopt(held) && !d.adopt(8));
    ok!(d.start(&b));
    up(&model, &mut s, &mut d)?;
    check_eq!(s.buffers().state(held), Some(BufState::Reserved));
    check_eq!(s.buffers().count(BufState::Free), 7);
    // Frames go in the other buffers only.
    for k in 0..7 {
        let n = payload(10 + k, 64, &mut buf);
        let sent = ok!(s.send(&a, &buf[..n], false, None));
        check!(sent.bufs[0] != held);
    }
    check_eq!(s.reserve(64, false), Err(TxError::NoBuffer));
    // The stack lets go: it goes back (as an earlier session's).
    check!(d.release(&b, held));
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.buffers().state(held), Some(BufState::Free));
    check_eq!((s.counters.faults(), d.counters.faults()), (0, 0));
    Ok(())
}

pub fn a_reservation_across_a_destination_reload_is_stale(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    // Reserved at the session's start, its copy still running...
    let f = ok!(s.reserve(64, false));
    check_eq!(s.buffers().count(BufState::Out), 1);
    check_eq!(d.session(), Session::Up);
    // ...while the destination reloads: the source resets (the tail goes
    // back to the start) and comes up again, its buffers resolved free.
    // In place, as above.
    let g = geom();
    d = ok!(DstEnd::new(g, 1, 0, ok!(join(&b, &g, 1)), 8));
    ok!(d.start(&b));
    up(&model, &mut s, &mut d)?;
    check_eq!(s.buffers().count(BufState::Free), 8);
    // The position matches again, the session does not: a buffer resolved
    // free must not also be queued.
    check_eq!(s.commit(&a, &f, None), Err(TxError::Stale));
    ok!(s.publish(&a));
    d.poll(&b);
    check!(d.recv(&b).is_none(), "a frame of the old session arrived");
    check_eq!(s.buffers().count(BufState::Free), 8);
    // The same after the destination's death and rejoin.
    let f = ok!(s.reserve(64, false));
    s.peer_dead(&a);
    d = ok!(DstEnd::new(g, 1, 0, ok!(join(&b, &g, 1)), 8));
    ok!(d.start(&b));
    up(&model, &mut s, &mut d)?;
    check_eq!(s.commit(&a, &f, None), Err(TxError::Stale));
    // A stale abort frees nothing the new session took (its buffer too).
    for _ in 0..8 {
        ok!(s.reserve(64, false));
    }
    s.abort(&f);
    check_eq!(s.buffers().count(BufState::Out), 8);
    Ok(())
}

pub fn a_rejoining_source_waits_for_what_the_destination_holds(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let mut buf = [0u8; 64];
    for k in 0..3 {
        let n = payload(k, 64, &mut buf);
        ok!(s.send(&a, &buf[..n], false, None));
    }
    d.poll(&b);
    let held = ok!(d.recv(&b));
    check!(d.lend(&held));
    let copied = ok!(d.recv(&b));
    check!(d.recv(&b).is_some(), "left in the queue");
    let old = s.epoch();
    // The source crashes and rejoins, without a reload of the destination.
    d.peer_dead(&b);
    d.copied(&b, &copied);
    check_eq!(d.lends().released(), 1, "kept until the next session");
    // In place, as above.
    let g = geom();
    s = ok!(SrcEnd::new(g, 0, 1, ok!(join(&a, &g, 0))));
    check!(s.epoch() != old);
    ok!(s.start(&a));
    check_eq!(s.buffers().count(BufState::Unknown), 8);
    up(&model, &mut s, &mut d)?;
    // What the destination still held is reserved; the rest is free, the
    // copied frame's buffer already came back.
    s.poll(&a);
    check_eq!(s.buffers().state(held.bufs[0]), Some(BufState::Reserved));
    check_eq!(s.buffers().count(BufState::Free), 7);
    check!(d.release(&b, held.bufs[0]));
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.buffers().count(BufState::Free), 8);
    check_eq!(s.counters.faults(), 0);
    check_eq!(model.conflicts(), 0);
    Ok(())
}

/// A third party scribbles over the entry at `pos` in the pool (no
/// host's cache sees it until it invalidates): its CRC fails.
fn scribble(model: &Model<'_>, pos: u32) -> Outcome {
    let at = ok!(RefQueue::new(geom(), p01()).at(pos)) + 16;
    let mut b = [0u8; 1];
    ok!(model.peek(at, &mut b));
    ok!(model.poke(at, &[b[0] ^ 0xff]));
    Ok(())
}

/// The destination polls, finds nothing valid, gives back and publishes;
/// the source polls.
fn nothing_arrives(model: &Model<'_>, s: &mut SrcEnd, d: &mut DstEnd) -> Outcome {
    let (a, b) = (model.host(0), model.host(1));
    d.poll(&b);
    check!(d.recv(&b).is_none(), "a scribbled frame arrived");
    // Gives back what the rejection held, and publishes.
    d.poll(&b);
    s.poll(&a);
    Ok(())
}

/// Entries whose CRC fails (scribbled by someone else) cost their frames,
/// not their buffers: the destination refuses each by position and the
/// source takes the buffer it placed there back. Twice as many as the
/// source has buffers, so a leak would starve it.
pub fn scribbled_entries_cost_frames_not_buffers(pool: &mut [u8]) -> Outcome {
    let (pool, buf) = super::split(pool);
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    for k in 0..16u32 {
        let n = payload(k, 64, buf);
        let sent = ok!(s.send(&a, &buf[..n], false, None));
        scribble(&model, sent.pos)?;
        nothing_arrives(&model, &mut s, &mut d)?;
        check_eq!(s.buffers().state(sent.bufs[0]), Some(BufState::Free));
    }
    check_eq!((d.counters.crc, d.counters.refused), (16, 16));
    check_eq!(s.counters.refused, 16);
    // A jumbo frame's middle entry: the first goes back as a return
    // (intact, of the session), the middle by refusal, the last (now a
    // frame's first with `frag` 1) as a return.
    let n = payload(99, 9000, buf);
    let sent = ok!(s.send(&a, &buf[..n], false, None));
    scribble(&model, sent.pos + 1)?;
    nothing_arrives(&model, &mut s, &mut d)?;
    check_eq!(s.buffers().count(BufState::Free), 8);
    check_eq!((s.counters.refused, s.counters.returned), (17, 2));
    // A by-value frame's: its slot is free once the head passed; the
    // refusal has nothing to give back (the source counts a bad return).
    let n = payload(100, 64, buf);
    let sent = ok!(s.send(&a, &buf[..n], true, None));
    scribble(&model, sent.pos)?;
    nothing_arrives(&model, &mut s, &mut d)?;
    check_eq!((d.counters.refused, s.counters.refused), (18, 17));
    check_eq!(s.counters.bad_return, 1);
    check_eq!(s.space(), 8);
    // Traffic goes on.
    let n = payload(101, 64, buf);
    ok!(s.send(&a, &buf[..n], false, None));
    d.poll(&b);
    let f = ok!(d.recv(&b));
    check!(ok!(payload_is(&b, &f, 101)));
    check_eq!(s.counters.faults(), 1);
    check_eq!(d.counters.faults(), d.counters.crc + d.counters.frag);
    check_eq!(model.conflicts(), 0);
    Ok(())
}

/// A refusal that finds the return ring full waits, the entry unread,
/// until the source took returns; then the buffer comes back.
pub fn a_refusal_waits_for_room_on_the_return_ring(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let mut buf = [0u8; 64];
    // Four buffers lent, the source up to date.
    let mut lent = [0u16; 4];
    for (k, l) in lent.iter_mut().enumerate() {
        *l = lend_one(&model, &mut s, &mut d)?.bufs[0];
        check_eq!(s.buffers().count(BufState::Out), k as u32 + 1);
    }
    ok!(d.publish(&b));
    s.poll(&a);
    // Four by-value frames and one by reference, all scribbled (after
    // the source wrote them all: its write-back of a line puts back what
    // it has of an entry scribbled in it).
    for k in 0..4 {
        let n = payload(k, 64, &mut buf);
        ok!(s.send(&a, &buf[..n], true, None));
    }
    let n = payload(4, 64, &mut buf);
    let sent = ok!(s.send(&a, &buf[..n], false, None));
    for k in 0..5 {
        scribble(&model, sent.pos - k)?;
    }
    // Four returns and four refusals fill the ring (8 slots); the fifth
    // refusal waits.
    for l in lent {
        check!(d.release(&b, l));
    }
    d.poll(&b);
    check!(d.recv(&b).is_none());
    check_eq!((d.counters.refused, d.counters.refused_no_room), (4, 1));
    check_eq!(d.counters.crc, 4, "the waiting entry is not counted yet");
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.buffers().count(BufState::Out), 1);
    check_eq!(s.buffers().state(sent.bufs[0]), Some(BufState::Out));
    // The source took them: room again.
    nothing_arrives(&model, &mut s, &mut d)?;
    check_eq!((d.counters.refused, d.counters.crc), (5, 5));
    check_eq!(s.buffers().count(BufState::Free), 8);
    check_eq!(s.counters.refused, 1);
    check_eq!(
        (s.counters.faults(), s.counters.bad_return),
        (4, 4),
        "by value"
    );
    Ok(())
}

/// A refusal the source cannot match frees nothing: of an entry not
/// consumed yet, of one consumed by an earlier poll, of another epoch, or
/// naming a by-reference entry whose buffer already came back.
pub fn a_refusal_that_matches_nothing_is_refused(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    // Position 0 lent and consumed, 1 and 2 sent, not consumed.
    let first = lend_one(&model, &mut s, &mut d)?;
    ok!(d.publish(&b));
    s.poll(&a);
    let mut buf = [0u8; 64];
    for k in 0..2 {
        let n = payload(k, 64, &mut buf);
        ok!(s.send(&a, &buf[..n], false, None));
    }
    check_eq!(s.buffers().count(BufState::Out), 3);
    // The destination (hostile) refuses 0 (consumed by an earlier poll),
    // 2 (not consumed: its head is 2), 1 in another epoch, then 1 three
    // times.
    let r = ReturnRing::new(geom(), p01());
    let ep = s.epoch();
    let notices = [
        (refusal(0), ep),
        (refusal(2), ep),
        (refusal(1), ep + 1),
        (refusal(1), ep),
        (refusal(1), ep),
        (refusal(1), ep),
    ];
    for (i, (k, e)) in notices.iter().enumerate() {
        ok!(r.put(&b, i as u32, *k, *e));
    }
    let dl = DstLine {
        dst_epoch: 1,
        ack_src_epoch: ep,
        head: 2,
        ret_tail: notices.len() as u32,
    };
    let at = ok!(geom().ctl(p01())) + DST_LINE_AT;
    ok!(publish(&b, at, &dl.encode()));
    s.poll(&a);
    // Position 1's buffer came back once; the rest are faults.
    check_eq!(s.counters.refused, 1);
    check_eq!((s.counters.bad_return, s.counters.epoch), (4, 1));
    check_eq!(s.buffers().count(BufState::Out), 2);
    check_eq!(s.buffers().state(first.bufs[0]), Some(BufState::Out));
    // A buffer out for long (a page a socket holds) is forgotten by the
    // refusals before its kept bits come round again: a refusal of the
    // position sharing them frees the newer buffer only.
    let mut t = TxBuffers::new(8, BufState::Free);
    let old = ok!(t.take(7));
    let near = ok!(t.take(100));
    t.age(100 + 4096);
    let new = ok!(t.take(7 + 8192));
    check_eq!(t.refused(7 + 8192), Ok(new));
    check_eq!(t.refused(7), Err(Fault::Return));
    check_eq!(t.state(old), Some(BufState::Out));
    // Within the queue's reach a placement is kept.
    check_eq!(t.refused(100), Ok(near));
    Ok(())
}
