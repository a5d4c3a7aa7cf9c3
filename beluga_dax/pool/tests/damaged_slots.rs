//! Damaged host slots are no evidence of death: hosts ticking with random
//! time steps and random calls while single 4-byte words of host slots
//! (the live manager's included) are overwritten with arbitrary values
//! never make two hosts manage at once, and never give one section to two
//! objects.

use beluga_pool::engine::{self, Handle, Memory};
use beluga_pool::layout::HOST_SLOT_BYTES;
use beluga_pool::leases::Liveness;
use proptest::prelude::*;

mod common;
use common::*;

const HOSTS: usize = 3;

#[derive(Debug, Clone)]
enum Step {
    /// Host `h` allocates `n` sections.
    Alloc { h: usize, n: u32 },
    /// Host `h` frees (unlinks, then releases) the handle it holds at
    /// `pick`.
    Free { h: usize, pick: usize },
    /// Host `h` releases the handle it holds at `pick` (unnamed: freed).
    Release { h: usize, pick: usize },
    /// Everyone alive ticks `ticks` times, `step_ms` apart.
    Run { ticks: u32, step_ms: u64 },
    /// Host `h` stops ticking (dies) or comes back.
    Toggle { h: usize },
    /// The aligned word `word` of host `host`'s slot becomes `value`.
    Corrupt { host: u32, word: u64, value: u32 },
}

fn step() -> impl Strategy<Value = Step> {
    let word = prop_oneof![
        // The lease line (the words observers judge by) more often.
        3 => 0u64..16,
        1 => 0u64..HOST_SLOT_BYTES / 4,
    ];
    let value = prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        Just(u32::from_le_bytes(*b"BHST")),
        any::<u32>(),
    ];
    prop_oneof![
        4 => (0..HOSTS, 1u32..5).prop_map(|(h, n)| Step::Alloc { h, n }),
        2 => (0..HOSTS, any::<usize>()).prop_map(|(h, pick)| Step::Free { h, pick }),
        1 => (0..HOSTS, any::<usize>()).prop_map(|(h, pick)| Step::Release { h, pick }),
        3 => (1u32..40, 1u64..6).prop_map(|(ticks, step_ms)| Step::Run { ticks, step_ms }),
        1 => (0..HOSTS).prop_map(|h| Step::Toggle { h }),
        4 => (0..HOSTS as u32, word, value)
            .prop_map(|(host, word, value)| Step::Corrupt { host, word, value }),
    ]
}

struct Sim<'p, 'b> {
    pool: &'p Pool<'b>,
    hosts: Vec<Host>,
    alive: [bool; HOSTS],
    held: Vec<Vec<Handle>>,
    now: u64,
    boot: u8,
}

impl Sim<'_, '_> {
    /// One round: every live host ticks at `now`; then at most one of the
    /// hosts that ticked may consider itself manager.
    fn tick_all(&mut self, step_ms: u64) -> Result<(), TestCaseError> {
        self.now += step_ms * MS;
        for i in 0..HOSTS {
            if self.alive[i] && self.hosts[i].tick(self.pool, self.now).lease_lost {
                self.held[i].clear();
                self.boot += 1;
                self.hosts[i]
                    .reattach(self.pool, [self.boot; 16], self.now)
                    .unwrap();
            }
        }
        let managing: Vec<usize> = (0..HOSTS)
            .filter(|&i| self.alive[i] && self.hosts[i].is_managing())
            .collect();
        prop_assert!(
            managing.len() <= 1,
            "hosts {:?} all manage at {} ms",
            managing,
            self.now / MS
        );
        Ok(())
    }

    /// Submits `c` from host `h` and ticks until it is answered or 50 ms
    /// passed (then the call is abandoned).
    fn drive(
        &mut self,
        h: usize,
        c: beluga_pool::engine::Call,
    ) -> Result<Option<Handle>, TestCaseError> {
        let Ok(seq) = self.hosts[h].submit(self.pool, c, false, self.now) else {
            return Ok(None);
        };
        for _ in 0..50 {
            if let Some(r) = self.hosts[h].poll(self.pool, seq) {
                return Ok(r.ok());
            }
            self.tick_all(1)?;
        }
        self.hosts[h].abandon(seq);
        Ok(None)
    }

    fn check(&self, sb: &beluga_pool::layout::Superblock) -> Result<(), TestCaseError> {
        tables_in_pool(self.pool, sb);
        let mut valid: Vec<Handle> = Vec::new();
        for i in 0..HOSTS {
            if self.hosts[i].lease_valid(self.now) {
                valid.extend(self.held[i].iter().copied());
            }
        }
        for (i, x) in valid.iter().enumerate() {
            for y in &valid[i + 1..] {
                prop_assert!(!x.extent.overlaps(&y.extent), "{:?} and {:?}", x, y);
            }
        }
        Ok(())
    }
}

#[test]
fn a_damaged_manager_slot_changes_nothing_until_its_lease_expires() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let g = sb.geometry();
    let (a, mut b, mut now) = settled_pair(&pool, sb);
    assert!(a.is_managing() && b.is_ready());
    // Host 0 stops right after its magic word is damaged: host 1 keeps
    // it live until its lease has expired by host 1's own clock.
    pool.write(g.host_slot_offset(0).unwrap(), &[0; 4]).unwrap();
    let damaged_at = now;
    let mut took_over = None;
    for _ in 0..400 {
        now += MS;
        if b.tick(&pool, now).became_manager {
            took_over = Some(now);
            break;
        }
        if now - damaged_at < engine::expiry_ns(LEASE_MS) {
            assert_eq!(b.liveness()[0], Liveness::Live);
            assert!(!b.is_managing());
        }
    }
    let took_over = took_over.expect("host 1 never took over");
    assert!(took_over - damaged_at >= engine::expiry_ns(LEASE_MS));
    assert_eq!(b.liveness()[0], Liveness::Expired);
}

