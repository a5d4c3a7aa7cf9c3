//! The device's side: serving requests from the cache, the log and the
//! host table, carrying out the host's commands, and logging every write.
//!
//! A key's value is, in this order: the cache's copy; the newest log
//! entry for it that the driver has not applied (its `log_head` not past
//! it); the host table's. Every write (a command, a network PUT) updates
//! the cache and appends to the log at once, so the cache never holds the
//! only copy of a value and an eviction needs no write-back.

use super::hash::{buckets, key_hash};
use super::map::{
    CMD_ENTRIES, LOG_ENTRIES, OP_PUT, READ_TRIES, REQ_GET, STATUS_BUSY, STATUS_NOT_FOUND,
    STATUS_OK, VALUE_MAX, WAYS,
};
use super::record::{check_config, DeviceLine, DriverLine, KvsConfig, KvsStats, Op, Record};
use super::seq::read_stable;
use super::wire::{Reject, Request};
use crate::index::{distance, ready_tag, within};

/// The memory the device reaches: its own (cache, log, commands, the
/// control lines) and the host table in host memory.
pub trait DeviceMemory {
    /// Cache entry `i` (`i` below the configured buckets times [`WAYS`]).
    fn cache(&mut self, i: u32) -> Record;
    /// Stores cache entry `i` as a seqlock writer: the version `odd`, the
    /// other bytes, then `r.word`.
    fn set_cache(&mut self, i: u32, odd: u32, r: &Record);
    /// Log entry in slot `i` (below [`LOG_ENTRIES`]).
    fn log(&mut self, i: u32) -> Record;
    /// Stores log slot `i`: the other bytes, then `r.word` (its tag), last.
    fn set_log(&mut self, i: u32, r: &Record);
    /// Command in slot `i` (below [`CMD_ENTRIES`]), as the driver left it.
    fn cmd(&mut self, i: u32) -> Record;
    /// The version word of host slot `i` (an acquire load); `None` if the
    /// host table's memory cannot be reached.
    fn host_word(&mut self, i: u32) -> Option<u32>;
    /// A copy of host slot `i` (followed by an acquire barrier).
    fn host(&mut self, i: u32) -> Option<Record>;
    /// The driver's control line.
    fn driver_line(&mut self) -> DriverLine;
    /// Stores the device's control line.
    fn set_device_line(&mut self, line: &DeviceLine);
}

/// The answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// [`STATUS_OK`], [`STATUS_NOT_FOUND`] or [`STATUS_BUSY`].
    pub status: u8,
    /// The value (a GET answered ok) in the first `len` bytes.
    pub value: [u8; VALUE_MAX],
    /// Bytes of the value.
    pub len: usize,
}

impl Answer {
    fn status(status: u8) -> Answer {
        Answer {
            status,
            value: [0; VALUE_MAX],
            len: 0,
        }
    }

    fn value(r: &Record) -> Answer {
        let mut a = Answer::status(STATUS_OK);
        a.value = r.value;
        a.len = r.value().len();
        a
    }

    /// The value.
    pub fn bytes(&self) -> &[u8] {
        self.value.get(..self.len).unwrap_or(&[])
    }
}

/// Where a key was found: the record holding it, and which tier.
enum Found {
    Cache(u32, Record),
    Log(Record),
    Host(Record),
    Deleted,
    Absent,
    Busy,
}

/// The device's KVS state: the config it runs, its ring positions, its
/// LRU clock and counters.
///
/// # Invariants
///
/// While `cfg.enable == 1`, `cfg` passed [`check_config`];
/// `distance(log_head, log_tail) <= LOG_ENTRIES`.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    cfg: KvsConfig,
    answered: u32,
    cmd_head: u32,
    log_head: u32,
    log_tail: u32,
    clock: u64,
    stats: KvsStats,
}

impl Engine {
    /// An engine that serves nothing until configured.
    pub fn new() -> Engine {
        Engine::default()
    }

    /// Whether it serves requests.
    pub fn enabled(&self) -> bool {
        self.cfg.enable == 1
    }

    /// The config it runs (meaningful while [`Engine::enabled`]).
    pub fn config(&self) -> &KvsConfig {
        &self.cfg
    }

    /// Its counters.
    pub fn stats(&self) -> &KvsStats {
        &self.stats
    }

    /// Counts a datagram to the KVS port dropped for `why` (the caller
    /// parsed it; the engine never sees the frame).
    pub fn reject(&mut self, why: Reject) {
        let s = &mut self.stats;
        let c = match why {
            Reject::Header => &mut s.bad_header,
            Reject::Op => &mut s.bad_op,
            Reject::Key => &mut s.bad_key,
            Reject::Length => &mut s.bad_length,
            Reject::Checksum => &mut s.bad_checksum,
        };
        *c = c.saturating_add(1);
    }

