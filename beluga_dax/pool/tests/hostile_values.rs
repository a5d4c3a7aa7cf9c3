//! Extreme integers in the pool (under valid checksums) and in arguments:
//! nothing the pool holds may make the core's arithmetic overflow (the
//! kernel runs it with overflow checks: an overflow is a BUG), and every
//! errno a caller sees lies in 1..=4095.

use beluga_pool::engine::{self, errno_for_status, Call, Errno, Memory};
use beluga_pool::layout::{Geometry, Superblock, OBJECT_ENTRY_BYTES};
use beluga_pool::leases::{manager_may_write, HostSlot, LeaseTracker, Liveness, SlotState};
use beluga_pool::mailbox::{boot_tag, Reply};
use beluga_pool::objects::{Name, ObjectEntry, Slot};
use beluga_pool::sections::{Extent, SectionMap};

mod common;
use common::*;

/// Writes `entry` as object `index`, with a valid checksum.
fn plant(pool: &Pool<'_>, sb: &Superblock, index: u32, entry: ObjectEntry) {
    let at = sb.geometry().object_table_off + u64::from(index) * OBJECT_ENTRY_BYTES;
    pool.write(at, &Slot::Live(entry).encode()).unwrap();
}

fn entry(first: u32, serial: u64) -> ObjectEntry {
    ObjectEntry {
        extent: Extent { first, count: 1 },
        // Host 1 never attaches: its objects stay (absent is not dead).
        owner_host: 1,
        flags: 0,
        uid: 1000,
        mode: 0o600,
        holders: 1 << 1,
        generation: 1,
        serial,
        request_seq: u32::MAX,
        name: Some(Name::new(format!("planted{first}").as_bytes()).unwrap()),
    }
}

/// Host 0 alone, run until it manages (it loads the tables then).
fn lone_manager(pool: &Pool<'_>, sb: Superblock, now: &mut u64) -> Host {
    let mut a = attach(pool, sb, 0, 1, *now);
    run(pool, &mut [&mut a], now, 200);
    assert!(a.is_managing() && a.is_ready());
    a
}

#[test]
fn an_entry_with_the_largest_serial_does_not_stop_a_takeover() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    plant(&pool, &sb, 3, entry(5, u64::MAX));
    let mut now = 0;
    let mut a = lone_manager(&pool, sb, &mut now);
    assert!(matches!(a.objects()[3], Slot::Live(e) if e.serial == u64::MAX));
    // No serial is left to give a new object: refused, the pool needs a
    // format, and nothing else changes.
    assert_eq!(
        call(&pool, &mut [&mut a], 0, alloc(1, None, 0), &mut now),
        Err(Errno::EUCLEAN)
    );
    assert_eq!(a.stats().objects, 1);
    tables_in_pool(&pool, &sb);
}

#[test]
fn the_last_serial_is_handed_out_once() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    plant(&pool, &sb, 0, entry(0, u64::MAX - 1));
    let mut now = 0;
    let mut a = lone_manager(&pool, sb, &mut now);
    let last = call(&pool, &mut [&mut a], 0, alloc(1, None, 0), &mut now).unwrap();
    assert_eq!(last.serial, u64::MAX);
    assert_eq!(
        call(&pool, &mut [&mut a], 0, alloc(1, None, 0), &mut now),
        Err(Errno::EUCLEAN)
    );
    tables_in_pool(&pool, &sb);
}

#[test]
fn the_generation_after_the_last_is_refused() {
    assert_eq!(engine::next_generation(1), Ok(2));
    assert_eq!(engine::next_generation(0), Ok(1));
    assert_eq!(engine::next_generation(u64::MAX), Err(Errno::EOVERFLOW));
    // A pool at the last generation still works.
    let mut bytes = pool_bytes();
    let pool = SliceMemory::new(&mut bytes);
    let sb = engine::format(&pool, POOL, 2, 16, [1; 16], u64::MAX).unwrap();
    let mut now = 0;
    let mut a = lone_manager(&pool, sb, &mut now);
    call(&pool, &mut [&mut a], 0, alloc(1, None, 0), &mut now).unwrap();
}

use beluga_pool::engine::SliceMemory;

