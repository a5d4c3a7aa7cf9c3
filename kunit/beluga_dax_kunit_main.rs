// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the beluga_dax pool core (format and section
//! allocator), run in the kernel on the same source the host tests use.

use kernel::prelude::*;

#[path = "../support/mod.rs"]
mod support;

#[path = "../beluga_dax/pool.rs"]
mod pool;

use pool::checksum::crc32c;
use pool::engine::{self, Call, Engine, Peer, SliceMemory};
use pool::layout::{Geometry, LayoutError, Superblock, SUPERBLOCK_BYTES};
use pool::leases::{manager, HostSlot, LeaseTracker, Liveness, SlotError, SlotState};
use pool::mailbox::{Op, Request};
use pool::objects::{
    check_tables, Inconsistency, Name, ObjectEntry, ObjectError, Slot, FLAG_SHARED,
};
use pool::sections::{AllocError, Extent, SectionMap};

module! {
    type: BelugaDaxKunit,
    name: "beluga_dax_kunit",
    author: "cxlfabric developers",
    description: "KUnit suites of the beluga_dax pool core",
    license: "GPL",
}

struct BelugaDaxKunit;

impl kernel::Module for BelugaDaxKunit {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(BelugaDaxKunit)
    }
}

const MIB: u64 = 1 << 20;

fn crc32c_check_value() -> Result {
    kassert_eq!(crc32c(b"123456789"), 0xE306_9283);
    Ok(())
}

fn superblock_round_trip() -> Result {
    let geometry = Geometry::new(512 * MIB, 8, 1024).map_err(|_| EINVAL)?;
    let sb = Superblock::new(&geometry, [3; 16], 9);
    kassert_eq!(Superblock::decode(&sb.encode(), 512 * MIB), Ok(sb));
    kassert_eq!(geometry.section_count, 255);
    Ok(())
}

fn superblock_bit_flips_are_refused() -> Result {
    let geometry = Geometry::new(512 * MIB, 8, 1024).map_err(|_| EINVAL)?;
    let bytes = Superblock::new(&geometry, [3; 16], 9).encode();
    for bit in 0..SUPERBLOCK_BYTES * 8 {
        let mut bad = bytes;
        bad[bit / 8] ^= 1 << (bit % 8);
        kassert!(
            Superblock::decode(&bad, 512 * MIB).is_err(),
            "bit {} accepted",
            bit
        );
    }
    Ok(())
}

fn superblock_larger_than_device_is_refused() -> Result {
    let geometry = Geometry::new(512 * MIB, 8, 1024).map_err(|_| EINVAL)?;
    let bytes = Superblock::new(&geometry, [3; 16], 9).encode();
    kassert_eq!(
        Superblock::decode(&bytes, 256 * MIB),
        Err(LayoutError::LargerThanDevice {
            pool: 512 * MIB,
            device: 256 * MIB
        })
    );
    Ok(())
}

fn sections_allocate_free_and_merge() -> Result {
    let mut table = [0u32; 8];
    let mut map = SectionMap::new(&mut table, 16).map_err(|_| EINVAL)?;
    let a = map.allocate(3, 0).map_err(|_| ENOSPC)?;
    let b = map.allocate(5, 1).map_err(|_| ENOSPC)?;
    kassert_eq!(map.allocate(1, 2), Err(AllocError::NoSpace { largest: 0 }));
    map.free(a, 0).map_err(|_| EINVAL)?;
    map.free(b, 1).map_err(|_| EINVAL)?;
    kassert_eq!(map.largest_free_run(), 8);
    Ok(())
}

