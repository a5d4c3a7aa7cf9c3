//! Test bodies shared by the host tests and the KUnit suites.
//!
//! Each case is a plain function that returns `Err(Failure)` at its first
//! failed check: no `std`, no allocation, no panic (a case that needs a
//! pool buffer gets one from its caller). The host runs each as a
//! `#[test]` (`host` below); `beluga_dax_kunit` compiles this file in and
//! runs each as a KUnit case, in the suites `suites!` names. Both sides
//! generate their wrappers from that one list, so neither can miss a case.
//!
//! The unit tests of the pool core live here; what needs `std` (property
//! tests, simulations of many hosts, private state) stays in `tests/` and
//! in `#[cfg(test)]` modules.

// The cases are named by what they check.
#![allow(missing_docs)]
// Test arithmetic is on small constants; the kernel runs it with overflow
// checks, so a slip is a failed case, not wrong memory.
#![allow(clippy::arithmetic_side_effects)]
// A `Failure` carries its text (no allocation); only failed cases return it.
#![allow(clippy::result_large_err)]

use super::outcome::{Failure, Outcome};

use super::checksum::{crc32c, crc32c_append};
use super::layout::{Geometry, LayoutError, Superblock, SECTION_SIZE, SUPERBLOCK_BYTES};
use super::le::{u32_at, u64_at};
use super::leases::{
    manager, manager_may_write, HostSlot, LeaseTracker, Liveness, SlotError, SlotState, SLOT_BYTES,
};
use super::sections::{AllocError, Extent, SectionMap};

/// The shared cases, by KUnit suite: calls `$m!(suite, [case, ...])` once
/// per suite. A case written `case(pool)` takes a zeroed buffer of
/// `POOL_BYTES`; the others take nothing. Used by the host tests below and
/// by `beluga_dax_kunit`, so unused in a plain build of this crate.
#[macro_export]
macro_rules! suites {
    ($m:ident) => {
        $m!(
            beluga_dax_layout,
            [
                crc32c_check_value,
                crc32c_appends,
                le_fields_never_read_past_the_end,
                geometry_of_the_testbed_pool,
                superblock_round_trip,
                superblock_bit_flips_are_refused,
                superblock_refusals_say_why,
                impossible_geometries_are_refused,
            ]
        );
        $m!(
            beluga_dax_sections,
            [
                sections_first_fit_and_merge,
                sections_frees_not_matching_ownership_change_nothing,
                sections_corrupt_table_is_refused,
                sections_object_index_must_fit_the_table,
            ]
        );
        $m!(
            beluga_dax_objects,
            [
                object_entry_round_trip,
                hostile_object_entries_are_refused,
                object_names_are_checked,
                permissions_follow_owner_and_other_bits,
                tables_disagreeing_are_reported,
            ]
        );
        $m!(
            beluga_dax_leases,
            [
                host_slot_round_trip_and_torn_reads,
                lease_expires_after_lease_plus_margin,
                new_incarnation_restarts_the_lease,
                detached_and_free_slots,
                lowest_live_host_is_manager,
                manager_stops_writing_before_observers_expire_it,
            ]
        );
        $m!(
            beluga_dax_protocol,
            [
                mailbox_request_bit_flips_are_refused,
                mailbox_reply_bit_flips_are_refused,
                hostile_requests_are_refused,
                engine_serves_remote_requests_and_reclaims(pool),
            ]
        );
    };
}

/// Bytes of the pool buffer a `case(pool)` gets: the engine case's pool
/// (metadata, then four 2 MiB sections from the first 2 MiB boundary).
pub const POOL_BYTES: usize = 10 << 20;

const MIB: u64 = 1 << 20;
const MS: u64 = 1_000_000;

// checksum.rs, le.rs, layout.rs

pub fn crc32c_check_value() -> Outcome {
    // The CRC catalogue's check value for CRC-32C.
    check_eq!(crc32c(b"123456789"), 0xE306_9283);
    check_eq!(crc32c(b""), 0);
    Ok(())
}

pub fn crc32c_appends() -> Outcome {
    check_eq!(
        crc32c_append(crc32c(b"1234"), b"56789"),
        crc32c(b"123456789")
    );
    Ok(())
}

pub fn le_fields_never_read_past_the_end() -> Outcome {
    let b = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    check_eq!(u32_at(&b, 0), 0x0403_0201);
    check_eq!(u64_at(&b, 1), 0x0908_0706_0504_0302);
    check_eq!(u32_at(&b, 6), 0);
    check_eq!(u64_at(&b, usize::MAX), 0);
    Ok(())
}

fn sample_superblock() -> Result<Superblock, Failure> {
    let g = ok!(Geometry::new(512 * MIB, 8, 1024));
    Ok(Superblock::new(&g, [7; 16], 1))
}

