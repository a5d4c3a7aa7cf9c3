//! The `ref_queue` and return ring protocol of both ends over the
//! non-coherent two-host model: random interleavings of the two hosts,
//! random cache evictions, rings starting just before the `u32` wrap,
//! frames from 14 bytes to 9018 (three buffers), by reference and by
//! value, lent, copied and released in random order. Every frame arrives
//! once, in order, intact; at the end every buffer is back with its
//! source and no line was written by both hosts. Then the same with
//! hosts dying and rejoining, and with a third party scribbling over
//! entries (their frames may be lost, their buffers not).

mod common;

use std::collections::{HashSet, VecDeque};

use common::{
    backing, connect, dst, dst_adopting, number_of, payload, read_frame, read_part, src, world,
};
use drack_core::alloc::BufState;
use drack_core::layout::{Geometry, FRAME_MAX, FRAME_MIN};
use drack_core::mem::PoolMem;
use drack_core::model::Model;
use drack_core::peer::{join, DstEnd, Session, SrcEnd, TxError};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// The source sends a frame of this length (by value if asked).
    Send(u32, bool),
    /// The source polls the destination's line.
    SrcPoll,
    /// The destination polls the source's line.
    DstPoll,
    /// The destination takes a frame: lends it if asked (and the cap
    /// allows), else copies it.
    Recv(bool),
    /// The stack lets go of the k-th lent buffer.
    Release(usize),
    /// The destination publishes its line.
    DstPublish,
    /// A cache evicts a line (a dirty one is written back early).
    Evict(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let len = prop_oneof![
        FRAME_MIN..200u32,
        1400..1600u32,
        4000..4200u32,
        8100..=FRAME_MAX
    ];
    prop_oneof![
        4 => (len, any::<bool>()).prop_map(|(l, v)| Op::Send(l, v)),
        2 => Just(Op::SrcPoll),
        2 => Just(Op::DstPoll),
        4 => any::<bool>().prop_map(Op::Recv),
        2 => any::<usize>().prop_map(Op::Release),
        1 => Just(Op::DstPublish),
        2 => (0..2usize, any::<usize>()).prop_map(|(h, l)| Op::Evict(h, l)),
    ]
}

fn geometry() -> impl Strategy<Value = Geometry> {
    (
        prop_oneof![Just(4u32), Just(8), Just(16)],
        prop_oneof![Just(4u32), Just(8), Just(32)],
    )
        .prop_map(|(slots, bufs)| Geometry::new(2, slots, bufs, true).unwrap())
}

/// A buffer the stack holds: where, and what it read there when lent.
struct Held {
    buf: u16,
    off: u64,
    bytes: Vec<u8>,
}

impl Held {
    /// The stack lets go: what it holds was never written over (the
    /// source sent nothing in a buffer the destination held).
    fn let_go(self, model: &Model<'_>, d: &mut DstEnd) {
        let b = model.host(1);
        let len = u16::try_from(self.bytes.len()).unwrap();
        assert_eq!(
            read_part(&b, self.off, len),
            self.bytes,
            "lent buffer {} written over",
            self.buf
        );
        assert!(d.release(&b, self.buf));
    }
}

/// The destination side's test state: what it holds, what it expects.
#[derive(Default)]
struct Rx {
    lent: Vec<Held>,
    /// Sent in the current session, in order.
    sent: VecDeque<u32>,
    /// Sent in an earlier session: may arrive (once) or be lost.
    old: HashSet<u32>,
    seen: HashSet<u32>,
}

impl Rx {
    /// Takes one frame if there is one; checks it is the next expected.
    fn take(&mut self, model: &drack_core::model::Model<'_>, d: &mut DstEnd, lend: bool) -> bool {
        let b = model.host(1);
        let Some(f) = d.recv(&b) else {
            return false;
        };
        let p = read_frame(&b, &f);
        assert_eq!(p.len() as u32, f.len);
        let n = number_of(&p).expect("an intact payload");
        assert!(self.seen.insert(n), "frame {n} twice");
        if self.sent.front() == Some(&n) {
            self.sent.pop_front();
        } else {
            assert!(self.old.remove(&n), "frame {n} out of order");
        }
        if !f.by_value && lend && d.lend(&f) {
            self.lent.extend(f.parts().map(|(buf, off, len)| Held {
                buf,
                off,
                bytes: read_part(&b, off, len),
            }));
        } else {
            d.copied(&b, &f);
        }
        assert!(d.lends().lent() <= d.lends().cap());
        true
    }
}

