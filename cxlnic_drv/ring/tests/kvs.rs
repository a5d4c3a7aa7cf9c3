//! The key-value offload's protocol with both sides over one simulated
//! memory: the driver (host table, commands, log drain) and the device
//! (engine: cache, log, host-bias reads) interleaved at random, against a
//! reference map. Every network GET and every host read must see the
//! reference's value at that moment (the device serializes writes, so
//! its order is the reference's), no update is lost, and a cache far too
//! small for the keys (evictions on most misses) keeps every pair
//! reachable. Then the seqlock at word granularity, and hostile memory on
//! both sides.

use std::collections::BTreeMap;

use cxlnic_ring::index::{ready_tag, within};
use cxlnic_ring::kvs::sim::{SimMemory, SimSlots};
use cxlnic_ring::kvs::{
    read_stable, write_versions, Engine, HostTable, KvsConfig, Op, Record, Reply, Request,
    TableError, CMD_ENTRIES, LOG_ENTRIES, OP_PUT, READ_TRIES, RECORD_BYTES, REQ_GET, REQ_PUT,
    STATUS_BUSY, STATUS_NOT_FOUND, STATUS_OK, WAYS,
};
use proptest::prelude::*;

/// Device memory, host memory and the control lines.
type Mem = SimMemory;

const HOST_BUCKETS: u32 = 4;

fn mem(cache_buckets: u32) -> Mem {
    SimMemory::new(cache_buckets, HOST_BUCKETS)
}

fn config(gen: u32, cache_buckets: u32) -> KvsConfig {
    KvsConfig {
        gen,
        enable: 1,
        udp_port: 7878,
        cache_buckets,
        host_buckets: HOST_BUCKETS,
        host_table: 0,
        hash_seed: 0x5eed,
        ..Default::default()
    }
}

fn request<'a>(op: u8, key: &'a [u8], value: &'a [u8]) -> Request<'a> {
    Request {
        op,
        id: 1,
        key,
        value,
        reply: Reply {
            mac: [2, 0, 0, 0, 0, 2],
            client_ip: [10, 0, 0, 2],
            server_ip: [10, 0, 0, 1],
            client_port: 40000,
            server_port: 7878,
        },
    }
}

fn key(k: u8) -> Vec<u8> {
    format!("key-{k}").into_bytes()
}

fn value(k: u8, n: u32) -> Vec<u8> {
    // Lengths vary, up to the longest value.
    let len = (n as usize * 7 + k as usize) % 65;
    (0..len).map(|i| (n as usize + i) as u8).collect()
}

/// The driver: the host table, its log head and command tail, and the
/// one operation it has in flight.
struct Driver {
    table: HostTable,
    log_head: u32,
    cmd_tail: u32,
    waiting: Option<u32>,
    bad: u32,
}

impl Driver {
    fn drain(&mut self, mem: &mut Mem) {
        let tail = mem.device.log_tail;
        assert!(
            within(self.log_head, tail, self.log_head.wrapping_add(LOG_ENTRIES)),
            "an honest device's tail"
        );
        while self.log_head != tail {
            let rec = mem.log[(self.log_head % LOG_ENTRIES) as usize];
            if rec.word != ready_tag(self.log_head) {
                break;
            }
            if self.table.apply(&mut mem.host, &rec).is_err() {
                self.bad += 1;
            }
            self.log_head = self.log_head.wrapping_add(1);
        }
        mem.driver.log_head = self.log_head;
    }

    fn post(&mut self, mem: &mut Mem, op: Op, k: &[u8], v: &[u8], slot: u32) {
        let mut r = Record::pair(k, v).unwrap();
        r.op = op.to_u8();
        r.slot = slot;
        r.word = ready_tag(self.cmd_tail);
        mem.cmd[(self.cmd_tail % CMD_ENTRIES) as usize] = r;
        self.waiting = Some(self.cmd_tail);
        self.cmd_tail = self.cmd_tail.wrapping_add(1);
        mem.driver.cmd_tail = self.cmd_tail;
    }
}

