//! Cross-host bookkeeping (`shared.rs`): the slot format, liveness, and
//! two hosts converging on one fair share through their slots.

use mchannel_core::component::{Component, Params};
use mchannel_core::shared::{
    self, remote, PeerView, Read, Slot, FLAG_OWNER, MAX_HOSTS, NAME_BYTES, REGION_BYTES, SLOT_BYTES,
};
use mchannel_core::tree::{self, Node, ROOT};
use proptest::prelude::*;

const GB: u64 = 1_000_000_000;
const K: u64 = 10_000_000;
const LEASE: u64 = 1_000_000_000;

fn name(s: &str) -> [u8; NAME_BYTES] {
    let mut n = [0u8; NAME_BYTES];
    n[..s.len()].copy_from_slice(s.as_bytes());
    n
}

#[test]
fn slots_round_trip_and_any_damage_is_seen() {
    let mut s = Slot::new(3, name("cxl-switch0"));
    s.heartbeat = 77;
    s.rate = 5 * GB;
    s.cap = GB;
    s.alpha = 12345;
    s.flags = FLAG_OWNER;
    let b = s.encode();
    let Read::Valid(back) = Slot::decode(&b) else {
        panic!("not valid")
    };
    assert_eq!(
        (back.heartbeat, back.rate, back.cap, back.alpha),
        (77, 5 * GB, GB, 12345)
    );
    assert_eq!((back.host, back.flags, back.name), (3, FLAG_OWNER, s.name));
    for i in 0..SLOT_BYTES {
        for bit in 0..8 {
            let mut d = b;
            d[i] ^= 1 << bit;
            assert!(
                matches!(Slot::decode(&d), Read::Damaged { .. }),
                "byte {i} bit {bit}"
            );
        }
    }
    assert_eq!(Slot::decode(&[0; SLOT_BYTES]), Read::Empty);
    // A torn read: the first half of one write, the second of another.
    let mut t = s;
    t.heartbeat = 78;
    t.rate = 1;
    let mut torn = b;
    torn[64..].copy_from_slice(&t.encode()[64..]);
    torn[..8].copy_from_slice(&t.encode()[..8]);
    assert!(matches!(Slot::decode(&torn), Read::Damaged { .. }));
}

#[test]
fn slots_are_found_by_name_inside_the_region() {
    let n = name("port-a");
    let probes: Vec<usize> = shared::probes(&n).collect();
    assert_eq!(probes.len(), shared::PROBES);
    assert_eq!(probes[0], shared::home(&n));
    for h in 0..MAX_HOSTS {
        for &i in &probes {
            let at = shared::slot_offset(h, i).unwrap();
            assert!(at + SLOT_BYTES <= REGION_BYTES);
        }
    }
    assert_eq!(shared::slot_offset(MAX_HOSTS, 0), None);
    assert_eq!(shared::slot_offset(0, shared::SLOTS_PER_HOST), None);
}

