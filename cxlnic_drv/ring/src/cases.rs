//! Test bodies of the ring core shared by the host tests and the KUnit
//! suite `cxlnic_ring_kunit`: plain functions returning `Outcome` (see
//! `cxlf_common::outcome`), listed once in `suites!` so that neither side can
//! miss one. The property tests (both sides of a ring, hostile peers) are
//! in `tests/ring_protocol.rs`.

// The cases are named by what they check.
#![allow(missing_docs)]
// Test arithmetic is on small constants; the kernel runs it with overflow
// checks, so a slip is a failed case, not wrong memory.
#![allow(clippy::arithmetic_side_effects)]
#![allow(clippy::result_large_err)]

use super::device::QueueStats;
use super::health::{Look, Stall, Watchdog, FAULT_WINDOWS, FAULT_WINDOW_MS, TX_STUCK_MS};
use super::index::{distance, ready_tag, within, RingSize};
use super::layout::{
    DeviceLine, DriverLine, RxCompletion, RxDesc, TxDesc, FRAME_MAX, IRQ_RX, IRQ_TX, MTU_MAX,
};
use super::outcome::Outcome;
use super::plan::{slot_bytes, FRAME_OVERHEAD};
use super::queue::{
    check_completion, check_rx, check_tx, completion, wake_entries, Area, Consumer, Fault, Frame,
    Producer, Span, FRAME_ENTRIES,
};

/// The shared cases, by KUnit suite: calls `$m!(suite, [case, ...])` once
/// per suite.
#[macro_export]
macro_rules! suites {
    ($m:ident) => {
        $m!(
            cxlnic_ring_index,
            [
                sizes_are_powers_of_two_in_range,
                slots_and_distances_wrap,
                records_round_trip_little_endian,
            ]
        );
        $m!(
            cxlnic_ring_queue,
            [
                a_producer_fills_the_ring_and_no_more,
                a_head_out_of_range_is_refused_and_changes_nothing,
                a_batch_completes_at_once_across_the_wrap,
                descriptors_are_checked_before_use,
                a_consumer_reads_tails_and_tags,
                a_tx_queue_stops_while_a_maximal_frame_fits,
                a_stopped_tx_queue_wakes_a_batch_later,
            ]
        );
        $m!(
            cxlnic_ring_health,
            [
                a_tx_head_standing_still_with_entries_out_is_a_stall,
                an_idle_ring_a_moving_head_or_a_stopped_device_is_no_stall,
                faults_rising_without_progress_are_a_stall,
                faults_between_frames_are_no_stall,
            ]
        );
    };
}

fn size(n: u32) -> Result<RingSize, &'static str> {
    RingSize::new(n).ok_or("not a ring size")
}

pub fn sizes_are_powers_of_two_in_range() -> Outcome {
    check_eq!(RingSize::new(8).map(RingSize::get), Some(8));
    check_eq!(RingSize::new(4096).map(RingSize::get), Some(4096));
    for bad in [0, 1, 4, 12, 8192, u32::MAX] {
        check!(RingSize::new(bad).is_none(), "{} accepted", bad);
    }
    Ok(())
}

pub fn slots_and_distances_wrap() -> Outcome {
    let s = ok!(size(8));
    check_eq!(s.slot(u32::MAX), 7);
    check_eq!(s.slot(u32::MAX.wrapping_add(1)), 0);
    check_eq!(distance(u32::MAX - 2, 3), 6);
    check!(within(u32::MAX - 2, 1, 3));
    check!(!within(u32::MAX - 2, 4, 3));
    check!(!within(5, 4, 9), "progress never goes backwards");
    check!(ready_tag(7) != ready_tag(7 + 8), "laps have different tags");
    Ok(())
}