#[derive(Debug, Clone)]
enum Step {
    /// A client's GET of key k.
    Get(u8),
    /// A client's PUT of key k.
    Put(u8),
    /// The device takes the host's commands.
    Poll,
    /// The host writes key k (insert or update), if it is not waiting.
    HostPut(u8),
    /// The host deletes key k.
    HostDel(u8),
    /// The host reads key k (after draining the log).
    HostGet(u8),
    /// The host drains the log, and finishes a command the device took.
    HostDrain,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..12).prop_map(Step::Get),
        3 => (0u8..12).prop_map(Step::Put),
        3 => Just(Step::Poll),
        2 => (0u8..12).prop_map(Step::HostPut),
        1 => (0u8..12).prop_map(Step::HostDel),
        1 => (0u8..12).prop_map(Step::HostGet),
        2 => Just(Step::HostDrain),
    ]
}

/// Runs `steps` with a cache of `cache_buckets`, checking every answer
/// against the reference.
fn run(steps: &[Step], cache_buckets: u32) {
    let mut m = mem(cache_buckets);
    let mut dev = Engine::new();
    assert!(dev.take_config(&mut m, &config(1, cache_buckets), 1 << 20));
    assert_eq!((m.device.cfg_ack, m.device.cfg_status), (1, 0));
    let mut drv = Driver {
        table: HostTable::new(HOST_BUCKETS, 0x5eed).unwrap(),
        log_head: 0,
        cmd_tail: 0,
        waiting: None,
        bad: 0,
    };
    let mut reference: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    // Log entries already folded into the reference.
    let mut seen = 0u32;
    let fold = |m: &Mem, seen: &mut u32, reference: &mut BTreeMap<Vec<u8>, Vec<u8>>| {
        while *seen != m.device.log_tail {
            let r = m.log[(*seen % LOG_ENTRIES) as usize];
            assert_eq!(r.word, ready_tag(*seen), "log entry {seen} not written");
            match Op::from_u8(r.op).unwrap() {
                Op::Put => {
                    let old = reference.insert(r.key().to_vec(), r.value().to_vec());
                    assert!(old.is_some(), "a logged PUT of a key the store lacks");
                }
                Op::Del => {
                    assert!(
                        reference.remove(r.key()).is_some(),
                        "a logged DEL of an absent key"
                    );
                }
            }
            *seen += 1;
        }
    };
    for (n, s) in steps.iter().enumerate() {
        let n = n as u32;
        match *s {
            Step::Get(k) => {
                let k = key(k);
                let a = dev.serve(&mut m, &request(REQ_GET, &k, &[]));
                match reference.get(&k) {
                    Some(v) => {
                        assert_eq!(a.status, STATUS_OK, "GET {k:?} at step {n}");
                        assert_eq!(a.bytes(), &v[..], "GET {k:?} at step {n}");
                    }
                    None => assert_eq!(a.status, STATUS_NOT_FOUND, "GET {k:?} at step {n}"),
                }
            }
            Step::Put(k) => {
                let (k, v) = (key(k), value(k, n));
                let before = m.device.log_tail;
                let present = reference.contains_key(&k);
                let a = dev.serve(&mut m, &request(REQ_PUT, &k, &v));
                match a.status {
                    STATUS_OK => {
                        assert!(present, "PUT of an absent key answered ok");
                        assert_eq!(m.device.log_tail, before.wrapping_add(1));
                        fold(&m, &mut seen, &mut reference);
                        assert_eq!(reference[&k], v);
                    }
                    STATUS_NOT_FOUND => assert!(!present, "PUT of a present key: not found"),
                    STATUS_BUSY => assert_eq!(m.device.log_tail, before, "a busy PUT logged"),
                    s => panic!("status {s}"),
                }
            }
            Step::Poll => {
                dev.poll_commands(&mut m);
                fold(&m, &mut seen, &mut reference);
            }
            Step::HostDrain => {
                drv.drain(&mut m);
                if let Some(idx) = drv.waiting {
                    if m.device.cmd_head.wrapping_sub(idx) as i32 > 0 {
                        drv.waiting = None;
                        drv.drain(&mut m);
                    }
                }
            }
            Step::HostGet(k) => {
                let k = key(k);
                drv.drain(&mut m);
                let got = drv.table.find(&m.host, &k).map(|(_, r)| r.value().to_vec());
                // Everything the device wrote is in the log, now drained.
                fold(&m, &mut seen, &mut reference);
                assert_eq!(got.as_ref(), reference.get(&k), "host read of {k:?} at {n}");
            }
            Step::HostPut(k) | Step::HostDel(k) if drv.waiting.is_none() => {
                let (k, v) = (key(k), value(k, n ^ 0x55));
                drv.drain(&mut m);
                fold(&m, &mut seen, &mut reference);
                let found = drv.table.find(&m.host, &k);
                match (s, found) {
                    (Step::HostPut(_), Some((slot, _))) => drv.post(&mut m, Op::Put, &k, &v, slot),
                    (Step::HostPut(_), None) => match drv.table.insert(&mut m.host, &k, &v) {
                        Ok(_) => assert!(reference.insert(k, v).is_none()),
                        Err(e) => assert_eq!(e, TableError::Full),
                    },
                    (_, Some((slot, _))) => drv.post(&mut m, Op::Del, &k, &[], slot),
                    (_, None) => assert!(!reference.contains_key(&k)),
                }
            }
            Step::HostPut(_) | Step::HostDel(_) => {}
        }
    }
    // Finish: the device takes what is posted, the driver drains.
    dev.poll_commands(&mut m);
    fold(&m, &mut seen, &mut reference);
    drv.drain(&mut m);
    assert_eq!(drv.bad, 0, "an honest device's log refused");
    // No update lost: the host table is the reference, slot by slot.
    let mut table = BTreeMap::new();
    for r in m.host.slots.iter().filter(|r| r.op == OP_PUT) {
        assert!(r.well_formed() && r.word % 2 == 0);
        assert!(
            table.insert(r.key().to_vec(), r.value().to_vec()).is_none(),
            "a key twice"
        );
    }
    assert_eq!(table, reference);
    // Every pair is reachable through the device, whatever it evicted.
    for k in 0..12 {
        let k = key(k);
        let a = dev.serve(&mut m, &request(REQ_GET, &k, &[]));
        match reference.get(&k) {
            Some(v) => assert_eq!((a.status, a.bytes()), (STATUS_OK, &v[..])),
            None => assert_eq!(a.status, STATUS_NOT_FOUND),
        }
    }
    let st = dev.stats();
    assert_eq!(st.gets + st.puts, st.requests);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// One bucket of 4 ways for 12 keys: most misses evict.
    #[test]
    fn a_tiny_cache_serves_every_key_right(steps in prop::collection::vec(step(), 1..400)) {
        run(&steps, 1);
    }

    /// A cache larger than the keys: after the first miss, hits.
    #[test]
    fn a_large_cache_serves_every_key_right(steps in prop::collection::vec(step(), 1..400)) {
        run(&steps, 16);
    }
}

