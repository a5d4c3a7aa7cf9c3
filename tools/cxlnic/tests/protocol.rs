//! The driver's side of the KVS protocol, as `cxlnic_drv/kvs/` runs it
//! (drain up to the published tail; commands for updates and deletes
//! while the device serves; a disable answered, then the log taken by
//! its tags, only in an epoch the device started; a tail behind the
//! head: the config sent again), modelled in user space against the
//! ring core's `Engine`, one step at a time. The kernel code cannot run
//! here; this checks that its rules keep one value per key.
use cxlnic_ring::index::{distance, ready_tag, within};
use cxlnic_ring::kvs::*;

const HB: u32 = 16;

struct Mem {
    cache: Vec<Record>,
    log: Vec<Record>,
    cmd: Vec<Record>,
    host: Vec<Record>,
    dline: DriverLine,
    devline: DeviceLine,
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
        self.dline
    }
    fn set_device_line(&mut self, l: &DeviceLine) {
        self.devline = *l;
    }
}

struct Slots<'a>(&'a mut Vec<Record>);
impl HostSlots for Slots<'_> {
    fn read(&self, i: u32) -> Option<Record> {
        self.0.get(i as usize).copied()
    }
    fn write(&mut self, i: u32, _odd: u32, r: &Record) {
        if let Some(s) = self.0.get_mut(i as usize) {
            *s = *r;
        }
    }
    // Driver and device take turns here, never mid-move.
    fn moves(&self) -> u32 {
        0
    }
    fn set_moves(&mut self, _moves: u32) {}
}

struct Drv {
    table: HostTable,
    serving: bool,
    started: bool,
    lent: bool,
    gen: u32,
    cmd_tail: u32,
    log_head: u32,
    bad: u32,
    applied: u32,
}

struct World {
    mem: Mem,
    eng: Engine,
    drv: Drv,
    cfg: KvsConfig,
}

