//! Hostile pool images: a formatted pool in use, then arbitrary bytes and
//! well-formed records with extreme integers under valid checksums in the
//! superblock, host slots, mailboxes and tables, while hosts attach, take
//! over, tick, call, poll, refresh, query and format. Nothing may panic
//! (debug build: overflow checks on, as in the kernel), and every errno a
//! caller sees is in 1..=4095.

use std::sync::OnceLock;

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

fn attach(pool: &SliceMemory<'_>, index: u32, boot: u8, now: u64) -> Option<Host> {
    let sb = engine::read_superblock(pool, POOL).ok()?;
    try_attach(pool, sb, index, boot, now).ok()
}

fn name(n: &str) -> Option<Name> {
    Some(Name::new(n.as_bytes()).unwrap())
}

/// Runs `c` from host `h` to its answer, ticking every host; an ALLOC is
/// followed by what the driver does: clear the sections, PUBLISH.
fn call(pool: &SliceMemory<'_>, hosts: &mut [Host], h: usize, c: Call, now: &mut u64) {
    let seq = hosts[h].submit(pool, c, false, *now).unwrap();
    for _ in 0..100 {
        if let Some(r) = hosts[h].poll(pool, seq) {
            let handle = r.unwrap();
            if matches!(c, Call::Alloc { .. }) {
                let g = *hosts[h].geometry();
                let (offset, len) = g
                    .sections_span(handle.extent.first, handle.extent.count)
                    .unwrap();
                pool.zero(offset, len).unwrap();
                let publish = Call::Publish {
                    object: handle.object,
                    serial: handle.serial,
                };
                call(pool, hosts, h, publish, now);
            }
            return;
        }
        *now += MS;
        for host in hosts.iter_mut() {
            host.tick(pool, *now);
        }
    }
    panic!("{c:?} unanswered");
}

/// A pool in use: three hosts, objects in every state, a request left in
/// a mailbox. Built once.
fn base_image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let mut bytes = vec![0x5a; POOL as usize];
        let pool = SliceMemory::new(&mut bytes);
        engine::format(&pool, POOL, HOSTS, OBJECTS, [7; 16], 5).unwrap();
        let mut now = 0;
        let mut hosts: Vec<Host> = (0..HOSTS)
            .map(|i| attach(&pool, i, i as u8 + 1, now).unwrap())
            .collect();
        for _ in 0..200 {
            now += MS;
            for h in hosts.iter_mut() {
                h.tick(&pool, now);
            }
        }
        let alloc = |sections, flags, n: Option<&str>| Call::Alloc {
            sections,
            flags,
            uid: 1000,
            mode: 0o644,
            name: n.and_then(name),
        };
        call(&pool, &mut hosts, 1, alloc(1, 0, None), &mut now);
        call(
            &pool,
            &mut hosts,
            1,
            alloc(2, FLAG_SHARED, Some("kv.0")),
            &mut now,
        );
        let open = |n: &str| Call::Open {
            name: name(n).unwrap(),
            uid: 1000,
        };
        call(&pool, &mut hosts, 0, open("kv.0"), &mut now);
        call(&pool, &mut hosts, 2, open("kv.0"), &mut now);
        call(&pool, &mut hosts, 2, alloc(1, 0, Some("p")), &mut now);
        call(
            &pool,
            &mut hosts,
            0,
            alloc(1, FLAG_SHARED, Some("s")),
            &mut now,
        );
        let s = hosts[0]
            .held_by_me()
            .find(|h| h.extent.count == 1 && h.flags & FLAG_SHARED != 0)
            .unwrap();
        let unlink = Call::Free {
            object: s.object,
            serial: s.serial,
            uid: 1000,
        };
        call(&pool, &mut hosts, 0, unlink, &mut now);
        // Left unanswered in host 2's mailbox.
        hosts[2]
            .submit(&pool, alloc(1, 0, None), false, now)
            .unwrap();
        drop(hosts);
        bytes
    })
}

fn u32x() -> BoxedStrategy<u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(u32::MAX),
        Just(u32::MAX - 1),
        Just(1 << 31),
        Just((1 << 31) - 1),
        Just(4095),
        Just(4096),
        0u32..20,
        any::<u32>(),
    ]
    .boxed()
}

fn u64x() -> BoxedStrategy<u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1 << 63),
        Just((1 << 63) - 1),
        Just(u64::from(u32::MAX)),
        Just(u64::from(u32::MAX) + 1),
        0u64..20,
        any::<u64>(),
    ]
    .boxed()
}