/// A scripted run that must see hits, misses, log hits and evictions, so
/// the random runs above cannot pass by never reaching a tier.
#[test]
fn every_tier_is_reached() {
    let mut steps = vec![];
    for k in 0..12 {
        steps.push(Step::HostPut(k));
    }
    for k in 0..12 {
        steps.push(Step::Get(k));
        steps.push(Step::Get(k));
        steps.push(Step::Put(k));
    }
    // Log entries not drained yet: the next GETs after eviction read them.
    for k in 0..12 {
        steps.push(Step::Get(k));
    }
    run(&steps, 1);
    // The same, counted.
    let mut m = mem(1);
    let mut dev = Engine::new();
    dev.take_config(&mut m, &config(1, 1), 1 << 20);
    let t = HostTable::new(HOST_BUCKETS, 0x5eed).unwrap();
    for k in 0..8 {
        t.insert(&mut m.host, &key(k), b"v").unwrap();
    }
    for k in 0..8 {
        dev.serve(&mut m, &request(REQ_GET, &key(k), &[]));
        dev.serve(&mut m, &request(REQ_GET, &key(k), &[]));
    }
    for k in 0..8 {
        assert_eq!(
            dev.serve(&mut m, &request(REQ_PUT, &key(k), b"w")).status,
            STATUS_OK
        );
    }
    for k in 0..8 {
        assert_eq!(
            dev.serve(&mut m, &request(REQ_GET, &key(k), &[])).bytes(),
            b"w"
        );
    }
    // The 4-way bucket holds k4..k7 after the GETs; each PUT then misses
    // (its key was evicted by the one 4 before it) and evicts; the last
    // GETs find each value in the undrained log, and evict again.
    let st = *dev.stats();
    assert_eq!(st.hits, 8, "the second GET of each");
    assert_eq!(st.misses, 8 + 8, "the first GET and the PUT of each");
    assert_eq!(st.log_hits, 8, "the last GETs, from the log");
    assert_eq!(st.evictions, 4 + 8 + 8);
    assert_eq!(st.installs, 8 + 8 + 8);
    assert_eq!(st.log_records, 8);
    let probes: u64 = (1..=8).map(|k| host_probes(&t, &m, k)).sum();
    assert_eq!(st.host_reads, 2 * probes);
}