    /// Counts an answer the caller sent (`true`) or could not send.
    pub fn answered(&mut self, sent: bool) {
        let s = &mut self.stats;
        let c = if sent {
            &mut s.answers
        } else {
            &mut s.answers_dropped
        };
        *c = c.saturating_add(1);
    }

    /// Forgets everything, as a reset does (counters too).
    pub fn reset(&mut self) {
        *self = Engine::default();
    }

    /// Takes `cfg` if its generation is new: checks it, and if it enables,
    /// starts afresh (empty cache, both rings at 0, the log's tags
    /// cleared); answers in the device line. `host_bytes`: the host memory
    /// the device reaches. Returns whether there was a new config.
    pub fn take_config(
        &mut self,
        mem: &mut impl DeviceMemory,
        cfg: &KvsConfig,
        host_bytes: u64,
    ) -> bool {
        if cfg.gen == self.answered {
            return false;
        }
        self.answered = cfg.gen;
        let status = match check_config(cfg, host_bytes) {
            Ok(()) => {
                self.start(mem, cfg);
                0
            }
            Err(e) => {
                self.cfg.enable = 0;
                e as u32
            }
        };
        self.publish(mem, status);
        true
    }

    fn start(&mut self, mem: &mut impl DeviceMemory, cfg: &KvsConfig) {
        // INVARIANT: checked by the caller; rings at 0.
        self.cfg = *cfg;
        self.cmd_head = 0;
        self.log_head = 0;
        self.log_tail = 0;
        if cfg.enable == 0 {
            return;
        }
        for i in 0..self.cache_entries() {
            let old = mem.cache(i);
            let (odd, even) = super::seq::write_versions(old.word);
            mem.set_cache(
                i,
                odd,
                &Record {
                    word: even,
                    ..Record::default()
                },
            );
        }
        for i in 0..LOG_ENTRIES {
            mem.set_log(i, &Record::default());
        }
    }

    fn publish(&mut self, mem: &mut impl DeviceMemory, status: u32) {
        mem.set_device_line(&DeviceLine {
            cfg_ack: self.answered,
            cfg_status: status,
            cmd_head: self.cmd_head,
            log_tail: self.log_tail,
        });
    }

    fn cache_entries(&self) -> u32 {
        self.cfg.cache_buckets.saturating_mul(WAYS)
    }

    fn host_slots(&self) -> u32 {
        self.cfg.host_buckets.saturating_mul(WAYS)
    }

    /// Takes the driver's log head if it lies between the last one and
    /// the tail; anything else is counted and ignored.
    fn refresh_head(&mut self, mem: &mut impl DeviceMemory) {
        let head = mem.driver_line().log_head;
        if within(self.log_head, head, self.log_tail) {
            self.log_head = head;
        } else {
            self.stats.bad_log_head = self.stats.bad_log_head.saturating_add(1);
        }
    }

    fn log_full(&self) -> bool {
        distance(self.log_head, self.log_tail) >= LOG_ENTRIES
    }

    fn append_log(&mut self, mem: &mut impl DeviceMemory, op: Op, pair: &Record, stamp: u64) {
        let mut r = Record::pair(pair.key(), if op == Op::Put { pair.value() } else { &[] })
            .unwrap_or_default();
        r.op = op.to_u8();
        r.slot = pair.slot;
        r.stamp = stamp;
        r.word = ready_tag(self.log_tail);
        mem.set_log(self.log_tail & LOG_ENTRIES.wrapping_sub(1), &r);
        self.log_tail = self.log_tail.wrapping_add(1);
        self.stats.log_records = self.stats.log_records.saturating_add(1);
    }

    /// Carries out the commands the driver posted, in order, while the log
    /// has room. Returns how many it took.
    pub fn poll_commands(&mut self, mem: &mut impl DeviceMemory) -> u32 {
        if !self.enabled() {
            return 0;
        }
        self.refresh_head(mem);
        let mut taken = 0u32;
        while !self.log_full() && taken < CMD_ENTRIES {
            let cmd = mem.cmd(self.cmd_head & CMD_ENTRIES.wrapping_sub(1));
            if cmd.word != ready_tag(self.cmd_head) {
                break;
            }
            let stamp = u64::from(cmd.word);
            self.cmd_head = self.cmd_head.wrapping_add(1);
            taken = taken.saturating_add(1);
            match Op::from_u8(cmd.op) {
                Some(op) if cmd.well_formed() && cmd.slot < self.host_slots() => {
                    self.stats.commands = self.stats.commands.saturating_add(1);
                    match op {
                        Op::Put => self.cache_put(mem, &cmd),
                        Op::Del => self.cache_drop(mem, cmd.key()),
                    }
                    self.append_log(mem, op, &cmd, stamp);
                }
                _ => self.stats.bad_commands = self.stats.bad_commands.saturating_add(1),
            }
        }
        if taken > 0 {
            self.publish(mem, 0);
        }
        taken
    }

