//! A port's key-value offload (#29): the device side of
//! `cxlnic_ring::kvs` ([`Engine`]) over the port's device memory (the KVS
//! area at the top of BAR2) and guest RAM (the driver's host table).
//!
//! The port hands every frame it receives here first ([`Offload::
//! intercept`]): a request is served and its answer queued for the
//! port's backend, a malformed datagram to the KVS port is dropped and
//! counted, anything else takes the normal receive path. The host's RX
//! ring never sees a datagram to the KVS port.

use crate::mem::{GuestRam, Shared};
use cxlnic_ring::device::DATA_OFFSET;
use cxlnic_ring::kvs::{
    answer_frame, parse, DeviceLine, DeviceMemory, DriverLine, Engine, KvsConfig, KvsStats, Parsed,
    Record, AREA_BYTES, CACHE_OFFSET, CMD_OFFSET, CONFIG_OFFSET, DEVICE_LINE_OFFSET,
    DRIVER_LINE_OFFSET, LINE_BYTES, LOG_OFFSET, RECORD_BYTES, STATS_OFFSET, WAYS,
};
use std::sync::atomic::{fence, Ordering};

/// Answers waiting for the backend; more are dropped (and counted).
pub const ANSWERS_MAX: usize = 256;

/// The offload of one port.
pub struct Offload {
    /// Where the KVS area starts in BAR2.
    base: u64,
    engine: Engine,
    /// Answer frames for the port's backend, in order.
    answers: Vec<Vec<u8>>,
    /// The counters last written to BAR2 (`None`: write them).
    published: Option<KvsStats>,
}

/// The memory the engine reaches: BAR2's KVS area and the host table
/// (`table`, a guest physical address, `slots` records) in guest RAM.
struct Memory<'a> {
    dev: &'a Shared,
    ram: Option<&'a GuestRam>,
    base: u64,
    table: u64,
    slots: u32,
}

impl Offload {
    /// The offload of a BAR2 of `bar_bytes`: its area is the top
    /// [`AREA_BYTES`], if that leaves the driver a data part (and the
    /// offset fits the header's word); else `None`.
    pub fn new(bar_bytes: u64) -> Option<Offload> {
        let base = bar_bytes.checked_sub(u64::from(AREA_BYTES))?;
        (base > DATA_OFFSET && u32::try_from(base).is_ok()).then(|| Offload {
            base,
            engine: Engine::new(),
            answers: vec![],
            published: None,
        })
    }

    /// Where the area starts (`DeviceHeader::kvs_offset`).
    pub fn offset(&self) -> u64 {
        self.base
    }

    pub fn enabled(&self) -> bool {
        self.engine.enabled()
    }

    pub fn stats(&self) -> &KvsStats {
        self.engine.stats()
    }

    fn memory<'a>(&self, dev: &'a Shared, ram: Option<&'a GuestRam>) -> Memory<'a> {
        let cfg = self.engine.config();
        Memory {
            dev,
            ram,
            base: self.base,
            table: cfg.host_table,
            slots: cfg.host_buckets.saturating_mul(WAYS),
        }
    }

    /// A device reset: the engine forgets everything (cache, rings,
    /// counters), and the config in BAR2 counts as answered, as the NIC's
    /// does: the device waits for the driver to send it again and never
    /// replays the commands left in the ring.
    pub fn reset(&mut self, dev: &Shared, ram: Option<&GuestRam>) {
        self.engine.reset();
        self.answers.clear();
        self.published = None;
        let gen = dev.load(self.base + u64::from(CONFIG_OFFSET)).unwrap_or(0);
        let mut mem = self.memory(dev, ram);
        let off = KvsConfig {
            gen,
            ..KvsConfig::default()
        };
        // Disables (always taken): only the generation is remembered.
        self.engine.take_config(&mut mem, &off, 0);
        // Taken at generation 0 too, where the engine had nothing new.
        mem.set_device_line(&DeviceLine {
            cfg_ack: gen,
            ..DeviceLine::default()
        });
    }

    /// One pass: a new config if the driver wrote one (its `gen` loaded
    /// first, with acquire: the driver stores it last), then the commands
    /// posted. Returns the work done.
    pub fn poll(&mut self, dev: &Shared, ram: Option<&GuestRam>, host_bytes: u64) -> u32 {
        let at = self.base + u64::from(CONFIG_OFFSET);
        let mut raw = [0u8; LINE_BYTES];
        // Inside the BAR (`new`): neither fails.
        let Ok(gen) = dev.load(at) else { return 0 };
        if dev.read(at, &mut raw).is_err() {
            return 0;
        }
        let cfg = KvsConfig {
            gen,
            ..KvsConfig::decode(&raw)
        };
        let mut mem = self.memory(dev, ram);
        let mut work = u32::from(self.engine.take_config(&mut mem, &cfg, host_bytes));
        // The config just taken names another host table.
        let mut mem = self.memory(dev, ram);
        work += self.engine.poll_commands(&mut mem);
        work
    }