fn boot() -> impl Strategy<Value = [u8; 16]> {
    prop_oneof![
        4 => (1u8..4).prop_map(|b| [b; 16]),
        2 => (11u8..14).prop_map(|b| [b; 16]),
        1 => any::<[u8; 16]>(),
    ]
}

fn a_name() -> impl Strategy<Value = Option<Name>> {
    prop_oneof![
        Just(None),
        Just(name("kv.0")),
        Just(name("p")),
        Just(name("s")),
        Just(name(&"z".repeat(47))),
    ]
}

/// The parts an entry strategy draws: extent, owner, flags, (uid, mode),
/// holders, (generation, serial, request sequence), name.
type EntryParts = (
    (u32, u32),
    u32,
    u32,
    (u32, u32),
    u64,
    (u64, u64, u32),
    Option<Name>,
);

fn entry_of(parts: EntryParts) -> ObjectEntry {
    let (
        (first, count),
        owner_host,
        flags,
        (uid, mode),
        holders,
        (generation, serial, request_seq),
        name,
    ) = parts;
    ObjectEntry {
        extent: Extent { first, count },
        owner_host,
        flags,
        uid,
        mode,
        holders,
        generation,
        serial,
        request_seq,
        name,
    }
}

/// An entry that decodes (extent in the pool, known flags, valid owner,
/// holders and mode) with extreme values where any value is valid.
fn valid_entry() -> BoxedStrategy<ObjectEntry> {
    (
        // The base image uses sections 0..6 of 15.
        (prop_oneof![1 => 0u32..6, 4 => 6u32..14], 1u32..2),
        0..HOSTS,
        0u32..4,
        (u32x(), 0u32..0o1000),
        0u64..(1 << HOSTS),
        (prop_oneof![Just(5u64), u64x()], u64x(), u32x()),
        prop_oneof![1 => a_name(), 3 => (0u8..8).prop_map(|n| name(&format!("v{n}")))],
    )
        .prop_map(entry_of)
        .boxed()
}

fn entry() -> BoxedStrategy<ObjectEntry> {
    (
        (prop_oneof![0u32..8, u32x()], prop_oneof![1u32..8, u32x()]),
        prop_oneof![0..HOSTS, u32x()],
        prop_oneof![0u32..4, u32x()],
        (u32x(), prop_oneof![Just(0o644u32), u32x()]),
        prop_oneof![0u64..8, u64x()],
        (prop_oneof![Just(5u64), u64x()], u64x(), u32x()),
        a_name(),
    )
        .prop_map(entry_of)
        .boxed()
}

fn host_slot() -> BoxedStrategy<HostSlot> {
    (
        prop_oneof![
            Just(SlotState::Attached),
            Just(SlotState::Detached),
            Just(SlotState::Free)
        ],
        prop_oneof![0..HOSTS, u32x()],
        boot(),
        u64x(),
        prop_oneof![Just(100u32), Just(600_000), u32x()],
        prop_oneof![Just(5u64), u64x()],
    )
        .prop_map(
            |(state, host_index, boot_id, heartbeat, lease_ms, generation)| HostSlot {
                state,
                host_index,
                boot_id,
                heartbeat,
                lease_ms,
                generation,
            },
        )
        .boxed()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Attach),
        Just(Op::Alloc),
        Just(Op::Open),
        Just(Op::Free),
        Just(Op::Reclaim),
        Just(Op::Release),
        Just(Op::Publish),
    ]
}

fn request() -> BoxedStrategy<Request> {
    (
        op(),
        prop_oneof![1u64..12, u64x()],
        boot(),
        (
            prop_oneof![0u32..OBJECTS, u32x()],
            prop_oneof![1u32..8, u32x()],
        ),
        u64x(),
        prop_oneof![Just(0u32), Just(FLAG_SHARED), Just(REQ_ADMIN), u32x()],
        (u32x(), prop_oneof![Just(0o600u32), u32x()]),
        a_name(),
    )
        .prop_map(
            |(op, seq, boot_id, (object, sections), serial, flags, (uid, mode), name)| Request {
                op,
                seq,
                boot_id,
                object,
                sections,
                serial,
                flags,
                uid,
                mode,
                name,
            },
        )
        .boxed()
}