/// Slots the device reads to find key `k` in the host table.
fn host_probes(t: &HostTable, m: &Mem, k: u8) -> u64 {
    let (slot, _) = t.find(&m.host, &key(k - 1)).unwrap();
    let b = cxlnic_ring::kvs::buckets(
        cxlnic_ring::kvs::key_hash(t.seed(), &key(k - 1)),
        t.buckets(),
    );
    if slot / WAYS == b.first {
        u64::from(slot % WAYS + 1)
    } else {
        u64::from(WAYS + slot % WAYS + 1)
    }
}

/// The device meets the driver mid-write: it retries, and answers busy
/// only after `READ_TRIES` torn reads of one slot.
#[test]
fn torn_host_reads_are_retried_then_busy() {
    let mut m = mem(1);
    let mut dev = Engine::new();
    dev.take_config(&mut m, &config(1, 1), 1 << 20);
    let t = HostTable::new(HOST_BUCKETS, 0x5eed).unwrap();
    let (slot, _) = (t.insert(&mut m.host, b"k", b"v").unwrap(), ());
    assert!(slot < HOST_BUCKETS * WAYS);
    // Two of the three loads of the first try see an odd version.
    m.torn = 2;
    let a = dev.serve(&mut m, &request(REQ_GET, b"k", &[]));
    assert_eq!((a.status, a.bytes()), (STATUS_OK, &b"v"[..]));
    assert!(dev.stats().torn_reads >= 1);
    // Every load odd: busy, never a torn value.
    let mut dev = Engine::new();
    dev.take_config(&mut m, &config(2, 1), 1 << 20);
    m.torn = u32::MAX;
    let a = dev.serve(&mut m, &request(REQ_GET, b"k", &[]));
    assert_eq!(a.status, STATUS_BUSY);
    assert_eq!(dev.stats().torn_reads, u64::from(READ_TRIES));
}

/// A log the driver never drains fills: network PUTs are answered busy
/// and logged nothing, GETs still answer; a drain frees it.
#[test]
fn a_full_log_makes_puts_busy_until_drained() {
    let mut m = mem(1);
    let mut dev = Engine::new();
    dev.take_config(&mut m, &config(1, 1), 1 << 20);
    let t = HostTable::new(HOST_BUCKETS, 0x5eed).unwrap();
    t.insert(&mut m.host, b"k", b"v").unwrap();
    for i in 0..LOG_ENTRIES {
        let v = i.to_le_bytes();
        assert_eq!(
            dev.serve(&mut m, &request(REQ_PUT, b"k", &v)).status,
            STATUS_OK
        );
    }
    assert_eq!(
        dev.serve(&mut m, &request(REQ_PUT, b"k", b"x")).status,
        STATUS_BUSY
    );
    let last = (LOG_ENTRIES - 1).to_le_bytes();
    assert_eq!(
        dev.serve(&mut m, &request(REQ_GET, b"k", &[])).bytes(),
        last
    );
    let mut drv = Driver {
        table: t,
        log_head: 0,
        cmd_tail: 0,
        waiting: None,
        bad: 0,
    };
    drv.drain(&mut m);
    assert_eq!(drv.bad, 0);
    assert_eq!(t.find(&m.host, b"k").unwrap().1.value(), last);
    assert_eq!(
        dev.serve(&mut m, &request(REQ_PUT, b"k", b"x")).status,
        STATUS_OK
    );
}