pub fn records_round_trip_little_endian() -> Outcome {
    let d = TxDesc {
        buf: 0x0102_0304_0506_0708,
        len: 1514,
        tag: 9,
    };
    let b = d.encode();
    check_eq!(b[0], 0x08);
    check_eq!(TxDesc::decode(&b), d);
    let r = RxDesc {
        buf: 4096,
        cap: 2048,
        tag: u32::MAX,
    };
    check_eq!(RxDesc::decode(&r.encode()), r);
    let c = RxCompletion { len: 60, tag: 3 };
    check_eq!(RxCompletion::decode(&c.encode()), c);
    let l = DriverLine {
        tx_tail: 1,
        rx_tail: 2,
        irq: IRQ_RX | IRQ_TX,
    };
    check_eq!(DriverLine::decode(&l.encode()), l);
    let h = DeviceLine {
        tx_head: 7,
        rx_head: 8,
    };
    check_eq!(DeviceLine::decode(&h.encode()), h);
    let mut st = QueueStats::default();
    for (i, v) in [
        &mut st.tx_empty_polls,
        &mut st.tx_faults,
        &mut st.rx_faults,
        &mut st.doorbells,
    ]
    .into_iter()
    .enumerate()
    {
        *v = 1 << (8 * i + 3);
    }
    check_eq!(QueueStats::from_bytes(&st.encode()), st);
    Ok(())
}

pub fn a_producer_fills_the_ring_and_no_more() -> Outcome {
    let mut p = Producer::new(ok!(size(8)), u32::MAX - 3);
    for _ in 0..8 {
        check!(p.next().is_some());
        p.commit();
    }
    check_eq!(p.free(), 0);
    check!(p.next().is_none());
    p.commit();
    check_eq!(p.in_flight(), 8, "a commit without room is ignored");
    let done = ok!(p.consumed(p.head().wrapping_add(5)));
    check_eq!(done.count, 5);
    check_eq!(p.free(), 5);
    Ok(())
}

pub fn a_head_out_of_range_is_refused_and_changes_nothing() -> Outcome {
    let mut p = Producer::new(ok!(size(8)), 10);
    p.commit();
    p.commit();
    check_eq!(p.consumed(13), Err(Fault::Index));
    check_eq!(p.consumed(9), Err(Fault::Index), "backwards");
    check_eq!(p.head(), 10);
    check_eq!(
        p.consumed(12),
        Ok(Span {
            start: 10,
            count: 2
        })
    );
    Ok(())
}

/// A device completes a batch with one head store; the driver takes the
/// whole batch, in order, across the `u32` wrap.
pub fn a_batch_completes_at_once_across_the_wrap() -> Outcome {
    let s = ok!(size(8));
    let start = u32::MAX - 3;
    let mut p = Producer::new(s, start);
    let mut c = Consumer::new(s, start);
    for _ in 0..6 {
        p.commit();
    }
    for _ in 0..5 {
        c.advance();
    }
    let done = ok!(p.consumed(c.head()));
    check_eq!(done.count, 5);
    let mut want = start;
    for index in done.indices() {
        check_eq!(index, want);
        want = want.wrapping_add(1);
    }
    check_eq!(want, 1, "the batch crossed the wrap");
    check_eq!(p.in_flight(), 1);
    Ok(())
}

pub fn descriptors_are_checked_before_use() -> Outcome {
    let area = Area { len: 4096 };
    let c = Consumer::new(ok!(size(8)), 3);
    let e = c.expected();
    let good = TxDesc {
        buf: 4096 - 60,
        len: 60,
        tag: e.tag,
    };
    check_eq!(check_tx(&good, e, area), Ok(Frame { buf: 4036, len: 60 }));
    let stale = TxDesc {
        tag: ready_tag(3 + 8),
        ..good
    };
    check_eq!(check_tx(&stale, e, area), Err(Fault::Tag));
    let long = TxDesc {
        len: FRAME_MAX + 1,
        ..good
    };
    check_eq!(check_tx(&long, e, area), Err(Fault::Length));
    let out = TxDesc {
        buf: u64::MAX,
        ..good
    };
    check_eq!(check_tx(&out, e, area), Err(Fault::Buffer));
    let rx = RxDesc {
        buf: 0,
        cap: 4097,
        tag: e.tag,
    };
    check_eq!(check_rx(&rx, e, area), Err(Fault::Buffer));
    let done = completion(e, 60);
    check_eq!(check_completion(&done, 3, 2048), Ok(60));
    check_eq!(check_completion(&done, 3, 59), Err(Fault::Length));
    check_eq!(check_completion(&done, 11, 2048), Err(Fault::Tag));
    Ok(())
}