fn reply() -> BoxedStrategy<Reply> {
    (
        prop_oneof![1u64..12, u64x()],
        boot(),
        u32x(),
        (prop_oneof![0u32..OBJECTS, u32x()], u32x(), u32x()),
        (u32x(), u64x(), u32x(), u32x()),
    )
        .prop_map(
            |(seq, boot, status, (object, first, count), (flags, serial, uid, mode))| {
                let mut boot_tag = [0u8; 8];
                boot_tag.copy_from_slice(&boot[..8]);
                Reply {
                    seq,
                    boot_tag,
                    status,
                    object,
                    extent: Extent { first, count },
                    flags,
                    serial,
                    uid,
                    mode,
                }
            },
        )
        .boxed()
}

/// Fields of the superblock replaced by extreme values (the checksum is
/// recomputed).
#[derive(Debug, Clone)]
struct SbEdit {
    pool_size: Option<u64>,
    counts: Option<(u32, u32, u32)>,
    offsets: Option<(u64, u64, u64, u64)>,
    generation: Option<u64>,
    misc: Option<(u32, u32, u64, u32)>,
}

fn sb_edit() -> BoxedStrategy<SbEdit> {
    (
        prop::option::of(prop_oneof![Just(POOL), Just(POOL + 1), u64x()]),
        prop::option::of((
            u32x(),
            prop_oneof![Just(HOSTS), u32x()],
            prop_oneof![Just(OBJECTS), u32x()],
        )),
        prop::option::of((u64x(), u64x(), u64x(), u64x())),
        prop::option::of(u64x()),
        prop::option::of((u32x(), u32x(), u64x(), u32x())),
    )
        .prop_map(|(pool_size, counts, offsets, generation, misc)| SbEdit {
            pool_size,
            counts,
            offsets,
            generation,
            misc,
        })
        .boxed()
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Arbitrary bytes at an arbitrary offset of the metadata (superblock,
    /// host slots, section and object tables).
    Raw {
        at: u64,
        bytes: Vec<u8>,
    },
    Entry {
        index: u32,
        entry: ObjectEntry,
    },
    FreeEntry {
        index: u32,
    },
    Slot {
        host: u32,
        slot: HostSlot,
    },
    Request {
        host: u32,
        request: Request,
    },
    /// A request under the boot id of the host's current incarnation, so
    /// that a manager serves it.
    Ask {
        host: u32,
        request: Request,
    },
    Reply {
        host: u32,
        reply: Reply,
    },
    Section {
        section: u32,
        owner: u32,
        serial: u64,
    },
    Superblock(SbEdit),
}

fn mutation() -> BoxedStrategy<Mutation> {
    prop_oneof![
        // Mostly the metadata in use (superblock, host slots, section and
        // object tables lie in the first 16 KiB here).
        3 => (prop_oneof![3 => 0u64..16 * 1024, 1 => 0u64..2 * MIB], prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(at, bytes)| Mutation::Raw { at, bytes }),
        1 => (0..OBJECTS, entry()).prop_map(|(index, entry)| Mutation::Entry { index, entry }),
        3 => (0..OBJECTS, valid_entry()).prop_map(|(index, entry)| Mutation::Entry { index, entry }),
        1 => (0..OBJECTS).prop_map(|index| Mutation::FreeEntry { index }),
        3 => (0..HOSTS, host_slot()).prop_map(|(host, slot)| Mutation::Slot { host, slot }),
        2 => (0..HOSTS, request()).prop_map(|(host, request)| Mutation::Request { host, request }),
        2 => (0..HOSTS, request()).prop_map(|(host, request)| Mutation::Ask { host, request }),
        2 => (0..HOSTS, reply()).prop_map(|(host, reply)| Mutation::Reply { host, reply }),
        1 => (0u32..8, u32x(), u64x())
            .prop_map(|(section, owner, serial)| Mutation::Section { section, owner, serial }),
        1 => sb_edit().prop_map(Mutation::Superblock),
    ]
    .boxed()
}

#[derive(Debug, Clone)]
enum Action {
    Mutate(Mutation),
    /// Every attached host ticks `ticks` times, `step_ms` apart.
    Tick {
        ticks: u32,
        step_ms: u64,
    },
    Submit {
        h: usize,
        call: Call,
        admin: bool,
    },
    /// Submits and ticks every host until the answer (or 30 ms).
    Call {
        h: usize,
        call: Call,
        admin: bool,
    },
    /// Submits, then a forged reply to exactly that call (its seq, the
    /// host's boot tag) arrives, then polls.
    Forged {
        h: usize,
        call: Call,
        reply: Reply,
    },
    /// Unlink (free), release or publish of the object at `index` of
    /// `h`'s view with the serial found there, or a reclaim of host
    /// `index`.
    OnObject {
        h: usize,
        index: u32,
        kind: u8,
        uid: u32,
    },
    Poll {
        h: usize,
    },
    Refresh {
        h: usize,
    },
    Query {
        h: usize,
    },
    Attach {
        h: usize,
        boot: u8,
    },
    Reattach {
        h: usize,
        boot: u8,
    },
    Detach {
        h: usize,
    },
    Format {
        hosts: u32,
        objects: u32,
        generation: u64,
    },
    Decode {
        device: u64,
    },
}

fn a_call() -> BoxedStrategy<Call> {
    prop_oneof![
        (
            prop_oneof![1u32..8, u32x()],
            prop_oneof![Just(0u32), Just(FLAG_SHARED), u32x()],
            u32x(),
            prop_oneof![Just(0o644u32), u32x()],
            a_name()
        )
            .prop_map(|(sections, flags, uid, mode, name)| Call::Alloc {
                sections,
                flags,
                uid,
                mode,
                name
            }),
        (a_name(), u32x())
            .prop_filter_map("named", |(name, uid)| Some(Call::Open { name: name?, uid })),
        (prop_oneof![0u32..OBJECTS, u32x()], u64x(), u32x()).prop_map(|(object, serial, uid)| {
            Call::Free {
                object,
                serial,
                uid,
            }
        }),
        (prop_oneof![0u32..OBJECTS, u32x()], u64x())
            .prop_map(|(object, serial)| Call::Release { object, serial }),
        (prop_oneof![0u32..OBJECTS, u32x()], u64x())
            .prop_map(|(object, serial)| Call::Publish { object, serial }),
        prop_oneof![0..HOSTS, u32x()].prop_map(|host| Call::Reclaim { host }),
    ]
    .boxed()
}

fn action() -> BoxedStrategy<Action> {
    let h = 0..HOSTS as usize;
    prop_oneof![
        5 => mutation().prop_map(Action::Mutate),
        4 => (h.clone(), a_call(), any::<bool>()).prop_map(|(h, call, admin)| Action::Call { h, call, admin }),
        4 => (1u32..120, 1u64..6).prop_map(|(ticks, step_ms)| Action::Tick { ticks, step_ms }),
        1 => (h.clone(), a_call(), any::<bool>()).prop_map(|(h, call, admin)| Action::Submit { h, call, admin }),
        2 => (h.clone(), 0..OBJECTS, 0u8..4, prop_oneof![Just(1000u32), u32x()])
            .prop_map(|(h, index, kind, uid)| Action::OnObject { h, index, kind, uid }),
        2 => h.clone().prop_map(|h| Action::Poll { h }),
        2 => (h.clone(), a_call(), reply()).prop_map(|(h, call, reply)| Action::Forged { h, call, reply }),
        1 => h.clone().prop_map(|h| Action::Refresh { h }),
        1 => h.clone().prop_map(|h| Action::Query { h }),
        2 => (h.clone(), prop_oneof![1u8..4, 11u8..14]).prop_map(|(h, boot)| Action::Attach { h, boot }),
        1 => (h.clone(), 20u8..30).prop_map(|(h, boot)| Action::Reattach { h, boot }),
        1 => h.clone().prop_map(|h| Action::Detach { h }),
        1 => (prop_oneof![Just(HOSTS), u32x()], prop_oneof![Just(OBJECTS), u32x()], u64x())
            .prop_map(|(hosts, objects, generation)| Action::Format { hosts, objects, generation }),
        1 => prop_oneof![Just(POOL), u64x()].prop_map(|device| Action::Decode { device }),
    ]
    .boxed()
}

fn check_errno(e: Errno) -> Result<(), TestCaseError> {
    prop_assert!(
        (1..=Errno::MAX).contains(&e.0),
        "errno {} out of range",
        e.0
    );
    prop_assert!(e.to_kernel() < 0 && e.to_kernel() >= -4095);
    Ok(())
}

struct World<'p, 'b> {
    pool: &'p SliceMemory<'b>,
    /// The geometry the mutations aim at (the base image's).
    g: Geometry,
    hosts: Vec<Option<Host>>,
    /// Boot id of each host's current incarnation.
    boots: Vec<[u8; 16]>,
    outstanding: Vec<Option<u64>>,
    now: u64,
}

impl World<'_, '_> {
    fn mutate(&self, m: &Mutation) {
        let g = &self.g;
        let _ = match m {
            Mutation::Raw { at, bytes } => self.pool.write(*at, bytes),
            Mutation::Entry { index, entry } => {
                let at = g.object_entry_offset(*index).unwrap();
                self.pool.write(at, &Slot::Live(*entry).encode())
            }
            Mutation::FreeEntry { index } => {
                let at = g.object_entry_offset(*index).unwrap();
                self.pool.write(at, &Slot::Free.encode())
            }
            Mutation::Slot { host, slot } => {
                let at = g.host_slot_offset(*host).unwrap();
                self.pool.write(at, &slot.encode()[..64])
            }
            Mutation::Request { host, request } => {
                let at = g.host_slot_offset(*host).unwrap() + REQUEST_OFF;
                self.pool.write(at, &request.encode())
            }
            Mutation::Ask { host, request } => {
                let at = g.host_slot_offset(*host).unwrap() + REQUEST_OFF;
                let request = Request {
                    boot_id: self.boots[*host as usize],
                    ..*request
                };
                self.pool.write(at, &request.encode())
            }
            Mutation::Reply { host, reply } => {
                let at = g.host_slot_offset(*host).unwrap() + REPLY_OFF;
                self.pool.write(at, &reply.encode())
            }
            Mutation::Section {
                section,
                owner,
                serial,
            } => {
                let at = g.section_entry_offset(*section % g.section_count).unwrap();
                let mut e = [0u8; 16];
                e[..4].copy_from_slice(&owner.to_le_bytes());
                e[8..].copy_from_slice(&serial.to_le_bytes());
                self.pool.write(at, &e)
            }
            Mutation::Superblock(edit) => {
                let mut raw = [0u8; SUPERBLOCK_BYTES];
                self.pool.read(0, &mut raw).unwrap();
                let mut sb = match Superblock::decode(&raw, POOL) {
                    Ok(sb) => sb,
                    Err(_) => Superblock::new(g, [7; 16], 5),
                };
                if let Some(v) = edit.pool_size {
                    sb.pool_size = v;
                }
                if let Some((sections, hosts, objects)) = edit.counts {
                    sb.section_count = sections;
                    sb.max_hosts = hosts;
                    sb.max_objects = objects;
                }
                if let Some((h, s, o, d)) = edit.offsets {
                    sb.host_table_off = h;
                    sb.section_table_off = s;
                    sb.object_table_off = o;
                    sb.data_off = d;
                }
                if let Some(v) = edit.generation {
                    sb.generation = v;
                }
                if let Some((version, bytes, section_size, flags)) = edit.misc {
                    sb.version = version;
                    sb.superblock_bytes = bytes;
                    sb.section_size = section_size;
                    sb.flags = flags;
                }
                sb.checksum = crc32c(&sb.encode()[..SUPERBLOCK_BYTES - 4]);
                self.pool.write(0, &sb.encode())
            }
        };
    }

    fn act(&mut self, a: &Action) -> Result<(), TestCaseError> {
        let pool = self.pool;
        match a {
            Action::Mutate(m) => self.mutate(m),
            Action::Tick { ticks, step_ms } => {
                for _ in 0..*ticks {
                    self.now += step_ms * MS;
                    for host in self.hosts.iter_mut().flatten() {
                        let _ = host.tick(pool, self.now);
                    }
                }
            }
            Action::Submit { h, call, admin } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    match host.submit(pool, *call, *admin, self.now) {
                        Ok(seq) => self.outstanding[*h] = Some(seq),
                        Err(e) => check_errno(e)?,
                    }
                }
            }
            Action::Call { h, call, admin } => {
                self.act(&Action::Submit {
                    h: *h,
                    call: *call,
                    admin: *admin,
                })?;
                for _ in 0..30 {
                    if self.outstanding[*h].is_none() {
                        break;
                    }
                    self.act(&Action::Tick {
                        ticks: 1,
                        step_ms: 1,
                    })?;
                    self.act(&Action::Poll { h: *h })?;
                }
            }
            Action::OnObject {
                h,
                index,
                kind,
                uid,
            } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    let serial = match host.objects().get(*index as usize) {
                        Some(Slot::Live(e)) => e.serial,
                        _ => 0,
                    };
                    let (object, serial, uid) = (*index, serial, *uid);
                    let call = match kind {
                        0 => Call::Free {
                            object,
                            serial,
                            uid,
                        },
                        1 => Call::Release { object, serial },
                        2 => Call::Publish { object, serial },
                        _ => Call::Reclaim { host: object },
                    };
                    match host.submit(pool, call, *kind == 3, self.now) {
                        Ok(seq) => self.outstanding[*h] = Some(seq),
                        Err(e) => check_errno(e)?,
                    }
                }
            }
            Action::Poll { h } => {
                if let (Some(host), Some(seq)) = (self.hosts[*h].as_mut(), self.outstanding[*h]) {
                    match host.poll(pool, seq) {
                        Some(Ok(handle)) => {
                            let g = host.geometry();
                            if handle.extent.count > 0 {
                                prop_assert!(handle.object < g.max_objects);
                                prop_assert!(g
                                    .sections_span(handle.extent.first, handle.extent.count)
                                    .is_some());
                            }
                            self.outstanding[*h] = None;
                        }
                        Some(Err(e)) => {
                            check_errno(e)?;
                            self.outstanding[*h] = None;
                        }
                        None => {}
                    }
                }
            }
            Action::Refresh { h } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    if let Err(e) = host.refresh(pool) {
                        check_errno(e)?;
                    }
                }
            }
            Action::Query { h } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    let _ = host.objects().len();
                    let stats = host.stats();
                    prop_assert!(stats.free_sections <= stats.sections);
                    prop_assert!(stats.fragmentation_permille <= 1000);
                    let _ = host.held_by_me().count();
                    let _ = (host.liveness().len(), host.manager(), host.is_managing());
                    let _ = (
                        host.lease_valid(self.now),
                        host.is_ready(),
                        host.lease_lost(),
                    );
                }
            }
            Action::Forged { h, call, reply } => {
                self.act(&Action::Submit {
                    h: *h,
                    call: *call,
                    admin: false,
                })?;
                if let Some(seq) = self.outstanding[*h] {
                    let mut boot_tag = [0u8; 8];
                    boot_tag.copy_from_slice(&self.boots[*h][..8]);
                    let reply = Reply {
                        seq,
                        boot_tag,
                        ..*reply
                    };
                    let at = self.g.host_slot_offset(*h as u32).unwrap() + REPLY_OFF;
                    pool.write(at, &reply.encode()).unwrap();
                    self.act(&Action::Poll { h: *h })?;
                }
            }
            Action::Attach { h, boot } => {
                self.hosts[*h] = attach(pool, *h as u32, *boot, self.now);
                self.boots[*h] = [*boot; 16];
                self.outstanding[*h] = None;
            }
            Action::Reattach { h, boot } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    self.boots[*h] = [*boot; 16];
                    if let Err(e) = host.reattach(pool, [*boot; 16], self.now) {
                        check_errno(e)?;
                    }
                    self.outstanding[*h] = None;
                }
            }
            Action::Detach { h } => {
                if let Some(host) = self.hosts[*h].as_mut() {
                    if let Err(e) = host.detach(pool, self.now) {
                        check_errno(e)?;
                    }
                }
            }
            Action::Format {
                hosts,
                objects,
                generation,
            } => {
                match engine::format(pool, POOL, *hosts, *objects, [9; 16], *generation) {
                    Ok(sb) => {
                        prop_assert_eq!(engine::read_superblock(pool, POOL), Ok(sb));
                        // Mutations keep aiming at the base image's layout.
                        self.hosts.iter_mut().for_each(|h| *h = None);
                    }
                    Err(e) => check_errno(e)?,
                }
                if let Err(e) = engine::next_generation(*generation) {
                    check_errno(e)?;
                }
            }
            Action::Decode { device } => {
                let mut raw = [0u8; SUPERBLOCK_BYTES];
                pool.read(0, &mut raw).unwrap();
                if let Ok(sb) = Superblock::decode(&raw, *device) {
                    prop_assert!(sb.pool_size <= *device);
                    let g = sb.geometry();
                    prop_assert_eq!(
                        Geometry::new(sb.pool_size, sb.max_hosts, sb.max_objects),
                        Ok(g)
                    );
                }
                let _ = engine::read_superblock(pool, *device);
            }
        }
        Ok(())
    }
}

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
