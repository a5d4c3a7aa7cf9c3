//! Test bodies of the DRack core shared by the host tests and a KUnit
//! suite: plain functions returning `Outcome` (see
//! `cxlf_common::outcome`), listed once in `suites!` so that neither side
//! can miss one. A `case(pool)` gets a zeroed buffer of [`POOL_BYTES`] and
//! builds the two-host non-coherent [`Model`] in it. The property tests
//! (random interleavings, hostile peers, deaths and rejoins) are in
//! `tests/`.

// Test arithmetic is on small constants; the kernel runs it with overflow
// checks, so a slip is a failed case, not wrong memory.
#![allow(clippy::arithmetic_side_effects)]
#![allow(clippy::result_large_err)]
// The case names say what each checks.
#![allow(missing_docs)]

use super::alloc::BufState;
use super::layout::{
    Geometry, Header, Heartbeat, RefEntry, ReturnEntry, BUF_BYTES, CTL_BASE, FRAME_MAX, FRAME_MIN,
    HOSTS_MAX, LINE, REF_BY_VALUE,
};
use super::lend::Lend;
use super::mem::{OutOfBounds, PoolMem};
use super::model::Model;
use super::nic::{
    forward, sent_by_vnic, vnic_mac, vnic_of, Forward, NicRecord, NicTable, Port, NICS_MAX,
    NIC_TABLE_AT,
};
use super::outcome::{Failure, Outcome};
use super::peer::{attach, format, join, DstEnd, Session, SrcEnd, TxError};

/// Bytes of the buffer a `case(pool)` gets.
pub const POOL_BYTES: usize = 512 * 1024;

/// The shared cases, by KUnit suite: calls `$m!(suite, [case, ...])` once
/// per suite.
#[macro_export]
macro_rules! suites {
    ($m:ident) => {
        $m!(
            drack_core_layout,
            [
                geometries_lay_out_lines_without_overlap,
                records_round_trip_and_checksums_catch_a_flip,
                the_model_hides_unflushed_writes_and_serves_stale_lines(pool),
                ports_and_vnic_addresses_round_trip,
            ]
        );
        $m!(
            drack_core_protocol,
            [
                a_frame_goes_by_reference_and_its_buffer_comes_back(pool),
                a_jumbo_frame_takes_three_buffers(pool),
                fits_says_whether_a_frame_would_be_taken(pool),
                by_value_frames_use_their_position_s_slot(pool),
                the_lend_cap_makes_the_driver_copy(pool),
                a_missing_write_back_keeps_the_session_down(pool),
            ]
        );
        $m!(
            drack_core_faults,
            [
                hostile_entries_are_dropped_and_counted(pool),
                a_reference_to_a_lent_buffer_is_dropped(pool),
                bad_returns_are_refused(pool),
                a_dead_destination_gives_back_what_it_does_not_hold(pool),
                a_reloaded_destination_keeps_what_its_stack_holds(pool),
                a_reservation_across_a_destination_reload_is_stale(pool),
                a_rejoining_source_waits_for_what_the_destination_holds(pool),
                scribbled_entries_cost_frames_not_buffers(pool),
                a_refusal_waits_for_room_on_the_return_ring(pool),
                a_refusal_that_matches_nothing_is_refused(pool),
                a_vnic_frame_keeps_its_port_and_unknown_ports_are_refused(pool),
            ]
        );
    };
}

/// The model's part of a case's pool, and 16 KiB of scratch for frames
/// (the kernel's stack is no place for a jumbo frame).
fn split(pool: &mut [u8]) -> (&mut [u8], &mut [u8]) {
    let at = pool.len().saturating_sub(16 * 1024);
    pool.split_at_mut(at)
}

/// The cases' pool: 2 hosts, 8 entries, 8 buffers, by-value slots.
fn geom() -> Geometry {
    match Geometry::new(2, 8, 8, true) {
        Ok(g) => g,
        Err(_) => Geometry::DEFAULT,
    }
}

