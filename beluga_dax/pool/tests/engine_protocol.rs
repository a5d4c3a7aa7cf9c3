//! The pool protocol with several simulated hosts on one buffer: requests
//! through mailboxes, manager election and takeover, lease expiry and
//! reclaim, and a property test that random interleavings of hosts never
//! give one section to two owners.

use beluga_pool::engine::{self, Call, Errno, Handle, Memory, TickReport};
use beluga_pool::leases::Liveness;
use beluga_pool::objects::{Slot, FLAG_SHARED};
use proptest::prelude::*;

mod common;
use common::*;

#[test]
fn one_host_becomes_manager_after_one_expiry_and_serves_itself() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let mut now = 0;
    let mut a = attach(&pool, sb, 0, 1, now);
    run(&pool, &mut [&mut a], &mut now, 100);
    assert!(
        !a.is_ready(),
        "managed before observing the others for a full expiry"
    );
    run(&pool, &mut [&mut a], &mut now, 60);
    assert!(a.is_ready() && a.is_managing());

    let x = call(&pool, &mut [&mut a], 0, alloc(3, Some("kv"), 0), &mut now).unwrap();
    let y = call(&pool, &mut [&mut a], 0, alloc(2, None, 0), &mut now).unwrap();
    assert!(!x.extent.overlaps(&y.extent));
    assert_eq!(
        call(&pool, &mut [&mut a], 0, alloc(1, Some("kv"), 0), &mut now),
        Err(Errno::EEXIST)
    );
    assert_eq!(
        call(&pool, &mut [&mut a], 0, alloc(1000, None, 0), &mut now),
        Err(Errno::ENOSPC)
    );
    let stats = a.stats();
    assert_eq!((stats.objects, stats.used_by_host[0]), (2, 5));
    tables_in_pool(&pool, &sb);

    // Only its owner uid may free it.
    let wrong = Call::Free {
        object: x.object,
        serial: x.serial,
        uid: 1,
    };
    assert_eq!(
        call(&pool, &mut [&mut a], 0, wrong, &mut now),
        Err(Errno::EPERM)
    );
    let stale = Call::Free {
        object: x.object,
        serial: x.serial + 100,
        uid: 1000,
    };
    assert_eq!(
        call(&pool, &mut [&mut a], 0, stale, &mut now),
        Err(Errno::ENOENT)
    );
    // FREE unlinks: the name goes at once, the object stays while this
    // host holds it; RELEASE lets go, and then it is freed.
    let free = free_of(&x);
    assert!(call(&pool, &mut [&mut a], 0, free, &mut now).is_ok());
    assert_eq!(
        call(&pool, &mut [&mut a], 0, free, &mut now),
        Err(Errno::ENOENT)
    );
    assert_eq!(a.stats().objects, 2);
    let kv = call(&pool, &mut [&mut a], 0, alloc(1, Some("kv"), 0), &mut now).unwrap();
    assert!(!kv.extent.overlaps(&x.extent));
    let release = release_of(&x);
    call(&pool, &mut [&mut a], 0, release, &mut now).unwrap();
    assert_eq!(
        call(&pool, &mut [&mut a], 0, release, &mut now),
        Err(Errno::ENOENT)
    );
    assert_eq!(a.stats().objects, 2);
    tables_in_pool(&pool, &sb);
}

