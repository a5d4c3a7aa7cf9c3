//! The driver's side of the KVS protocol, as `cxlnic_drv/kvs/` runs it
//! (drain up to the published tail; commands for updates and deletes
//! while the device serves; a disable answered, then the log taken by
//! its tags, only in an epoch the device started; a tail behind the
//! head: the config sent again), modelled in user space against the
//! ring core's `Engine`, one step at a time. The kernel code cannot run
//! here; this checks that its rules keep one value per key.
use cxlnic_ring::index::{distance, ready_tag, within};
use cxlnic_ring::kvs::sim::SimMemory;
use cxlnic_ring::kvs::*;

const HB: u32 = 16;

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
    mem: SimMemory,
    eng: Engine,
    drv: Drv,
    cfg: KvsConfig,
}

impl World {
    fn new() -> World {
        World {
            mem: SimMemory::new(64, HB),
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
            self.mem.driver = DriverLine::default();
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
        assert_eq!(self.mem.device.cfg_ack, self.drv.gen);
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
        self.write_config(enable);
        self.device();
        if enable {
            assert_eq!(self.mem.device.cfg_status, 0);
        }
        self.answer(enable);
        true
    }
    fn apply_log(&mut self, end: u32) {
        let mut head = self.drv.log_head;
        while head != end {
            let r = self.mem.log[(head & (LOG_ENTRIES - 1)) as usize];
            if r.word != ready_tag(head) {
                break;
            }
            match self.drv.table.apply(&mut self.mem.host, &r) {
                Ok(_) => self.drv.applied += 1,
                Err(_) => self.drv.bad += 1,
            }
            head = head.wrapping_add(1);
        }
        self.drv.log_head = head;
        self.publish_line();
    }
    /// Stores the driver's progress in its control line (its `moves`
    /// word is the host table's own).
    fn publish_line(&mut self) {
        self.mem.driver = DriverLine {
            cmd_tail: self.drv.cmd_tail,
            log_head: self.drv.log_head,
            ..DriverLine::default()
        };
    }
    fn drain(&mut self) {
        if !self.drv.serving {
            return;
        }
        let tail = self.mem.device.log_tail;
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
        assert!(distance(self.mem.device.cmd_head, self.drv.cmd_tail) < CMD_ENTRIES);
        let index = self.drv.cmd_tail;
        rec.word = ready_tag(index);
        self.mem.cmd[(index & (CMD_ENTRIES - 1)) as usize] = rec;
        self.drv.cmd_tail += 1;
        self.publish_line();
        for _ in 0..3 {
            self.drain();
            if within(index + 1, self.mem.device.cmd_head, self.drv.cmd_tail) {
                self.drain();
                return;
            }
            self.device();
        }
        panic!("command not taken");
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TableError> {
        self.drain();
        match self.drv.table.find(&self.mem.host, key) {
            Some((slot, _)) if self.drv.serving => {
                self.command(Op::Put, key, value, slot);
                Ok(())
            }
            Some((slot, _)) => self.drv.table.update(&mut self.mem.host, slot, key, value),
            None => self
                .drv
                .table
                .insert(&mut self.mem.host, key, value)
                .map(|_| ()),
        }
    }
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        self.drain();
        self.drv
            .table
            .find(&self.mem.host, key)
            .map(|(_, r)| r.value().to_vec())
    }
    fn del(&mut self, key: &[u8]) -> Result<(), TableError> {
        self.drain();
        let Some((slot, _)) = self.drv.table.find(&self.mem.host, key) else {
            return Err(TableError::NotFound);
        };
        if self.drv.serving {
            self.command(Op::Del, key, &[], slot);
            return Ok(());
        }
        self.drv.table.remove(&mut self.mem.host, slot, key)
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
        assert_eq!(w.mem.device.log_tail, 0);
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