/// Host 0 formats `model`; both hosts join; 0 sends to 1. Inlined: a
/// frame of its own held its copies of both ends on top of the case's,
/// which overflowed KUnit's 16 KiB stack.
#[inline(always)]
fn connect(model: &Model<'_>, cap: u32) -> Result<(SrcEnd, DstEnd), Failure> {
    let g = geom();
    let (a, b) = (model.host(0), model.host(1));
    ok!(format(&a, &g));
    check_eq!(ok!(attach(&b)), g);
    let ea = ok!(join(&a, &g, 0));
    let eb = ok!(join(&b, &g, 1));
    let mut s = ok!(SrcEnd::new(g, 0, 1, ea));
    let mut d = ok!(DstEnd::new(g, 1, 0, eb, cap));
    ok!(s.start(&a));
    ok!(d.start(&b));
    up(model, &mut s, &mut d)?;
    Ok((s, d))
}

/// Polls both ends until the session is up (a few rounds at most).
fn up(model: &Model<'_>, s: &mut SrcEnd, d: &mut DstEnd) -> Outcome {
    for _ in 0..4 {
        s.poll(&model.host(0));
        d.poll(&model.host(1));
    }
    check_eq!(s.session(), Session::Up);
    check_eq!(d.session(), Session::Up);
    Ok(())
}

/// Frame `n`'s payload: its number, then a pattern.
fn payload(n: u32, len: usize, out: &mut [u8]) -> usize {
    let len = len.min(out.len());
    for (i, b) in out.iter_mut().take(len).enumerate() {
        *b = (i as u32).wrapping_mul(31).wrapping_add(n) as u8;
    }
    len
}

/// Whether host `h` reads `frame`'s payload as frame `n`'s (after
/// invalidating it, as the module does before it lends or copies).
fn payload_is<M: PoolMem>(m: &M, f: &super::peer::Frame, n: u32) -> Result<bool, OutOfBounds> {
    let mut at = 0u32;
    let mut b = [0u8; 64];
    for (_, off, len) in f.parts() {
        m.invalidate(off, u64::from(len))?;
        let mut i = 0u32;
        while i < u32::from(len) {
            let k = (u32::from(len) - i).min(64);
            m.read(off + u64::from(i), &mut b[..k as usize])?;
            for (j, v) in b.iter().take(k as usize).enumerate() {
                let want = (at + j as u32).wrapping_mul(31).wrapping_add(n) as u8;
                if *v != want {
                    return Ok(false);
                }
            }
            at += k;
            i += k;
        }
    }
    Ok(at == f.len)
}

pub fn geometries_lay_out_lines_without_overlap() -> Outcome {
    for hosts in 2..=HOSTS_MAX {
        for (slots, bufs, by_value) in [(4, 4, false), (8, 512, true), (4096, 256, true)] {
            let g = ok!(Geometry::new(hosts, slots, bufs, by_value));
            check_eq!(g.pairs(), hosts * (hosts - 1));
            let mut seen = 0u64;
            let mut last_end = CTL_BASE;
            for dst in 0..hosts {
                for src in 0..hosts {
                    let Some(p) = g.pair(src, dst) else {
                        check!(src == dst);
                        continue;
                    };
                    check!(p < g.pairs());
                    check!(seen & (1 << p) == 0, "pair {} twice", p);
                    seen |= 1 << p;
                    let c = ok!(g.ctl(p));
                    check!(c % LINE == 0 && c >= last_end);
                    last_end = c + g.ctl_bytes();
                    let last_ref = ok!(g.ref_entry(p, slots - 1));
                    let last_ret = ok!(g.ret_entry(p, bufs - 1));
                    check!(last_ref < c + g.rets_at() && last_ret < last_end);
                    check!(g.ref_entry(p, slots).is_none() && g.ret_entry(p, bufs).is_none());
                    let b = ok!(g.buffer(p, bufs - 1));
                    check!(b % BUF_BYTES == 0 && b >= g.data_base());
                    check!(b + BUF_BYTES <= g.total_bytes());
                    check!(g.buffer(p, bufs).is_none());
                    if by_value {
                        check!(ok!(g.value_slot(p, slots - 1)) + BUF_BYTES <= g.total_bytes());
                    }
                    check!(g.value_slot(p, g.value_slots()).is_none());
                }
            }
            check!(last_end <= g.data_base());
            check!(g.heartbeat(hosts).is_none());
            check!(ok!(g.heartbeat(hosts - 1)) + LINE <= CTL_BASE);
            check_eq!(
                ok!(Header::decode(&g.header().encode(), g.total_bytes())),
                g
            );
            check!(Header::decode(&g.header().encode(), g.total_bytes() - 1).is_err());
        }
    }
    check!(Geometry::new(1, 8, 8, true).is_err());
    check!(Geometry::new(HOSTS_MAX + 1, 8, 8, true).is_err());
    check!(Geometry::new(2, 6, 8, true).is_err());
    check!(Geometry::new(2, 8, 1024, true).is_err());
    // The ends fit a kernel stack (KUnit builds them there; the module
    // allocates them), each case holding several copies: at 2.3 KiB the
    // source's end overflowed KUnit's 16 KiB.
    check!(
        core::mem::size_of::<SrcEnd>() <= 2048,
        "{}",
        core::mem::size_of::<SrcEnd>()
    );
    check!(
        core::mem::size_of::<DstEnd>() <= 2048,
        "{}",
        core::mem::size_of::<DstEnd>()
    );
    // The defaults: 8 hosts, 1.5 MiB of pages per pair.
    let g = Geometry::DEFAULT;
    check_eq!(g.data_bytes(), 384 * BUF_BYTES);
    check!(g.total_bytes() < 90 << 20);
    Ok(())
}