    /// Serves `req` and returns its answer.
    pub fn serve(&mut self, mem: &mut impl DeviceMemory, req: &Request<'_>) -> Answer {
        self.stats.requests = self.stats.requests.saturating_add(1);
        let answer = if req.op == REQ_GET {
            self.stats.gets = self.stats.gets.saturating_add(1);
            self.get(mem, req.key)
        } else {
            self.stats.puts = self.stats.puts.saturating_add(1);
            self.put(mem, req.key, req.value)
        };
        match answer.status {
            STATUS_NOT_FOUND => self.stats.not_found = self.stats.not_found.saturating_add(1),
            STATUS_BUSY => self.stats.busy = self.stats.busy.saturating_add(1),
            _ => {}
        }
        answer
    }

    fn get(&mut self, mem: &mut impl DeviceMemory, key: &[u8]) -> Answer {
        match self.find(mem, key) {
            Found::Cache(i, r) => {
                self.touch(mem, i, r);
                Answer::value(&r)
            }
            Found::Log(r) | Found::Host(r) => {
                // Answered first, then brought in (the paper's background
                // install; the model does both in one pass).
                let a = Answer::value(&r);
                self.cache_put(mem, &r);
                a
            }
            Found::Deleted | Found::Absent => Answer::status(STATUS_NOT_FOUND),
            Found::Busy => Answer::status(STATUS_BUSY),
        }
    }

    fn put(&mut self, mem: &mut impl DeviceMemory, key: &[u8], value: &[u8]) -> Answer {
        self.refresh_head(mem);
        if self.log_full() {
            return Answer::status(STATUS_BUSY);
        }
        let slot = match self.find(mem, key) {
            Found::Cache(_, r) | Found::Log(r) | Found::Host(r) => r.slot,
            Found::Deleted | Found::Absent => return Answer::status(STATUS_NOT_FOUND),
            Found::Busy => return Answer::status(STATUS_BUSY),
        };
        let Some(mut pair) = Record::pair(key, value) else {
            return Answer::status(STATUS_BUSY);
        };
        pair.slot = slot;
        self.cache_put(mem, &pair);
        self.append_log(mem, Op::Put, &pair, 0);
        // The driver drains up to the published tail: without this, a
        // network PUT's entry waits for the next command (and a log
        // full of them for ever).
        self.publish(mem, 0);
        Answer::status(STATUS_OK)
    }

    /// Where `key`'s value is, tier by tier, counting each.
    fn find(&mut self, mem: &mut impl DeviceMemory, key: &[u8]) -> Found {
        if let Some((i, r)) = self.cache_find(mem, key) {
            self.stats.hits = self.stats.hits.saturating_add(1);
            return Found::Cache(i, r);
        }
        self.refresh_head(mem);
        if let Some(r) = self.pending(mem, key) {
            self.stats.log_hits = self.stats.log_hits.saturating_add(1);
            return if r.op == OP_PUT {
                Found::Log(r)
            } else {
                Found::Deleted
            };
        }
        self.stats.misses = self.stats.misses.saturating_add(1);
        self.host_find(mem, key)
    }

    /// The newest log entry for `key` the driver has not applied.
    fn pending(&mut self, mem: &mut impl DeviceMemory, key: &[u8]) -> Option<Record> {
        let mut i = self.log_tail;
        while i != self.log_head {
            i = i.wrapping_sub(1);
            let r = mem.log(i & LOG_ENTRIES.wrapping_sub(1));
            // Its own memory, but the guest can write BAR2: checked.
            if r.word == ready_tag(i)
                && r.well_formed()
                && r.key() == key
                && r.slot < self.host_slots()
            {
                return Some(r);
            }
        }
        None
    }

    /// `key` in the host table. Absent counts only if the driver moved
    /// no pair meanwhile (its `moves` word even and unchanged): a pair
    /// being moved between its buckets is briefly where a probe already
    /// looked.
    fn host_find(&mut self, mem: &mut impl DeviceMemory, key: &[u8]) -> Found {
        for _ in 0..READ_TRIES {
            let before = mem.driver_line().moves;
            match self.host_probe(mem, key) {
                Found::Absent => {
                    let after = mem.driver_line().moves;
                    if before % 2 == 0 && before == after {
                        return Found::Absent;
                    }
                    self.stats.torn_reads = self.stats.torn_reads.saturating_add(1);
                }
                found => return found,
            }
        }
        Found::Busy
    }

