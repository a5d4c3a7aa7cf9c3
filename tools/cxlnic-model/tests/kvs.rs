//! The key-value offload (#29) in the device model, as a driver and a
//! network client see it: port 1 serves the store (its driver keeps the
//! host table in guest RAM and enables the offload through BAR2), and
//! port 0's driver, linked to it, is the client: it sends requests out
//! of its TX ring and finds the answers in its RX ring.

// Shared with `model.rs`, which uses all of it.
#[allow(dead_code)]
mod driver;

use cxlnic_model::ivshmem::{client_setup, ClientSetup};
use cxlnic_model::mem::Shared;
use cxlnic_model::model::{Command, Model, PortOptions};
use cxlnic_model::port::PortSpec;
use cxlnic_ring::device::{ConfigError as NicConfigError, MODE_TYPE1, MODE_TYPE2, VECTORS};
use cxlnic_ring::index::ready_tag;
use cxlnic_ring::kvs::{
    self, ConfigError, DeviceLine, HostSlots, HostTable, KvsConfig, KvsStats, Record, AREA_BYTES,
    CMD_OFFSET, DEVICE_LINE_OFFSET, DRIVER_LINE_OFFSET, LINE_BYTES, LOG_OFFSET, OP_DEL, OP_PUT,
    RECORD_BYTES, REQ_GET, REQ_PUT, STATS_BYTES, STATUS_NOT_FOUND, STATUS_OK,
};
use driver::Driver;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{fence, Ordering};

/// BAR2 of a port, as the model serves it by default.
const BAR: usize = 16 << 20;
const RAM: u64 = 8 << 20;
/// Where port 1's driver keeps its host table in guest RAM.
const TABLE: u64 = 4 << 20;
const HOST_BUCKETS: u32 = 16;
const SEED: u64 = 0x5eed_1234_abcd_0042;

const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0];
const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const CLIENT_IP: [u8; 4] = [10, 0, 0, 1];
const SERVER_IP: [u8; 4] = [10, 0, 0, 2];
const CLIENT_PORT: u16 = 40000;
const KVS_PORT: u16 = kvs::DEFAULT_PORT;

struct Bed {
    model: Model,
    clients: Vec<ClientSetup>,
    rams: Vec<std::fs::File>,
    bar: usize,
    _dir: tempfile::TempDir,
}

/// Two linked ports with BAR2s of `bar` bytes, each with a "QEMU".
fn bed(bar: usize) -> Bed {
    try_bed(bar, |i, o| o.link = Some(1 - i)).unwrap()
}

/// Two ports whose backends `backend` sets, each with a "QEMU"; the
/// model's error if it refuses them.
fn try_bed(bar: usize, backend: impl Fn(usize, &mut PortOptions)) -> anyhow::Result<Bed> {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = vec![];
    let mut rams = vec![];
    for i in 0..2 {
        let p = dir.path().join(format!("ram{i}"));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        f.set_len(RAM).unwrap();
        rams.push(f);
        let mut o = PortOptions {
            socket: dir.path().join(format!("p{i}.sock")),
            bar_bytes: bar,
            ram: Some(p),
            spec: PortSpec {
                mac: [2, 0, 0, 0, 0, i as u8],
                queues_max: 1,
                speed_mbps: 1000,
            },
            link: None,
            tap: None,
        };
        backend(i, &mut o);
        opts.push(o);
    }
    let mut model = Model::new(&opts, None)?;
    let socks: Vec<UnixStream> = opts
        .iter()
        .map(|o| UnixStream::connect(&o.socket).unwrap())
        .collect();
    model.accept().unwrap();
    let clients = socks
        .iter()
        .map(|s| client_setup(s, VECTORS as usize).unwrap())
        .collect();
    Ok(Bed {
        model,
        clients,
        rams,
        bar,
        _dir: dir,
    })
}

impl Bed {
    fn dev(&self, i: usize) -> Shared {
        Shared::map(&self.clients[i].shm, 0, self.bar).unwrap()
    }

    fn ram(&self, i: usize) -> Shared {
        Shared::map(&self.rams[i], 0, RAM as usize).unwrap()
    }

    fn driver(&self, i: usize, mode: u32) -> Driver {
        Driver::new(self.dev(i), self.ram(i), mode, 8, 1)
    }

    fn pass(&mut self, n: usize) {
        for _ in 0..n {
            self.model.pass(false).unwrap();
        }
    }

    /// Port 1's driver-side RX counters.
    fn server_rx_frames(&mut self) -> u64 {
        self.model.port_mut(1).unwrap().stats(0).unwrap().rx_frames
    }
}

/// The host table's slots in guest RAM, as port 1's driver writes them.
struct Slots {
    ram: Shared,
    base: u64,
    n: u32,
}