pub fn a_consumer_reads_tails_and_tags() -> Outcome {
    let mut c = Consumer::new(ok!(size(8)), u32::MAX);
    check_eq!(c.posted(u32::MAX), Ok(false));
    check_eq!(c.posted(3), Ok(true));
    check_eq!(c.posted(8), Err(Fault::Index));
    check!(c.ready(0));
    c.advance();
    check_eq!(c.head(), 0);
    check!(c.ready(1) && !c.ready(0));
    Ok(())
}

/// A maximal frame takes one entry (its slot holds the largest frame of
/// any MTU), and the queue stops after the post that leaves no room for
/// one more: a transmit on an awake queue always finds an entry.
pub fn a_tx_queue_stops_while_a_maximal_frame_fits() -> Outcome {
    check_eq!(FRAME_ENTRIES, 1);
    check!(
        ok!(slot_bytes(MTU_MAX)) >= FRAME_MAX,
        "a maximal frame fits a slot"
    );
    for mtu in [68, 1500, 1501, 4000, MTU_MAX] {
        let slot = ok!(slot_bytes(mtu));
        check!(slot >= mtu + FRAME_OVERHEAD, "MTU {}: slot {}", mtu, slot);
    }
    for n in [8, 256, 4096] {
        let mut p = Producer::new(ok!(size(n)), u32::MAX - 5);
        let mut posted = 0;
        // Post while the queue is awake, as the stack would.
        while !p.must_stop() {
            check!(p.next().is_some(), "an awake queue met a full ring");
            p.commit();
            posted += 1;
        }
        check_eq!(posted, n - FRAME_ENTRIES + 1);
        check!(p.free() < FRAME_ENTRIES);
    }
    Ok(())
}

/// A stopped queue wakes once a batch is free (the device frees entries
/// a batch at a time), at least a frame's worth and at most the ring.
pub fn a_stopped_tx_queue_wakes_a_batch_later() -> Outcome {
    let s = ok!(size(256));
    check_eq!(wake_entries(s, 8), 8);
    check_eq!(wake_entries(s, 1), 1);
    check_eq!(wake_entries(s, 0), FRAME_ENTRIES, "at least a frame");
    check_eq!(wake_entries(ok!(size(8)), 32), 8, "at most the ring");
    let mut p = Producer::new(s, u32::MAX - 100);
    while !p.must_stop() {
        p.commit();
    }
    check!(!p.may_wake(8));
    // The device stores its head after 7 entries: not yet.
    ok!(p.consumed(p.head().wrapping_add(7)));
    check!(!p.must_stop());
    check!(!p.may_wake(8));
    // One more: a batch is free, across the wrap.
    ok!(p.consumed(p.head().wrapping_add(1)));
    check!(p.may_wake(8));
    check_eq!(p.free(), 8);
    // A device that took everything always wakes it.
    ok!(p.consumed(p.tail()));
    check!(p.may_wake(256));
    Ok(())
}

/// Looks every 50 ms (as the driver's watch does) for `until_ms`, from
/// `l`, which `step` changes between looks; the first stall and when it
/// came.
fn watch(
    w: &mut Watchdog,
    mut l: Look,
    until_ms: u64,
    mut step: impl FnMut(&mut Look),
) -> Option<(u64, Stall)> {
    let start = l.now_ms;
    while l.now_ms <= start + until_ms {
        if let Some(s) = w.look(&l) {
            return Some((l.now_ms - start, s));
        }
        l.now_ms += 50;
        step(&mut l);
    }
    None
}

pub fn a_tx_head_standing_still_with_entries_out_is_a_stall() -> Outcome {
    let mut w = Watchdog::new();
    // Entries 75..80 out, the device's line says it took two.
    let l = Look {
        now_ms: 1000,
        tx_head: 75,
        tx_tail: 80,
        tx_dev_head: 77,
        ..Look::default()
    };
    // The device beats every 10 ms; its head stays where it is.
    let got = watch(&mut w, l, 5000, |l| l.beat = l.beat.wrapping_add(5));
    let (after, stall) = ok!(got);
    check_eq!(stall, Stall::TxStuck { waiting: 3 });
    check!(
        (TX_STUCK_MS..TX_STUCK_MS + 100).contains(&after),
        "after {} ms",
        after
    );
    // Across the heartbeat's wrap too.
    let mut w = Watchdog::new();
    let l = Look {
        beat: u32::MAX - 20,
        ..l
    };
    check!(watch(&mut w, l, 2000, |l| l.beat = l.beat.wrapping_add(5)).is_some());
    Ok(())
}