pub fn records_round_trip_and_checksums_catch_a_flip() -> Outcome {
    let e = RefEntry {
        seq: u32::MAX,
        epoch: 7,
        dst: 1,
        src: 0,
        frag: 2,
        frags: 3,
        flags: REF_BY_VALUE,
        buffer: 511,
        len: 826,
        frame_len: FRAME_MAX as u16,
        csum_start: 34,
        csum_offset: 16,
        port: Port::ToNic(3).encode(),
    };
    let mut b = e.encode();
    check_eq!(RefEntry::decode(&b), (e, true));
    for bit in [0usize, 77, 8 * 24, 8 * 26 + 1, 8 * 31 + 7] {
        b[bit / 8] ^= 1 << (bit % 8);
        check!(!RefEntry::decode(&b).1, "bit {} flipped", bit);
        b[bit / 8] ^= 1 << (bit % 8);
    }
    let r = ReturnEntry {
        epoch: 3,
        buffer: 9,
        seq: 0xffff,
    };
    check_eq!(ReturnEntry::decode(&r.encode()), r);
    let mut h = geom().header().encode();
    h[13] ^= 1;
    check!(Header::decode(&h, u64::MAX).is_err());
    let mut nics = NicTable::default();
    nics.nics[3] = NicRecord {
        generation: u32::MAX,
        mtu: 9000,
        carrier: true,
    };
    let hb = Heartbeat {
        epoch: u32::MAX,
        host: 3,
        beat: u64::MAX - 1,
        lease_ms: 600_000,
        nics: Some(nics),
    };
    let mut line = hb.encode();
    check_eq!(Heartbeat::decode(&line), Some(hb));
    // A scribbled NIC table is unreadable, not empty; the beat still is.
    line[NIC_TABLE_AT + 5] ^= 0x10;
    let seen = ok!(Heartbeat::decode(&line));
    check_eq!((seen.nics, seen.beat), (None, hb.beat));
    line[NIC_TABLE_AT + 5] ^= 0x10;
    // A line from before the lease field reads as "not announced".
    line[12..16].fill(0);
    check_eq!(Heartbeat::decode(&line).map(|h| h.lease_ms), Some(0));
    Ok(())
}