impl HostSlots for Slots {
    fn read(&self, i: u32) -> Option<Record> {
        if i >= self.n {
            return None;
        }
        let mut raw = [0u8; RECORD_BYTES];
        self.ram
            .read(self.base + u64::from(i) * RECORD_BYTES as u64, &mut raw)
            .unwrap();
        Some(Record::decode(&raw))
    }

    fn write(&mut self, i: u32, odd: u32, r: &Record) {
        let at = self.base + u64::from(i) * RECORD_BYTES as u64;
        self.ram.store(at, odd).unwrap();
        fence(Ordering::Release);
        self.ram.write(at + 4, &r.encode()[4..]).unwrap();
        self.ram.store(at, r.word).unwrap();
    }

    // These tests never fill a bucket: no pair moves.
    fn moves(&self) -> u32 {
        0
    }

    fn set_moves(&mut self, _moves: u32) {}
}

/// Port 1's driver, its KVS side: the host table and the KVS area.
struct Store {
    dev: Shared,
    base: u64,
    table: HostTable,
    slots: Slots,
    gen: u32,
    cmd_tail: u32,
    log_head: u32,
}

impl Store {
    /// Port `port`'s store, its KVS area at `base` in BAR2.
    fn new(b: &Bed, port: usize, base: u32) -> Store {
        let dev = b.dev(port);
        assert_ne!(base, 0, "the port has an offload");
        let base = u64::from(base);
        Store {
            dev,
            base,
            table: HostTable::new(HOST_BUCKETS, SEED).unwrap(),
            slots: Slots {
                ram: b.ram(port),
                base: TABLE,
                n: HOST_BUCKETS * kvs::WAYS,
            },
            gen: 0,
            cmd_tail: 0,
            log_head: 0,
        }
    }

    /// The config this driver would send to enable the offload.
    fn config(&self, cache_buckets: u32) -> KvsConfig {
        KvsConfig {
            gen: 0,
            enable: 1,
            udp_port: KVS_PORT,
            _pad: 0,
            ipv4: SERVER_IP,
            cache_buckets,
            host_buckets: HOST_BUCKETS,
            host_table: TABLE,
            hash_seed: SEED,
        }
    }

    /// Writes `c` with a new generation, stored last.
    fn configure(&mut self, c: &KvsConfig) {
        self.gen += 1;
        // A fresh start: the command ring zeroed, the driver line at 0.
        self.dev
            .write(
                self.base + u64::from(CMD_OFFSET),
                &vec![0u8; kvs::CMD_ENTRIES as usize * RECORD_BYTES],
            )
            .unwrap();
        self.cmd_tail = 0;
        self.log_head = 0;
        self.store_driver_line();
        let raw = c.encode();
        self.dev.write(self.base + 4, &raw[4..]).unwrap();
        self.dev.store(self.base, self.gen).unwrap();
    }

    fn enable(&mut self, cache_buckets: u32) {
        let c = self.config(cache_buckets);
        self.configure(&c);
    }

    fn store_driver_line(&self) {
        let at = self.base + u64::from(DRIVER_LINE_OFFSET);
        self.dev.store(at, self.cmd_tail).unwrap();
        self.dev.store(at + 4, self.log_head).unwrap();
    }

    fn device_line(&self) -> DeviceLine {
        let mut raw = [0u8; LINE_BYTES];
        self.dev
            .read(self.base + u64::from(DEVICE_LINE_OFFSET), &mut raw)
            .unwrap();
        DeviceLine::decode(&raw)
    }

    /// The device's answer to the last config, once it acked it.
    fn answer(&self) -> Option<u32> {
        let l = self.device_line();
        (l.cfg_ack == self.gen).then_some(l.cfg_status)
    }

    /// The counters the device published in BAR2.
    fn stats(&self) -> KvsStats {
        let mut raw = [0u8; STATS_BYTES];
        self.dev
            .read(self.base + u64::from(kvs::STATS_OFFSET), &mut raw)
            .unwrap();
        KvsStats::decode(&raw)
    }

    fn insert(&mut self, key: &[u8], value: &[u8]) -> u32 {
        self.table.insert(&mut self.slots, key, value).unwrap()
    }

    fn find(&self, key: &[u8]) -> Option<(u32, Record)> {
        self.table.find(&self.slots, key)
    }

    fn log(&self, index: u32) -> Record {
        let slot = index % kvs::LOG_ENTRIES;
        let mut raw = [0u8; RECORD_BYTES];
        let at = self.base + u64::from(LOG_OFFSET) + u64::from(slot) * RECORD_BYTES as u64;
        self.dev.read(at, &mut raw).unwrap();
        Record::decode(&raw)
    }