/// A new config starts afresh: the cache empty, both rings at 0.
#[test]
fn a_new_config_empties_the_cache() {
    let mut m = mem(1);
    let mut dev = Engine::new();
    dev.take_config(&mut m, &config(1, 1), 1 << 20);
    let t = HostTable::new(HOST_BUCKETS, 0x5eed).unwrap();
    t.insert(&mut m.host, b"k", b"v").unwrap();
    dev.serve(&mut m, &request(REQ_GET, b"k", &[]));
    assert!(m.cache.iter().any(|r| r.op == OP_PUT));
    assert!(
        !dev.take_config(&mut m, &config(1, 1), 1 << 20),
        "the same gen is no new config"
    );
    assert!(dev.take_config(&mut m, &config(2, 1), 1 << 20));
    assert!(m.cache.iter().all(|r| r.op != OP_PUT));
    let bad = KvsConfig {
        host_table: 1 << 20,
        ..config(3, 1)
    };
    assert!(dev.take_config(&mut m, &bad, 1 << 20));
    assert_eq!((m.device.cfg_ack, m.device.cfg_status), (3, 3));
    assert!(!dev.enabled());
}

/// The seqlock at word granularity: a writer replacing a record word by
/// word and a reader copying it word by word, interleaved as `order`
/// says (true: the writer's turn). Every copy the reader keeps must be
/// one whole record, old or new. Returns how many it kept.
fn seqlock_run(order: &[bool], old: &[u32; 32], new: &[u32; 32]) -> u32 {
    let mut mem = *old;
    let (odd, even) = write_versions(old[0]);
    let mut writes: Vec<(usize, u32)> = vec![(0, odd)];
    writes.extend((1..32).map(|i| (i, new[i])));
    writes.push((0, even));
    let mut w = writes.into_iter();
    let mut final_new = *new;
    final_new[0] = even;
    let (want_old, want_new) = (as_record(old), as_record(&final_new));
    let (mut step, mut before, mut body, mut kept) = (0usize, 0u32, [0u32; 32], 0);
    // After `order`, the reader alone: two whole reads at least.
    for &writer in order.iter().chain(std::iter::repeat(&false).take(66)) {
        if writer {
            if let Some((i, v)) = w.next() {
                mem[i] = v;
            }
            continue;
        }
        match step {
            0 => before = mem[0],
            1..=31 => body[step] = mem[step],
            _ => {
                let after = mem[0];
                body[0] = before;
                let copy = Record::decode(&words_to_bytes(&body));
                if let Ok(r) = read_stable(before, &copy, after) {
                    let got = r.encode();
                    assert!(got == want_old || got == want_new, "a torn record kept");
                    kept += 1;
                }
                step = 0;
                continue;
            }
        }
        step += 1;
    }
    kept
}

fn words_to_bytes(w: &[u32; 32]) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    for (i, v) in w.iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// The record `w` holds, as a reader decodes it.
fn as_record(w: &[u32; 32]) -> [u8; RECORD_BYTES] {
    Record::decode(&words_to_bytes(w)).encode()
}

fn seqlock_pair(version: u32, a: &[u32; 31], b: &[u32; 31]) -> ([u32; 32], [u32; 32]) {
    let mut old = [0u32; 32];
    let mut new = [0u32; 32];
    old[0] = version;
    old[1..].copy_from_slice(a);
    new[1..].copy_from_slice(b);
    (old, new)
}