fn step(
    model: &drack_core::model::Model<'_>,
    s: &mut SrcEnd,
    d: &mut DstEnd,
    rx: &mut Rx,
    next: &mut u32,
    op: &Op,
) {
    let (a, b) = (model.host(0), model.host(1));
    match *op {
        Op::Send(len, by_value) => {
            match s.send(&a, &payload(*next, len as usize), by_value, None) {
                Ok(_) => {
                    rx.sent.push_back(*next);
                    *next += 1;
                }
                Err(TxError::NoBuffer | TxError::RingFull | TxError::NotUp) => {}
                Err(e) => panic!("send: {e:?}"),
            }
        }
        Op::SrcPoll => {
            s.poll(&a);
        }
        Op::DstPoll => {
            d.poll(&b);
        }
        Op::Recv(lend) => {
            rx.take(model, d, lend);
        }
        Op::Release(k) => {
            if !rx.lent.is_empty() {
                let n = rx.lent.len();
                rx.lent.swap_remove(k % n).let_go(model, d);
            }
        }
        Op::DstPublish => d.publish(&b).unwrap(),
        Op::Evict(h, line) => {
            let lines = model.host(0).len() as usize / 64;
            model.evict(h, line % lines);
        }
    }
}

/// Everything in flight arrives, everything lent is let go, every buffer
/// goes home.
fn drain(
    model: &drack_core::model::Model<'_>,
    s: &mut SrcEnd,
    d: &mut DstEnd,
    rx: &mut Rx,
    bufs: u32,
) {
    let b = model.host(1);
    for _ in 0..64 {
        s.poll(&model.host(0));
        d.poll(&b);
        while rx.take(model, d, true) {}
        for h in std::mem::take(&mut rx.lent) {
            h.let_go(model, d);
        }
        d.publish(&b).unwrap();
        if rx.sent.is_empty() && s.buffers().count(BufState::Free) == bufs {
            break;
        }
    }
    s.poll(&model.host(0));
    assert!(rx.sent.is_empty(), "lost {:?}", rx.sent);
    assert_eq!(s.buffers().count(BufState::Free), bufs, "a buffer leaked");
    assert_eq!((d.lends().lent(), d.lends().released()), (0, 0));
}

/// One run: a source (its ring starting at `start`) and a destination
/// (lend cap `cap`) connected over a fresh model; `body` drives them
/// (counting the frames sent in its last argument), then everything is
/// drained and nothing may be lost, leaked, faulted or written by both
/// hosts; `then` checks the counts.
fn run(
    geom: &Geometry,
    start: u32,
    cap: u32,
    body: impl FnOnce(
        &Model<'_>,
        &mut SrcEnd,
        &mut DstEnd,
        &mut Rx,
        &mut u32,
    ) -> Result<(), TestCaseError>,
    then: impl FnOnce(&SrcEnd, &DstEnd, &Rx, u32) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let mut buf = backing(geom);
    let model = world(&mut buf, geom);
    let mut s = src(&model, geom, start);
    let mut d = dst(&model, geom, cap);
    connect(&model, &mut s, &mut d);
    let mut rx = Rx::default();
    let mut next = 0u32;
    body(&model, &mut s, &mut d, &mut rx, &mut next)?;
    drain(&model, &mut s, &mut d, &mut rx, geom.bufs());
    // Only by-value entries' refusals match no buffer.
    prop_assert_eq!(s.counters.faults(), s.counters.bad_return);
    prop_assert_eq!(model.conflicts(), 0);
    prop_assert_eq!(model.dirty_invalidates(), 0);
    then(&s, &d, &rx, next)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn frames_arrive_once_in_order_and_buffers_come_home(
        geom in geometry(),
        start in (u32::MAX - 40)..=u32::MAX,
        cap in 1u32..40,
        ops in prop::collection::vec(op(), 1..300),
    ) {
        run(&geom, start, cap, |model, s, d, rx, next| {
            for op in &ops {
                step(model, s, d, rx, next, op);
            }
            Ok(())
        }, |s, d, _, next| {
            prop_assert_eq!(s.counters.faults() + d.counters.faults(), 0);
            prop_assert_eq!(d.counters.frames, u64::from(next));
            prop_assert_eq!(s.counters.returned, d.counters.returned);
            Ok(())
        })?;
    }
}

