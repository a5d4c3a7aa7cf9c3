//! Hostile pool images: a formatted pool in use, then arbitrary bytes and
//! well-formed records with extreme integers under valid checksums in the
//! superblock, host slots, mailboxes and tables, while hosts attach, take
//! over, tick, call, poll, refresh, query and format. Nothing may panic
//! (debug build: overflow checks on, as in the kernel), and every errno a
//! caller sees is in 1..=4095.

use std::sync::OnceLock;

#[path = "../common/mod.rs"]
mod common;

use beluga_pool::checksum::crc32c;
use beluga_pool::engine::{self, Call, Engine, Errno, Memory, Peer, SliceMemory};
use beluga_pool::layout::{Geometry, Superblock, SUPERBLOCK_BYTES};
use beluga_pool::leases::{HostSlot, SlotState};
use beluga_pool::mailbox::{Op, Reply, Request, REPLY_OFF, REQUEST_OFF, REQ_ADMIN};
use beluga_pool::objects::{Name, ObjectEntry, Slot, FLAG_SHARED};
use beluga_pool::sections::Extent;
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
const POOL: u64 = 32 * MIB;
const HOSTS: u32 = 3;
const OBJECTS: u32 = 16;

use common::{try_attach, Host, LEASE_MS, MS};

mod actions;
mod image;
mod values;
mod world;

use actions::*;
use image::*;
use values::*;
use world::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn hostile_images_never_panic(
        attached in prop::collection::vec(any::<bool>(), HOSTS as usize),
        actions in prop::collection::vec(action(), 1..40),
    ) {
        let mut bytes = base_image().to_vec();
        let pool = SliceMemory::new(&mut bytes);
        let g = engine::read_superblock(&pool, POOL).unwrap().geometry();
        let mut world = World {
            pool: &pool,
            g,
            hosts: (0..HOSTS).map(|_| None).collect(),
            boots: (0..HOSTS).map(|h| [h as u8 + 11; 16]).collect(),
            outstanding: vec![None; HOSTS as usize],
            now: 1_000 * MS,
        };
        for (h, yes) in attached.iter().enumerate() {
            if *yes {
                world.hosts[h] = attach(&pool, h as u32, h as u8 + 11, world.now);
            }
        }
        // A pool in use (the base image's incarnations expire and are
        // reclaimed, a manager acknowledges the attaches), then the
        // hostile contents arrive.
        world.act(&Action::Tick { ticks: 300, step_ms: 1 })?;
        for a in &actions {
            world.act(a)?;
        }
        // And the hosts settle on whatever is left.
        world.act(&Action::Tick { ticks: 200, step_ms: 1 })?;
        for h in 0..HOSTS as usize {
            world.act(&Action::Query { h })?;
        }
    }

    /// Any 128 bytes, and any well-formed superblock with extreme fields,
    /// against any device size: refused with a reason or consistent.
    #[test]
    fn superblocks_and_geometries_never_panic(
        raw in prop::collection::vec(any::<u8>(), 0..160),
        edit in sb_edit(),
        device in u64x(),
        (size, hosts, objects) in (u64x(), u32x(), u32x()),
        index in u32x(),
    ) {
        let _ = Superblock::decode(&raw, device);
        let base = Geometry::new(POOL, HOSTS, OBJECTS).unwrap();
        let mut sb = Superblock::new(&base, [1; 16], 1);
        if let Some(v) = edit.pool_size { sb.pool_size = v; }
        if let Some((s, h, o)) = edit.counts {
            sb.section_count = s;
            sb.max_hosts = h;
            sb.max_objects = o;
        }
        if let Some((h, s, o, d)) = edit.offsets {
            sb.host_table_off = h;
            sb.section_table_off = s;
            sb.object_table_off = o;
            sb.data_off = d;
        }
        if let Some(v) = edit.generation { sb.generation = v; }
        sb.checksum = crc32c(&sb.encode()[..SUPERBLOCK_BYTES - 4]);
        if let Ok(ok) = Superblock::decode(&sb.encode(), device) {
            prop_assert_eq!(Geometry::new(ok.pool_size, ok.max_hosts, ok.max_objects), Ok(ok.geometry()));
        }
        if let Ok(g) = Geometry::new(size, hosts, objects) {
            prop_assert!(g.data_off < g.pool_size && g.section_count > 0);
            let _ = (g.section_offset(index), g.host_slot_offset(index));
            let _ = (g.section_entry_offset(index), g.object_entry_offset(index));
            let _ = g.sections_span(index, hosts);
        }
        // A hand-built superblock is checked at attach.
        let mut bytes = vec![0u8; 4 * MIB as usize];
        let pool = SliceMemory::new(&mut bytes);
        let attached = Engine::attach(
            &pool,
            sb,
            0,
            [1; 16],
            LEASE_MS,
            0,
            vec![Slot::Free; sb.max_objects.min(1 << 16) as usize],
            vec![0; sb.section_count.min(1 << 16) as usize],
            vec![Peer::default(); sb.max_hosts.min(64) as usize],
        );
        if let Err(e) = attached {
            check_errno(e)?;
        }
    }
}