fn sections_wrong_owner_and_corruption_are_refused() -> Result {
    let mut table = [0u32; 8];
    let mut map = SectionMap::new(&mut table, 16).map_err(|_| EINVAL)?;
    let a = map.allocate(2, 4).map_err(|_| ENOSPC)?;
    kassert_eq!(map.free(a, 5), Err(AllocError::NotOwner));
    kassert_eq!(
        map.free(
            Extent {
                first: 7,
                count: u32::MAX
            },
            4
        ),
        Err(AllocError::NotOwner)
    );
    let mut corrupt = [0u32, 99, 0];
    kassert_eq!(
        SectionMap::new(&mut corrupt, 16).err(),
        Some(AllocError::Corrupt { section: 1 })
    );
    Ok(())
}

const MS: u64 = 1_000_000;

fn attached(heartbeat: u64) -> HostSlot {
    HostSlot {
        state: SlotState::Attached,
        host_index: 0,
        boot_id: [5; 16],
        heartbeat,
        lease_ms: 1000,
        generation: 1,
    }
}

fn lease_expires_after_lease_plus_margin() -> Result {
    let mut tracker = LeaseTracker::default();
    tracker.observe(&attached(1), 0);
    kassert_eq!(tracker.liveness(1500 * MS), Liveness::Live);
    kassert_eq!(tracker.liveness(1500 * MS + 1), Liveness::Expired);
    tracker.observe(&attached(2), 1600 * MS);
    kassert_eq!(tracker.liveness(2000 * MS), Liveness::Live);
    Ok(())
}

fn torn_host_slot_is_detected() -> Result {
    let mut bytes = attached(77).encode();
    kassert_eq!(HostSlot::decode(&bytes, 0, 4), Ok(attached(77)));
    bytes[33] ^= 0x10;
    kassert_eq!(HostSlot::decode(&bytes, 0, 4), Err(SlotError::BadChecksum));
    Ok(())
}

fn lowest_live_host_is_manager() -> Result {
    let views = [Liveness::Expired, Liveness::Live, Liveness::Live];
    kassert_eq!(manager(&views), Some(1));
    Ok(())
}

fn shared(first: u32, count: u32, name: &[u8]) -> Result<Slot> {
    Ok(Slot::Live(ObjectEntry {
        extent: Extent { first, count },
        owner_host: 0,
        flags: FLAG_SHARED,
        uid: 0,
        mode: 0o600,
        holders: 1,
        generation: 1,
        serial: 1,
        request_seq: 0,
        name: Some(Name::new(name).map_err(|_| EINVAL)?),
    }))
}

fn object_entry_round_trip_and_hostile_extent() -> Result {
    let slot = shared(1, 2, b"kv.0")?;
    kassert_eq!(Slot::decode(&slot.encode(), 8, 4), Ok(slot));
    // The same entry in a pool with only 2 sections points past its end.
    kassert_eq!(
        Slot::decode(&slot.encode(), 2, 4),
        Err(ObjectError::Invalid("extent outside the data area"))
    );
    Ok(())
}

fn tables_disagreeing_are_reported() -> Result {
    let mut table = [0u32; 4];
    let mut map = SectionMap::new(&mut table, 4).map_err(|_| EINVAL)?;
    map.allocate(2, 0).map_err(|_| ENOSPC)?;
    let objects = [shared(0, 2, b"a")?, Slot::Free, Slot::Free, Slot::Free];
    kassert_eq!(check_tables(&map, &objects), Ok(()));
    let orphaned = [Slot::Free, Slot::Free, Slot::Free, Slot::Free];
    kassert_eq!(
        check_tables(&map, &orphaned),
        Err(Inconsistency::SectionOfFreeObject {
            section: 0,
            object: 0
        })
    );
    Ok(())
}

kunit_tests!(
    beluga_dax_objects,
    [
        object_entry_round_trip_and_hostile_extent,
        tables_disagreeing_are_reported
    ]
);