pub fn an_idle_ring_a_moving_head_or_a_stopped_device_is_no_stall() -> Outcome {
    let l = Look {
        now_ms: 7,
        tx_tail: 1000,
        ..Look::default()
    };
    // Nothing out: an idle ring.
    let mut w = Watchdog::new();
    let idle = Look { tx_tail: 0, ..l };
    check!(watch(&mut w, idle, 10_000, |l| l.beat += 5).is_none());
    // Entries out, but the device took them all: the driver has not
    // freed them yet (nothing sent or polled since).
    let mut w = Watchdog::new();
    let taken = Look {
        tx_dev_head: 1000,
        ..l
    };
    check!(watch(&mut w, taken, 10_000, |l| l.beat += 5).is_none());
    // Entries out, but the head moves (a slow device, every 900 ms).
    let mut w = Watchdog::new();
    let moving = watch(&mut w, l, 10_000, |l| {
        l.beat += 5;
        if l.now_ms % 900 < 50 {
            l.tx_dev_head += 1;
        }
    });
    check!(moving.is_none(), "{:?}", moving);
    // Entries out and the head still, but the device does not beat: a
    // device that stopped is the heartbeat watch's business.
    let mut w = Watchdog::new();
    check!(watch(&mut w, l, 10_000, |_| {}).is_none());
    Ok(())
}

pub fn faults_rising_without_progress_are_a_stall() -> Outcome {
    let mut w = Watchdog::new();
    let l = Look {
        now_ms: 0,
        rx_faults: 10,
        rx_frames: 500,
        ..Look::default()
    };
    // The device refuses every buffer it reads: RX faults at every look,
    // no frame.
    let got = watch(&mut w, l, 5000, |l| l.rx_faults += 3);
    let (after, stall) = ok!(got);
    let windows = u64::from(FAULT_WINDOWS);
    check_eq!(
        stall,
        Stall::RxFaults {
            count: 3 * (windows * FAULT_WINDOW_MS / 50)
        }
    );
    check!(
        after <= (windows + 1) * FAULT_WINDOW_MS,
        "after {} ms",
        after
    );
    // TX: faults and no entry freed.
    let mut w = Watchdog::new();
    let got = watch(&mut w, l, 5000, |l| l.tx_faults += 1);
    check!(
        matches!(got, Some((_, Stall::TxFaults { .. }))),
        "{:?}",
        got
    );
    Ok(())
}

pub fn faults_between_frames_are_no_stall() -> Outcome {
    let l = Look {
        now_ms: 0,
        ..Look::default()
    };
    // A fault at every look, but frames arrive in every window: a device
    // dropping frames, which the ring checks handle.
    let mut w = Watchdog::new();
    let got = watch(&mut w, l, 10_000, |l| {
        l.rx_faults += 1;
        if l.now_ms % 200 == 0 {
            l.rx_frames += 1;
        }
    });
    check!(got.is_none(), "{:?}", got);
    // A burst of faults, then quiet: not a stall either (a window without
    // a fault ends the run).
    let mut w = Watchdog::new();
    let got = watch(&mut w, l, 10_000, |l| {
        if l.now_ms < (u64::from(FAULT_WINDOWS) - 1) * FAULT_WINDOW_MS {
            l.rx_faults += 2;
        }
    });
    check!(got.is_none(), "{:?}", got);
    // RX faults while TX frees entries: RX still counts as stalled (a
    // direction's progress does not hide the other's faults).
    let mut w = Watchdog::new();
    let got = watch(&mut w, l, 5000, |l| {
        l.rx_faults += 1;
        l.tx_head = l.tx_head.wrapping_add(1);
    });
    check!(
        matches!(got, Some((_, Stall::RxFaults { .. }))),
        "{:?}",
        got
    );
    Ok(())
}

#[cfg(test)]
mod host {
    extern crate std;

    crate::suites!(host_tests);
}