    /// Posts a command: the record, then its ready tag, last.
    fn post(&mut self, op: u8, key: &[u8], value: &[u8], slot: u32) {
        let mut r = Record::pair(key, value).unwrap();
        r.op = op;
        r.slot = slot;
        r.word = ready_tag(self.cmd_tail);
        let at = self.base
            + u64::from(CMD_OFFSET)
            + u64::from(self.cmd_tail % kvs::CMD_ENTRIES) * RECORD_BYTES as u64;
        self.dev.write(at + 4, &r.encode()[4..]).unwrap();
        self.dev.store(at, r.word).unwrap();
        self.cmd_tail += 1;
        self.store_driver_line();
    }

    /// Applies the device's log to the host table, as the driver does
    /// before each operation; returns the records applied.
    fn drain(&mut self) -> u32 {
        let tail = self.device_line().log_tail;
        let mut n = 0;
        while self.log_head != tail {
            let r = self.log(self.log_head);
            assert_eq!(r.word, ready_tag(self.log_head), "log {}", self.log_head);
            self.table.apply(&mut self.slots, &r).unwrap();
            self.log_head += 1;
            n += 1;
        }
        self.store_driver_line();
        n
    }
}

/// The ones' complement sum of `data`, unfolded, added to `sum`.
fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    for w in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The UDP checksum of `udp` (its checksum field zero) between `src`
/// and `dst`.
fn udp_sum(src: [u8; 4], dst: [u8; 4], udp: &[u8]) -> u16 {
    let s = sum16(sum16(sum16(0, &src), &dst), udp) + 17 + udp.len() as u32;
    match fold(s) {
        0 => 0xffff,
        c => c,
    }
}

/// An Ethernet/IPv4/UDP frame from the client to `dst_ip`:`dport`
/// carrying `payload`, both checksums right.
fn datagram(dst_ip: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let mut f = vec![];
    f.extend_from_slice(&SERVER_MAC);
    f.extend_from_slice(&CLIENT_MAC);
    f.extend_from_slice(&[0x08, 0x00]);
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0, 0]);
    ip.extend_from_slice(&CLIENT_IP);
    ip.extend_from_slice(&dst_ip);
    let s = fold(sum16(0, &ip));
    ip[10..12].copy_from_slice(&s.to_be_bytes());
    f.extend_from_slice(&ip);
    let mut udp = vec![];
    udp.extend_from_slice(&CLIENT_PORT.to_be_bytes());
    udp.extend_from_slice(&dport.to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let s = udp_sum(CLIENT_IP, dst_ip, &udp);
    udp[6..8].copy_from_slice(&s.to_be_bytes());
    f.extend_from_slice(&udp);
    f
}

/// A request message: header, key, value (lengths as given).
fn message(op: u8, id: u32, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut m = b"KV".to_vec();
    m.extend_from_slice(&[1, op]);
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&[key.len() as u8, 0]);
    m.extend_from_slice(&(value.len() as u16).to_le_bytes());
    m.extend_from_slice(key);
    m.extend_from_slice(value);
    m
}

fn request(op: u8, id: u32, key: &[u8], value: &[u8]) -> Vec<u8> {
    datagram(SERVER_IP, KVS_PORT, &message(op, id, key, value))
}

/// An answer as the client reads it.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    op: u8,
    id: u32,
    status: u8,
    value: Vec<u8>,
}

/// The answer in `f`, after checking it is one, addressed to the client
/// from the server, with both checksums right.
fn answer(f: &[u8]) -> Answer {
    assert_eq!(&f[..6], &CLIENT_MAC, "to the client");
    assert_eq!(&f[6..12], &SERVER_MAC, "from the server port");
    assert_eq!(&f[12..14], &[0x08, 0x00]);
    let ip = &f[14..34];
    assert_eq!(fold(sum16(0, ip)), 0, "IPv4 checksum");
    assert_eq!(ip[9], 17);
    assert_eq!((&ip[12..16], &ip[16..20]), (&SERVER_IP[..], &CLIENT_IP[..]));
    assert_eq!(
        usize::from(u16::from_be_bytes([ip[2], ip[3]])),
        f.len() - 14
    );
    let udp = &f[34..];
    assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), KVS_PORT);
    assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), CLIENT_PORT);
    assert_eq!(usize::from(u16::from_be_bytes([udp[4], udp[5]])), udp.len());
    let s = sum16(sum16(sum16(0, &SERVER_IP), &CLIENT_IP), udp) + 17 + udp.len() as u32;
    assert_eq!(fold(s), 0, "UDP checksum");
    let m = &udp[8..];
    assert_eq!(&m[..3], b"KV\x01");
    let val_len = usize::from(u16::from_le_bytes([m[10], m[11]]));
    assert_eq!(m.len(), 12 + val_len);
    Answer {
        op: m[3],
        id: u32::from_le_bytes([m[4], m[5], m[6], m[7]]),
        status: m[8],
        value: m[12..].to_vec(),
    }
}

