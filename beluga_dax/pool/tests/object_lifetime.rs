//! Objects live like files: a name (until FREE unlinks it) and the hosts
//! holding them (ALLOC and OPEN hold, RELEASE lets go) keep them; with
//! neither they are freed. Reclaim of a host drops its holds and frees its
//! private objects. Sections are cleared before they change owner.

use beluga_pool::engine::{Call, Errno, Handle, Memory};
use beluga_pool::objects::{Slot, FLAG_CLEARING, FLAG_SHARED, FLAG_UNLINKED};

mod common;
use common::*;

fn entry_of(pool: &Pool<'_>, sb: &beluga_pool::layout::Superblock, h: &Handle) -> Slot {
    tables_in_pool(pool, sb)[h.object as usize]
}

#[test]
fn unlink_with_other_holders_keeps_the_object_until_they_release_it() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let hosts = &mut [&mut a, &mut b];
    let shared = call(&pool, hosts, 1, alloc(2, Some("m"), FLAG_SHARED), &mut now).unwrap();
    call(&pool, hosts, 0, open_named("m", 1000), &mut now).unwrap();

    // Host 1 unlinks it: the name goes at once, the object stays for
    // both holders.
    call(&pool, hosts, 1, free_of(&shared), &mut now).unwrap();
    assert_eq!(
        call(&pool, hosts, 0, open_named("m", 1000), &mut now),
        Err(Errno::ENOENT)
    );
    let Slot::Live(e) = entry_of(&pool, &sb, &shared) else {
        panic!("freed while held");
    };
    assert_eq!((e.holders, e.flags), (0b11, FLAG_SHARED | FLAG_UNLINKED));
    assert_eq!(e.name.unwrap().as_str(), "m", "kept for display");
    // The name is free for a new object at once.
    let again = call(&pool, hosts, 0, alloc(1, Some("m"), FLAG_SHARED), &mut now).unwrap();
    assert!(!again.extent.overlaps(&shared.extent));
    // Unlinking twice is refused.
    assert_eq!(
        call(&pool, hosts, 0, free_of(&shared), &mut now),
        Err(Errno::ENOENT)
    );

    call(&pool, hosts, 1, release_of(&shared), &mut now).unwrap();
    assert!(matches!(entry_of(&pool, &sb, &shared), Slot::Live(e) if e.holders == 0b01));
    assert_eq!(
        call(&pool, hosts, 1, release_of(&shared), &mut now),
        Err(Errno::ENOENT),
        "host 1 holds it no more"
    );
    call(&pool, hosts, 0, release_of(&shared), &mut now).unwrap();
    assert_eq!(entry_of(&pool, &sb, &shared), Slot::Free);
    // The new "m" is untouched.
    let found = call(&pool, hosts, 1, open_named("m", 1000), &mut now).unwrap();
    assert_eq!((found.object, found.serial), (again.object, again.serial));
}

#[test]
fn any_host_may_unlink_a_shared_object_only_its_owner_a_private_one() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let hosts = &mut [&mut a, &mut b];
    let shared = call(&pool, hosts, 1, alloc(1, Some("s"), FLAG_SHARED), &mut now).unwrap();
    let private = call(&pool, hosts, 1, alloc(1, Some("p"), 0), &mut now).unwrap();
    // Host 0 holds neither; the uid decides for the shared one.
    let wrong_uid = Call::Free {
        object: shared.object,
        serial: shared.serial,
        uid: 1,
    };
    assert_eq!(
        call(&pool, hosts, 0, wrong_uid, &mut now),
        Err(Errno::EPERM)
    );
    assert_eq!(
        call(&pool, hosts, 0, free_of(&private), &mut now),
        Err(Errno::ENOENT)
    );
    call(&pool, hosts, 0, free_of(&shared), &mut now).unwrap();
    assert!(matches!(entry_of(&pool, &sb, &shared), Slot::Live(e) if e.holders == 0b10));
    // Admin may unlink another uid's object, not another host's private one.
    let admin_free = Call::Free {
        object: private.object,
        serial: private.serial,
        uid: 0,
    };
    let seq = hosts[0].submit(&pool, admin_free, true, now).unwrap();
    let mut answer = None;
    for _ in 0..50 {
        answer = hosts[0].poll(&pool, seq);
        if answer.is_some() {
            break;
        }
        run(&pool, hosts, &mut now, 1);
    }
    assert_eq!(answer, Some(Err(Errno::ENOENT)));
}

#[test]
fn release_of_an_unnamed_object_frees_it() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let hosts = &mut [&mut a, &mut b];
    let x = call(&pool, hosts, 1, alloc(3, None, 0), &mut now).unwrap();
    call(&pool, hosts, 1, release_of(&x), &mut now).unwrap();
    assert_eq!(entry_of(&pool, &sb, &x), Slot::Free);
    assert_eq!(hosts[0].stats().free_sections, sb.section_count);
    // Its handle is stale now, for release and free alike.
    assert_eq!(
        call(&pool, hosts, 1, release_of(&x), &mut now),
        Err(Errno::ENOENT)
    );
    assert_eq!(
        call(&pool, hosts, 1, free_of(&x), &mut now),
        Err(Errno::ENOENT)
    );
    // A release of what nothing names is refused, not a crash.
    let none = Call::Release {
        object: u32::MAX,
        serial: 0,
    };
    assert_eq!(call(&pool, hosts, 1, none, &mut now), Err(Errno::ENOENT));
}