/// The reader keeps a copy when the writer is not at work, old or new.
#[test]
fn seqlock_keeps_quiet_reads() {
    let (old, new) = seqlock_pair(4, &[1; 31], &[2; 31]);
    assert_eq!(seqlock_run(&[], &old, &new), 2);
    assert_eq!(seqlock_run(&[true; 33], &old, &new), 2);
    // The writer mid-way for good: nothing kept.
    assert_eq!(seqlock_run(&[true; 10], &old, &new), 0);
}

proptest! {
    #[test]
    fn seqlock_copies_are_whole(order in prop::collection::vec(any::<bool>(), 0..120),
                                a in any::<[u32; 31]>(), b in any::<[u32; 31]>(),
                                version in (0u32..1000).prop_map(|v| v * 2)) {
        let (old, new) = seqlock_pair(version, &a, &b);
        seqlock_run(&order, &old, &new);
    }
}

/// Two choices, the emptier bucket and one cuckoo step: a table takes
/// most of its slots before it first refuses a key (first fit into the
/// first choice refused at about 49 %, the emptier bucket alone at 65 %).
#[test]
fn a_host_table_fills_before_it_refuses() {
    for seed in 1..6u64 {
        let t = HostTable::new(1024, seed).unwrap();
        let mut host = SimSlots {
            slots: vec![Record::default(); (t.slots()) as usize],
            moves: 0,
        };
        let mut n = 0u32;
        while t
            .insert(&mut host, format!("k{n}").as_bytes(), b"v")
            .is_ok()
        {
            n += 1;
        }
        let fill = n as f64 / t.slots() as f64;
        eprintln!("seed {seed}: first refusal at {:.1} % full", fill * 100.0);
        assert!(
            fill > 0.78,
            "seed {seed}: first refusal at {:.1} % full",
            fill * 100.0
        );
        // Every key inserted is found, in its slot.
        for i in (0..n).step_by(97) {
            assert!(t.find(&host, format!("k{i}").as_bytes()).is_some());
        }
    }
}

/// While the driver moves a pair (its `moves` word odd), a lookup that
/// finds nothing is not taken for "absent": retried, then busy.
#[test]
fn absent_while_pairs_move_is_busy_not_not_found() {
    let mut m = mem(1);
    let mut dev = Engine::new();
    dev.take_config(&mut m, &config(1, 1), 1 << 20);
    m.host.moves = 3;
    let a = dev.serve(&mut m, &request(REQ_GET, b"absent", &[]));
    assert_eq!(a.status, STATUS_BUSY);
    assert_eq!(dev.stats().torn_reads, u64::from(READ_TRIES));
    m.host.moves = 4;
    let a = dev.serve(&mut m, &request(REQ_GET, b"absent", &[]));
    assert_eq!(a.status, STATUS_NOT_FOUND);
}

/// A pair moved to its other bucket after the device learnt its slot:
/// the device's log entry (naming the old slot) still applies, by key.
#[test]
fn a_log_entry_follows_a_moved_pair() {
    // The first seed whose fill moves a pair.
    for seed in 1..200 {
        let t = HostTable::new(8, seed).unwrap();
        let mut host = SimSlots {
            slots: vec![Record::default(); 32],
            moves: 0,
        };
        let mut placed = vec![];
        while let Ok(slot) = t.insert(&mut host, format!("m{}", placed.len()).as_bytes(), b"v") {
            placed.push(slot);
        }
        let Some(moved) = (0..placed.len())
            .find(|&i| t.find(&host, format!("m{i}").as_bytes()).unwrap().0 != placed[i])
        else {
            assert_eq!(host.moves, 0, "moves counted, none made");
            continue;
        };
        assert!(
            host.moves > 0 && host.moves % 2 == 0,
            "moves bracketed: {}",
            host.moves
        );
        let key = format!("m{moved}").into_bytes();
        let mut log = Record::pair(&key, b"new").unwrap();
        log.op = OP_PUT;
        log.slot = placed[moved];
        assert_eq!(
            t.apply(&mut host, &log),
            Ok(cxlnic_ring::kvs::Applied::Written)
        );
        assert_eq!(t.find(&host, &key).unwrap().1.value(), b"new");
        return;
    }
    panic!("no seed moved a pair");
}