    /// One probe of both buckets, each slot read under its seqlock.
    fn host_probe(&mut self, mem: &mut impl DeviceMemory, key: &[u8]) -> Found {
        let b = buckets(key_hash(self.cfg.hash_seed, key), self.cfg.host_buckets);
        let two = if b.second == b.first { 1 } else { 2 };
        for bucket in [b.first, b.second].into_iter().take(two) {
            for w in 0..WAYS {
                let i = bucket.saturating_mul(WAYS).saturating_add(w);
                match self.host_read(mem, i) {
                    Some(r) if r.holds(key) && r.well_formed() => {
                        let mut r = r;
                        r.slot = i;
                        return Found::Host(r);
                    }
                    Some(_) => {}
                    None => return Found::Busy,
                }
            }
        }
        Found::Absent
    }

    /// Host slot `i`, whole, within [`READ_TRIES`].
    fn host_read(&mut self, mem: &mut impl DeviceMemory, i: u32) -> Option<Record> {
        for _ in 0..READ_TRIES {
            self.stats.host_reads = self.stats.host_reads.saturating_add(1);
            let before = mem.host_word(i)?;
            let copy = mem.host(i)?;
            let after = mem.host_word(i)?;
            match read_stable(before, &copy, after) {
                Ok(r) => return Some(r),
                Err(_) => self.stats.torn_reads = self.stats.torn_reads.saturating_add(1),
            }
        }
        None
    }

    fn cache_bucket(&self, key: &[u8]) -> u32 {
        let b = buckets(key_hash(self.cfg.hash_seed, key), self.cfg.cache_buckets);
        b.first.saturating_mul(WAYS)
    }

    /// The cache entry holding `key`. An entry the guest scribbled (not
    /// well formed, a slot past the host table) holds nothing.
    fn cache_find(&mut self, mem: &mut impl DeviceMemory, key: &[u8]) -> Option<(u32, Record)> {
        let base = self.cache_bucket(key);
        (0..WAYS).map(|w| base.saturating_add(w)).find_map(|i| {
            let r = mem.cache(i);
            (r.holds(key) && r.well_formed() && r.slot < self.host_slots()).then_some((i, r))
        })
    }

    fn tick(&mut self) -> u64 {
        self.clock = self.clock.wrapping_add(1);
        self.clock
    }

    fn touch(&mut self, mem: &mut impl DeviceMemory, i: u32, mut r: Record) {
        let (odd, even) = super::seq::write_versions(r.word);
        r.word = even;
        r.stamp = self.tick();
        mem.set_cache(i, odd, &r);
    }

    /// Writes `pair` (key, value, host slot) into the cache: over its own
    /// entry, else a free way, else the least recently used one.
    fn cache_put(&mut self, mem: &mut impl DeviceMemory, pair: &Record) {
        let key = pair.key();
        let base = self.cache_bucket(key);
        let mut victim: Option<(u32, Record)> = None;
        for i in (0..WAYS).map(|w| base.saturating_add(w)) {
            let r = mem.cache(i);
            let used = r.op == OP_PUT && r.well_formed();
            if used && r.key() == key {
                victim = Some((i, r));
                break;
            }
            let better = match &victim {
                None => true,
                Some((_, v)) => {
                    let v_used = v.op == OP_PUT && v.well_formed();
                    (v_used && !used) || (v_used == used && r.stamp < v.stamp)
                }
            };
            if better {
                victim = Some((i, r));
            }
        }
        let Some((i, old)) = victim else { return };
        if old.op == OP_PUT && old.well_formed() {
            if old.key() != key {
                self.stats.evictions = self.stats.evictions.saturating_add(1);
                self.stats.installs = self.stats.installs.saturating_add(1);
            }
        } else {
            self.stats.installs = self.stats.installs.saturating_add(1);
        }
        let Some(mut r) = Record::pair(key, pair.value()) else {
            return;
        };
        let (odd, even) = super::seq::write_versions(old.word);
        r.word = even;
        r.op = OP_PUT;
        r.slot = pair.slot;
        r.hash = key_hash(self.cfg.hash_seed, key);
        r.stamp = self.tick();
        mem.set_cache(i, odd, &r);
    }

    /// Drops `key` from the cache, if it is there.
    fn cache_drop(&mut self, mem: &mut impl DeviceMemory, key: &[u8]) {
        if let Some((i, old)) = self.cache_find(mem, key) {
            let (odd, even) = super::seq::write_versions(old.word);
            mem.set_cache(
                i,
                odd,
                &Record {
                    word: even,
                    ..Record::default()
                },
            );
        }
    }
}