fn mailbox_request_bit_flips_are_refused() -> Result {
    let request = Request {
        op: Op::Alloc,
        seq: 9,
        boot_id: [4; 16],
        object: 0,
        sections: 3,
        serial: 0,
        flags: FLAG_SHARED,
        uid: 1000,
        mode: 0o640,
        name: Some(Name::new(b"kv.0").map_err(|_| EINVAL)?),
    };
    let bytes = request.encode();
    kassert_eq!(Request::decode(&bytes), Ok(request));
    for bit in 0..116 * 8 {
        let mut bad = bytes;
        bad[bit / 8] ^= 1 << (bit % 8);
        kassert!(Request::decode(&bad).is_err());
    }
    Ok(())
}

type TestEngine = Engine<KVec<Slot>, KVec<u32>, KVec<Peer>>;

fn engine_at(mem: &SliceMemory<'_>, sb: Superblock, index: u32, now: u64) -> Result<TestEngine> {
    let g = sb.geometry();
    Engine::attach(
        mem,
        sb,
        index,
        [index as u8 + 1; 16],
        100,
        now,
        KVec::from_elem(Slot::Free, g.max_objects as usize, GFP_KERNEL)?,
        KVec::from_elem(0u32, g.section_count as usize, GFP_KERNEL)?,
        KVec::from_elem(Peer::default(), g.max_hosts as usize, GFP_KERNEL)?,
    )
    .map_err(|_| EINVAL)
}

/// Two hosts on one pool in memory: the manager serves the other host's
/// request through its mailbox, then reclaims its object once its lease
/// has expired.
fn engine_serves_remote_requests_and_reclaims() -> Result {
    // The whole pool: the manager clears sections before it gives them.
    let mut bytes = KVVec::from_elem(0u8, 10 * MIB as usize, GFP_KERNEL)?;
    let mem = SliceMemory::new(&mut bytes);
    let sb = engine::format(&mem, 10 * MIB, 2, 8, [7; 16], 1).map_err(|_| EINVAL)?;
    kassert_eq!(sb.section_count, 4);
    let mut now = 0;
    let mut a = engine_at(&mem, sb, 0, now)?;
    let mut b = engine_at(&mem, sb, 1, now)?;
    for _ in 0..200 {
        now += MS;
        a.tick(&mem, now);
        b.tick(&mem, now);
    }
    kassert!(a.is_managing() && !b.is_managing() && b.is_ready());
    let call = Call::Alloc {
        sections: 3,
        flags: 0,
        uid: 0,
        mode: 0o600,
        name: None,
    };
    let seq = b.submit(&mem, call, false, now).map_err(|_| EINVAL)?;
    let mut answer = None;
    for _ in 0..50 {
        now += MS;
        a.tick(&mem, now);
        b.tick(&mem, now);
        if let Some(r) = b.poll(&mem, seq) {
            answer = Some(r);
            break;
        }
    }
    let handle = match answer {
        Some(Ok(h)) => h,
        _ => return Err(EINVAL),
    };
    kassert_eq!(handle.extent.count, 3);
    kassert_eq!(a.stats().used_by_host[1], 3);
    // Host 1 stops: after 1.5 leases host 0 reclaims its sections.
    let mut reclaimed = 0;
    for _ in 0..200 {
        now += MS;
        reclaimed += a.tick(&mem, now).reclaimed;
    }
    kassert_eq!(reclaimed, 1);
    kassert_eq!(a.stats().free_sections, 4);
    Ok(())
}

kunit_tests!(
    beluga_dax_protocol,
    [
        mailbox_request_bit_flips_are_refused,
        engine_serves_remote_requests_and_reclaims,
    ]
);

kunit_tests!(
    beluga_dax_leases,
    [
        lease_expires_after_lease_plus_margin,
        torn_host_slot_is_detected,
        lowest_live_host_is_manager,
    ]
);

kunit_tests!(
    beluga_dax_layout,
    [
        crc32c_check_value,
        superblock_round_trip,
        superblock_bit_flips_are_refused,
        superblock_larger_than_device_is_refused,
    ]
);

kunit_tests!(
    beluga_dax_sections,
    [
        sections_allocate_free_and_merge,
        sections_wrong_owner_and_corruption_are_refused,
    ]
);