#[test]
fn lookups_follow_a_slot_and_placement_avoids_used_slots() {
    let n = name("sw");
    let home = shared::home(&n);
    let mut block = vec![[0u8; SLOT_BYTES]; shared::SLOTS_PER_HOST];
    // Another component sits at the home slot: ours goes to the next.
    let used = 1u64 << home;
    let at = shared::place(&n, used).unwrap();
    assert_eq!(at, (home + 1) % shared::SLOTS_PER_HOST);
    block[home] = Slot::new(2, name("other")).encode();
    let mut ours = Slot::new(2, n);
    ours.heartbeat = 9;
    block[at] = ours.encode();
    let (r, k) = shared::lookup(2, &n, None, |i| Some(block[i]));
    assert_eq!(k, Some(at));
    assert!(matches!(r, Read::Valid(s) if s.heartbeat == 9 && s.name == n));
    // Known index, damaged now: damaged, and still known.
    block[at][5] ^= 1;
    let (r, k) = shared::lookup(2, &n, Some(at), |i| Some(block[i]));
    assert!(matches!(r, Read::Damaged { .. }) && k == Some(at));
    let (r, _) = shared::lookup(2, &n, Some(at), |_| None);
    assert_eq!(r, Read::Unreadable, "a failed read");
    // Read from another block (a second host with index 2 would write
    // this one): not this peer's.
    block[at] = ours.encode();
    let (r, _) = shared::lookup(3, &n, Some(at), |i| Some(block[i]));
    assert!(matches!(r, Read::Damaged { .. }), "another host's slot");
    // Moved (the peer reloaded): found again where it is now.
    let elsewhere = (at + 5) % shared::SLOTS_PER_HOST;
    block[elsewhere] = block[at];
    block[at] = Slot::new(2, name("third")).encode();
    for (i, b) in block.iter_mut().enumerate() {
        if i != at && i != elsewhere && i != home {
            *b = Slot::new(2, name(&format!("c{i}"))).encode();
        }
    }
    let (r, k) = shared::lookup(2, &n, Some(at), |i| Some(block[i]));
    assert!(matches!(r, Read::Valid(s) if s.heartbeat == 9) && k == Some(elsewhere));
    block[elsewhere] = ours.encode();
    // Cleared: gone.
    block[at] = [0; SLOT_BYTES];
    block = vec![[0u8; SLOT_BYTES]; shared::SLOTS_PER_HOST];
    assert_eq!(
        shared::lookup(2, &n, Some(at), |i| Some(block[i])),
        (Read::Empty, None)
    );
    // Every slot but one used: still a place; all used: none.
    assert_eq!(shared::place(&n, !(1u64 << 7)), Some(7));
    assert_eq!(shared::place(&n, u64::MAX), None);
}

#[test]
fn only_a_good_read_with_a_stale_heartbeat_expires_a_peer() {
    let mut s = Slot::new(1, name("c"));
    s.heartbeat = 1;
    let mut v = PeerView::default();
    v.observe(Read::Valid(s), 0, LEASE);
    assert!(v.live().is_some());
    // Damaged, but still written (its bytes change), for far longer than
    // a lease: still counted, with its last values.
    for t in 1..100 {
        v.observe(Read::Damaged { digest: t as u32 }, t * LEASE, LEASE);
    }
    assert_eq!(v.live().map(|s| s.heartbeat), Some(1));
    // Unreadable: nothing observed.
    v.observe(Read::Unreadable, 1000 * LEASE, LEASE);
    assert!(v.live().is_some());
    // A good read with the same heartbeat, a lease after it last changed.
    v.observe(Read::Valid(s), 100 * LEASE, LEASE);
    assert!(v.live().is_none(), "expired");
    // It beats again: live again.
    s.heartbeat = 2;
    v.observe(Read::Valid(s), 101 * LEASE, LEASE);
    assert!(v.live().is_some());
    // A cleared block: the peer has no such component.
    v.observe(Read::Empty, 102 * LEASE, LEASE);
    assert!(v.live().is_none());
}

#[test]
fn a_torn_slot_that_nobody_rewrites_expires_after_a_lease() {
    let mut s = Slot::new(1, name("c"));
    s.heartbeat = 5;
    let mut v = PeerView::default();
    v.observe(Read::Valid(s), 0, LEASE);
    // The host died halfway through a write: the same torn bytes forever.
    let torn = Read::Damaged { digest: 0xdead };
    v.observe(torn, LEASE / 2, LEASE);
    assert!(v.live().is_some(), "damage alone is no evidence");
    v.observe(torn, LEASE, LEASE);
    assert!(v.live().is_some(), "not yet a lease of the same bytes");
    v.observe(torn, LEASE / 2 + LEASE, LEASE);
    assert!(v.live().is_none(), "a lease without a write");
}

/// One host: a component and one channel of weight 1 that wants `demand`.
struct Host {
    comp: Component,
    demand: u64,
    beat: u64,
    views: Vec<PeerView>,
    alive: bool,
}

impl Host {
    fn new(capacity: u64, demand: u64) -> Host {
        Host {
            comp: Component::new(Params::default_for(capacity)).unwrap(),
            demand,
            beat: 0,
            views: vec![PeerView::default(); MAX_HOSTS],
            alive: true,
        }
    }

