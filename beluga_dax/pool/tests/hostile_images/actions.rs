//! What a case does to the pool: mutations of its records and bytes,
//! and the hosts' actions.

use super::*;

/// Fields of the superblock replaced by extreme values (the checksum is
/// recomputed).
#[derive(Debug, Clone)]
pub(crate) struct SbEdit {
    pub(crate) pool_size: Option<u64>,
    pub(crate) counts: Option<(u32, u32, u32)>,
    pub(crate) offsets: Option<(u64, u64, u64, u64)>,
    pub(crate) generation: Option<u64>,
    pub(crate) misc: Option<(u32, u32, u64, u32)>,
}

pub(crate) fn sb_edit() -> BoxedStrategy<SbEdit> {
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
pub(crate) enum Mutation {
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

pub(crate) fn mutation() -> BoxedStrategy<Mutation> {
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
pub(crate) enum Action {
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

pub(crate) fn a_call() -> BoxedStrategy<Call> {
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

pub(crate) fn action() -> BoxedStrategy<Action> {
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