#[test]
fn two_hosts_share_by_name_and_never_overlap() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    assert!(a.is_managing() && !b.is_managing());
    assert!(a.is_ready() && b.is_ready());
    assert_eq!(b.manager(), Some(0));

    let mut owned = Vec::new();
    for i in 0..6 {
        owned.push(
            call(
                &pool,
                &mut [&mut a, &mut b],
                i % 2,
                alloc(2, None, 0),
                &mut now,
            )
            .unwrap(),
        );
    }
    for (i, x) in owned.iter().enumerate() {
        for y in &owned[i + 1..] {
            assert!(!x.extent.overlaps(&y.extent), "{x:?} and {y:?}");
        }
    }
    let shared = call(
        &pool,
        &mut [&mut a, &mut b],
        1,
        alloc(1, Some("model.w"), FLAG_SHARED),
        &mut now,
    )
    .unwrap();
    let open = open_named("model.w", 1000);
    let seen = call(&pool, &mut [&mut a, &mut b], 0, open, &mut now).unwrap();
    assert_eq!(
        (seen.object, seen.serial, seen.extent),
        (shared.object, shared.serial, shared.extent)
    );
    // Another uid without permission bits for others is refused.
    let other = open_named("model.w", 7);
    assert_eq!(
        call(&pool, &mut [&mut a, &mut b], 0, other, &mut now),
        Err(Errno::EACCES)
    );
    // Host 1's private objects cannot be freed or opened from host 0.
    let theirs = owned[1];
    let free = free_of(&theirs);
    assert_eq!(
        call(&pool, &mut [&mut a, &mut b], 0, free, &mut now),
        Err(Errno::ENOENT)
    );

    // The creator unlinks and lets go; the object stays while host 0
    // holds it, and goes with host 0's release.
    let free_shared = free_of(&shared);
    call(&pool, &mut [&mut a, &mut b], 1, free_shared, &mut now).unwrap();
    let release = release_of(&shared);
    call(&pool, &mut [&mut a, &mut b], 1, release, &mut now).unwrap();
    let live = tables_in_pool(&pool, &sb);
    assert!(matches!(live[shared.object as usize], Slot::Live(e) if e.holders == 1));
    call(&pool, &mut [&mut a, &mut b], 0, release, &mut now).unwrap();
    let live = tables_in_pool(&pool, &sb);
    assert_eq!(live[shared.object as usize], Slot::Free);
}

#[test]
fn a_dead_hosts_private_sections_are_reclaimed_after_its_lease() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    let private = call(&pool, &mut [&mut a, &mut b], 0, alloc(4, None, 0), &mut now).unwrap();
    let shared = call(
        &pool,
        &mut [&mut a, &mut b],
        0,
        alloc(1, Some("kept"), FLAG_SHARED),
        &mut now,
    )
    .unwrap();
    let open = open_named("kept", 1000);
    call(&pool, &mut [&mut a, &mut b], 1, open, &mut now).unwrap();

    // Host 0 (the manager) stops: b waits the lease plus margin.
    let before = now;
    let mut took_over_at = None;
    let mut reclaimed = 0;
    for _ in 0..400 {
        now += MS;
        let r = b.tick(&pool, now);
        reclaimed += r.reclaimed;
        if r.became_manager {
            took_over_at = Some(now);
        }
    }
    let took_over_at = took_over_at.expect("host 1 never took over");
    // Host 0's last heartbeat was at most a quarter lease before it stopped.
    assert!(
        took_over_at - before + LEASE_MS as u64 * MS / 4 > engine::expiry_ns(LEASE_MS),
        "took over before the lease expired"
    );
    assert_eq!(b.liveness()[0], Liveness::Expired);
    assert_eq!(
        reclaimed, 2,
        "the private object freed, the shared one released"
    );
    let objects = tables_in_pool(&pool, &sb);
    assert_eq!(objects[private.object as usize], Slot::Free);
    assert!(matches!(objects[shared.object as usize], Slot::Live(e) if e.holders == 1 << 1));

    // Host 0 wakes: its lease is gone, it must not act on old state.
    now += MS;
    let r = a.tick(&pool, now);
    assert!(r.lease_lost && !a.is_managing());
    assert_eq!(
        a.submit(&pool, alloc(1, None, 0), false, now),
        Err(Errno::ESTALE)
    );
    a.reattach(&pool, [9; 16], now).unwrap();
    // Host 1 hands over as soon as it sees the lower host live; host 0
    // takes the role only after a full expiry, so the two never overlap.
    for _ in 0..200 {
        now += MS;
        a.tick(&pool, now);
        assert!(!(a.is_managing() && b.is_managing()));
        b.tick(&pool, now);
        assert!(!(a.is_managing() && b.is_managing()));
    }
    assert!(a.is_ready() && a.is_managing() && !b.is_managing());
    let x = call(&pool, &mut [&mut a, &mut b], 1, alloc(2, None, 0), &mut now).unwrap();
    assert!(!x.extent.overlaps(&shared.extent));
    tables_in_pool(&pool, &sb);
}

