//! The device publishes its log tail after a network PUT, as after a
//! command: the driver applies the log up to the published tail, so an
//! entry behind it would wait for the next host command, and a log
//! filled by network PUTs would answer "busy" for good.

use cxlnic_ring::kvs::*;

const HOST_BUCKETS: u32 = 16;

struct Mem {
    cache: Vec<Record>,
    log: Vec<Record>,
    cmd: Vec<Record>,
    host: Vec<Record>,
    driver: DriverLine,
    device: DeviceLine,
}

impl DeviceMemory for Mem {
    fn cache(&mut self, i: u32) -> Record {
        self.cache[i as usize]
    }
    fn set_cache(&mut self, i: u32, _odd: u32, r: &Record) {
        self.cache[i as usize] = *r;
    }
    fn log(&mut self, i: u32) -> Record {
        self.log[i as usize]
    }
    fn set_log(&mut self, i: u32, r: &Record) {
        self.log[i as usize] = *r;
    }
    fn cmd(&mut self, i: u32) -> Record {
        self.cmd[i as usize]
    }
    fn host_word(&mut self, i: u32) -> Option<u32> {
        self.host.get(i as usize).map(|r| r.word)
    }
    fn host(&mut self, i: u32) -> Option<Record> {
        self.host.get(i as usize).copied()
    }
    fn driver_line(&mut self) -> DriverLine {
        self.driver
    }
    fn set_device_line(&mut self, l: &DeviceLine) {
        self.device = *l;
    }
}

struct Slots<'a>(&'a mut Vec<Record>);

impl HostSlots for Slots<'_> {
    fn read(&self, i: u32) -> Option<Record> {
        self.0.get(i as usize).copied()
    }
    fn write(&mut self, i: u32, _odd: u32, r: &Record) {
        self.0[i as usize] = *r;
    }
}

fn reply() -> Reply {
    Reply {
        mac: [2, 0, 0, 0, 0, 1],
        client_ip: [10, 0, 0, 2],
        server_ip: [10, 0, 0, 1],
        client_port: 40000,
        server_port: DEFAULT_PORT,
    }
}

#[test]
fn a_network_put_publishes_the_log_tail() {
    let table = HostTable::new(HOST_BUCKETS, 7).unwrap();
    let mut mem = Mem {
        cache: vec![Record::default(); 16 * WAYS as usize],
        log: vec![Record::default(); LOG_ENTRIES as usize],
        cmd: vec![Record::default(); CMD_ENTRIES as usize],
        host: vec![Record::default(); (HOST_BUCKETS * WAYS) as usize],
        driver: DriverLine::default(),
        device: DeviceLine::default(),
    };
    table
        .insert(&mut Slots(&mut mem.host), b"key", b"old")
        .unwrap();
    let cfg = KvsConfig {
        gen: 1,
        enable: 1,
        udp_port: DEFAULT_PORT,
        cache_buckets: 16,
        host_buckets: HOST_BUCKETS,
        hash_seed: 7,
        ..KvsConfig::default()
    };
    let mut engine = Engine::new();
    assert!(engine.take_config(&mut mem, &cfg, 1 << 30));
    assert_eq!((mem.device.cfg_ack, mem.device.cfg_status), (1, 0));
    let put = Request {
        op: REQ_PUT,
        id: 1,
        key: b"key",
        value: b"new",
        reply: reply(),
    };
    assert_eq!(engine.serve(&mut mem, &put).status, STATUS_OK);
    assert_eq!(mem.device.log_tail, 1, "the entry is published");
    // What the driver then does: the entry, up to the tail, applied.
    let entry = mem.log[0];
    assert_eq!(entry.word, cxlnic_ring::index::ready_tag(0));
    table.apply(&mut Slots(&mut mem.host), &entry).unwrap();
    let (_, r) = table.find(&Slots(&mut mem.host), b"key").unwrap();
    assert_eq!(r.value(), b"new");
}