#[derive(Debug, Clone)]
enum Life {
    /// Traffic as above.
    Op(Op),
    /// The source crashes and rejoins (new epoch); the destination may
    /// have seen its lease expire first.
    SrcRejoin(bool),
    /// The destination crashes (its stack let go of everything when its
    /// module went) and rejoins; the source may have seen its lease expire.
    DstRejoin(bool),
    /// The destination's module reloads while its stack keeps what was
    /// lent (adopted by the new load); the source may have seen its lease
    /// expire.
    DstReload(bool),
    /// The destination declares the source dead though it only stalled:
    /// the source sees the acknowledgement withdrawn and rejoins in
    /// place with a new epoch.
    SrcZombie,
    /// The source declares the destination dead though it only stalled:
    /// likewise, its stack keeping what was lent.
    DstZombie,
}

fn life() -> impl Strategy<Value = Life> {
    prop_oneof![
        30 => op().prop_map(Life::Op),
        1 => any::<bool>().prop_map(Life::SrcRejoin),
        1 => any::<bool>().prop_map(Life::DstRejoin),
        1 => any::<bool>().prop_map(Life::DstReload),
        1 => Just(Life::SrcZombie),
        1 => Just(Life::DstZombie),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn deaths_and_rejoins_lose_frames_of_old_sessions_only_and_leak_nothing(
        geom in geometry(),
        start in (u32::MAX - 40)..=u32::MAX,
        cap in 1u32..40,
        lives in prop::collection::vec(life(), 1..400),
    ) {
        run(&geom, start, cap, |model, s, d, rx, next| {
            let mut resets = (s.counters.resets, d.counters.resets);
            for l in &lives {
                match l {
                    Life::Op(op) => step(model, s, d, rx, next, op),
                    Life::SrcRejoin(seen_dead) => {
                        if *seen_dead {
                            d.peer_dead(&model.host(1));
                            prop_assert_eq!(d.session(), Session::Down);
                        }
                        *s = src(model, &geom, start.wrapping_add(*next));
                    }
                    Life::SrcZombie => {
                        let (a, b) = (model.host(0), model.host(1));
                        let up = (s.session(), d.session()) == (Session::Up, Session::Up);
                        d.peer_dead(&b);
                        s.poll(&a);
                        prop_assert!(s.dropped() || !up, "the source missed its death");
                        s.rejoin(&a, join(&a, &geom, 0).unwrap()).unwrap();
                        prop_assert!(!s.dropped());
                    }
                    Life::DstZombie => {
                        let (a, b) = (model.host(0), model.host(1));
                        let up = (s.session(), d.session()) == (Session::Up, Session::Up);
                        s.peer_dead(&a);
                        prop_assert_eq!(s.buffers().count(BufState::Out), 0);
                        d.poll(&b);
                        prop_assert!(d.dropped() || !up, "the destination missed its death");
                        d.rejoin(&b, join(&b, &geom, 1).unwrap()).unwrap();
                    }
                    Life::DstRejoin(seen_dead) | Life::DstReload(seen_dead) => {
                        if *seen_dead {
                            s.peer_dead(&model.host(0));
                            // Nothing counts as out; what was is
                            // unknown until the destination says.
                            prop_assert_eq!(s.buffers().count(BufState::Out), 0);
                            prop_assert_eq!(s.buffers().count(BufState::Reserved), 0);
                        }
                        if matches!(l, Life::DstReload(_)) {
                            let held: Vec<u16> = rx.lent.iter().map(|h| h.buf).collect();
                            *d = dst_adopting(model, &geom, cap, &held);
                        } else {
                            // A crash: its stack is gone with it.
                            rx.lent.clear();
                            *d = dst(model, &geom, cap);
                        }
                    }
                }
                // A new session drops what the old one had in flight.
                if !matches!(l, Life::Op(_))
                    || resets != (s.counters.resets, d.counters.resets)
                {
                    rx.old.extend(rx.sent.drain(..));
                    resets = (s.counters.resets, d.counters.resets);
                }
            }
            for _ in 0..4 {
                s.poll(&model.host(0));
                d.poll(&model.host(1));
            }
            prop_assert_eq!((s.session(), d.session()), (Session::Up, Session::Up));
            if resets != (s.counters.resets, d.counters.resets) {
                rx.old.extend(rx.sent.drain(..));
            }
            Ok(())
        }, |s, d, rx, next| {
            prop_assert_eq!(s.counters.faults() + d.counters.faults(), 0);
            prop_assert_eq!(rx.seen.len() + rx.old.len(), next as usize);
            Ok(())
        })?;
    }
}

#[derive(Debug, Clone)]
enum Hit {
    /// Traffic as above.
    Op(Op),
    /// A third party flips byte `byte` of entry `entry` of the `frame`-th
    /// most recent frame still in the queue's slots.
    Scribble(usize, usize, usize),
}

fn hit() -> impl Strategy<Value = Hit> {
    prop_oneof![
        8 => op().prop_map(Hit::Op),
        1 => (any::<usize>(), any::<usize>(), 0..32usize)
            .prop_map(|(f, e, b)| Hit::Scribble(f, e, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn scribbled_entries_lose_their_frames_never_buffers(
        geom in geometry(),
        start in (u32::MAX - 40)..=u32::MAX,
        cap in 1u32..40,
        hits in prop::collection::vec(hit(), 1..300),
    ) {
        let scribbles = std::cell::Cell::new(0u64);
        run(&geom, start, cap, |model, s, d, rx, next| {
            // The frames whose entries are still in the queue's slots:
            // (first position, entries, number).
            let mut recent: VecDeque<(u32, u32, u32)> = VecDeque::new();
            let mut tail = start;
            let pair = geom.pair(0, 1).unwrap();
            let q = drack_core::refq::RefQueue::new(geom, pair);
            for h in &hits {
                match h {
                    Hit::Op(op) => {
                        let sent = *next;
                        step(model, s, d, rx, next, op);
                        if *next != sent {
                            let Op::Send(len, _) = *op else { unreachable!() };
                            let n = len.div_ceil(4096);
                            recent.push_back((tail, n, sent));
                            tail = tail.wrapping_add(n);
                            while let Some(&(p, _, _)) = recent.front() {
                                if tail.wrapping_sub(p) > geom.ref_slots() {
                                    recent.pop_front();
                                } else {
                                    break;
                                }
                            }
                        }
                    }
                    Hit::Scribble(f, e, byte) => {
                        if recent.is_empty() {
                            continue;
                        }
                        let (pos, n, number) = recent[recent.len() - 1 - f % recent.len()];
                        let at = q.at(pos.wrapping_add((*e as u32) % n)).unwrap() + *byte as u64;
                        let mut b = [0u8; 1];
                        model.peek(at, &mut b).unwrap();
                        model.poke(at, &[b[0] ^ 0xa5]).unwrap();
                        scribbles.set(scribbles.get() + 1);
                        // Lost, unless read before, or the source's
                        // write-back of a line puts the entry back.
                        if let Some(i) = rx.sent.iter().position(|&k| k == number) {
                            rx.sent.remove(i);
                            rx.old.insert(number);
                        }
                    }
                }
            }
            Ok(())
        }, |s, d, rx, next| {
            // A CRC the scribble broke; the rest of a frame whose start
            // was refused: no other fault.
            prop_assert_eq!(d.counters.faults(), d.counters.crc + d.counters.frag);
            prop_assert!(d.counters.crc <= scribbles.get());
            // Every refusal brought a buffer back, but a by-value
            // entry's.
            prop_assert_eq!(s.counters.refused + s.counters.bad_return, d.counters.refused);
            prop_assert_eq!(rx.seen.len() + rx.old.len(), next as usize);
            Ok(())
        })?;
    }
}