#[test]
fn a_named_object_survives_its_last_release_and_can_be_reopened() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let hosts = &mut [&mut a, &mut b];
    for (name, flags, opener) in [("priv", 0, 1), ("pub", FLAG_SHARED, 0)] {
        let x = call(&pool, hosts, 1, alloc(1, Some(name), flags), &mut now).unwrap();
        call(&pool, hosts, 1, release_of(&x), &mut now).unwrap();
        assert!(matches!(entry_of(&pool, &sb, &x), Slot::Live(e) if e.holders == 0));
        let y = call(&pool, hosts, opener, open_named(name, 1000), &mut now).unwrap();
        assert_eq!(
            (y.object, y.serial, y.extent),
            (x.object, x.serial, x.extent)
        );
        call(&pool, hosts, opener, release_of(&y), &mut now).unwrap();
        // Unlinked with no holder: freed at once.
        call(&pool, hosts, opener, free_of(&x), &mut now).unwrap();
        assert_eq!(entry_of(&pool, &sb, &x), Slot::Free);
    }
}

#[test]
fn reclaim_drops_holds_and_frees_private_objects() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let hosts = &mut [&mut a, &mut b];
    // Host 1's objects, in every state.
    let private_named = call(&pool, hosts, 1, alloc(1, Some("pn"), 0), &mut now).unwrap();
    call(&pool, hosts, 1, release_of(&private_named), &mut now).unwrap();
    let private_held = call(&pool, hosts, 1, alloc(1, None, 0), &mut now).unwrap();
    let shared_both = call(&pool, hosts, 1, alloc(1, Some("sb"), FLAG_SHARED), &mut now).unwrap();
    call(&pool, hosts, 0, open_named("sb", 1000), &mut now).unwrap();
    let shared_unlinked =
        call(&pool, hosts, 1, alloc(1, Some("su"), FLAG_SHARED), &mut now).unwrap();
    call(&pool, hosts, 1, free_of(&shared_unlinked), &mut now).unwrap();
    let shared_named = call(&pool, hosts, 1, alloc(1, Some("sn"), FLAG_SHARED), &mut now).unwrap();
    // And one of host 0's that host 1 holds no part of.
    let mine = call(&pool, hosts, 0, alloc(1, None, 0), &mut now).unwrap();

    // Host 1 dies; host 0 reclaims it after its lease.
    let mut reclaimed = 0;
    for _ in 0..300 {
        now += MS;
        reclaimed += hosts[0].tick(&pool, now).reclaimed;
    }
    assert_eq!(reclaimed, 5);
    let objects = tables_in_pool(&pool, &sb);
    let at = |h: &Handle| objects[h.object as usize];
    assert_eq!(at(&private_named), Slot::Free, "private, named: freed");
    assert_eq!(at(&private_held), Slot::Free);
    assert!(matches!(at(&shared_both), Slot::Live(e) if e.holders == 0b01));
    assert_eq!(at(&shared_unlinked), Slot::Free, "unlinked, no holder left");
    assert!(
        matches!(at(&shared_named), Slot::Live(e) if e.holders == 0 && !e.is_unlinked()),
        "named and shared: stays, like a file nobody has open"
    );
    assert!(matches!(at(&mine), Slot::Live(e) if e.holders == 0b01));
    let again = call(&pool, &mut [&mut a], 0, open_named("sn", 1000), &mut now).unwrap();
    assert_eq!(again.serial, shared_named.serial);
}

#[test]
fn a_new_incarnation_starts_with_nothing_held() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let private = call(&pool, &mut [&mut a, &mut b], 1, alloc(1, None, 0), &mut now).unwrap();
    let shared = call(
        &pool,
        &mut [&mut a, &mut b],
        1,
        alloc(1, Some("sh"), FLAG_SHARED),
        &mut now,
    )
    .unwrap();
    // Host 1 stalls past its own lease, not long enough for host 0 to
    // expire it: it rejoins as a new incarnation, whose attach reclaims.
    run(&pool, &mut [&mut a], &mut now, 120);
    now += MS;
    assert!(b.tick(&pool, now).lease_lost);
    b.reattach(&pool, [42; 16], now).unwrap();
    run(&pool, &mut [&mut a, &mut b], &mut now, 20);
    assert!(b.is_ready());
    let objects = tables_in_pool(&pool, &sb);
    assert_eq!(objects[private.object as usize], Slot::Free);
    assert!(matches!(objects[shared.object as usize], Slot::Live(e) if e.holders == 0));
    b.refresh(&pool).unwrap();
    assert_eq!(b.held_by_me().count(), 0);

    // A reloaded driver: a new engine, whose request seqs start at 1 again
    // (those of the incarnation that allocated "sh"). Its ALLOCs are new
    // objects, never an earlier incarnation's found again by seq.
    let mut c = attach(&pool, sb, 1, 43, now);
    run(&pool, &mut [&mut a, &mut c], &mut now, 20);
    assert!(c.is_ready());
    for _ in 0..3 {
        let fresh = call(&pool, &mut [&mut a, &mut c], 1, alloc(1, None, 0), &mut now).unwrap();
        assert!(fresh.serial > shared.serial, "{fresh:?} is not new");
    }
}

