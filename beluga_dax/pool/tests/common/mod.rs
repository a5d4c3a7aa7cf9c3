//! Simulated hosts on one pool buffer, shared by the engine tests.

// Each test file uses its own subset.
#![allow(dead_code)]

use beluga_pool::engine::{
    self, Call, Engine, Errno, Handle, Memory, Peer, SliceMemory, TickReport,
};
use beluga_pool::layout::{Superblock, OBJECT_ENTRY_BYTES, SECTION_ENTRY_BYTES};
use beluga_pool::objects::{check_tables, Name, Slot, FLAG_CLEARING};
use beluga_pool::sections::SectionMap;

pub const MIB: u64 = 1 << 20;
pub const POOL: u64 = 64 * MIB;
pub const LEASE_MS: u32 = 100;
pub const MS: u64 = 1_000_000;

/// The shared pool: one buffer every simulated host reads and writes.
pub type Pool<'a> = SliceMemory<'a>;

pub fn pool_bytes() -> Vec<u8> {
    vec![0xa5; POOL as usize]
}

pub type Host = Engine<Vec<Slot>, Vec<u32>, Vec<Peer>>;

pub fn formatted(bytes: &mut [u8], max_hosts: u32, max_objects: u32) -> (Pool<'_>, Superblock) {
    let pool = SliceMemory::new(bytes);
    let sb = engine::format(&pool, POOL, max_hosts, max_objects, [7; 16], 1).unwrap();
    (pool, sb)
}

pub fn attach(pool: &Pool<'_>, sb: Superblock, index: u32, boot: u8, now: u64) -> Host {
    try_attach(pool, sb, index, boot, now).unwrap()
}

/// Attaches host `index` (boot id all `boot`) with tables sized for `sb`.
pub fn try_attach(
    pool: &Pool<'_>,
    sb: Superblock,
    index: u32,
    boot: u8,
    now: u64,
) -> Result<Host, Errno> {
    let g = sb.geometry();
    Engine::attach(
        pool,
        sb,
        index,
        [boot; 16],
        LEASE_MS,
        now,
        vec![Slot::Free; g.max_objects as usize],
        vec![0; g.section_count as usize],
        vec![Peer::default(); g.max_hosts as usize],
    )
}

/// Runs a call to completion, ticking every host (1 ms steps). An ALLOC
/// is followed by what the driver does next: the owner clears the
/// object's sections and publishes it.
pub fn call(
    pool: &Pool<'_>,
    hosts: &mut [&mut Host],
    who: usize,
    c: Call,
    now: &mut u64,
) -> Result<Handle, Errno> {
    let handle = call_raw(pool, hosts, who, c, now)?;
    if !matches!(c, Call::Alloc { .. }) {
        return Ok(handle);
    }
    let g = *hosts[who].geometry();
    let (offset, len) = g
        .sections_span(handle.extent.first, handle.extent.count)
        .expect("a handle inside the pool");
    pool.zero(offset, len).expect("clearing the new object");
    let publish = Call::Publish {
        object: handle.object,
        serial: handle.serial,
    };
    let published = call_raw(pool, hosts, who, publish, now)?;
    assert_eq!(published.flags & FLAG_CLEARING, 0, "published");
    Ok(published)
}

/// Runs a call to completion, ticking every host (1 ms steps).
pub fn call_raw(
    pool: &Pool<'_>,
    hosts: &mut [&mut Host],
    who: usize,
    c: Call,
    now: &mut u64,
) -> Result<Handle, Errno> {
    let seq = hosts[who].submit(pool, c, false, *now)?;
    for _ in 0..1000 {
        if let Some(r) = hosts[who].poll(pool, seq) {
            return r;
        }
        *now += MS;
        for h in hosts.iter_mut() {
            h.tick(pool, *now);
        }
    }
    panic!("call {c:?} from host {who} never answered");
}

/// Hosts 0 and 1 attached at time 0 and run until host 0 manages.
pub fn settled_pair(pool: &Pool<'_>, sb: Superblock) -> (Host, Host, u64) {
    let mut now = 0;
    let mut a = attach(pool, sb, 0, 1, now);
    let mut b = attach(pool, sb, 1, 2, now);
    run(pool, &mut [&mut a, &mut b], &mut now, 200);
    (a, b, now)
}

pub fn run(pool: &Pool<'_>, hosts: &mut [&mut Host], now: &mut u64, ms: u64) -> Vec<TickReport> {
    let mut last = Vec::new();
    for _ in 0..ms {
        *now += MS;
        last = hosts.iter_mut().map(|h| h.tick(pool, *now)).collect();
    }
    last
}

pub fn alloc(sections: u32, name: Option<&str>, flags: u32) -> Call {
    Call::Alloc {
        sections,
        flags,
        uid: 1000,
        mode: 0o600,
        name: name.map(|n| Name::new(n.as_bytes()).unwrap()),
    }
}

/// Freeing `h` as its owner (uid 1000).
pub fn free_of(h: &Handle) -> Call {
    Call::Free {
        object: h.object,
        serial: h.serial,
        uid: 1000,
    }
}

/// Host's release of `h`.
pub fn release_of(h: &Handle) -> Call {
    Call::Release {
        object: h.object,
        serial: h.serial,
    }
}

pub fn open_named(name: &str, uid: u32) -> Call {
    Call::Open {
        name: Name::new(name.as_bytes()).unwrap(),
        uid,
    }
}

/// Submits `c` from host `h` and ticks the live hosts until it is
/// answered (or 50 ms pass, when the call is abandoned).
pub fn drive(
    pool: &Pool<'_>,
    hosts: &mut [Host],
    alive: &[bool],
    h: usize,
    c: Call,
    now: &mut u64,
) -> Option<Result<Handle, Errno>> {
    let seq = hosts[h].submit(pool, c, false, *now).ok()?;
    for _ in 0..50 {
        if let Some(r) = hosts[h].poll(pool, seq) {
            return Some(r);
        }
        *now += MS;
        for (host, live) in hosts.iter_mut().zip(alive) {
            if *live {
                host.tick(pool, *now);
            }
        }
    }
    hosts[h].abandon(seq);
    None
}

/// Decodes the tables as they are in the pool and checks them.
pub fn tables_in_pool(pool: &Pool<'_>, sb: &Superblock) -> Vec<Slot> {
    let g = sb.geometry();
    let mut objects = Vec::new();
    for i in 0..g.max_objects as u64 {
        let mut raw = [0u8; OBJECT_ENTRY_BYTES as usize];
        pool.read(g.object_table_off + i * OBJECT_ENTRY_BYTES, &mut raw)
            .unwrap();
        objects.push(Slot::decode(&raw, g.section_count, g.max_hosts).unwrap());
    }
    let mut sections = vec![0u32; g.section_count as usize];
    for (s, cell) in sections.iter_mut().enumerate() {
        let mut raw = [0u8; SECTION_ENTRY_BYTES as usize];
        pool.read(
            g.section_table_off + s as u64 * SECTION_ENTRY_BYTES,
            &mut raw,
        )
        .unwrap();
        *cell = u32::from_le_bytes(raw[..4].try_into().unwrap());
    }
    let map = SectionMap::new(&mut sections, g.max_objects).unwrap();
    check_tables(&map, &objects).unwrap();
    // The manager frees at once what nothing keeps (no holder, no name).
    for (i, slot) in objects.iter().enumerate() {
        if let Slot::Live(e) = slot {
            assert!(!e.is_garbage(), "object {i} is kept by nothing: {e:?}");
        }
    }
    objects
}