impl World {
    fn new() -> World {
        World {
            mem: Mem {
                cache: vec![Record::default(); 64 * 4],
                log: vec![Record::default(); LOG_ENTRIES as usize],
                cmd: vec![Record::default(); CMD_ENTRIES as usize],
                host: vec![Record::default(); (HB * WAYS) as usize],
                dline: DriverLine::default(),
                devline: DeviceLine::default(),
            },
            eng: Engine::new(),
            drv: Drv {
                table: HostTable::new(HB, 42).unwrap(),
                serving: false,
                started: false,
                lent: false,
                gen: 0,
                cmd_tail: 0,
                log_head: 0,
                bad: 0,
                applied: 0,
            },
            cfg: KvsConfig::default(),
        }
    }
    /// The device's loop once.
    fn device(&mut self) {
        let cfg = self.cfg;
        self.eng.take_config(&mut self.mem, &cfg, 1 << 40);
        self.eng.poll_commands(&mut self.mem);
    }
    /// Writes the config; the device does not look yet.
    fn write_config(&mut self, enable: bool) {
        if enable {
            self.drv.serving = false;
            self.drv.started = false;
            for c in self.mem.cmd.iter_mut() {
                *c = Record::default();
            }
            self.mem.dline = DriverLine::default();
            self.drv.cmd_tail = 0;
            self.drv.log_head = 0;
        }
        self.drv.gen += 1;
        self.cfg = KvsConfig {
            gen: self.drv.gen,
            enable: enable as u32,
            udp_port: 7878,
            _pad: 0,
            ipv4: [0; 4],
            cache_buckets: 64,
            host_buckets: HB,
            host_table: 0,
            hash_seed: 42,
        };
        self.drv.serving = false;
        if enable {
            self.drv.lent = true;
        }
    }
    /// The driver's `answer`.
    fn answer(&mut self, enable: bool) {
        assert_eq!(self.mem.devline.cfg_ack, self.drv.gen);
        if !enable {
            if self.drv.started {
                self.drain_tagged();
            }
            self.drv.lent = false;
            return;
        }
        self.drv.serving = true;
        self.drv.started = true;
    }
    fn configure(&mut self, enable: bool) -> bool {
        if enable {
            self.drv.serving = false;
            self.drv.started = false;
            for c in self.mem.cmd.iter_mut() {
                *c = Record::default();
            }
            self.mem.dline = DriverLine::default();
            self.drv.cmd_tail = 0;
            self.drv.log_head = 0;
        }
        self.drv.gen += 1;
        self.cfg = KvsConfig {
            gen: self.drv.gen,
            enable: enable as u32,
            udp_port: 7878,
            _pad: 0,
            ipv4: [0; 4],
            cache_buckets: 64,
            host_buckets: HB,
            host_table: 0,
            hash_seed: 42,
        };
        self.drv.serving = false;
        if enable {
            self.drv.lent = true;
        }
        self.device();
        assert_eq!(self.mem.devline.cfg_ack, self.drv.gen);
        if !enable {
            if self.drv.started {
                self.drain_tagged();
            }
            self.drv.lent = false;
            return true;
        }
        assert_eq!(self.mem.devline.cfg_status, 0);
        self.drv.serving = true;
        self.drv.started = true;
        true
    }
    fn apply_log(&mut self, end: u32) {
        let mut head = self.drv.log_head;
        while head != end {
            let r = self.mem.log[(head & (LOG_ENTRIES - 1)) as usize];
            if r.word != ready_tag(head) {
                break;
            }
            match self.drv.table.apply(&mut Slots(&mut self.mem.host), &r) {
                Ok(_) => self.drv.applied += 1,
                Err(_) => self.drv.bad += 1,
            }
            head = head.wrapping_add(1);
        }
        self.drv.log_head = head;
        self.mem.dline = DriverLine {
            cmd_tail: self.drv.cmd_tail,
            log_head: head,
            moves: 0,
        };
    }
    fn drain(&mut self) {
        if !self.drv.serving {
            return;
        }
        let tail = self.mem.devline.log_tail;
        if !within(
            self.drv.log_head,
            tail,
            self.drv.log_head.wrapping_add(LOG_ENTRIES),
        ) {
            self.drv.bad += 1;
            return;
        }
        self.apply_log(tail);
    }
    fn drain_tagged(&mut self) {
        let l = self.drv.log_head.wrapping_add(LOG_ENTRIES);
        self.apply_log(l);
    }
    fn command(&mut self, op: Op, key: &[u8], value: &[u8], slot: u32) {
        let mut rec = Record::pair(key, value).unwrap();
        rec.op = op.to_u8();
        rec.slot = slot;
        assert!(distance(self.mem.devline.cmd_head, self.drv.cmd_tail) < CMD_ENTRIES);
        let index = self.drv.cmd_tail;
        rec.word = ready_tag(index);
        self.mem.cmd[(index & (CMD_ENTRIES - 1)) as usize] = rec;
        self.drv.cmd_tail += 1;
        self.mem.dline = DriverLine {
            cmd_tail: self.drv.cmd_tail,
            log_head: self.drv.log_head,
            moves: 0,
        };
        for _ in 0..3 {
            self.drain();
            if within(index + 1, self.mem.devline.cmd_head, self.drv.cmd_tail) {
                self.drain();
                return;
            }
            self.device();
        }
        panic!("command not taken");
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TableError> {
        self.drain();
        match self.drv.table.find(&Slots(&mut self.mem.host), key) {
            Some((slot, _)) if self.drv.serving => {
                self.command(Op::Put, key, value, slot);
                Ok(())
            }
            Some((slot, _)) => {
                self.drv
                    .table
                    .update(&mut Slots(&mut self.mem.host), slot, key, value)
            }
            None => self
                .drv
                .table
                .insert(&mut Slots(&mut self.mem.host), key, value)
                .map(|_| ()),
        }
    }
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        self.drain();
        self.drv
            .table
            .find(&Slots(&mut self.mem.host), key)
            .map(|(_, r)| r.value().to_vec())
    }
    fn del(&mut self, key: &[u8]) -> Result<(), TableError> {
        self.drain();
        let Some((slot, _)) = self.drv.table.find(&Slots(&mut self.mem.host), key) else {
            return Err(TableError::NotFound);
        };
        if self.drv.serving {
            self.command(Op::Del, key, &[], slot);
            return Ok(());
        }
        self.drv
            .table
            .remove(&mut Slots(&mut self.mem.host), slot, key)
    }
    fn net(&mut self, op: u8, key: &[u8], value: &[u8]) -> Answer {
        let req = Request {
            op,
            id: 1,
            key,
            value,
            reply: reply(),
        };
        self.eng.serve(&mut self.mem, &req)
    }
}

fn reply() -> Reply {
    Reply {
        mac: [0; 6],
        client_ip: [0; 4],
        server_ip: [0; 4],
        client_port: 1,
        server_port: 7878,
    }
}

mod cases {
    use super::*;