/// The two linked ports: port 1 (type2) serves the store, its host
/// table empty and the offload not enabled yet; port 0 (type1) is the
/// client, its RX buffers posted.
fn store_bed() -> (Bed, Driver, Driver, Store) {
    let mut b = bed(BAR);
    let mut client = b.driver(0, MODE_TYPE1);
    let mut server = b.driver(1, MODE_TYPE2);
    client.configure();
    server.configure();
    b.pass(2);
    assert_eq!((client.answer(), server.answer()), (Some(0), Some(0)));
    client.post_rx(0);
    server.post_rx(0);
    let store = Store::new(&b, 1, server.header().kvs_offset);
    (b, client, server, store)
}

/// Sends `frames` from the client, a ring's worth a pass, and returns
/// what the client received.
fn exchange(b: &mut Bed, client: &mut Driver, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut got = vec![];
    for burst in frames.chunks(8) {
        for f in burst {
            assert!(client.send(0, f));
        }
        client.flush(0);
        b.pass(1);
        let (frames, refused) = client.receive(0);
        assert_eq!(refused, 0);
        got.extend(frames);
        client.post_rx(0);
        assert!(client.tx_done(0).is_some());
    }
    got
}

/// One request, one answer.
fn ask(b: &mut Bed, client: &mut Driver, op: u8, id: u32, key: &[u8], value: &[u8]) -> Answer {
    let got = exchange(b, client, &[request(op, id, key, value)]);
    assert_eq!(got.len(), 1, "one answer to request {id}");
    let a = answer(&got[0]);
    assert_eq!((a.op, a.id), (op | kvs::REQ_ANSWER, id));
    a
}

fn ok(value: &[u8]) -> (u8, Vec<u8>) {
    (STATUS_OK, value.to_vec())
}

fn status(a: &Answer) -> (u8, Vec<u8>) {
    (a.status, a.value.clone())
}

#[test]
fn the_header_names_the_area_and_rings_stay_below_it() {
    let mut b = bed(BAR);
    let mut d = b.driver(1, MODE_TYPE2);
    let h = d.header();
    let kvs_offset = BAR as u64 - u64::from(AREA_BYTES);
    assert_eq!(u64::from(h.kvs_offset), kvs_offset);
    assert_eq!(h.kvs_bytes, AREA_BYTES);
    let good = d.config();
    let len = u64::from(good.queue[0].rx_area_len);
    // A type2 area reaching into the KVS area is refused, one ending at
    // its start taken.
    for (addr, want) in [
        (kvs_offset, Some(NicConfigError::Placement.code())),
        (
            kvs_offset - len + 64,
            Some(NicConfigError::Placement.code()),
        ),
        (kvs_offset - len, Some(0)),
    ] {
        let mut c = good;
        c.queue[0].rx_area.addr = addr;
        d.configure_with(&c);
        b.pass(1);
        assert_eq!(d.answer(), want, "rx area at {addr:#x}");
    }
    // A BAR2 with no room for the area has no offload.
    let small = bed(1 << 20);
    let h = small.driver(0, MODE_TYPE2).header();
    assert_eq!((h.kvs_offset, h.kvs_bytes), (0, 0));
    let v = serde_json::to_value(small.model.stats()).unwrap();
    assert!(v[0].get("kvs").is_none(), "{v}");
}

#[test]
fn a_get_misses_to_the_host_table_then_hits() {
    let (mut b, mut client, mut server, mut store) = store_bed();
    store.insert(b"apple", b"red");
    store.enable(4);
    b.pass(1);
    assert_eq!(store.answer(), Some(0));

    let a = ask(&mut b, &mut client, REQ_GET, 1, b"apple", b"");
    assert_eq!(status(&a), ok(b"red"));
    let s = store.stats();
    assert_eq!((s.requests, s.gets, s.hits), (1, 1, 0));
    assert_eq!((s.misses, s.installs, s.answers), (1, 1, 1));
    assert!(s.host_reads >= 1, "{s:?}");
    let reads = s.host_reads;

    // The same key again: from the cache, no host access.
    let a = ask(&mut b, &mut client, REQ_GET, 2, b"apple", b"");
    assert_eq!(status(&a), ok(b"red"));
    let s = store.stats();
    assert_eq!((s.hits, s.misses, s.host_reads), (1, 1, reads));

    // A key nobody has.
    let a = ask(&mut b, &mut client, REQ_GET, 3, b"pear", b"");
    assert_eq!(status(&a), (STATUS_NOT_FOUND, vec![]));
    let s = store.stats();
    assert_eq!((s.not_found, s.misses, s.answers), (1, 2, 3));

    // None of it reached the server's RX ring.
    assert_eq!(b.server_rx_frames(), 0);
    assert_eq!(server.receive(0).0.len(), 0);

    // The counters on the control socket, by name.
    let v = b.model.command(Command::Stats);
    let k = &v[1]["kvs"];
    assert_eq!(k["enabled"], true, "{v}");
    assert_eq!(k["hits"], 1, "{k}");
    assert_eq!(k["misses"], 2, "{k}");
    assert_eq!(k["answers"], 3, "{k}");
    for name in kvs::KVS_STATS_NAMES {
        assert!(k.get(name).is_some(), "{name} in {k}");
    }
    assert_eq!(v[0]["kvs"]["enabled"], false, "port 0 does not serve");
}

