//! The TX and RX protocols with both sides over one simulated memory:
//! random batch sizes, rings starting anywhere (so runs cross the `u32`
//! wrap), and a peer that writes garbage.

use cxlnic_ring::index::{RingSize, RING_MAX};
use cxlnic_ring::layout::{RxCompletion, RxDesc, TxDesc, FRAME_MAX, FRAME_MIN};
use cxlnic_ring::queue::{
    check_completion, check_rx, check_tx, completion, Area, Consumer, Fault, Producer,
};
use proptest::prelude::*;

/// Frame `n`'s length: within the frame limits, different for neighbours.
fn frame_len(n: u32) -> u32 {
    FRAME_MIN + n.wrapping_mul(7919) % (FRAME_MAX - FRAME_MIN + 1)
}

/// One TX ring between a driver and a device. The driver posts up to
/// `posts[i]` frames per round, the device takes up to `batch` and then
/// publishes its head; every frame arrives once, in order, whole.
fn tx_run(size: RingSize, start: u32, batch: u32, posts: &[u32], inline: bool) {
    let slots = size.get() as usize;
    let frame_cap = u64::from(FRAME_MAX);
    let area = Area {
        len: frame_cap * slots as u64,
    };
    let mut descs = vec![TxDesc::default(); slots];
    let mut head_word = start;
    let mut driver = Producer::new(size, start);
    let mut device = Consumer::new(size, start);
    let (mut sent, mut got) = (0u32, 0u32);
    for &want in posts {
        // Driver: reclaim, then post.
        driver.consumed(head_word).expect("an honest device's head");
        for _ in 0..want {
            let Some(e) = driver.next() else { break };
            descs[e.slot] = TxDesc {
                buf: e.slot as u64 * frame_cap,
                len: frame_len(sent),
                tag: e.tag,
            };
            driver.commit();
            sent += 1;
        }
        let tail_word = driver.tail();
        // Device: up to a batch, then its head.
        for _ in 0..batch {
            let e = device.expected();
            let ready = if inline {
                device.ready(descs[e.slot].tag)
            } else {
                device.posted(tail_word).unwrap()
            };
            if !ready {
                break;
            }
            let f = check_tx(&descs[e.slot], e, area).expect("an honest driver's entry");
            assert_eq!(f.len, frame_len(got), "frame {got} out of order");
            assert_eq!(f.buf, e.slot as u64 * frame_cap);
            device.advance();
            got += 1;
        }
        head_word = device.head();
        assert!(driver.in_flight() <= size.get());
    }
    assert!(got <= sent);
}

fn rx_run(size: RingSize, start: u32, batch: u32, arrivals: &[u32]) {
    let slots = size.get() as usize;
    let cap = 2048u32;
    let area = Area {
        len: u64::from(cap) * slots as u64,
    };
    let mut descs = vec![RxDesc::default(); slots];
    let mut cmpl = vec![RxCompletion::default(); slots];
    let mut head_word = start;
    let mut driver = Producer::new(size, start);
    let mut device = Consumer::new(size, start);
    let (mut delivered, mut taken) = (0u32, 0u32);
    for &frames in arrivals {
        // Driver: take what completed, then post every free buffer.
        let done = driver.consumed(head_word).expect("an honest head");
        for index in done.indices() {
            let c = &cmpl[size.slot(index)];
            let len = check_completion(c, index, cap).expect("an honest completion");
            assert_eq!(len, FRAME_MIN + taken % (cap - FRAME_MIN + 1));
            taken += 1;
        }
        while let Some(e) = driver.next() {
            descs[e.slot] = RxDesc {
                buf: e.slot as u64 * u64::from(cap),
                cap,
                tag: e.tag,
            };
            driver.commit();
        }
        // Device: frames arrive; it fills up to a batch of posted buffers.
        for _ in 0..frames.min(batch) {
            let e = device.expected();
            if !device.ready(descs[e.slot].tag) {
                break; // no buffer: the frame is dropped
            }
            let b = check_rx(&descs[e.slot], e, area).expect("an honest buffer");
            let len = FRAME_MIN + delivered % (cap - FRAME_MIN + 1);
            assert!(len <= b.cap);
            cmpl[e.slot] = completion(e, len);
            device.advance();
            delivered += 1;
        }
        head_word = device.head();
    }
    assert!(taken <= delivered);
}

fn ring_size() -> impl Strategy<Value = RingSize> {
    (3u32..=12).prop_map(|bits| RingSize::new(1 << bits).unwrap())
}

fn start() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), u32::MAX - RING_MAX * 2..=u32::MAX, any::<u32>()]
}

proptest! {
    #[test]
    fn tx_frames_arrive_once_in_order(
        size in ring_size(),
        start in start(),
        batch in 1u32..64,
        posts in prop::collection::vec(0u32..100, 1..200),
        inline in any::<bool>(),
    ) {
        tx_run(size, start, batch, &posts, inline);
    }

    #[test]
    fn rx_frames_complete_once_in_order(
        size in ring_size(),
        start in start(),
        batch in 1u32..64,
        arrivals in prop::collection::vec(0u32..100, 1..200),
    ) {
        rx_run(size, start, batch, &arrivals);
    }

    /// Whatever a hostile device writes as its head, the driver either
    /// takes a range inside what it posted or refuses it and keeps its
    /// state.
    #[test]
    fn a_hostile_head_never_frees_more_than_was_posted(
        size in ring_size(),
        start in start(),
        posted in 0u32..=4096,
        heads in prop::collection::vec(any::<u32>(), 1..50),
    ) {
        let mut p = Producer::new(size, start);
        for _ in 0..posted.min(size.get()) {
            p.commit();
        }
        for h in heads {
            let (head, tail) = (p.head(), p.tail());
            match p.consumed(h) {
                Ok(done) => {
                    prop_assert_eq!(done.start, head);
                    prop_assert!(done.count <= tail.wrapping_sub(head));
                    prop_assert_eq!(p.head(), head.wrapping_add(done.count));
                }
                Err(e) => {
                    prop_assert_eq!(e, Fault::Index);
                    prop_assert_eq!((p.head(), p.tail()), (head, tail));
                }
            }
            prop_assert!(p.in_flight() <= size.get());
        }
    }

    /// Whatever a hostile driver writes into a descriptor, what the device
    /// accepts lies inside its buffer area, at the expected entry.
    #[test]
    fn hostile_descriptors_never_reach_outside_the_area(
        size in ring_size(),
        index in any::<u32>(),
        area_len in 0u64..(1 << 24),
        buf in prop_oneof![any::<u64>(), 0u64..(1 << 24), Just(u64::MAX)],
        len in prop_oneof![any::<u32>(), FRAME_MIN..=FRAME_MAX],
        tag in any::<u32>(),
        honest_tag in any::<bool>(),
    ) {
        let e = Consumer::new(size, index).expected();
        let tag = if honest_tag { e.tag } else { tag };
        let area = Area { len: area_len };
        if let Ok(f) = check_tx(&TxDesc { buf, len, tag }, e, area) {
            prop_assert_eq!(tag, e.tag);
            prop_assert!(f.buf + u64::from(f.len) <= area_len);
            prop_assert!((FRAME_MIN..=FRAME_MAX).contains(&f.len));
        }
        if let Ok(b) = check_rx(&RxDesc { buf, cap: len, tag }, e, area) {
            prop_assert!(b.buf + u64::from(b.cap) <= area_len);
        }
    }
}
