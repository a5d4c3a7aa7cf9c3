//! Strategies for extreme values and well-formed records: integers,
//! names, object entries, host slots, mailbox requests and replies.

use super::*;

pub(crate) fn u32x() -> BoxedStrategy<u32> {
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

pub(crate) fn u64x() -> BoxedStrategy<u64> {
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

pub(crate) fn boot() -> impl Strategy<Value = [u8; 16]> {
    prop_oneof![
        4 => (1u8..4).prop_map(|b| [b; 16]),
        2 => (11u8..14).prop_map(|b| [b; 16]),
        1 => any::<[u8; 16]>(),
    ]
}

pub(crate) fn a_name() -> impl Strategy<Value = Option<Name>> {
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
pub(crate) type EntryParts = (
    (u32, u32),
    u32,
    u32,
    (u32, u32),
    u64,
    (u64, u64, u32),
    Option<Name>,
);

pub(crate) fn entry_of(parts: EntryParts) -> ObjectEntry {
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
pub(crate) fn valid_entry() -> BoxedStrategy<ObjectEntry> {
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

pub(crate) fn entry() -> BoxedStrategy<ObjectEntry> {
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

pub(crate) fn host_slot() -> BoxedStrategy<HostSlot> {
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

pub(crate) fn op() -> impl Strategy<Value = Op> {
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

pub(crate) fn request() -> BoxedStrategy<Request> {
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

pub(crate) fn reply() -> BoxedStrategy<Reply> {
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
