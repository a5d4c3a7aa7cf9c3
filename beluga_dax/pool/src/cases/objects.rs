//! Shared cases of the object table (`objects.rs`): entries, names,
//! permissions and the two tables' agreement.

use super::super::objects::{
    check_tables, Inconsistency, Name, ObjectEntry, ObjectError, Slot, FLAG_SHARED, FLAG_UNLINKED,
};
use super::super::outcome::{Failure, Outcome};
use super::super::sections::{Extent, SectionMap};

fn entry(first: u32, count: u32, name: Option<&[u8]>, flags: u32) -> Result<ObjectEntry, Failure> {
    let name = match name {
        Some(n) => Some(ok!(Name::new(n))),
        None => None,
    };
    Ok(ObjectEntry {
        extent: Extent { first, count },
        owner_host: 1,
        flags,
        uid: 1000,
        mode: 0o640,
        holders: 0b10,
        generation: 3,
        serial: 99,
        request_seq: 0,
        name,
    })
}

fn shared(first: u32, count: u32, name: &[u8]) -> Result<Slot, Failure> {
    Ok(Slot::Live(entry(first, count, Some(name), FLAG_SHARED)?))
}

pub fn object_entry_round_trip() -> Outcome {
    let live = shared(4, 2, b"kv-cache.0")?;
    check_eq!(Slot::decode(&live.encode(), 10, 8), Ok(live));
    check_eq!(Slot::decode(&Slot::Free.encode(), 10, 8), Ok(Slot::Free));
    Ok(())
}

pub fn hostile_object_entries_are_refused() -> Outcome {
    let decode = |e: ObjectEntry, sections: u32| Slot::decode(&Slot::Live(e).encode(), sections, 8);
    check_eq!(
        decode(entry(9, 2, None, 0)?, 10),
        Err(ObjectError::Invalid("extent outside the data area"))
    );
    // The same entry in a pool with only 2 sections points past its end.
    check!(
        decode(entry(1, 2, None, 0)?, 2).is_err(),
        "extent past the end"
    );
    check!(
        decode(entry(u32::MAX, 2, None, 0)?, 10).is_err(),
        "extent overflow"
    );
    check!(decode(entry(0, 0, None, 0)?, 10).is_err(), "empty extent");
    let one = entry(0, 1, None, 0)?;
    check!(decode(
        ObjectEntry {
            owner_host: 8,
            ..one
        },
        10
    )
    .is_err());
    check!(decode(
        ObjectEntry {
            mode: 0o1777,
            ..one
        },
        10
    )
    .is_err());
    check!(decode(
        ObjectEntry {
            holders: 1 << 8,
            ..one
        },
        10
    )
    .is_err());
    check!(
        decode(entry(0, 1, None, FLAG_SHARED)?, 10).is_err(),
        "shared without a name"
    );
    check!(decode(entry(0, 1, None, 8)?, 10).is_err(), "unknown flag");
    check!(
        decode(entry(0, 1, None, 1 << 31)?, 10).is_err(),
        "unknown flag"
    );
    let unlinked = Slot::Live(entry(0, 1, Some(b"x"), FLAG_SHARED | FLAG_UNLINKED)?);
    check_eq!(Slot::decode(&unlinked.encode(), 10, 8), Ok(unlinked));
    let mut torn = Slot::Live(one).encode();
    torn[5] ^= 1;
    check_eq!(Slot::decode(&torn, 10, 8), Err(ObjectError::BadChecksum));
    Ok(())
}

pub fn object_names_are_checked() -> Outcome {
    check!(Name::new(b"").is_err());
    check!(Name::new(&[b'a'; 48]).is_err());
    check!(Name::new(b"has space").is_err());
    check!(Name::new(b"../etc").is_err());
    check_eq!(ok!(Name::new(b"ok.name-1_x")).as_str(), "ok.name-1_x");
    Ok(())
}

pub fn permissions_follow_owner_and_other_bits() -> Outcome {
    let e = entry(0, 1, None, 0)?; // uid 1000, mode 0640
    check!(e.may_map(1000, true));
    check!(!e.may_map(1001, false), "group bits do not apply");
    let world_readable = ObjectEntry { mode: 0o604, ..e };
    check!(world_readable.may_map(1001, false));
    check!(!world_readable.may_map(1001, true));
    Ok(())
}

pub fn tables_disagreeing_are_reported() -> Outcome {
    let mut table = [0u32; 6];
    let mut map = ok!(SectionMap::new(&mut table, 4));
    ok!(map.allocate(2, 0));
    ok!(map.allocate(1, 2));
    let objects = [
        shared(0, 2, b"a")?,
        Slot::Free,
        shared(2, 1, b"b")?,
        Slot::Free,
    ];
    check_eq!(check_tables(&map, &objects), Ok(()));
    let mut orphan = objects;
    orphan[2] = Slot::Free;
    check_eq!(
        check_tables(&map, &orphan),
        Err(Inconsistency::SectionOfFreeObject {
            section: 2,
            object: 2
        })
    );
    let mut overlap = objects;
    overlap[2] = shared(1, 2, b"b")?;
    check_eq!(
        check_tables(&map, &overlap),
        Err(Inconsistency::ExtentNotOwned {
            object: 2,
            section: 1
        })
    );
    let mut dup = objects;
    dup[2] = shared(2, 1, b"a")?;
    check_eq!(
        check_tables(&map, &dup),
        Err(Inconsistency::DuplicateName {
            first: 0,
            second: 2
        })
    );
    // An unlinked object's name is free for another.
    dup[0] = Slot::Live(entry(0, 2, Some(b"a"), FLAG_SHARED | FLAG_UNLINKED)?);
    check_eq!(check_tables(&map, &dup), Ok(()));
    Ok(())
}