#[test]
fn a_detached_host_is_reclaimed_at_once_and_never_both_manage() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    call(&pool, &mut [&mut a, &mut b], 1, alloc(3, None, 0), &mut now).unwrap();
    b.detach(&pool, now).unwrap();
    assert!(b.tick(&pool, now + MS) == TickReport::default() && !b.is_managing());
    let reports = run(&pool, &mut [&mut a], &mut now, 2);
    let objects = tables_in_pool(&pool, &sb);
    assert!(objects.iter().all(|s| *s == Slot::Free), "{reports:?}");
}

#[test]
fn two_hosts_on_one_index_are_detected() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let mut now = 0;
    let mut a = attach(&pool, sb, 2, 1, now);
    let mut b = attach(&pool, sb, 2, 2, now);
    now += MS;
    let r = a.tick(&pool, now);
    assert!(r.slot_conflict && r.lease_lost, "{r:?}");
    let _ = b.tick(&pool, now);
}

#[test]
fn a_reformatted_pool_ends_the_lease() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let mut now = 0;
    let mut a = attach(&pool, sb, 0, 1, now);
    run(&pool, &mut [&mut a], &mut now, 200);
    engine::format(&pool, POOL, 4, 64, [8; 16], 2).unwrap();
    now += MS;
    let r = a.tick(&pool, now);
    assert!(r.pool_changed && r.lease_lost);
}

#[test]
fn hostile_mailboxes_and_tables_do_no_harm() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let g = sb.geometry();
    let mut now = 0;
    let mut a = attach(&pool, sb, 0, 1, now);
    run(&pool, &mut [&mut a], &mut now, 200);
    // Garbage in every other slot, including its mailbox and reply lines.
    for host in 1..4u64 {
        let off = g.host_table_off + host * 256;
        let junk: Vec<u8> = (0..256).map(|i| (i * 37 + host * 11) as u8).collect();
        pool.write(off, &junk).unwrap();
    }
    let r = run(&pool, &mut [&mut a], &mut now, 50);
    assert_eq!(r[0].served, 0);
    call(&pool, &mut [&mut a], 0, alloc(1, None, 0), &mut now).unwrap();
    tables_in_pool(&pool, &sb);

    // A corrupt object table is refused by a host taking over.
    let mut b = attach(&pool, sb, 1, 2, now);
    let mut raw = [0u8; 128];
    pool.read(g.object_table_off, &mut raw).unwrap();
    raw[8] ^= 0xff; // extent count, with a matching checksum below
    let crc = beluga_pool::checksum::crc32c(&raw[..104]);
    raw[104..108].copy_from_slice(&crc.to_le_bytes());
    pool.write(g.object_table_off, &raw).unwrap();
    let mut corrupt = None;
    for _ in 0..400 {
        now += MS;
        corrupt = corrupt.or(b.tick(&pool, now).corrupt);
    }
    assert_eq!(corrupt, Some("extent outside the data area"));
    assert!(!b.is_managing());
}

