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
        $m!(
            cxlnic_ring_kvs,
            [
                kvs_records_and_config_round_trip,
                kvs_requests_parse_and_hostile_ones_are_refused,
                kvs_answers_carry_valid_checksums,
                kvs_host_table_inserts_finds_and_refuses_bad_log_entries,
                kvs_seqlock_reads_only_whole_records,
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

// The key-value offload (`kvs/`): records, the config check, the wire
// protocol, the host table and the seqlock. The device's engine over a
// whole memory is in `tests/kvs.rs` (its log alone outgrows a kernel
// stack).

use super::kvs;

/// A host table of 2 buckets in an array (small enough for KUnit's stack).
struct Slots([kvs::Record; 8], u32);

impl kvs::HostSlots for Slots {
    fn read(&self, i: u32) -> Option<kvs::Record> {
        self.0.get(i as usize).copied()
    }

    fn moves(&self) -> u32 {
        self.1
    }

    fn set_moves(&mut self, moves: u32) {
        self.1 = moves;
    }

    fn write(&mut self, i: u32, odd: u32, r: &kvs::Record) {
        if let Some(s) = self.0.get_mut(i as usize) {
            s.word = odd;
            *s = *r;
        }
    }
}

/// An Ethernet/IPv4/UDP frame to `mac`, port `port`, carrying `msg`
/// (UDP checksum 0: none).
fn kvs_frame(mac: [u8; 6], port: u16, msg: &[u8], out: &mut [u8; 160]) -> usize {
    let udp_len = 8 + msg.len();
    let ip_len = 20 + udp_len;
    out[..6].copy_from_slice(&mac);
    out[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
    out[12..14].copy_from_slice(&[8, 0]);
    let ip = &mut out[14..34];
    ip.copy_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1,
    ]);
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    let mut sum = 0u32;
    for w in ip.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    out[34..36].copy_from_slice(&40000u16.to_be_bytes());
    out[36..38].copy_from_slice(&port.to_be_bytes());
    out[38..40].copy_from_slice(&(udp_len as u16).to_be_bytes());
    out[40..42].copy_from_slice(&[0, 0]);
    out[42..42 + msg.len()].copy_from_slice(msg);
    42 + msg.len()
}

/// A request message: header, key, value.
fn kvs_msg(op: u8, key: &[u8], value: &[u8], out: &mut [u8; 120]) -> usize {
    out[..12].copy_from_slice(&[b'K', b'V', 1, op, 7, 0, 0, 0, key.len() as u8, 0, 0, 0]);
    out[10..12].copy_from_slice(&(value.len() as u16).to_le_bytes());
    out[12..12 + key.len()].copy_from_slice(key);
    out[12 + key.len()..12 + key.len() + value.len()].copy_from_slice(value);
    12 + key.len() + value.len()
}

pub fn kvs_records_and_config_round_trip() -> Outcome {
    let mut r = ok!(kvs::Record::pair(b"key", b"value").ok_or("pair"));
    r.word = 6;
    r.slot = 5;
    r.stamp = u64::MAX;
    let b = r.encode();
    check_eq!(kvs::Record::decode(&b), r);
    check!(r.well_formed(), "a pair is well formed");
    check!(kvs::Record::pair(b"", b"v").is_none(), "empty key taken");
    check!(
        kvs::Record::pair(&[1; 33], b"v").is_none(),
        "33-byte key taken"
    );
    check!(
        kvs::Record::pair(b"k", &[1; 65]).is_none(),
        "65-byte value taken"
    );
    // Lengths past the arrays, or bytes past the lengths: not well formed.
    let mut bad = r;
    bad.key_len = 40;
    check!(!bad.well_formed(), "key_len 40 taken");
    check!(bad.key().len() == kvs::KEY_MAX, "key() past KEY_MAX");
    let mut bad = r;
    bad.value[kvs::VALUE_MAX - 1] = 1;
    check!(!bad.well_formed(), "a byte past the value taken");
    let cfg = kvs::KvsConfig {
        gen: 3,
        enable: 1,
        udp_port: 7878,
        ipv4: [10, 0, 0, 1],
        cache_buckets: 64,
        host_buckets: 1024,
        host_table: 0x10_0000,
        hash_seed: 42,
        ..Default::default()
    };
    check_eq!(kvs::KvsConfig::decode(&cfg.encode()), cfg);
    check_eq!(kvs::check_config(&cfg, 1 << 30), Ok(()));
    // The table's end must lie inside host memory: 1024 * 4 * 128 bytes.
    check_eq!(
        kvs::check_config(&cfg, 0x10_0000 + 1024 * 4 * 128 - 1),
        Err(kvs::ConfigError::HostTable)
    );
    let far = kvs::KvsConfig {
        host_table: u64::MAX - 63,
        ..cfg
    };
    check_eq!(
        kvs::check_config(&far, u64::MAX),
        Err(kvs::ConfigError::HostTable)
    );
    for (c, b) in [(3, 64), (64, 3), (8192, 64), (64, 16384), (0, 64)] {
        let bad = kvs::KvsConfig {
            cache_buckets: c,
            host_buckets: b,
            ..cfg
        };
        check_eq!(
            kvs::check_config(&bad, 1 << 30),
            Err(kvs::ConfigError::Buckets)
        );
    }
    let off = kvs::KvsConfig {
        enable: 0,
        cache_buckets: 3,
        ..cfg
    };
    check_eq!(kvs::check_config(&off, 0), Ok(()));
    let two = kvs::KvsConfig { enable: 2, ..cfg };
    check_eq!(
        kvs::check_config(&two, 1 << 30),
        Err(kvs::ConfigError::Enable)
    );
    Ok(())
}

pub fn kvs_requests_parse_and_hostile_ones_are_refused() -> Outcome {
    let mac = [2, 0, 0, 0, 0, 1];
    let (mut m, mut f) = ([0u8; 120], [0u8; 160]);
    let n = kvs_msg(kvs::REQ_PUT, b"key", b"val", &mut m);
    let len = kvs_frame(mac, 7878, &m[..n], &mut f);
    match kvs::parse(&f[..len], mac, 7878, [0; 4]) {
        kvs::Parsed::Request(r) => {
            check_eq!(r.op, kvs::REQ_PUT);
            check_eq!(r.id, 7);
            check_eq!(r.key, b"key");
            check_eq!(r.value, b"val");
            check_eq!(r.reply.client_port, 40000);
            check_eq!(r.reply.client_ip, [10, 0, 0, 2]);
        }
        p => check!(false, "a good request parsed as {:?}", p),
    }
    // Another port, address or MAC: not the offload's.
    check_eq!(
        kvs::parse(&f[..len], mac, 7879, [0; 4]),
        kvs::Parsed::NotKvs
    );
    check_eq!(
        kvs::parse(&f[..len], mac, 7878, [10, 0, 0, 9]),
        kvs::Parsed::NotKvs
    );
    check_eq!(
        kvs::parse(&f[..len], [2, 0, 0, 0, 0, 2], 7878, [0; 4]),
        kvs::Parsed::NotKvs
    );
    check_eq!(kvs::parse(&f[..13], mac, 7878, [0; 4]), kvs::Parsed::NotKvs);
    // Hostile requests: each refused for its reason.
    let reject = |msg: &[u8]| {
        let mut f = [0u8; 160];
        let len = kvs_frame(mac, 7878, msg, &mut f);
        match kvs::parse(&f[..len], mac, 7878, [0; 4]) {
            kvs::Parsed::Reject(r) => Some(r),
            _ => None,
        }
    };
    let n = kvs_msg(9, b"k", b"", &mut m);
    check_eq!(reject(&m[..n]), Some(kvs::Reject::Op));
    let n = kvs_msg(kvs::REQ_GET, &[b'x'; 33], b"", &mut m);
    check_eq!(reject(&m[..n]), Some(kvs::Reject::Key));
    let n = kvs_msg(kvs::REQ_GET, b"k", b"v", &mut m);
    check_eq!(reject(&m[..n]), Some(kvs::Reject::Key));
    let n = kvs_msg(kvs::REQ_GET, b"k", b"", &mut m);
    check_eq!(reject(&m[..n - 1]), Some(kvs::Reject::Length));
    m[n] = 0;
    check_eq!(reject(&m[..n + 1]), Some(kvs::Reject::Length));
    check_eq!(reject(&m[..11]), Some(kvs::Reject::Header));
    m[0] = b'X';
    check_eq!(reject(&m[..n]), Some(kvs::Reject::Header));
    // A UDP length past the datagram, and a wrong UDP checksum.
    let n = kvs_msg(kvs::REQ_GET, b"k", b"", &mut m);
    let len = kvs_frame(mac, 7878, &m[..n], &mut f);
    let mut long = f;
    long[38..40].copy_from_slice(&200u16.to_be_bytes());
    check_eq!(
        kvs::parse(&long[..len], mac, 7878, [0; 4]),
        kvs::Parsed::Reject(kvs::Reject::Length)
    );
    let mut sum = f;
    sum[40..42].copy_from_slice(&[0x12, 0x34]);
    check_eq!(
        kvs::parse(&sum[..len], mac, 7878, [0; 4]),
        kvs::Parsed::Reject(kvs::Reject::Checksum)
    );
    Ok(())
}

pub fn kvs_answers_carry_valid_checksums() -> Outcome {
    let mac = [2, 0, 0, 0, 0, 1];
    let (mut m, mut f) = ([0u8; 120], [0u8; 160]);
    let n = kvs_msg(kvs::REQ_GET, b"key", b"", &mut m);
    let len = kvs_frame(mac, 7878, &m[..n], &mut f);
    let parsed = kvs::parse(&f[..len], mac, 7878, [0; 4]);
    let kvs::Parsed::Request(req) = parsed else {
        check!(false, "the request parsed as {:?}", parsed);
        return Ok(());
    };
    let (a, alen) = kvs::answer_frame(&req, mac, kvs::STATUS_OK, b"value!");
    check_eq!(alen, 14 + 20 + 8 + 12 + 6);
    check_eq!(a[..6], [2, 0, 0, 0, 0, 9]);
    // The answer, seen from the client, is a request-shaped datagram to
    // its port: parse checks both checksums, and then refuses the
    // answer's opcode, which proves the sums held.
    check_eq!(
        kvs::parse(&a[..alen], [2, 0, 0, 0, 0, 9], 40000, [10, 0, 0, 2]),
        kvs::Parsed::Reject(kvs::Reject::Op)
    );
    let mut bad = a;
    bad[alen - 1] ^= 1;
    check_eq!(
        kvs::parse(&bad[..alen], [2, 0, 0, 0, 0, 9], 40000, [0; 4]),
        kvs::Parsed::Reject(kvs::Reject::Checksum)
    );
    check_eq!(a[42 + 3], kvs::REQ_GET | kvs::REQ_ANSWER);
    check_eq!(a[42 + 8], kvs::STATUS_OK);
    check_eq!(a[54..60], *b"value!");
    Ok(())
}

pub fn kvs_host_table_inserts_finds_and_refuses_bad_log_entries() -> Outcome {
    let mut mem = Slots([kvs::Record::default(); 8], 0);
    let t = ok!(kvs::HostTable::new(2, 7).ok_or("table"));
    check!(kvs::HostTable::new(3, 7).is_none(), "3 buckets taken");
    let mut slots = [0u32; 8];
    for (i, s) in slots.iter_mut().enumerate() {
        *s = ok!(t
            .insert(&mut mem, &[b'a', i as u8], b"v")
            .map_err(|_| "insert"));
    }
    // Both buckets full: the ninth key has no room.
    check_eq!(
        t.insert(&mut mem, b"ninth", b"v"),
        Err(kvs::TableError::Full)
    );
    let (slot, r) = ok!(t.find(&mem, &[b'a', 3]).ok_or("find"));
    check_eq!(slot, slots[3]);
    check_eq!(r.value(), b"v");
    check_eq!(r.word % 2, 0);
    // A log entry updating it applies; one naming another key's slot, a
    // slot past the table, or a malformed one changes nothing.
    let mut log = ok!(kvs::Record::pair(&[b'a', 3], b"new").ok_or("pair"));
    log.op = kvs::OP_PUT;
    log.slot = slot;
    check_eq!(t.apply(&mut mem, &log), Ok(kvs::Applied::Written));
    check_eq!(
        ok!(t.find(&mem, &[b'a', 3]).ok_or("find")).1.value(),
        b"new"
    );
    // A slot holding another key is a stale hint (the pair may have
    // moved): the entry goes to its key's slot, the other key keeps its
    // value.
    let mut moved = log;
    moved.slot = slots[4];
    moved.value[..3].copy_from_slice(b"mov");
    check_eq!(t.apply(&mut mem, &moved), Ok(kvs::Applied::Written));
    check_eq!(
        ok!(t.find(&mem, &[b'a', 3]).ok_or("find")).1.value(),
        b"mov"
    );
    // One at a time, so that KUnit's stack holds one copy.
    for k in 0..5 {
        let mut bad = log;
        match k {
            0 => bad.slot = 8,
            1 => bad.slot = u32::MAX,
            2 => bad.key_len = 0,
            3 => bad.val_len = 65,
            _ => bad.op = 7,
        }
        check!(
            t.apply(&mut mem, &bad) == Err(kvs::TableError::BadRecord),
            "bad log entry {} applied",
            k
        );
    }
    check_eq!(ok!(t.find(&mem, &[b'a', 4]).ok_or("find")).1.value(), b"v");
    let del = kvs::Record {
        op: kvs::OP_DEL,
        val_len: 0,
        value: [0; kvs::VALUE_MAX],
        ..log
    };
    check_eq!(t.apply(&mut mem, &del), Ok(kvs::Applied::Deleted));
    check!(t.find(&mem, &[b'a', 3]).is_none(), "a deleted key found");
    // Deleting it again is a faulty device's entry.
    check_eq!(t.apply(&mut mem, &del), Err(kvs::TableError::BadRecord));
    // Its slot is free for another key again.
    check!(
        t.insert(&mut mem, b"ninth", b"v").is_ok(),
        "a freed slot not reused"
    );
    Ok(())
}

pub fn kvs_seqlock_reads_only_whole_records() -> Outcome {
    let r = ok!(kvs::Record::pair(b"k", b"v").ok_or("pair"));
    check_eq!(kvs::read_stable(4, &r, 4).map(|x| x.word), Ok(4));
    check_eq!(kvs::read_stable(5, &r, 5), Err(kvs::Torn));
    check_eq!(kvs::read_stable(4, &r, 6), Err(kvs::Torn));
    check_eq!(kvs::write_versions(4), (5, 6));
    // A slot a bug left odd heals at its next write.
    check_eq!(kvs::write_versions(7), (7, 8));
    check_eq!(kvs::write_versions(u32::MAX - 1), (u32::MAX, 0));
    Ok(())
}

#[cfg(test)]
mod host {
    extern crate std;

    crate::suites!(host_tests);
}