    /// Its channel's rate at the current share (steady state).
    fn rate(&self) -> u64 {
        self.comp.alpha().min(self.demand)
    }
}

/// One control period on every live host, through a shared region.
fn period(hosts: &mut [Host], region: &mut [u8], now: u64) {
    let n = name("shared-switch");
    let slot = shared::probes(&n).next().unwrap();
    for h in 0..hosts.len() {
        if !hosts[h].alive {
            continue;
        }
        // Read the peers.
        for p in 0..hosts.len() {
            if p == h {
                continue;
            }
            let at = shared::slot_offset(p, slot).unwrap();
            let bytes: [u8; SLOT_BYTES] = region[at..at + SLOT_BYTES].try_into().unwrap();
            let mut view = hosts[h].views[p];
            view.observe(Slot::decode(&bytes), now, LEASE);
            hosts[h].views[p] = view;
        }
        let r = remote(&hosts[h].views, h);
        let host = &mut hosts[h];
        let mut nodes = [Node {
            demand: host.demand,
            rate: host.rate(),
            ..Node::new(ROOT, 1)
        }];
        tree::check(&mut nodes).unwrap();
        host.comp.update_shared(&mut nodes, r);
        // Publish.
        host.beat += 1;
        let mut s = Slot::new(h as u32, n);
        s.heartbeat = host.beat;
        s.rate = host.rate();
        s.cap = host.demand;
        if r.owner {
            s.flags = FLAG_OWNER;
            s.alpha = host.comp.alpha();
        }
        let at = shared::slot_offset(h, slot).unwrap();
        region[at..at + SLOT_BYTES].copy_from_slice(&s.encode());
    }
}

#[test]
fn two_hosts_converge_on_one_fair_share_and_a_dead_one_is_dropped_after_its_lease() {
    let capacity = 10 * GB;
    let mut hosts = vec![Host::new(capacity, capacity), Host::new(capacity, capacity)];
    let mut region = vec![0u8; REGION_BYTES];
    let mut now = 0;
    for _ in 0..300 {
        now += K;
        period(&mut hosts, &mut region, now);
    }
    for (h, host) in hosts.iter().enumerate() {
        let share = host.rate() as f64 / capacity as f64;
        assert!((share - 0.5).abs() < 0.01, "host {h}: {share}");
    }
    // Host 0 owns the component; host 1 takes its alpha.
    assert_eq!(hosts[1].comp.alpha(), hosts[0].comp.alpha());
    // Host 0 dies: host 1 owns it after the lease and takes everything.
    hosts[0].alive = false;
    let died = now;
    while now < died + LEASE / 2 {
        now += K;
        period(&mut hosts, &mut region, now);
    }
    assert!(hosts[1].rate() < capacity * 6 / 10, "before the lease");
    while now < died + 3 * LEASE {
        now += K;
        period(&mut hosts, &mut region, now);
    }
    assert!(
        hosts[1].rate() > capacity * 99 / 100,
        "after the lease: {}",
        hosts[1].rate()
    );
}

proptest! {
    /// Hostile peers with valid checksums over extreme values: nothing
    /// panics and alpha stays positive.
    #[test]
    fn hostile_slots_are_survived(
        rate in any::<u64>(),
        cap in any::<u64>(),
        alpha in any::<u64>(),
        flags in any::<u32>(),
        beat in any::<u64>(),
    ) {
        let mut s = Slot::new(0, name("x"));
        s.rate = rate;
        s.cap = cap;
        s.alpha = alpha;
        s.flags = flags;
        s.heartbeat = beat;
        let mut views = vec![PeerView::default(); MAX_HOSTS];
        views[0].observe(Slot::decode(&s.encode()), 5, LEASE);
        let r = remote(&views, 1);
        prop_assert!(!r.owner);
        let mut c = Component::new(Params::default_for(GB)).unwrap();
        let mut nodes = [Node { demand: GB, rate: GB, ..Node::new(ROOT, 1) }];
        tree::check(&mut nodes).unwrap();
        c.update_shared(&mut nodes, r);
        prop_assert!(c.alpha() >= 1);
        c.adjust_capacity();
        prop_assert!(c.capacity() <= GB);
    }
}