    /// Takes `frame` if it is the offload's: serves a request (its answer
    /// queued for [`Offload::take_answers`]) or drops a malformed one,
    /// counted. `serving`: whether the device runs (a hung one drops
    /// requests, counted as answers dropped). Returns whether the frame
    /// was taken; if not, it takes the normal receive path.
    pub fn intercept(
        &mut self,
        dev: &Shared,
        ram: Option<&GuestRam>,
        mac: [u8; 6],
        frame: &[u8],
        serving: bool,
    ) -> bool {
        if !self.engine.enabled() {
            return false;
        }
        let cfg = *self.engine.config();
        match parse(frame, mac, cfg.udp_port, cfg.ipv4) {
            Parsed::NotKvs => false,
            Parsed::Reject(why) => {
                self.engine.reject(why);
                true
            }
            Parsed::Request(_) if !serving => {
                self.engine.answered(false);
                true
            }
            Parsed::Request(req) => {
                let mut mem = self.memory(dev, ram);
                let a = self.engine.serve(&mut mem, &req);
                if self.answers.len() >= ANSWERS_MAX {
                    self.engine.answered(false);
                } else {
                    let (f, len) = answer_frame(&req, mac, a.status, a.bytes());
                    self.answers.push(f.get(..len).unwrap_or(&f).to_vec());
                }
                true
            }
        }
    }

    /// The answers waiting for the backend; report each with
    /// [`Offload::answered`].
    pub fn take_answers(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.answers)
    }

    /// Counts answers the backend took (`sent`) and did not (`dropped`).
    pub fn answered(&mut self, sent: usize, dropped: usize) {
        for _ in 0..sent {
            self.engine.answered(true);
        }
        for _ in 0..dropped {
            self.engine.answered(false);
        }
    }

    /// Writes the counters into BAR2 for the driver, if they changed.
    pub fn publish(&mut self, dev: &Shared) {
        let now = *self.engine.stats();
        if self.published == Some(now) {
            return;
        }
        let at = self.base + u64::from(STATS_OFFSET);
        if dev.write(at, &now.encode()).is_ok() {
            self.published = Some(now);
        }
    }
}

impl Memory<'_> {
    fn at(&self, table: u32, i: u32) -> u64 {
        self.base + u64::from(table) + u64::from(i) * RECORD_BYTES as u64
    }

    /// The record at `at` in BAR2; its word loaded first, with acquire,
    /// so the bytes read after are at least as new as it.
    fn record(&self, at: u64) -> Record {
        let mut raw = [0u8; RECORD_BYTES];
        // The engine's indices lie inside the area, which lies inside the
        // BAR: a read that fails cannot happen, and a zero record is
        // "not ready" or "free" to the engine.
        let Ok(word) = self.dev.load(at) else {
            return Record::default();
        };
        if self.dev.read(at, &mut raw).is_err() {
            return Record::default();
        }
        Record {
            word,
            ..Record::decode(&raw)
        }
    }

    /// Stores `r` at `at`: its bytes past the word, then the word
    /// (release), last.
    fn set_record(&self, at: u64, r: &Record) {
        let raw = r.encode();
        // As for `record`: inside the BAR.
        let _ = self.dev.write(at + 4, &raw[4..]);
        let _ = self.dev.store(at, r.word);
    }

    /// Host slot `i`'s file offset in guest RAM, if it is one of the
    /// table's and reachable.
    fn host_at(&self, i: u32) -> Option<(&Shared, u64)> {
        if i >= self.slots {
            return None;
        }
        let ram = self.ram?;
        let gpa = self
            .table
            .checked_add(u64::from(i).checked_mul(RECORD_BYTES as u64)?)?;
        Some((ram.shared(), ram.offset(gpa, RECORD_BYTES as u64)?))
    }
}

impl DeviceMemory for Memory<'_> {
    fn cache(&mut self, i: u32) -> Record {
        self.record(self.at(CACHE_OFFSET, i))
    }

    fn set_cache(&mut self, i: u32, odd: u32, r: &Record) {
        let at = self.at(CACHE_OFFSET, i);
        let raw = r.encode();
        // The seqlock writer: odd version, body, even version, each
        // version store a release and a barrier between the odd one and
        // the body.
        let _ = self.dev.store(at, odd);
        fence(Ordering::Release);
        let _ = self.dev.write(at + 4, &raw[4..]);
        let _ = self.dev.store(at, r.word);
    }

    fn log(&mut self, i: u32) -> Record {
        self.record(self.at(LOG_OFFSET, i))
    }

    fn set_log(&mut self, i: u32, r: &Record) {
        self.set_record(self.at(LOG_OFFSET, i), r);
    }

    fn cmd(&mut self, i: u32) -> Record {
        self.record(self.at(CMD_OFFSET, i))
    }

    fn host_word(&mut self, i: u32) -> Option<u32> {
        let (mem, at) = self.host_at(i)?;
        mem.load(at).ok()
    }

    fn host(&mut self, i: u32) -> Option<Record> {
        let (mem, at) = self.host_at(i)?;
        let mut raw = [0u8; RECORD_BYTES];
        mem.read(at, &mut raw).ok()?;
        // The copy before the version's second load.
        fence(Ordering::Acquire);
        Some(Record::decode(&raw))
    }

    fn driver_line(&mut self) -> DriverLine {
        let at = self.base + u64::from(DRIVER_LINE_OFFSET);
        DriverLine {
            cmd_tail: self.dev.load(at).unwrap_or(0),
            log_head: self.dev.load(at + 4).unwrap_or(0),
            moves: self.dev.load(at + 8).unwrap_or(0),
        }
    }

    fn set_device_line(&mut self, line: &DeviceLine) {
        let at = self.base + u64::from(DEVICE_LINE_OFFSET);
        // Release stores, in an order the driver can rely on: the log
        // tail before the command head (a driver that sees its command
        // taken finds the command's log record), the answer last (one
        // that sees its generation acked reads the status that goes with
        // it).
        let _ = self.dev.store(at + 4, line.cfg_status);
        let _ = self.dev.store(at + 12, line.log_tail);
        let _ = self.dev.store(at + 8, line.cmd_head);
        let _ = self.dev.store(at, line.cfg_ack);
    }
}
