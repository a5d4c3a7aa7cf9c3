//! Hostile peers over the non-coherent model. A source that writes
//! entries with every field at random or extreme values (with valid
//! checksums), garbage bytes, and source lines with any tail or epoch:
//! the destination never hands out a frame outside the pair's buffers or
//! slots, never lends a buffer twice or beyond its cap, and counts what it
//! drops. A destination that returns anything, any number of times,
//! refuses any position, and writes any line: the source never takes back
//! a buffer more often than it sent it, and never hands out one that is
//! out.

mod common;

use std::collections::HashSet;

use common::{backing, connect, dst, payload, src, world};
use drack_core::alloc::BufState;
use drack_core::layout::{
    refusal, DstLine, Geometry, RefEntry, SrcLine, BUF_BYTES, DST_LINE_AT, FRAGS_MAX, FRAME_MAX,
    FRAME_MIN, HELD_AT, SRC_LINE_AT,
};
use drack_core::mem::{publish, PoolMem};
use drack_core::refq::RefQueue;
use drack_core::retring::ReturnRing;
use proptest::prelude::*;

fn geom() -> Geometry {
    Geometry::new(2, 8, 8, true).unwrap()
}

/// A field: often plausible, sometimes extreme, sometimes anything.
fn small(plausible: std::ops::RangeInclusive<u32>, max: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => plausible,
        1 => Just(max),
        1 => Just(0u32),
        1 => 0..=max,
    ]
}

#[derive(Debug, Clone)]
enum Evil {
    /// An entry with a valid CRC at position `head + at`.
    Entry(u32, RefEntry, bool),
    /// A consistent frame at `head + at` (length, by value, buffers), with
    /// one field of one entry set to a value, or none.
    Frame(u32, u32, bool, [u16; 3], Option<(usize, u32)>),
    /// Raw bytes into the ref entries.
    Garbage(u32, Vec<u8>),
    /// A source line: tail `head + tail` (wrapping), and epoch and
    /// acknowledgement right or not.
    Line(u32, bool, bool),
    /// The destination polls.
    Poll,
    /// It takes a frame, lending it if asked.
    Recv(bool),
    /// The stack lets go of a lent buffer.
    Release(usize),
}

fn entry() -> impl Strategy<Value = (RefEntry, bool)> {
    (
        (small(1..=1, u32::MAX), small(1..=1, 255), small(0..=0, 255)),
        (
            small(0..=2, 255),
            small(1..=3, 255),
            small(0..=3, u32::from(u16::MAX)),
        ),
        (
            small(0..=9, u32::from(u16::MAX)),
            small(14..=4096, u32::from(u16::MAX)),
        ),
        (
            small(14..=9018, u32::from(u16::MAX)),
            small(0..=100, u32::from(u16::MAX)),
        ),
        (any::<bool>(), any::<u8>()),
    )
        .prop_map(
            |(
                (epoch, dst, src),
                (frag, frags, flags),
                (buffer, len),
                (frame_len, cs),
                (seq_ok, port),
            )| {
                let e = RefEntry {
                    seq: 0,
                    epoch,
                    dst: dst as u8,
                    src: src as u8,
                    frag: frag as u8,
                    frags: frags as u8,
                    flags: flags as u16,
                    buffer: buffer as u16,
                    len: len as u16,
                    frame_len: frame_len as u16,
                    csum_start: cs as u16,
                    csum_offset: (cs / 2) as u16,
                    // Mostly a port this version knows (0..=4, 0x81..=0x84).
                    port: if port & 0x70 == 0 { port & 0x87 } else { port },
                };
                (e, seq_ok)
            },
        )
}