#[test]
fn reply_statuses_outside_errno_range_are_eio() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let reply_off = sb.geometry().host_table_off + 256 + 192;
    let cases = [
        (0x8000_0000, Errno::EIO),
        (u32::MAX, Errno::EIO),
        (4096, Errno::EIO),
        (4095, Errno(4095)),
        (17, Errno::EEXIST),
    ];
    for (status, expected) in cases {
        // Host 1 asks; only a forged reply answers (host 0 does not tick).
        let seq = b.submit(&pool, alloc(1, None, 0), false, now).unwrap();
        let mut reply = Reply::error(Errno(0));
        reply.status = status;
        reply.seq = seq;
        reply.boot_tag = boot_tag(&[2; 16]);
        pool.write(reply_off, &reply.encode()).unwrap();
        assert_eq!(
            b.poll(&pool, seq),
            Some(Err(expected)),
            "status {status:#x}"
        );
    }
    run(&pool, &mut [&mut a, &mut b], &mut now, 5);
}

#[test]
fn errnos_stay_in_the_kernel_range() {
    assert_eq!(errno_for_status(0x8000_0000), Errno::EIO);
    assert_eq!(errno_for_status(0), Errno::EIO);
    assert_eq!(errno_for_status(4096), Errno::EIO);
    assert_eq!(errno_for_status(2), Errno::ENOENT);
    assert_eq!(Errno(0x8000_0000).to_kernel(), -5);
    assert_eq!(Errno(0).to_kernel(), -5);
    assert_eq!(Errno::ENOSPC.to_kernel(), -28);
    assert_eq!(Errno(4095).to_kernel(), -4095);
}

#[test]
fn lease_arithmetic_is_bounded_for_any_input() {
    // The largest u32 lease (not a valid one) still gives a finite expiry.
    assert!(engine::expiry_ns(u32::MAX) > engine::expiry_ns(600_000));
    assert!(!manager_may_write(0, u64::MAX, u32::MAX));
    assert!(manager_may_write(0, 1, u32::MAX));
    assert!(!manager_may_write(u64::MAX, 0, 0));
    let mut t = LeaseTracker::default();
    t.observe(
        &HostSlot {
            state: SlotState::Attached,
            host_index: 1,
            boot_id: [1; 16],
            heartbeat: u64::MAX,
            lease_ms: 600_000,
            generation: u64::MAX,
        },
        u64::MAX,
    );
    assert_eq!(t.liveness(u64::MAX), Liveness::Live);
    assert_eq!(t.liveness(0), Liveness::Live);
}

#[test]
fn extents_and_section_maps_take_any_integers() {
    let far = Extent {
        first: u32::MAX,
        count: 2,
    };
    assert_eq!(far.end(), u32::MAX);
    assert!(far.overlaps(&Extent {
        first: u32::MAX - 1,
        count: 5
    }));
    let mut table = [0u32; 4];
    let mut map = SectionMap::new(&mut table, u32::MAX).unwrap();
    assert!(map.allocate(1, u32::MAX).is_err());
    assert!(map.free(Extent { first: 0, count: 1 }, u32::MAX).is_err());
    assert_eq!(map.free_object(u32::MAX), 0);
}

#[test]
fn a_superblock_not_from_decode_is_checked_at_attach() {
    let g = Geometry::new(POOL, 4, 64).unwrap();
    let mut sb = Superblock::new(&g, [1; 16], 1);
    sb.host_table_off = u64::MAX - 10;
    let mut bytes = pool_bytes();
    let pool = SliceMemory::new(&mut bytes);
    let attached = engine::Engine::attach(
        &pool,
        sb,
        3,
        [1; 16],
        LEASE_MS,
        0,
        vec![Slot::Free; 64],
        vec![0; g.section_count as usize],
        vec![engine::Peer::default(); 4],
    );
    assert_eq!(attached.err(), Some(Errno::EINVAL));
}

#[test]
fn an_alloc_of_every_section_count_is_answered() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let mut now = 0;
    let mut a = lone_manager(&pool, sb, &mut now);
    for n in [u32::MAX, u32::MAX - 1, 1 << 31, sb.section_count + 1] {
        assert_eq!(
            call(&pool, &mut [&mut a], 0, alloc(n, None, 0), &mut now),
            Err(Errno::ENOSPC)
        );
    }
    let bad = Call::Free {
        object: u32::MAX,
        serial: u64::MAX,
        uid: u32::MAX,
    };
    assert_eq!(
        call(&pool, &mut [&mut a], 0, bad, &mut now),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        call(
            &pool,
            &mut [&mut a],
            0,
            Call::Reclaim { host: u32::MAX },
            &mut now
        ),
        Err(Errno::EPERM)
    );
}
