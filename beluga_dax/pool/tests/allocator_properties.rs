//! Property tests of the section allocator against a simple model: random
//! sequences of allocations and frees never overlap, never leak, keep the
//! table consistent with the model, and coalesce fully.

use beluga_pool::objects::{check_tables, ObjectEntry, Slot};
use beluga_pool::sections::{AllocError, Extent, SectionMap};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Alloc {
        count: u32,
    },
    /// Free the live allocation at this position (modulo the live count).
    Free {
        pick: usize,
    },
    /// Free with the wrong owner: must be refused and change nothing.
    FreeWrongOwner {
        pick: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u32..12).prop_map(|count| Op::Alloc { count }),
        2 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        1 => any::<usize>().prop_map(|pick| Op::FreeWrongOwner { pick }),
    ]
}

const MAX_OBJECTS: u32 = 1024;

fn live_slot(extent: Extent) -> Slot {
    Slot::Live(ObjectEntry {
        extent,
        owner_host: 0,
        flags: 0,
        uid: 0,
        mode: 0o600,
        holders: 0,
        generation: 1,
        serial: 0,
        request_seq: 0,
        name: None,
    })
}

proptest! {
    #[test]
    fn random_sequences_keep_the_invariants(size in 1u32..96, ops in prop::collection::vec(op(), 1..200)) {
        let mut table = vec![0u32; size as usize];
        let mut live: Vec<(Extent, u32)> = Vec::new();
        let mut objects = vec![Slot::Free; MAX_OBJECTS as usize];
        let mut next_object = 0u32;
        for op in ops {
            let mut map = SectionMap::new(&mut table, MAX_OBJECTS).unwrap();
            match op {
                Op::Alloc { count } => {
                    let largest = map.largest_free_run();
                    let object = next_object % MAX_OBJECTS;
                    match map.allocate(count, object) {
                        Ok(extent) => {
                            prop_assert!(count <= largest);
                            prop_assert_eq!(extent.count, count);
                            for (other, _) in &live {
                                prop_assert!(!extent.overlaps(other), "{:?} overlaps {:?}", extent, other);
                            }
                            live.push((extent, object));
                            objects[object as usize] = live_slot(extent);
                            next_object += 1;
                        }
                        // First fit fails only when no run is long enough.
                        Err(AllocError::NoSpace { largest: l }) => {
                            prop_assert!(count > largest);
                            prop_assert_eq!(l, largest);
                        }
                        Err(e) => prop_assert!(false, "unexpected {:?}", e),
                    }
                }
                Op::Free { pick } if !live.is_empty() => {
                    let (extent, object) = live.remove(pick % live.len());
                    prop_assert_eq!(map.free(extent, object), Ok(()));
                    objects[object as usize] = Slot::Free;
                }
                Op::FreeWrongOwner { pick } if !live.is_empty() => {
                    let (extent, object) = live[pick % live.len()];
                    let before = map.free_sections();
                    prop_assert_eq!(map.free(extent, object + 1), Err(AllocError::NotOwner));
                    prop_assert_eq!(map.free_sections(), before);
                }
                _ => {}
            }
            // The table says exactly what the model says, and the section
            // and object tables agree (no section has two owners).
            let map = SectionMap::new(&mut table, MAX_OBJECTS).unwrap();
            prop_assert_eq!(check_tables(&map, &objects), Ok(()));
            let used: u32 = live.iter().map(|(e, _)| e.count).sum();
            prop_assert_eq!(map.free_sections() + used, size, "leak or double count");
            for (extent, object) in &live {
                for s in extent.first..extent.end() {
                    prop_assert_eq!(map.owner(s), Some(*object));
                }
            }
        }
        // Freeing everything leaves one free run: full coalescing.
        let mut map = SectionMap::new(&mut table, MAX_OBJECTS).unwrap();
        for (extent, object) in live {
            prop_assert_eq!(map.free(extent, object), Ok(()));
        }
        prop_assert_eq!(map.largest_free_run(), size);
        prop_assert_eq!(map.fragmentation_permille(), 0);
    }

    #[test]
    fn reclaiming_an_object_frees_exactly_its_sections(size in 4u32..64, counts in prop::collection::vec(1u32..6, 1..12)) {
        let mut table = vec![0u32; size as usize];
        let mut map = SectionMap::new(&mut table, MAX_OBJECTS).unwrap();
        let mut owned = vec![0u32; counts.len()];
        for (object, count) in counts.iter().enumerate() {
            if map.allocate(*count, object as u32).is_ok() {
                owned[object] += count;
            }
        }
        let before = map.free_sections();
        let victim = 0u32;
        prop_assert_eq!(map.free_object(victim), owned[0]);
        prop_assert_eq!(map.free_sections(), before + owned[0]);
        for s in 0..size {
            prop_assert_ne!(map.owner(s), Some(victim));
        }
    }
}