#[test]
fn a_put_updates_the_value_and_logs_it() {
    let (mut b, mut client, _server, mut store) = store_bed();
    let slot = store.insert(b"k1", b"one");
    store.enable(4);
    b.pass(1);

    let a = ask(&mut b, &mut client, REQ_PUT, 7, b"k1", b"uno");
    assert_eq!(status(&a), ok(b""));
    let a = ask(&mut b, &mut client, REQ_GET, 8, b"k1", b"");
    assert_eq!(status(&a), ok(b"uno"));
    let s = store.stats();
    assert_eq!((s.puts, s.log_records), (1, 1));

    // The write is in the log, whole, for the driver to apply.
    assert_eq!(store.device_line().log_tail, 1);
    let r = store.log(0);
    assert_eq!(r.word, ready_tag(0));
    assert!(r.well_formed());
    assert_eq!(
        (r.op, r.key(), r.value()),
        (OP_PUT, &b"k1"[..], &b"uno"[..])
    );
    assert_eq!((r.slot, r.stamp), (slot, 0), "a network PUT's slot");
    // The host table still holds the old value until the driver drains.
    assert_eq!(store.find(b"k1").unwrap().1.value(), b"one");
    assert_eq!(store.drain(), 1);
    assert_eq!(store.find(b"k1").unwrap().1.value(), b"uno");

    // A PUT of a key the store does not have: not found, nothing logged.
    let a = ask(&mut b, &mut client, REQ_PUT, 9, b"k2", b"two");
    assert_eq!(a.status, STATUS_NOT_FOUND);
    assert_eq!(store.device_line().log_tail, 1);
    assert!(store.find(b"k2").is_none());
    let a = ask(&mut b, &mut client, REQ_GET, 10, b"k2", b"");
    assert_eq!(a.status, STATUS_NOT_FOUND);
}

#[test]
fn a_one_bucket_cache_evicts_and_every_key_keeps_its_value() {
    let (mut b, mut client, _server, mut store) = store_bed();
    let keys: Vec<(Vec<u8>, Vec<u8>)> = (0..12u32)
        .map(|i| {
            (
                format!("key-{i}").into_bytes(),
                format!("value {i}").into_bytes(),
            )
        })
        .collect();
    for (k, v) in &keys {
        store.insert(k, v);
    }
    store.enable(1);
    b.pass(1);
    assert_eq!(store.answer(), Some(0));
    let mut id = 0;
    for (round, step) in [1, 5, 7].into_iter().enumerate() {
        for j in 0..keys.len() {
            // Every key, in another order each round.
            let (k, v) = &keys[(j * step) % keys.len()];
            id += 1;
            let a = ask(&mut b, &mut client, REQ_GET, id, k, b"");
            assert_eq!(status(&a), ok(v), "round {round} key {k:?}");
        }
    }
    let s = store.stats();
    assert_eq!(s.gets, 36);
    assert_eq!(s.hits + s.misses, 36, "{s:?}");
    // Each miss brings its key in; past the bucket's four ways, over
    // the least recently used.
    assert_eq!(s.installs, s.misses, "{s:?}");
    assert_eq!(s.evictions, s.misses - u64::from(kvs::WAYS), "{s:?}");
    assert!(s.evictions >= 20, "{s:?}");
}