pub fn ports_and_vnic_addresses_round_trip() -> Outcome {
    let mut known = 0;
    for b in 0..=255u8 {
        if let Some(p) = Port::decode(b) {
            check!(p.encode() == b, "port byte {:#x}", b);
            known += 1;
        }
    }
    // drack0, and NICS_MAX each way.
    check_eq!(known, 1 + 2 * NICS_MAX);
    check_eq!(Port::decode(0x85), None);
    check_eq!(Port::decode(0x80), None);
    let mac = vnic_mac(2, 1, 5);
    check_eq!(vnic_of(&mac), Some((2, 1, 5)));
    check!(mac[0] & 3 == 2, "locally administered unicast");
    // What the owner (host 2, NIC 1, 6 hosts) does with what its NIC gets.
    let mut frame = [0u8; 60];
    frame[..6].copy_from_slice(&mac);
    check_eq!(forward(&frame, 2, 1, 6), Forward::One(5));
    check_eq!(
        forward(&frame, 2, 0, 6),
        Forward::Pass,
        "another NIC's vNIC"
    );
    check_eq!(forward(&frame, 2, 1, 5), Forward::Pass, "no host 5");
    frame[..6].copy_from_slice(&vnic_mac(2, 1, 2));
    check_eq!(forward(&frame, 2, 1, 6), Forward::Pass, "the owner's own");
    frame[..6].fill(0xff);
    check_eq!(forward(&frame, 2, 1, 6), Forward::All);
    check_eq!(forward(&frame[..5], 2, 1, 6), Forward::Pass);
    // What it transmits for a vNIC: only under that vNIC's address.
    frame[6..12].copy_from_slice(&vnic_mac(2, 1, 4));
    check!(sent_by_vnic(&frame, 2, 1, 4));
    check!(!sent_by_vnic(&frame, 2, 1, 3));
    check!(!sent_by_vnic(&frame[..11], 2, 1, 4));
    Ok(())
}

pub fn a_vnic_frame_keeps_its_port_and_unknown_ports_are_refused(pool: &mut [u8]) -> Outcome {
    let (pool, buf) = split(pool);
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let n = payload(1, 300, buf);
    ok!(s.send_port(&a, &buf[..n], false, None, Port::ToNic(2)));
    ok!(s.send_port(&a, &buf[..n], true, None, Port::FromNic(0)));
    d.poll(&b);
    let to_nic = ok!(d.recv(&b));
    check_eq!(to_nic.port, Port::ToNic(2));
    // The owner copies a vNIC's frame out to its NIC.
    d.copied(&b, &to_nic);
    check_eq!(ok!(d.recv(&b)).port, Port::FromNic(0));
    // An entry of a port this version does not know, CRC and all.
    let f = ok!(s.reserve(n as u32, false));
    let mut e = RefEntry {
        seq: f.pos,
        epoch: f.epoch,
        dst: 1,
        src: 0,
        frag: 0,
        frags: 1,
        flags: 0,
        buffer: f.bufs[0],
        len: n as u16,
        frame_len: n as u16,
        csum_start: 0,
        csum_offset: 0,
        port: 0x80 | (NICS_MAX as u8 + 1),
    };
    let at = ok!(geom().ref_entry(s.pair(), f.pos % geom().ref_slots()));
    ok!(super::mem::publish(&a, at, &e.encode()));
    ok!(s.commit(&a, &f, None));
    // `commit` wrote the real entry: put the hostile one back over it.
    e.seq = f.pos;
    ok!(super::mem::publish(&a, at, &e.encode()));
    ok!(s.publish(&a));
    d.poll(&b);
    check!(d.recv(&b).is_none(), "refused");
    check_eq!(d.counters.port, 1, "counted as an unknown port");
    check_eq!(d.counters.frag, 0);
    check_eq!(
        d.counters.refused,
        0,
        "intact: its buffer goes back, no notice"
    );
    // The next poll gives back what the rejection held.
    d.poll(&b);
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.buffers().count(BufState::Out), 0, "its buffer came back");
    Ok(())
}