#[test]
fn a_live_host_repairs_its_damaged_slot_at_once() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let g = sb.geometry();
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    for word in 0..16u64 {
        pool.write(g.host_slot_offset(0).unwrap() + word * 4, &[0xff; 4])
            .unwrap();
        run(&pool, &mut [&mut a, &mut b], &mut now, 1);
        assert!(a.is_managing() && !b.is_managing(), "word {word}");
        assert_eq!(b.liveness()[0], Liveness::Live);
    }
    // Slots never written, or damaged before anyone saw them: absent.
    pool.write(
        g.host_slot_offset(3).unwrap(),
        &u32::from_le_bytes(*b"BHST").to_le_bytes(),
    )
    .unwrap();
    run(&pool, &mut [&mut a, &mut b], &mut now, 300);
    assert_eq!(b.liveness()[2..], [Liveness::Absent, Liveness::Absent]);
    assert!(a.is_managing());
}

#[test]
fn a_clean_detach_is_evidence_at_once() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    b.detach(&pool, now).unwrap();
    run(&pool, &mut [&mut a], &mut now, 1);
    assert_eq!(a.liveness()[1], Liveness::Detached);
}

/// Ticks `observer` until it calls host `peer` expired (at most `ms`);
/// returns when.
fn until_expired(pool: &Pool<'_>, observer: &mut Host, peer: usize, now: &mut u64, ms: u64) -> u64 {
    for _ in 0..ms {
        *now += MS;
        observer.tick(pool, *now);
        if observer.liveness()[peer] == Liveness::Expired {
            return *now;
        }
    }
    panic!("host {peer} never expired");
}

#[test]
fn a_beat_destroyed_before_anyone_saw_it_does_not_extend_the_lease() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let g = sb.geometry();
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    // Host 1 stalls for 60 ms while host 0 watches, beats once right
    // after host 0's scan, and the beat is destroyed before the next one.
    for _ in 0..60 {
        now += MS;
        a.tick(&pool, now);
    }
    b.tick(&pool, now);
    pool.write(g.host_slot_offset(1).unwrap(), &[0; 4]).unwrap();
    let expired_at = until_expired(&pool, &mut a, 1, &mut now, 400);
    assert!(
        !b.lease_valid(expired_at),
        "host 1 still counts on a beat host 0 never saw"
    );
}

#[test]
fn silence_an_observer_did_not_watch_is_no_evidence() {
    let mut bytes = pool_bytes();
    let (pool, sb) = formatted(&mut bytes, 4, 64);
    let g = sb.geometry();
    let (mut a, mut b, mut now) = settled_pair(&pool, sb);
    // Host 0 stalls for 55 ms (its lease survives) while host 1 beats
    // twice, the second time just before host 0 looks again; that beat is
    // destroyed and host 1 stalls.
    let stalled_at = now;
    for at in [28, 54] {
        b.tick(&pool, stalled_at + at * MS);
    }
    now = stalled_at + 55 * MS;
    pool.write(g.host_slot_offset(1).unwrap(), &[0; 4]).unwrap();
    let expired_at = until_expired(&pool, &mut a, 1, &mut now, 400);
    assert!(
        !b.lease_valid(expired_at),
        "host 0 expired host 1 while host 1's lease was valid"
    );
    assert!(!a.lease_lost());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn damaged_slots_never_make_two_managers(steps in prop::collection::vec(step(), 1..80)) {
        let mut bytes = pool_bytes();
        let (pool, sb) = formatted(&mut bytes, HOSTS as u32, 128);
        let hosts = (0..HOSTS as u32).map(|i| attach(&pool, sb, i, i as u8 + 1, 0)).collect();
        let mut sim = Sim {
            pool: &pool,
            hosts,
            alive: [true; HOSTS],
            held: vec![Vec::new(); HOSTS],
            now: 0,
            boot: 10,
        };
        for _ in 0..160 {
            sim.tick_all(1)?;
        }
        let g = sb.geometry();
        for step in steps {
            match step {
                Step::Alloc { h, n } if sim.alive[h] => {
                    if let Some(handle) = sim.drive(h, alloc(n, None, 0))? {
                        sim.held[h].push(handle);
                    }
                }
                Step::Free { h, pick } if sim.alive[h] && !sim.held[h].is_empty() => {
                    let at = pick % sim.held[h].len();
                    let x = sim.held[h].remove(at);
                    sim.drive(h, free_of(&x))?;
                    sim.drive(h, release_of(&x))?;
                }
                Step::Release { h, pick } if sim.alive[h] && !sim.held[h].is_empty() => {
                    let at = pick % sim.held[h].len();
                    let x = sim.held[h].remove(at);
                    sim.drive(h, release_of(&x))?;
                }
                Step::Run { ticks, step_ms } => {
                    for _ in 0..ticks {
                        sim.tick_all(step_ms)?;
                    }
                }
                Step::Toggle { h } => sim.alive[h] = !sim.alive[h],
                Step::Corrupt { host, word, value } => {
                    let at = g.host_slot_offset(host).unwrap() + word * 4;
                    pool.write(at, &value.to_le_bytes()).unwrap();
                }
                _ => {}
            }
            sim.check(&sb)?;
        }
    }
}