fn evil() -> impl Strategy<Value = Evil> {
    prop_oneof![
        3 => (0..10u32, entry()).prop_map(|(at, (e, ok))| Evil::Entry(at, e, ok)),
        6 => (
            prop_oneof![Just(0u32), 0..6u32],
            FRAME_MIN..=FRAME_MAX,
            prop::bool::weighted(0.2),
            any::<[u16; 3]>().prop_map(|b| b.map(|k| k % 9)),
            prop::option::weighted(0.5, (0..36usize, prop_oneof![0..10u32, Just(u32::MAX), any::<u32>()])),
        )
            .prop_map(|(at, len, v, b, m)| Evil::Frame(at, len, v, b, m)),
        1 => (0..8 * 32u32, prop::collection::vec(any::<u8>(), 1..40))
            .prop_map(|(at, g)| Evil::Garbage(at, g)),
        5 => (prop_oneof![6 => 0..12u32, 1 => Just(u32::MAX), 1 => any::<u32>()], prop::bool::weighted(0.95), prop::bool::weighted(0.95))
            .prop_map(|(t, e, a)| Evil::Line(t, e, a)),
        3 => Just(Evil::Poll),
        4 => any::<bool>().prop_map(Evil::Recv),
        2 => any::<usize>().prop_map(Evil::Release),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_hostile_source_makes_drops_never_bad_frames(
        cap in 1u32..12,
        evils in prop::collection::vec(evil(), 1..200),
    ) {
        let g = geom();
        let mut buf = backing(&g);
        let model = world(&mut buf, &g);
        let mut s = src(&model, &g, 0);
        let mut d = dst(&model, &g, cap);
        connect(&model, &mut s, &mut d);
        let (a, b) = (model.host(0), model.host(1));
        let pair = g.pair(0, 1).unwrap();
        let q = RefQueue::new(g, pair);
        let ctl = g.ctl(pair).unwrap();
        let epoch = s.epoch();
        // Where the honest source would be: the destination's head.
        let mut head = 0u32;
        let mut lent: HashSet<u16> = HashSet::new();
        for ev in &evils {
            match ev {
                Evil::Entry(at, e, seq_ok) => {
                    let pos = head.wrapping_add(*at);
                    let mut e = *e;
                    e.seq = if *seq_ok { pos } else { pos ^ 0x100 };
                    if e.epoch == 1 {
                        e.epoch = epoch;
                    }
                    publish(&a, q.at(pos).unwrap(), &e.encode()).unwrap();
                }
                Evil::Frame(at, len, by_value, bufs, mutation) => {
                    let n = len.div_ceil(4096);
                    let mut es = Vec::new();
                    for i in 0..n {
                        let pos = head.wrapping_add(*at + i);
                        let part = (len - 4096 * i).min(4096);
                        es.push(RefEntry {
                            seq: pos,
                            epoch,
                            dst: 1,
                            src: 0,
                            frag: i as u8,
                            frags: n as u8,
                            flags: if *by_value { 1 } else { 0 },
                            buffer: if *by_value { (pos % 8) as u16 } else { bufs[i as usize] },
                            len: part as u16,
                            frame_len: *len as u16,
                            csum_start: 0,
                            csum_offset: 0,
                            port: 0,
                        });
                    }
                    if let Some((f, v)) = *mutation {
                        let e = &mut es[(f / 12) % n as usize];
                        match f % 12 {
                            0 => e.seq = v,
                            1 => e.epoch = v,
                            2 => e.dst = v as u8,
                            3 => e.src = v as u8,
                            4 => e.frag = v as u8,
                            5 => e.frags = v as u8,
                            6 => e.flags = v as u16,
                            7 => e.buffer = v as u16,
                            8 => e.len = v as u16,
                            9 => e.frame_len = v as u16,
                            10 => e.csum_start = v as u16,
                            _ => e.csum_offset = v as u16,
                        }
                    }
                    for (i, e) in es.iter().enumerate() {
                        let pos = head.wrapping_add(*at + i as u32);
                        publish(&a, q.at(pos).unwrap(), &e.encode()).unwrap();
                    }
                }
                Evil::Garbage(at, bytes) => {
                    let at = g.ref_entry(pair, 0).unwrap() + u64::from(*at);
                    let len = bytes.len().min((g.ref_slots() * 32) as usize - (at - g.ref_entry(pair, 0).unwrap()) as usize);
                    publish(&a, at, &bytes[..len]).unwrap();
                }
                Evil::Line(t, right_epoch, right_ack) => {
                    let l = SrcLine {
                        src_epoch: if *right_epoch { epoch } else { epoch ^ 0x55 },
                        ack_dst_epoch: if *right_ack { 1 } else { 7 },
                        tail: head.wrapping_add(*t),
                        ret_head: 0,
                    };
                    publish(&a, ctl + SRC_LINE_AT, &l.encode()).unwrap();
                }
                Evil::Poll => {
                    d.poll(&b);
                }
                Evil::Recv(lend) => {
                    if let Some(f) = d.recv(&b) {
                        prop_assert!((1..=FRAGS_MAX).contains(&u32::from(f.n)));
                        prop_assert!((FRAME_MIN..=FRAME_MAX).contains(&f.len));
                        let mut sum = 0u32;
                        for (k, off, len) in f.parts() {
                            let want = if f.by_value {
                                g.value_slot(pair, u32::from(k))
                            } else {
                                g.buffer(pair, u32::from(k))
                            };
                            prop_assert_eq!(Some(off), want);
                            prop_assert!(u64::from(len) <= BUF_BYTES && len > 0);
                            prop_assert!(f.by_value || !lent.contains(&k), "buffer {} lent twice", k);
                            sum += u32::from(len);
                        }
                        prop_assert_eq!(sum, f.len);
                        if *lend && d.lend(&f) {
                            lent.extend(f.parts().map(|(k, _, _)| k));
                        } else {
                            d.copied(&b, &f);
                        }
                        prop_assert!(d.lends().lent() <= cap);
                        prop_assert_eq!(d.lends().lent() as usize, lent.len());
                    }
                }
                Evil::Release(k) => {
                    if !lent.is_empty() {
                        let v: Vec<u16> = lent.iter().copied().collect();
                        let k = v[k % v.len()];
                        lent.remove(&k);
                        prop_assert!(d.release(&b, k));
                    }
                }
            }
            d.publish(&b).unwrap();
            // Follow the destination's head as an honest source would.
            let mut line = [0u8; 64];
            a.invalidate(ctl + DST_LINE_AT, 64).unwrap();
            a.read(ctl + DST_LINE_AT, &mut line).unwrap();
            head = DstLine::decode(&line).map_or(head, |l| l.head);
        }
        for k in lent.drain() {
            prop_assert!(d.release(&b, k));
        }
        prop_assert_eq!(d.lends().lent(), 0);
        prop_assert_eq!(model.conflicts(), 0);
    }
}

#[derive(Debug, Clone)]
enum Liar {
    /// The source sends a frame.
    Send(u32),
    /// The source polls.
    Poll,
    /// A return entry at `ret_tail + at` (then one more returned):
    /// buffer, epoch right or not.
    Return(u32, u16, bool),
    /// The destination line: return tail `+ t`, head at the source's tail
    /// or anywhere, and its epoch the same or a new one.
    Line(u32, Option<u32>, bool),
    /// A held bitmap.
    Held([u8; 8]),
    /// A refusal notice at `ret_tail` (then one more returned) of the
    /// entry `back` positions before the source's tail, epoch right or
    /// not.
    Refuse(u32, bool),
}

fn liar() -> impl Strategy<Value = Liar> {
    prop_oneof![
        4 => (FRAME_MIN..6000u32).prop_map(Liar::Send),
        3 => Just(Liar::Poll),
        6 => (prop_oneof![4 => Just(0u32), 1 => 0..10u32], prop_oneof![6 => 0..8u16, 1 => any::<u16>()], prop::bool::weighted(0.9))
            .prop_map(|(a, b, e)| Liar::Return(a, b, e)),
        3 => (prop_oneof![4 => 0..3u32, 1 => any::<u32>()], prop::option::weighted(0.2, any::<u32>()), prop::bool::weighted(0.95))
            .prop_map(|(t, h, e)| Liar::Line(t, h, e)),
        1 => any::<[u8; 8]>().prop_map(Liar::Held),
        4 => (prop_oneof![4 => 0..10u32, 1 => any::<u32>()], prop::bool::weighted(0.9))
            .prop_map(|(k, e)| Liar::Refuse(k, e)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_hostile_destination_never_gets_a_buffer_freed_twice(
        liars in prop::collection::vec(liar(), 1..200),
    ) {
        let g = geom();
        let mut buf = backing(&g);
        let model = world(&mut buf, &g);
        let mut s = src(&model, &g, 0);
        // Host 1 plays the destination by hand from here on.
        let mut d = dst(&model, &g, 8);
        connect(&model, &mut s, &mut d);
        let (a, b) = (model.host(0), model.host(1));
        let pair = g.pair(0, 1).unwrap();
        let r = ReturnRing::new(g, pair);
        let ctl = g.ctl(pair).unwrap();
        let mut line = DstLine { dst_epoch: 1, ack_src_epoch: s.epoch(), head: 0, ret_tail: 0 };
        let mut sends = [0u32; 8];
        let mut takes = [0u32; 8];
        for l in &liars {
            let before: Vec<_> = (0..8u16).map(|k| s.buffers().state(k).unwrap()).collect();
            match *l {
                Liar::Send(len) => {
                    if let Ok(f) = s.send(&a, &payload(0, len as usize), false, None) {
                        for (k, _, _) in f.parts() {
                            prop_assert_eq!(before[usize::from(k)], BufState::Free, "sent a buffer not free");
                            sends[usize::from(k)] += 1;
                        }
                    }
                }
                Liar::Poll => {
                    s.poll(&a);
                }
                Liar::Return(at, k, right) => {
                    let ep = if right { s.epoch() } else { s.epoch() + 1 };
                    r.put(&b, line.ret_tail.wrapping_add(at), k, ep).unwrap();
                    line.ret_tail = line.ret_tail.wrapping_add(1);
                    publish(&b, ctl + DST_LINE_AT, &line.encode()).unwrap();
                }
                Liar::Line(t, h, same) => {
                    line.ret_tail = line.ret_tail.wrapping_add(t);
                    line.head = match h {
                        Some(h) => h,
                        None => {
                            let mut sl = [0u8; 64];
                            b.invalidate(ctl + SRC_LINE_AT, 64).unwrap();
                            b.read(ctl + SRC_LINE_AT, &mut sl).unwrap();
                            SrcLine::decode(&sl).map_or(line.head, |l| l.tail)
                        }
                    };
                    if !same {
                        line.dst_epoch += 1;
                        line.ack_src_epoch = s.epoch();
                    }
                    publish(&b, ctl + DST_LINE_AT, &line.encode()).unwrap();
                }
                Liar::Refuse(back, right) => {
                    let ep = if right { s.epoch() } else { s.epoch() + 1 };
                    let mut sl = [0u8; 64];
                    b.invalidate(ctl + SRC_LINE_AT, 64).unwrap();
                    b.read(ctl + SRC_LINE_AT, &mut sl).unwrap();
                    let tail = SrcLine::decode(&sl).map_or(0, |l| l.tail);
                    r.put(&b, line.ret_tail, refusal(tail.wrapping_sub(back)), ep).unwrap();
                    line.ret_tail = line.ret_tail.wrapping_add(1);
                    publish(&b, ctl + DST_LINE_AT, &line.encode()).unwrap();
                }
                Liar::Held(bits) => {
                    let mut held = [0u8; 64];
                    held[..8].copy_from_slice(&bits);
                    publish(&b, ctl + HELD_AT, &held).unwrap();
                }
            }
            for k in 0..8u16 {
                let now = s.buffers().state(k).unwrap();
                if before[usize::from(k)] == BufState::Out && now == BufState::Free {
                    takes[usize::from(k)] += 1;
                }
            }
            for k in 0..8 {
                prop_assert!(takes[k] <= sends[k], "buffer {} back more often than sent", k);
            }
            let total: u32 = [BufState::Free, BufState::Out, BufState::Reserved, BufState::Unknown]
                .iter()
                .map(|st| s.buffers().count(*st))
                .sum();
            prop_assert_eq!(total, 8);
            prop_assert!(s.space() <= g.ref_slots());
        }
        prop_assert_eq!(model.conflicts(), 0);
    }
}