#[test]
fn host_commands_are_taken_in_order() {
    let (mut b, mut client, _server, mut store) = store_bed();
    let s1 = store.insert(b"k1", b"one");
    let s2 = store.insert(b"k2", b"two");
    store.enable(4);
    b.pass(1);
    // k1 in the cache first: the command must update it there.
    assert_eq!(
        status(&ask(&mut b, &mut client, REQ_GET, 1, b"k1", b"")),
        ok(b"one")
    );

    store.post(OP_PUT, b"k1", b"ONE", s1);
    store.post(OP_DEL, b"k2", b"", s2);
    b.pass(1);
    let line = store.device_line();
    assert_eq!((line.cmd_head, line.log_tail), (2, 2));
    assert_eq!(store.stats().commands, 2);
    // Each logged, stamped with its command's tag.
    let (r0, r1) = (store.log(0), store.log(1));
    assert_eq!(
        (r0.op, r0.key(), r0.value()),
        (OP_PUT, &b"k1"[..], &b"ONE"[..])
    );
    assert_eq!((r1.op, r1.key(), r1.slot), (OP_DEL, &b"k2"[..], s2));
    assert_eq!((r0.stamp, r1.stamp), (1, 2));

    // The device answers with them before the driver applied them.
    assert_eq!(
        status(&ask(&mut b, &mut client, REQ_GET, 2, b"k1", b"")),
        ok(b"ONE")
    );
    let a = ask(&mut b, &mut client, REQ_GET, 3, b"k2", b"");
    assert_eq!(a.status, STATUS_NOT_FOUND, "deleted, in the log");
    assert!(store.stats().log_hits >= 1);

    // Applied: the host table agrees.
    assert_eq!(store.drain(), 2);
    assert_eq!(store.find(b"k1").unwrap().1.value(), b"ONE");
    assert!(store.find(b"k2").is_none());
    let a = ask(&mut b, &mut client, REQ_GET, 4, b"k2", b"");
    assert_eq!(a.status, STATUS_NOT_FOUND, "deleted, in the host table");

    // A command whose tag is not the next one's waits.
    let mut r = Record::pair(b"k1", b"late").unwrap();
    r.op = OP_PUT;
    r.slot = s1;
    r.word = ready_tag(7);
    let at = store.base + u64::from(CMD_OFFSET) + 2 * RECORD_BYTES as u64;
    store.dev.write(at + 4, &r.encode()[4..]).unwrap();
    store.dev.store(at, r.word).unwrap();
    b.pass(2);
    assert_eq!(store.device_line().cmd_head, 2);
    assert_eq!(
        status(&ask(&mut b, &mut client, REQ_GET, 5, b"k1", b"")),
        ok(b"ONE")
    );
}

#[test]
fn hostile_requests_are_dropped_and_counted() {
    let (mut b, mut client, mut server, mut store) = store_bed();
    store.insert(b"key", b"value");
    store.enable(4);
    b.pass(1);
    let udp_too_long = {
        let mut f = request(REQ_GET, 1, b"key", b"");
        let len = u16::from_be_bytes([f[38], f[39]]) + 40;
        f[38..40].copy_from_slice(&len.to_be_bytes());
        f
    };
    let bad_udp_sum = {
        let mut f = request(REQ_GET, 2, b"key", b"");
        f[40] ^= 0x5a;
        f
    };
    let bad_ip_sum = {
        let mut f = request(REQ_GET, 3, b"key", b"");
        f[24] ^= 0x01;
        f
    };
    let past_datagram = {
        // val_len says 10 bytes follow the key; none do.
        let mut m = message(REQ_PUT, 4, b"key", b"");
        m[10] = 10;
        datagram(SERVER_IP, KVS_PORT, &m)
    };
    let bad_magic = {
        let mut m = message(REQ_GET, 5, b"key", b"");
        m[1] = b'X';
        datagram(SERVER_IP, KVS_PORT, &m)
    };
    let hostile = vec![
        request(REQ_GET, 6, &[b'k'; 33], b""),
        request(REQ_PUT, 7, b"key", &[0u8; 65]),
        past_datagram,
        udp_too_long,
        request(3, 8, b"key", b""),
        request(REQ_GET | kvs::REQ_ANSWER, 9, b"key", b""),
        bad_magic,
        datagram(SERVER_IP, KVS_PORT, b"KV\x01"),
        bad_udp_sum,
        bad_ip_sum,
    ];
    let got = exchange(&mut b, &mut client, &hostile);
    assert!(got.is_empty(), "no answers: {got:?}");
    b.pass(1);
    let s = store.stats();
    assert_eq!((s.bad_key, s.bad_length, s.bad_op), (2, 2, 2), "{s:?}");
    assert_eq!((s.bad_header, s.bad_checksum), (2, 2), "{s:?}");
    assert_eq!((s.requests, s.answers), (0, 0), "{s:?}");
    assert_eq!(b.server_rx_frames(), 0, "none reached the RX ring");
    assert_eq!(server.receive(0).0.len(), 0);
    // The store still serves.
    let a = ask(&mut b, &mut client, REQ_GET, 10, b"key", b"");
    assert_eq!(status(&a), ok(b"value"));
}

#[test]
fn other_frames_take_the_normal_receive_path() {
    let (mut b, mut client, mut server, mut store) = store_bed();
    store.insert(b"key", b"value");
    store.enable(4);
    b.pass(1);
    let other_port = datagram(SERVER_IP, 9999, &message(REQ_GET, 1, b"key", b""));
    let other_ip = datagram([10, 0, 0, 9], KVS_PORT, &message(REQ_GET, 2, b"key", b""));
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&CLIENT_MAC);
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    arp.extend_from_slice(&CLIENT_MAC);
    arp.extend_from_slice(&CLIENT_IP);
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&SERVER_IP);
    let frames = vec![other_port, other_ip, arp];
    let got = exchange(&mut b, &mut client, &frames);
    assert!(got.is_empty(), "no answers");
    assert_eq!(server.receive(0).0, frames);
    assert_eq!(b.server_rx_frames(), 3);
    let s = store.stats();
    assert_eq!((s.requests, s.bad_header, s.bad_checksum), (0, 0, 0));
}