pub fn geometry_of_the_testbed_pool() -> Outcome {
    let g = ok!(Geometry::new(512 * MIB, 8, 1024));
    // Hosts: 8 x 256 B after the superblock; sections: 256 x 16 B;
    // objects: 1024 x 128 B; data from the next 2 MiB boundary.
    check_eq!(g.host_table_off, 4096);
    check_eq!(g.section_table_off, 8192);
    check_eq!(g.object_table_off, 12288);
    check_eq!(g.data_off, 2 * MIB);
    check_eq!(g.section_count, 255);
    check_eq!(g.section_offset(0), Some(g.data_off));
    check_eq!(g.section_offset(g.section_count), None);
    Ok(())
}

pub fn superblock_round_trip() -> Outcome {
    let sb = sample_superblock()?;
    check_eq!(Superblock::decode(&sb.encode(), 512 * MIB), Ok(sb));
    let g = ok!(Geometry::new(512 * MIB, 8, 1024));
    let other = Superblock::new(&g, [3; 16], 9);
    check_eq!(Superblock::decode(&other.encode(), 512 * MIB), Ok(other));
    Ok(())
}

pub fn superblock_bit_flips_are_refused() -> Outcome {
    let bytes = sample_superblock()?.encode();
    for bit in 0..SUPERBLOCK_BYTES * 8 {
        let mut bad = bytes;
        bad[bit / 8] ^= 1 << (bit % 8);
        check!(
            Superblock::decode(&bad, 512 * MIB).is_err(),
            "bit {} flipped was accepted",
            bit
        );
    }
    Ok(())
}

pub fn superblock_refusals_say_why() -> Outcome {
    let sb = sample_superblock()?;
    check_eq!(
        Superblock::decode(&[0u8; SUPERBLOCK_BYTES], 512 * MIB),
        Err(LayoutError::BadMagic)
    );
    check_eq!(
        Superblock::decode(&sb.encode()[..64], 512 * MIB),
        Err(LayoutError::Truncated)
    );
    check_eq!(
        Superblock::decode(&sb.encode(), 256 * MIB),
        Err(LayoutError::LargerThanDevice {
            pool: 512 * MIB,
            device: 256 * MIB
        })
    );
    for version in [1, 3] {
        let mut other = sb;
        other.version = version;
        check_eq!(
            Superblock::decode(&other.encode(), 512 * MIB),
            Err(LayoutError::UnsupportedVersion(version))
        );
    }
    // A consistent checksum over inconsistent offsets is still refused.
    let mut shifted = sb;
    shifted.data_off += SECTION_SIZE;
    shifted.checksum = crc32c(&shifted.encode()[..SUPERBLOCK_BYTES - 4]);
    check!(matches!(
        Superblock::decode(&shifted.encode(), 512 * MIB),
        Err(LayoutError::Geometry(_))
    ));
    Ok(())
}

pub fn impossible_geometries_are_refused() -> Outcome {
    check!(Geometry::new(2 * MIB, 8, 1024).is_err());
    check_eq!(ok!(Geometry::new(4 * MIB, 8, 1024)).section_count, 1);
    check!(Geometry::new(512 * MIB, 0, 1024).is_err());
    check!(Geometry::new(512 * MIB, 65, 1024).is_err());
    check!(Geometry::new(512 * MIB, 8, 0).is_err());
    check!(Geometry::new(u64::MAX, 8, 1024).is_err());
    Ok(())
}

// sections.rs

pub fn sections_first_fit_and_merge() -> Outcome {
    let mut table = [0u32; 8];
    let mut map = ok!(SectionMap::new(&mut table, 16));
    let a = ok!(map.allocate(3, 0));
    let b = ok!(map.allocate(2, 1));
    let c = ok!(map.allocate(3, 2));
    check_eq!((a.first, b.first, c.first), (0, 3, 5));
    check_eq!(map.allocate(1, 3), Err(AllocError::NoSpace { largest: 0 }));
    ok!(map.free(a, 0));
    ok!(map.free(c, 2));
    check_eq!(map.largest_free_run(), 3);
    check_eq!(map.fragmentation_permille(), 500);
    ok!(map.free(b, 1));
    check_eq!(map.largest_free_run(), 8);
    check_eq!(map.fragmentation_permille(), 0);
    Ok(())
}

pub fn sections_frees_not_matching_ownership_change_nothing() -> Outcome {
    let mut table = [0u32; 8];
    let mut map = ok!(SectionMap::new(&mut table, 16));
    let a = ok!(map.allocate(4, 5));
    check_eq!(map.free(a, 6), Err(AllocError::NotOwner));
    check_eq!(
        map.free(Extent { first: 2, count: 4 }, 5),
        Err(AllocError::NotOwner)
    );
    check_eq!(
        map.free(
            Extent {
                first: 7,
                count: u32::MAX
            },
            5
        ),
        Err(AllocError::NotOwner)
    );
    check_eq!(
        map.free(Extent { first: 0, count: 0 }, 5),
        Err(AllocError::NotOwner)
    );
    check_eq!(map.free_sections(), 4);
    ok!(map.free(a, 5));
    check_eq!(map.free(a, 5), Err(AllocError::NotOwner), "double free");
    Ok(())
}