    #[test]
    fn a_session() {
        let mut w = World::new();
        w.put(b"a", b"1").unwrap();
        w.put(b"b", b"2").unwrap();
        w.put(b"a", b"1x").unwrap(); // direct update
        assert!(w.configure(true));
        assert_eq!(w.net(REQ_GET, b"a", b"").bytes(), b"1x");
        assert_eq!(w.net(REQ_PUT, b"b", b"net").status, STATUS_OK);
        assert_eq!(w.net(REQ_PUT, b"zz", b"net").status, STATUS_NOT_FOUND);
        assert_eq!(w.get(b"b").unwrap(), b"net"); // drained
        w.put(b"a", b"cmd").unwrap(); // a command
        assert_eq!(w.net(REQ_GET, b"a", b"").bytes(), b"cmd");
        assert_eq!(w.get(b"a").unwrap(), b"cmd");
        w.put(b"c", b"new").unwrap(); // direct insert while serving
        assert_eq!(w.net(REQ_GET, b"c", b"").bytes(), b"new");
        w.del(b"a").unwrap();
        assert_eq!(w.net(REQ_GET, b"a", b"").status, STATUS_NOT_FOUND);
        assert!(w.get(b"a").is_none());
        // network PUT not drained, then disable: the tagged drain applies it.
        assert_eq!(w.net(REQ_PUT, b"c", b"late").status, STATUS_OK);
        assert!(w.configure(false));
        assert_eq!(w.get(b"c").unwrap(), b"late");
        assert_eq!(w.drv.bad, 0);
        // re-enable: old log entries must not be applied again.
        w.put(b"c", b"direct").unwrap();
        assert!(w.configure(true));
        w.drain();
        assert_eq!(w.get(b"c").unwrap(), b"direct");
        assert_eq!(w.net(REQ_GET, b"c", b"").bytes(), b"direct");
        // fill the log with network PUTs beyond a ring: busy, never lost.
        let mut ok = 0;
        for i in 0..(LOG_ENTRIES + 10) {
            let v = format!("{i}");
            if w.net(REQ_PUT, b"b", v.as_bytes()).status == STATUS_OK {
                ok += 1;
            }
        }
        assert_eq!(ok, LOG_ENTRIES);
        w.drain();
        assert_eq!(
            w.get(b"b").unwrap(),
            format!("{}", LOG_ENTRIES - 1).as_bytes()
        );
        assert_eq!(w.drv.bad, 0, "applied {}", w.drv.applied);
    }

    #[test]
    fn an_unanswered_enable_then_a_disable_reapplies_nothing() {
        let mut w = World::new();
        w.put(b"k", b"v0").unwrap();
        assert!(w.configure(true));
        assert_eq!(w.net(REQ_PUT, b"k", b"v1").status, STATUS_OK);
        assert!(w.configure(false));
        assert_eq!(w.get(b"k").unwrap(), b"v1");
        w.put(b"k", b"v2").unwrap(); // direct, not serving
        w.write_config(true); // the device never looks
        w.write_config(false);
        w.device(); // it takes the latest: the disable
        w.answer(false);
        assert_eq!(
            w.get(b"k").unwrap(),
            b"v2",
            "the epoch-1 entry is not applied again"
        );
    }

    #[test]
    fn a_device_reset_is_seen_and_the_config_sent_again() {
        let mut w = World::new();
        w.put(b"k", b"v0").unwrap();
        assert!(w.configure(true));
        for i in 0..5 {
            assert_eq!(
                w.net(REQ_PUT, b"k", format!("n{i}").as_bytes()).status,
                STATUS_OK
            );
        }
        w.drain();
        assert_eq!(w.get(b"k").unwrap(), b"n4");
        assert_eq!(w.net(REQ_PUT, b"k", b"lost").status, STATUS_OK); // not drained before the reset
        w.eng.reset();
        w.device(); // back: it takes the config it finds (same gen), starting afresh
        assert_eq!(w.mem.devline.log_tail, 0);
        let bad = w.drv.bad;
        w.drain();
        assert_eq!(
            w.drv.bad,
            bad + 1,
            "a tail behind the head: counted, config sent again"
        );
        assert!(w.configure(true));
        assert_eq!(
            w.net(REQ_GET, b"k", b"").bytes(),
            b"n4",
            "the undrained PUT was lost with the reset"
        );
        w.put(b"k", b"after").unwrap();
        assert_eq!(w.net(REQ_GET, b"k", b"").bytes(), b"after");
    }
}