#[test]
fn a_config_the_device_cannot_run_is_refused() {
    let (mut b, mut client, mut server, mut store) = store_bed();
    store.insert(b"key", b"value");
    type Spoil = fn(&mut KvsConfig);
    let cases: [(Spoil, ConfigError); 5] = [
        (|c| c.host_table = RAM - 64, ConfigError::HostTable),
        (|c| c.host_table = u64::MAX - 63, ConfigError::HostTable),
        (|c| c.host_table = TABLE + 8, ConfigError::HostTable),
        (|c| c.cache_buckets = 3, ConfigError::Buckets),
        (|c| c.udp_port = 0, ConfigError::Enable),
    ];
    for (spoil, want) in cases {
        let mut c = store.config(4);
        spoil(&mut c);
        store.configure(&c);
        b.pass(1);
        assert_eq!(store.answer(), Some(want as u32), "{want:?}");
        assert!(!b.model.stats()[1].kvs.as_ref().unwrap().enabled);
        // Not serving: a request is a frame like any other.
        let got = exchange(&mut b, &mut client, &[request(REQ_GET, 1, b"key", b"")]);
        assert!(got.is_empty());
        assert_eq!(server.receive(0).0.len(), 1, "{want:?}");
        server.post_rx(0);
    }
    assert_eq!(store.stats().requests, 0);
    // A good one after them is taken.
    store.enable(4);
    b.pass(1);
    assert_eq!(store.answer(), Some(0));
    let a = ask(&mut b, &mut client, REQ_GET, 2, b"key", b"");
    assert_eq!(status(&a), ok(b"value"));
}

#[test]
fn a_reset_forgets_the_cache_and_waits_for_the_driver() {
    let (mut b, mut client, server, mut store) = store_bed();
    let slot = store.insert(b"key", b"value");
    store.enable(4);
    b.pass(1);
    assert_eq!(
        status(&ask(&mut b, &mut client, REQ_GET, 1, b"key", b"")),
        ok(b"value")
    );
    assert_eq!(
        status(&ask(&mut b, &mut client, REQ_GET, 2, b"key", b"")),
        ok(b"value")
    );
    store.post(OP_PUT, b"key", b"new", slot);
    b.pass(1);
    assert_eq!(store.device_line().cmd_head, 1);
    assert_eq!(store.drain(), 1);

    b.model.command(Command::Stop);
    b.model.command(Command::Start);
    // Counters gone, the config answered but not run, the command left
    // in the ring not replayed.
    let line = store.device_line();
    assert_eq!(
        (line.cfg_ack, line.cfg_status, line.cmd_head, line.log_tail),
        (store.gen, 0, 0, 0)
    );
    let s = b.model.stats()[1].kvs.clone().unwrap();
    assert!(!s.enabled);
    assert!(s.counters.values().all(|&v| v == 0), "{s:?}");

    // The NIC configured again (fresh rings, the generations going on),
    // but not the offload: requests are frames like any other.
    let (mut client, mut server) = {
        let (mut c, mut s) = (b.driver(0, MODE_TYPE1), b.driver(1, MODE_TYPE2));
        (c.gen, s.gen) = (client.gen, server.gen);
        for d in [&c, &s] {
            // A driver starting over zeroes its rings and lines.
            let q = d.queues[0].cfg;
            for loc in [q.tx_ring, q.rx_ring, q.rx_done] {
                d.write(&loc, 0, &[0; 8 * 16]);
            }
            d.write(&q.driver_line, 0, &[0; 64]);
            d.write(&q.device_line, 0, &[0; 64]);
        }
        c.configure();
        s.configure();
        (c, s)
    };
    b.pass(2);
    assert_eq!((client.answer(), server.answer()), (Some(0), Some(0)));
    assert_eq!(store.stats(), KvsStats::default(), "zero in BAR2 too");
    assert_eq!(store.device_line().cmd_head, 0, "no replay");
    client.post_rx(0);
    server.post_rx(0);
    let got = exchange(&mut b, &mut client, &[request(REQ_GET, 3, b"key", b"")]);
    assert!(got.is_empty());
    assert_eq!(server.receive(0).0.len(), 1);

    // The driver sends its config again: an empty cache, so a miss.
    store.enable(4);
    b.pass(1);
    assert_eq!(store.answer(), Some(0));
    assert_eq!(
        status(&ask(&mut b, &mut client, REQ_GET, 4, b"key", b"")),
        ok(b"new")
    );
    let s = store.stats();
    assert_eq!((s.hits, s.misses, s.installs), (0, 1, 1));
}