pub fn the_model_hides_unflushed_writes_and_serves_stale_lines(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, 4096, 2));
    let (a, b) = (model.host(0), model.host(1));
    ok!(a.write_u64(64, 0x1111));
    check_eq!(ok!(b.read_u64(64)), 0, "not written back");
    ok!(a.write_back(64, 8));
    check_eq!(ok!(b.read_u64(64)), 0, "b's stale line");
    ok!(b.invalidate(64, 8));
    check_eq!(ok!(b.read_u64(64)), 0x1111);
    // A range covers whole lines.
    ok!(a.write(120, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
    ok!(a.write_back(120, 10));
    ok!(b.invalidate(120, 10));
    let mut got = [0u8; 10];
    ok!(b.read(120, &mut got));
    check_eq!(got, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    check_eq!(model.conflicts(), 0);
    ok!(b.write_u64(64, 2));
    ok!(b.write_back(64, 8));
    check_eq!(model.conflicts(), 1, "a line with two writers");
    check!(a.read_u64(4096).is_err());
    check!(a.invalidate(4090, 8).is_err());
    Ok(())
}

pub fn a_frame_goes_by_reference_and_its_buffer_comes_back(pool: &mut [u8]) -> Outcome {
    let (pool, buf) = split(pool);
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    check_eq!(s.buffers().count(BufState::Free), 8);
    let n = payload(1, 1500, buf);
    let sent = ok!(s.send(&a, &buf[..n], false, Some((34, 16))));
    check_eq!(s.buffers().count(BufState::Out), 1);
    check!(d.recv(&b).is_none(), "nothing before a poll");
    d.poll(&b);
    let f = ok!(d.recv(&b));
    check!(d.recv(&b).is_none());
    check_eq!(
        (f.n, f.len, f.bufs[0], f.offs[0]),
        (1, 1500, sent.bufs[0], sent.offs[0])
    );
    check_eq!(f.csum, Some((34, 16)));
    check!(ok!(payload_is(&b, &f, 1)));
    check!(d.lend(&f));
    check_eq!(d.lends().get(f.bufs[0]), Some(Lend::Lent { old: false }));
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.space(), 8, "the head freed the entry");
    check_eq!(s.buffers().count(BufState::Out), 1, "still lent");
    check!(d.release(&b, f.bufs[0]));
    check!(!d.release(&b, f.bufs[0]), "released once");
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.buffers().count(BufState::Free), 8);
    check_eq!((s.counters.returned, d.counters.returned), (1, 1));
    check_eq!(s.counters.faults() + d.counters.faults(), 0);
    check_eq!(model.conflicts(), 0);
    Ok(())
}

pub fn a_jumbo_frame_takes_three_buffers(pool: &mut [u8]) -> Outcome {
    let (pool, buf) = split(pool);
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    let n = payload(9, FRAME_MAX as usize, buf);
    let sent = ok!(s.send(&a, &buf[..n], false, None));
    check_eq!(
        (sent.n, sent.lens),
        (3, [4096, 4096, (FRAME_MAX - 8192) as u16])
    );
    d.poll(&b);
    let f = ok!(d.recv(&b));
    check_eq!((f.n, f.len, f.bufs), (3, FRAME_MAX, sent.bufs));
    check!(ok!(payload_is(&b, &f, 9)));
    check!(d.lend(&f));
    check_eq!(d.lends().lent(), 3);
    for k in f.bufs {
        check!(d.release(&b, k));
    }
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.buffers().count(BufState::Free), 8);
    check_eq!(s.reserve(FRAME_MAX + 1, false), Err(TxError::Len));
    check_eq!(s.reserve(13, false), Err(TxError::Len));
    Ok(())
}

/// What a transmit queue stops and wakes by: `fits` agrees with
/// `reserve` as buffers and queue slots run out and come back, and is
/// false without a session.
pub fn fits_says_whether_a_frame_would_be_taken(pool: &mut [u8]) -> Outcome {
    let (pool, buf) = split(pool);
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    check!(s.fits(FRAME_MAX, false) && s.fits(FRAME_MAX, true));
    // Two jumbo frames take 6 of the 8 buffers and queue slots.
    let n = payload(1, FRAME_MAX as usize, buf);
    for _ in 0..2 {
        ok!(s.send(&a, &buf[..n], false, None));
    }
    check!(!s.fits(FRAME_MAX, false) && !s.fits(FRAME_MAX, true));
    check!(s.fits(2 * BUF_BYTES as u32, false));
    check!(matches!(
        s.reserve(FRAME_MAX, false),
        Err(TxError::RingFull | TxError::NoBuffer)
    ));
    // The destination takes both and returns their buffers.
    d.poll(&b);
    while let Some(f) = d.recv(&b) {
        d.copied(&b, &f);
    }
    ok!(d.publish(&b));
    s.poll(&a);
    check!(s.fits(FRAME_MAX, false));
    s.peer_dead(&a);
    check!(!s.fits(FRAME_MIN, false) && !s.fits(FRAME_MIN, true));
    Ok(())
}