pub fn sections_corrupt_table_is_refused() -> Outcome {
    let mut table = [0, 3, 17, 0];
    check_eq!(
        SectionMap::new(&mut table, 16).err(),
        Some(AllocError::Corrupt { section: 2 })
    );
    let mut table = [0u32, 99, 0];
    check_eq!(
        SectionMap::new(&mut table, 16).err(),
        Some(AllocError::Corrupt { section: 1 })
    );
    Ok(())
}

pub fn sections_object_index_must_fit_the_table() -> Outcome {
    let mut table = [0u32; 4];
    let mut map = ok!(SectionMap::new(&mut table, 16));
    check_eq!(map.allocate(1, 16), Err(AllocError::Invalid));
    check_eq!(map.allocate(0, 1), Err(AllocError::Invalid));
    Ok(())
}

// leases.rs

fn slot(heartbeat: u64) -> HostSlot {
    HostSlot {
        state: SlotState::Attached,
        host_index: 1,
        boot_id: [9; 16],
        heartbeat,
        lease_ms: 1000,
        generation: 4,
    }
}

pub fn host_slot_round_trip_and_torn_reads() -> Outcome {
    let s = slot(42);
    let bytes = s.encode();
    check_eq!(HostSlot::decode(&bytes, 1, 8), Ok(s));
    // Torn reads: the heartbeat half updated.
    for (at, flip) in [(32, 0xff), (33, 0x10)] {
        let mut torn = bytes;
        torn[at] ^= flip;
        check_eq!(HostSlot::decode(&torn, 1, 8), Err(SlotError::BadChecksum));
    }
    check_eq!(
        HostSlot::decode(&[0u8; SLOT_BYTES], 1, 8),
        Err(SlotError::Empty)
    );
    // A valid record in the wrong slot, or beyond the table.
    check_eq!(
        HostSlot::decode(&bytes, 2, 8),
        Err(SlotError::Invalid("slot index"))
    );
    check_eq!(
        HostSlot::decode(&bytes, 1, 1),
        Err(SlotError::Invalid("slot index"))
    );
    let bad_lease = HostSlot { lease_ms: 5, ..s }.encode();
    check_eq!(
        HostSlot::decode(&bad_lease, 1, 8),
        Err(SlotError::Invalid("lease period"))
    );
    Ok(())
}

pub fn lease_expires_after_lease_plus_margin() -> Outcome {
    let mut t = LeaseTracker::default();
    check_eq!(t.liveness(0), Liveness::Absent);
    t.observe(&slot(1), 0);
    check_eq!(t.liveness(1400 * MS), Liveness::Live);
    // Same counter seen again: the clock keeps running from the change.
    t.observe(&slot(1), 1400 * MS);
    check_eq!(t.liveness(1500 * MS), Liveness::Live);
    check_eq!(t.liveness(1500 * MS + 1), Liveness::Expired);
    // The counter moves again: live again, from now.
    t.observe(&slot(2), 2000 * MS);
    check_eq!(t.liveness(3000 * MS), Liveness::Live);
    Ok(())
}

pub fn new_incarnation_restarts_the_lease() -> Outcome {
    let mut t = LeaseTracker::default();
    t.observe(&slot(7), 0);
    // Same counter value, new boot id: a restarted host.
    let reborn = HostSlot {
        boot_id: [1; 16],
        ..slot(7)
    };
    t.observe(&reborn, 10_000 * MS);
    check_eq!(t.liveness(10_500 * MS), Liveness::Live);
    Ok(())
}

pub fn detached_and_free_slots() -> Outcome {
    let mut t = LeaseTracker::default();
    let detached = HostSlot {
        state: SlotState::Detached,
        ..slot(1)
    };
    t.observe(&detached, 0);
    check_eq!(t.liveness(u64::MAX), Liveness::Detached);
    let free = HostSlot {
        state: SlotState::Free,
        ..slot(1)
    };
    t.observe(&free, 0);
    check_eq!(t.liveness(0), Liveness::Absent);
    Ok(())
}

pub fn lowest_live_host_is_manager() -> Outcome {
    use Liveness::*;
    check_eq!(manager(&[Expired, Absent, Live, Live]), Some(2));
    check_eq!(manager(&[Expired, Live, Live]), Some(1));
    check_eq!(manager(&[Detached, Expired]), None);
    Ok(())
}

pub fn manager_stops_writing_before_observers_expire_it() -> Outcome {
    check!(manager_may_write(0, 499 * MS, 1000));
    check!(!manager_may_write(0, 500 * MS, 1000));
    // Observers wait lease + margin = 1500 ms: at least 1000 ms of slack.
    let mut t = LeaseTracker::default();
    t.observe(&slot(1), 0);
    check_eq!(t.liveness(1000 * MS), Liveness::Live);
    Ok(())
}

// objects.rs; mailbox.rs, engine/

mod mailbox;
mod objects;
pub use mailbox::*;
pub use objects::*;

/// Every shared case as a host test, by suite.
#[cfg(test)]
mod host {
    extern crate std;

    crate::suites!(host_tests);
}