#[test]
fn a_request_to_a_hung_device_is_dropped_not_delivered_later() {
    let (mut b, mut client, mut server, mut store) = store_bed();
    store.insert(b"key", b"value");
    store.enable(4);
    b.pass(1);
    // A frame for the RX ring hangs the device as it takes the buffer;
    // a request comes while it hangs.
    b.model.command(Command::Inject {
        port: 1,
        fault: cxlnic_model::port::Inject::Hang,
    });
    let plain = datagram(SERVER_IP, 9999, b"plain");
    let got = exchange(&mut b, &mut client, std::slice::from_ref(&plain));
    assert!(got.is_empty());
    assert!(b.model.port_mut(1).unwrap().hung());
    let got = exchange(&mut b, &mut client, &[request(REQ_GET, 1, b"key", b"")]);
    assert!(got.is_empty(), "a hung device answers nothing");
    b.model.port_mut(1).unwrap().wake();
    b.pass(2);
    assert_eq!(server.receive(0).0, vec![plain], "only the plain frame");
    let s = store.stats();
    assert_eq!((s.requests, s.answers, s.answers_dropped), (0, 0, 1));
    // Awake, it serves again.
    let a = ask(&mut b, &mut client, REQ_GET, 2, b"key", b"");
    assert_eq!(status(&a), ok(b"value"));
}

/// Runs `ip` with `args`; whether it worked.
fn ip(args: &[&str]) -> bool {
    std::process::Command::new("ip")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_host_socket_gets_its_answer_through_a_tap_port() {
    let name = format!("cxlkv{}", std::process::id());
    if std::fs::metadata(cxlnic_model::tap::TUN_PATH).is_err() {
        println!("skipped: no {}", cxlnic_model::tap::TUN_PATH);
        return;
    }
    // Port 0 on a TAP serves the store to the host's own UDP stack.
    let mut b = match try_bed(BAR, |i, o| o.tap = (i == 0).then(|| name.clone())) {
        Ok(b) => b,
        Err(e) => {
            println!("skipped: a TAP port: {e:#}");
            return;
        }
    };
    let net = 10 + (std::process::id() % 200) as u8;
    let (host_ip, port_ip) = (format!("10.77.{net}.1"), format!("10.77.{net}.2"));
    let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
    let mac = "02:00:00:00:00:00";
    if !(ip(&["link", "set", &name, "up"])
        && ip(&["addr", "add", &format!("{host_ip}/24"), "dev", &name])
        && ip(&["neigh", "add", &port_ip, "lladdr", mac, "dev", &name]))
    {
        println!("skipped: cannot set up {name} with `ip`");
        return;
    }
    let mut d = b.driver(0, MODE_TYPE2);
    d.configure();
    b.pass(2);
    assert_eq!(d.answer(), Some(0));
    d.post_rx(0);
    let mut store = Store::new(&b, 0, d.header().kvs_offset);
    store.insert(b"host", b"a value for the host");
    let mut c = store.config(4);
    c.ipv4 = [0; 4];
    store.configure(&c);
    b.pass(1);
    assert_eq!(store.answer(), Some(0));

    let sock = std::net::UdpSocket::bind(format!("{host_ip}:0")).unwrap();
    sock.set_nonblocking(true).unwrap();
    let msg = message(REQ_GET, 77, b"host", b"");
    sock.send_to(&msg, format!("{port_ip}:{KVS_PORT}")).unwrap();
    let mut buf = [0u8; 256];
    let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut got = None;
    while got.is_none() && std::time::Instant::now() < end {
        b.pass(1);
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            got = Some((buf[..n].to_vec(), from));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let (m, from) = got.expect("the answer on the host's socket");
    assert_eq!(from.to_string(), format!("{port_ip}:{KVS_PORT}"));
    assert_eq!(&m[..4], &[b'K', b'V', 1, REQ_GET | kvs::REQ_ANSWER]);
    assert_eq!(u32::from_le_bytes([m[4], m[5], m[6], m[7]]), 77);
    assert_eq!(m[8], STATUS_OK);
    assert_eq!(&m[12..], b"a value for the host");
    let s = store.stats();
    assert_eq!((s.requests, s.hits, s.answers), (1, 0, 1));
    let tap = b.model.stats()[0].tap.unwrap();
    assert!(tap.frames_to_host >= 1, "{tap:?}");
    // Whatever else the host sent, the request did not reach the ring.
    let (frames, _) = d.receive(0);
    assert!(
        frames.iter().all(|f| !f.windows(2).any(|w| w == b"KV")),
        "{frames:?}"
    );
}