pub fn by_value_frames_use_their_position_s_slot(pool: &mut [u8]) -> Outcome {
    let (pool, buf) = split(pool);
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 8)?;
    // Three rounds of the ring: the slots are reused once the head passed.
    for k in 0..12u32 {
        let n = payload(k, 60 + 300 * k as usize, buf);
        let sent = ok!(s.send(&a, &buf[..n], true, None));
        check_eq!(u32::from(sent.bufs[0]), k % 8);
        d.poll(&b);
        let f = ok!(d.recv(&b));
        check!(f.by_value && f.bufs == sent.bufs && f.offs == sent.offs);
        check!(ok!(payload_is(&b, &f, k)));
        check!(!d.lend(&f), "by value is copied");
        d.copied(&b, &f);
        ok!(d.publish(&b));
        s.poll(&a);
    }
    check_eq!(s.buffers().count(BufState::Free), 8, "no buffer used");
    check_eq!((d.counters.by_value, d.counters.returned), (12, 0));
    check_eq!(s.counters.faults() + d.counters.faults(), 0);
    Ok(())
}

pub fn the_lend_cap_makes_the_driver_copy(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let (a, b) = (model.host(0), model.host(1));
    let (mut s, mut d) = connect(&model, 2)?;
    let mut buf = [0u8; 100];
    for k in 0..4 {
        let n = payload(k, 100, &mut buf);
        ok!(s.send(&a, &buf[..n], false, None));
    }
    d.poll(&b);
    let mut lent = 0;
    for _ in 0..4 {
        let f = ok!(d.recv(&b));
        if d.lend(&f) {
            lent += 1;
        } else {
            d.copied(&b, &f);
        }
    }
    check_eq!((lent, d.lends().lent(), d.counters.copied), (2, 2, 2));
    ok!(d.publish(&b));
    s.poll(&a);
    check_eq!(s.buffers().count(BufState::Out), 2, "the copies came back");
    check_eq!(s.buffers().count(BufState::Free), 6);
    Ok(())
}

/// A host whose write-backs do nothing: its writes never leave its cache.
struct NoWriteBack<'m, 'a>(super::model::HostMem<'m, 'a>);

impl PoolMem for NoWriteBack<'_, '_> {
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn read(&self, off: u64, buf: &mut [u8]) -> Result<(), OutOfBounds> {
        self.0.read(off, buf)
    }
    fn write(&self, off: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        self.0.write(off, data)
    }
    fn write_back(&self, _off: u64, _len: u64) -> Result<(), OutOfBounds> {
        Ok(())
    }
    fn invalidate(&self, off: u64, len: u64) -> Result<(), OutOfBounds> {
        // clflush would write a dirty line back: keep it in the cache.
        let _ = (off, len);
        Ok(())
    }
}

pub fn a_missing_write_back_keeps_the_session_down(pool: &mut [u8]) -> Outcome {
    let model = ok!(Model::new(pool, geom().total_bytes() as usize, 2));
    let g = geom();
    let (a, b) = (NoWriteBack(model.host(0)), model.host(1));
    ok!(format(&b, &g));
    let mut s = ok!(SrcEnd::new(g, 0, 1, 1));
    let mut d = ok!(DstEnd::new(g, 1, 0, ok!(join(&b, &g, 1)), 8));
    ok!(s.start(&a));
    ok!(d.start(&b));
    for _ in 0..4 {
        d.poll(&b);
    }
    check_eq!(
        d.session(),
        Session::Syncing,
        "the source's line never arrived"
    );
    // The source reads d's line fresh from memory (its cache never had it).
    s.poll(&a);
    check_eq!(s.session(), Session::Syncing);
    Ok(())
}

// Suite drack_core_faults

mod faults;
pub use faults::*;

#[cfg(test)]
mod host {
    extern crate std;

    crate::suites!(host_tests);
}