#[derive(Debug, Clone)]
enum Step {
    /// Host `h` allocates `n` sections.
    Alloc { h: usize, n: u32 },
    /// Host `h` frees (unlinks, then releases) the handle it holds at
    /// `pick`.
    Free { h: usize, pick: usize },
    /// Host `h` releases the handle it holds at `pick` (unnamed: freed).
    Release { h: usize, pick: usize },
    /// Everyone alive ticks for `ms` milliseconds.
    Run { ms: u64 },
    /// Host `h` stops ticking (dies) or comes back.
    Toggle { h: usize },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..3, 1u32..5).prop_map(|(h, n)| Step::Alloc { h, n }),
        2 => (0usize..3, any::<usize>()).prop_map(|(h, pick)| Step::Free { h, pick }),
        1 => (0usize..3, any::<usize>()).prop_map(|(h, pick)| Step::Release { h, pick }),
        2 => (1u64..40).prop_map(|ms| Step::Run { ms }),
        1 => (0usize..3).prop_map(|h| Step::Toggle { h }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any interleaving of three hosts (some dying and coming back): the
    /// tables in the pool stay consistent, and the objects that hosts with
    /// a valid lease believe they own never overlap.
    #[test]
    fn no_section_has_two_owners(steps in prop::collection::vec(step(), 1..60)) {
        let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 3, 128);
        let mut now = 0;
        let mut hosts: Vec<Host> = (0..3).map(|i| attach(&pool, sb, i, i as u8 + 1, 0)).collect();
        let mut alive = [true; 3];
        let mut held: Vec<Vec<Handle>> = vec![Vec::new(); 3];
        let mut boot = 10u8;
        // Let the first manager settle.
        for _ in 0..160 {
            now += MS;
            for h in hosts.iter_mut() {
                h.tick(&pool, now);
            }
        }
        for step in steps {
            match step {
                Step::Alloc { h, n } if alive[h] => {
                    if let Some(Ok(handle)) = drive(&pool, &mut hosts, &alive, h, alloc(n, None, 0), &mut now) {
                        held[h].push(handle);
                    }
                }
                Step::Free { h, pick } if alive[h] && !held[h].is_empty() => {
                    let at = pick % held[h].len();
                    let x = held[h].remove(at);
                    drive(&pool, &mut hosts, &alive, h, free_of(&x), &mut now);
                    drive(&pool, &mut hosts, &alive, h, release_of(&x), &mut now);
                }
                Step::Release { h, pick } if alive[h] && !held[h].is_empty() => {
                    let at = pick % held[h].len();
                    let x = held[h].remove(at);
                    drive(&pool, &mut hosts, &alive, h, release_of(&x), &mut now);
                }
                Step::Run { ms } => {
                    for _ in 0..ms {
                        now += MS;
                        for i in 0..3 {
                            if alive[i] && hosts[i].tick(&pool, now).lease_lost {
                                held[i].clear();
                                boot += 1;
                                hosts[i].reattach(&pool, [boot; 16], now).unwrap();
                            }
                        }
                    }
                }
                Step::Toggle { h } => alive[h] = !alive[h],
                _ => {}
            }
            tables_in_pool(&pool, &sb);
            // Handles of hosts whose lease is still theirs never overlap.
            let mut valid: Vec<Handle> = Vec::new();
            for i in 0..3 {
                let lease_ok = hosts[i].lease_valid(now);
                if lease_ok {
                    valid.extend(held[i].iter().copied());
                }
            }
            for (i, x) in valid.iter().enumerate() {
                for y in &valid[i + 1..] {
                    prop_assert!(!x.extent.overlaps(&y.extent), "{:?} and {:?}", x, y);
                }
            }
        }
    }
}

/// The manager's fast path answers a remote request between ticks, and
/// only while it may write the tables.
#[test]
fn the_manager_serves_mailboxes_between_ticks() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, now) = settled_pair(&pool, sb);
    assert!(a.is_managing());
    let seq = b.submit(&pool, alloc(1, None, 0), false, now).unwrap();
    assert_eq!(b.poll(&pool, seq), None, "nobody served it yet");
    // No tick: the fast path alone answers it.
    assert_eq!(a.serve_mailboxes(&pool, now + 10_000), 1);
    assert!(matches!(b.poll(&pool, seq), Some(Ok(_))));
    assert_eq!(a.serve_mailboxes(&pool, now + 20_000), 0, "served once");
    // Not a manager, or a manager whose last scan is too old: nothing.
    let seq = a.submit(&pool, alloc(1, None, 0), false, now).unwrap();
    let _ = a.poll(&pool, seq);
    let seq = b.submit(&pool, alloc(1, None, 0), false, now).unwrap();
    assert_eq!(b.serve_mailboxes(&pool, now + 30_000), 0);
    let stale = now + u64::from(LEASE_MS) * MS;
    assert_eq!(a.serve_mailboxes(&pool, stale), 0);
    assert_eq!(b.poll(&pool, seq), None);
}