#[test]
fn held_by_me_lists_this_hosts_holds() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let hosts = &mut [&mut a, &mut b];
    let x = call(&pool, hosts, 0, alloc(1, None, 0), &mut now).unwrap();
    let s = call(&pool, hosts, 1, alloc(1, Some("s"), FLAG_SHARED), &mut now).unwrap();
    let s0 = call(&pool, hosts, 0, open_named("s", 1000), &mut now).unwrap();
    let y = call(&pool, hosts, 1, alloc(2, None, 0), &mut now).unwrap();
    let ids = |it: &mut dyn Iterator<Item = Handle>| {
        let mut v: Vec<(u32, u64)> = it.map(|h| (h.object, h.serial)).collect();
        v.sort();
        v
    };
    let mut want0 = vec![(x.object, x.serial), (s0.object, s0.serial)];
    want0.sort();
    assert_eq!(
        ids(&mut hosts[0].held_by_me()),
        want0,
        "the manager's live tables"
    );
    hosts[1].refresh(&pool).unwrap();
    let mut want1 = vec![(s.object, s.serial), (y.object, y.serial)];
    want1.sort();
    assert_eq!(ids(&mut hosts[1].held_by_me()), want1, "after a refresh");
    let full = hosts[1]
        .held_by_me()
        .find(|h| h.object == y.object)
        .unwrap();
    assert_eq!(full, y);
    call(&pool, hosts, 0, release_of(&s0), &mut now).unwrap();
    assert_eq!(ids(&mut hosts[0].held_by_me()), vec![(x.object, x.serial)]);
}

#[test]
fn a_new_object_is_hidden_until_its_owner_cleared_and_published_it() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let g = sb.geometry();
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let hosts = &mut [&mut a, &mut b];
    // The manager hands the sections out as they are (the pool's 0xa5)
    // and marks the object as being cleared.
    let x = call_raw(
        &pool,
        hosts,
        1,
        alloc(2, Some("new"), FLAG_SHARED),
        &mut now,
    )
    .unwrap();
    assert_ne!(x.flags & FLAG_CLEARING, 0);
    let (off, len) = g.sections_span(x.extent.first, x.extent.count).unwrap();
    let mut data = vec![0u8; len as usize];
    pool.read(off, &mut data).unwrap();
    assert!(
        data.iter().all(|&b| b == 0xa5),
        "the manager touches no data"
    );
    // Nobody else can open it, nor take its name, until it is published.
    let open = open_named("new", 1000);
    assert_eq!(call(&pool, hosts, 0, open, &mut now), Err(Errno::ENOENT));
    let again = alloc(1, Some("new"), FLAG_SHARED);
    assert_eq!(call(&pool, hosts, 0, again, &mut now), Err(Errno::EEXIST));
    // Only the owner host publishes.
    let publish = Call::Publish {
        object: x.object,
        serial: x.serial,
    };
    assert_eq!(call(&pool, hosts, 0, publish, &mut now), Err(Errno::ENOENT));
    pool.zero(off, len).unwrap();
    let p = call(&pool, hosts, 1, publish, &mut now).unwrap();
    assert_eq!(p.flags & FLAG_CLEARING, 0);
    assert_eq!(
        call(&pool, hosts, 1, publish, &mut now),
        Ok(p),
        "idempotent"
    );
    let opened = call(&pool, hosts, 0, open, &mut now).unwrap();
    assert_eq!((opened.object, opened.serial), (x.object, x.serial));
    pool.read(off, &mut data).unwrap();
    assert!(data.iter().all(|&b| b == 0), "the opener reads zeros");
}

#[test]
fn an_owner_that_dies_before_publishing_leaves_nothing_behind() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let x = call_raw(
        &pool,
        &mut [&mut a, &mut b],
        1,
        alloc(2, Some("half"), FLAG_SHARED),
        &mut now,
    )
    .unwrap();
    assert_ne!(x.flags & FLAG_CLEARING, 0);
    // Host 1 stops (no detach); host 0 sees its lease expire and reclaims.
    run(&pool, &mut [&mut a], &mut now, 3 * LEASE_MS as u64);
    assert_eq!(a.stats().objects, 0);
    assert_eq!(a.stats().free_sections, sb.section_count);
}
