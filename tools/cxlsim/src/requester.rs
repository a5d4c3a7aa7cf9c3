//! Requesters (hosts and accelerators): a request queue, an address
//! translation (interleave) unit, traffic generation and an optional local
//! cache that answers back-invalidations.
//!
//! What is modelled, after ESF section III-B: the request queue is its
//! capacity (requests in flight at most) and the minimum interval between
//! two issued requests; a request leaves after the Table III requester
//! process time (10 ns). Traffic is stream, uniform random (optionally
//! hot/cold skewed) or a replayed trace; the read/write mix is random or
//! exactly interleaved. The address of a request picks its memory by
//! interleaving at `interleave_granularity` over the target memories. With a
//! cache (`cache_lines` > 0, LRU, Table III cache access 12 ns) hits complete
//! locally, misses fetch the line with a coherent read, dirty victims are
//! written back, and BISnp invalidates lines.
//!
//! Run windows: a requester may issue only during `run` out of every
//! `window` picoseconds ([`RunWindow`]); a [`Controller`] called periodically
//! with per-requester observations can change every window at run time (the
//! hook for the MemChannel control core).

use crate::config::{check_fraction, fraction_ppm, ns_to_ps, RequesterConfig, RwPattern, Traffic};
use crate::event::Ps;
pub use crate::link::Marking;
use crate::rng::Rng;
use crate::stats::{Histogram, Occupancy};
use crate::util::FxMap;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::Arc;

/// One request of a trace: write flag and byte address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceOp {
    pub write: bool,
    pub addr: u64,
}

/// Parses a trace: `R addr` or `W addr` per line (decimal or 0x-hex),
/// blank lines and `#` comments ignored.
pub fn parse_trace(text: &str) -> Result<Vec<TraceOp>> {
    let mut ops = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut it = line.split_whitespace();
        let op = it.next().unwrap_or("");
        let addr = it
            .next()
            .with_context(|| format!("trace line {}: missing address", i + 1))?;
        let write = match op {
            "R" | "r" => false,
            "W" | "w" => true,
            _ => bail!("trace line {}: operation {op:?} is not R or W", i + 1),
        };
        let addr = match addr.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => addr.parse(),
        }
        .with_context(|| format!("trace line {}: bad address {addr:?}", i + 1))?;
        ops.push(TraceOp { write, addr });
    }
    if ops.is_empty() {
        bail!("the trace has no request");
    }
    Ok(ops)
}

/// A run window: issue only while `((now - offset) mod window) < run`
/// (windows start at `offset + k * window`). `run_ps == 0` with a window
/// is closed: the requester issues nothing until a controller opens it.
/// `window_ps == 0` is always open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunWindow {
    pub run_ps: Ps,
    pub window_ps: Ps,
    /// Phase of the windows (each thread's windows start when it was
    /// attached: they are not aligned).
    pub offset_ps: Ps,
}

impl RunWindow {
    /// Always open.
    pub const OPEN: RunWindow = RunWindow {
        run_ps: 1,
        window_ps: 1,
        offset_ps: 0,
    };

    /// Never open (until changed).
    pub const CLOSED: RunWindow = RunWindow {
        run_ps: 0,
        window_ps: 1,
        offset_ps: 0,
    };

    /// `run_ps` of every `window_ps`, windows aligned at time 0.
    pub const fn new(run_ps: Ps, window_ps: Ps) -> RunWindow {
        RunWindow {
            run_ps,
            window_ps,
            offset_ps: 0,
        }
    }

    pub fn is_open(&self) -> bool {
        self.run_ps >= self.window_ps
    }

    pub fn is_closed(&self) -> bool {
        self.run_ps == 0 && self.window_ps > 0
    }

    /// The first time at or after `now` the window allows issuing;
    /// `Ps::MAX` when closed.
    #[inline]
    pub fn next_open(&self, now: Ps) -> Ps {
        if self.run_ps >= self.window_ps || self.window_ps == 0 {
            return now;
        }
        if self.run_ps == 0 {
            return Ps::MAX;
        }
        let off = self.offset_ps % self.window_ps;
        let at = now % self.window_ps;
        // (at - off) mod window, without overflow.
        let phase = if at >= off {
            at - off
        } else {
            at + (self.window_ps - off)
        };
        if phase < self.run_ps {
            now
        } else {
            now.saturating_add(self.window_ps - phase)
        }
    }

    /// Time the window is open within `[t0, t1)`.
    pub fn open_ps(&self, t0: Ps, t1: Ps) -> Ps {
        if t1 <= t0 {
            return 0;
        }
        if self.run_ps >= self.window_ps || self.window_ps == 0 {
            return t1 - t0;
        }
        if self.run_ps == 0 {
            return 0;
        }
        // Open time in [0, t) counted from the windows' phase.
        let w = self.window_ps;
        let off = self.offset_ps % w;
        let upto = |t: Ps| -> u128 {
            // Shift so that windows start at multiples of w.
            let s = t as u128 + (w - off) as u128;
            let whole = s / w as u128;
            let rem = (s % w as u128).min(self.run_ps as u128);
            whole * self.run_ps as u128 + rem
        };
        (upto(t1) - upto(t0)).min(u64::MAX as u128) as Ps
    }
}

/// What a controller sees of one link direction at a tick (counts since
/// the previous tick).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkObservation {
    /// Messages that started a transfer.
    pub messages: u64,
    /// Of them, data messages (one payload each).
    pub data_messages: u64,
    /// Marks the messages offered got under the controller's
    /// [`Marking`], in millionths of a message (a message marked with
    /// probability p adds p * 1,000,000).
    pub marked_ppm: u64,
    /// Messages offered.
    pub offered: u64,
    /// Serialisation time.
    pub busy_ps: u64,
}

/// What a controller sees of one requester at a tick.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observation {
    /// Payload bytes completed since the start of the run.
    pub bytes_total: u64,
    /// Payload bytes completed since the previous tick.
    pub bytes_since_last: u64,
    /// Requests in flight now.
    pub outstanding: u32,
    /// Time-weighted mean of requests in flight since the previous tick.
    pub mean_outstanding: f64,
}

/// A periodic controller (e.g. the MemChannel control core): sees every
/// requester's observation and may change their run windows. Monomorphised
/// into the simulator, so the hot path pays nothing without one.
pub trait Controller {
    /// Period of `on_tick`; `None`: never called.
    fn period_ps(&self) -> Option<Ps>;
    fn on_tick(&mut self, now: Ps, obs: &[Observation], windows: &mut [RunWindow]);

    /// How every link direction marks the messages offered to it (counted
    /// in [`LinkObservation::marked_ppm`]); `None`: no marking.
    fn marking(&self) -> Option<Marking> {
        None
    }

    /// The windows every requester starts with (called once, before the
    /// run; `windows` holds the configured ones).
    fn on_start(&mut self, _windows: &mut [RunWindow]) {}

    /// `on_tick` with the links' counters since the previous tick too
    /// (index `2 * link + dir`, links in `Graph::links` order, direction 0
    /// from `a` to `b`). The simulator calls this one; by default it
    /// forwards to `on_tick`.
    fn on_tick_links(
        &mut self,
        now: Ps,
        obs: &[Observation],
        _links: &[LinkObservation],
        windows: &mut [RunWindow],
    ) {
        self.on_tick(now, obs, windows)
    }
}

/// No controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoController;

impl Controller for NoController {
    fn period_ps(&self) -> Option<Ps> {
        None
    }
    fn on_tick(&mut self, _: Ps, _: &[Observation], _: &mut [RunWindow]) {}
}

/// Resolved requester parameters.
#[derive(Clone, Debug)]
pub struct RequesterParams {
    pub queue_capacity: u32,
    pub issue_interval_ps: Ps,
    pub process_ps: Ps,
    pub requests: u64,
    pub read_ppm: u32,
    pub pattern: RwPattern,
    pub traffic: Traffic,
    pub trace: Option<Arc<Vec<TraceOp>>>,
    pub footprint_lines: u64,
    pub line_bytes: u64,
    pub granularity: u64,
    /// Memory indices interleaved over.
    pub targets: Vec<u32>,
    pub hot_lines: u64,
    pub hot_ppm: u32,
    pub cache_lines: u64,
    pub cache_ps: Ps,
    pub window: RunWindow,
}

impl RequesterParams {
    /// Resolves `c` for requester `name`; `memories` are the memory names in
    /// index order, `base` the directory of relative trace files.
    pub fn resolve(
        name: &str,
        c: &RequesterConfig,
        memories: &[String],
        base: &Path,
    ) -> Result<RequesterParams> {
        let w = |f: &str| format!("requester {name}: {f}");
        if c.queue_capacity == 0 || c.queue_capacity > 1 << 20 {
            bail!(
                "{}",
                w(&format!(
                    "queue_capacity = {}: between 1 and 1048576",
                    c.queue_capacity
                ))
            );
        }
        if !c.line_bytes.is_power_of_two() || !(8..=4096).contains(&c.line_bytes) {
            bail!(
                "{}",
                w(&format!(
                    "line_bytes = {}: a power of two from 8 to 4096",
                    c.line_bytes
                ))
            );
        }
        let line = c.line_bytes as u64;
        if !c.interleave_granularity.is_power_of_two() || c.interleave_granularity < line {
            bail!(
                "{}",
                w(&format!(
                    "interleave_granularity = {}: a power of two >= line_bytes",
                    c.interleave_granularity
                ))
            );
        }
        if c.footprint_bytes < line || c.footprint_bytes > 1 << 56 {
            bail!(
                "{}",
                w(&format!(
                    "footprint_bytes = {}: between one line and 2^56",
                    c.footprint_bytes
                ))
            );
        }
        if c.requests > 1 << 40 {
            bail!("{}", w(&format!("requests = {}: at most 2^40", c.requests)));
        }
        let read = check_fraction(&w("read_ratio"), c.read_ratio)?;
        let hot = check_fraction(&w("hot_fraction"), c.hot_fraction)?;
        let hot_p = check_fraction(&w("hot_probability"), c.hot_probability)?;
        let footprint_lines = c.footprint_bytes / line;
        let hot_lines = ((footprint_lines as f64 * hot).round() as u64).min(footprint_lines);
        if hot > 0.0 && (hot_lines == 0 || hot_lines == footprint_lines) {
            bail!(
                "{}",
                w("hot_fraction leaves no hot or no cold line in the footprint")
            );
        }
        let targets = match &c.targets {
            None => (0..memories.len() as u32).collect(),
            Some(t) => {
                if t.is_empty() {
                    bail!("{}", w("targets is empty"));
                }
                t.iter()
                    .map(|n| {
                        memories
                            .iter()
                            .position(|m| m == n)
                            .map(|i| i as u32)
                            .with_context(|| w(&format!("target {n:?} is not a memory")))
                    })
                    .collect::<Result<Vec<_>>>()?
            }
        };
        let trace = match c.traffic {
            Traffic::Trace => {
                let f = c
                    .trace_file
                    .as_ref()
                    .with_context(|| w("traffic = \"trace\" needs trace_file"))?;
                let path = base.join(f);
                let text = std::fs::read_to_string(&path)
                    .with_context(|| w(&format!("reading {}", path.display())))?;
                Some(Arc::new(
                    parse_trace(&text).with_context(|| w(&path.display().to_string()))?,
                ))
            }
            _ => None,
        };
        let window = match (c.run_ns, c.window_ns) {
            (None, None) => RunWindow::OPEN,
            (Some(r), Some(wi)) => {
                let run_ps = ns_to_ps(&w("run_ns"), r)?;
                let window_ps = ns_to_ps(&w("window_ns"), wi)?;
                if window_ps == 0 || run_ps == 0 || run_ps > window_ps {
                    bail!("{}", w("need 0 < run_ns <= window_ns"));
                }
                RunWindow::new(run_ps, window_ps)
            }
            _ => bail!("{}", w("run_ns and window_ns go together")),
        };
        if c.cache_lines > 1 << 32 {
            bail!("{}", w("cache_lines: at most 2^32"));
        }
        Ok(RequesterParams {
            queue_capacity: c.queue_capacity,
            issue_interval_ps: ns_to_ps(&w("issue_interval_ns"), c.issue_interval_ns)?,
            process_ps: ns_to_ps(&w("process_ns"), c.process_ns)?,
            requests: match &trace {
                Some(t) => c.requests.min(t.len() as u64),
                None => c.requests,
            },
            read_ppm: fraction_ppm(read),
            pattern: c.rw_pattern,
            traffic: c.traffic,
            trace,
            footprint_lines,
            line_bytes: line,
            granularity: c.interleave_granularity,
            targets,
            hot_lines,
            hot_ppm: if hot > 0.0 { fraction_ppm(hot_p) } else { 0 },
            cache_lines: c.cache_lines,
            cache_ps: ns_to_ps(&w("cache_access_ns"), c.cache_access_ns)?,
            window,
        })
    }
}

/// A local LRU cache of lines (index-linked list, no per-access allocation).
#[derive(Debug)]
pub struct LineCache {
    capacity: usize,
    map: FxMap<u64, u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: u32, // most recent
    tail: u32, // least recent
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    line: u64,
    dirty: bool,
    prev: u32,
    next: u32,
}

const NIL: u32 = u32::MAX;

impl LineCache {
    pub fn new(capacity: usize) -> LineCache {
        LineCache {
            capacity: capacity.max(1),
            map: FxMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    fn unlink(&mut self, i: u32) {
        let s = self.slots[i as usize];
        if s.prev != NIL {
            self.slots[s.prev as usize].next = s.next;
        } else {
            self.head = s.next;
        }
        if s.next != NIL {
            self.slots[s.next as usize].prev = s.prev;
        } else {
            self.tail = s.prev;
        }
    }

    fn push_front(&mut self, i: u32) {
        self.slots[i as usize].prev = NIL;
        self.slots[i as usize].next = self.head;
        if self.head != NIL {
            self.slots[self.head as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// Looks `line` up; a hit becomes most recent (and dirty on a write).
    pub fn access(&mut self, line: u64, write: bool) -> bool {
        match self.map.get(&line) {
            Some(&i) => {
                self.unlink(i);
                self.push_front(i);
                self.slots[i as usize].dirty |= write;
                true
            }
            None => false,
        }
    }

    /// Installs `line`; returns the evicted line and whether it was dirty.
    pub fn insert(&mut self, line: u64, dirty: bool) -> Option<(u64, bool)> {
        if let Some(&i) = self.map.get(&line) {
            self.slots[i as usize].dirty |= dirty;
            self.unlink(i);
            self.push_front(i);
            return None;
        }
        let mut evicted = None;
        let i = if self.map.len() >= self.capacity {
            let t = self.tail;
            self.unlink(t);
            let old = self.slots[t as usize];
            self.map.remove(&old.line);
            evicted = Some((old.line, old.dirty));
            t
        } else if let Some(i) = self.free.pop() {
            i
        } else {
            self.slots.push(Slot {
                line,
                dirty,
                prev: NIL,
                next: NIL,
            });
            (self.slots.len() - 1) as u32
        };
        self.slots[i as usize].line = line;
        self.slots[i as usize].dirty = dirty;
        self.map.insert(line, i);
        self.push_front(i);
        evicted
    }

    /// Invalidates `line`: `Some(dirty)` if it was present.
    pub fn invalidate(&mut self, line: u64) -> Option<bool> {
        let i = self.map.remove(&line)?;
        self.unlink(i);
        let dirty = self.slots[i as usize].dirty;
        self.free.push(i);
        Some(dirty)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Counters of one requester.
#[derive(Clone, Debug, Default)]
pub struct ReqCounters {
    pub completed: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub lines_invalidated: u64,
    pub gated_ps: u64,
}

/// Run-time state of one requester.
#[derive(Debug)]
pub struct Requester {
    pub params: RequesterParams,
    pub rng: Rng,
    pub issued: u64,
    pub outstanding: u32,
    pub next_issue: Ps,
    /// Waiting for a completion to free a queue slot.
    pub blocked: bool,
    /// Generation of the valid Issue event (older ones are stale).
    pub issue_gen: u32,
    pub window: RunWindow,
    stream_pos: u64,
    rw_acc: u32,
    pub cache: Option<LineCache>,
    /// Lines with a miss in flight, and whether a BISnp hit them meanwhile.
    pub inflight: FxMap<u64, (u32, bool)>,
    pub counters: ReqCounters,
    pub occupancy: Occupancy,
    pub latency: Histogram,
    /// For controller observations.
    pub last_bytes: u64,
    pub last_integral: u128,
}

impl Requester {
    pub fn new(params: RequesterParams, seed: u64, index: u64) -> Requester {
        let cache = (params.cache_lines > 0).then(|| LineCache::new(params.cache_lines as usize));
        Requester {
            window: params.window,
            params,
            rng: Rng::new(seed, index),
            issued: 0,
            outstanding: 0,
            next_issue: 0,
            blocked: false,
            issue_gen: 0,
            stream_pos: 0,
            rw_acc: 0,
            cache,
            inflight: FxMap::default(),
            counters: ReqCounters::default(),
            occupancy: Occupancy::default(),
            latency: Histogram::default(),
            last_bytes: 0,
            last_integral: 0,
        }
    }

    /// The next request: (write, line address).
    #[inline]
    pub fn generate(&mut self) -> (bool, u64) {
        let p = &self.params;
        let line_of = |addr: u64| addr / p.line_bytes;
        match p.traffic {
            Traffic::Trace => {
                let t = p.trace.as_ref().expect("trace loaded");
                let op = t[(self.issued % t.len() as u64) as usize];
                (op.write, line_of(op.addr))
            }
            Traffic::Stream | Traffic::Random => {
                let line = if p.traffic == Traffic::Stream {
                    let l = self.stream_pos;
                    self.stream_pos = (self.stream_pos + 1) % p.footprint_lines;
                    l
                } else if p.hot_ppm > 0 {
                    if self.rng.chance_ppm(p.hot_ppm) {
                        self.rng.below(p.hot_lines)
                    } else {
                        p.hot_lines + self.rng.below(p.footprint_lines - p.hot_lines)
                    }
                } else {
                    self.rng.below(p.footprint_lines)
                };
                let read = match p.pattern {
                    RwPattern::Random => self.rng.chance_ppm(p.read_ppm),
                    RwPattern::Interleaved => {
                        self.rw_acc += p.read_ppm;
                        if self.rw_acc >= 1_000_000 {
                            self.rw_acc -= 1_000_000;
                            true
                        } else {
                            false
                        }
                    }
                };
                (!read, line)
            }
        }
    }

    /// Interleave: (memory index, device line) of global line `line`.
    #[inline]
    pub fn target(&self, line: u64) -> (u32, u64) {
        let p = &self.params;
        let addr = line * p.line_bytes;
        let ways = p.targets.len() as u64;
        let chunk = addr / p.granularity;
        let mem = p.targets[(chunk % ways) as usize];
        let dpa = (chunk / ways) * p.granularity + addr % p.granularity;
        (mem, dpa / p.line_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_window_opens_periodically() {
        let w = RunWindow::new(30, 100);
        assert_eq!(w.next_open(0), 0);
        assert_eq!(w.next_open(29), 29);
        assert_eq!(w.next_open(30), 100);
        assert_eq!(w.next_open(250), 300);
        assert_eq!(RunWindow::OPEN.next_open(77), 77);
        assert_eq!(RunWindow::CLOSED.next_open(77), Ps::MAX);
        assert_eq!(w.open_ps(0, 1000), 300);
        assert_eq!(w.open_ps(20, 120), 30);
        let o = RunWindow { offset_ps: 50, ..w };
        assert_eq!(o.next_open(0), 50);
        assert_eq!(o.next_open(10), 50);
        assert_eq!(o.next_open(79), 79);
        assert_eq!(o.next_open(80), 150);
        assert_eq!(o.open_ps(0, 100), 30);
        assert_eq!(o.open_ps(0, 60), 10);
        assert_eq!(o.open_ps(0, 1000), 300);
        assert_eq!(RunWindow::CLOSED.open_ps(0, 1000), 0);
    }

    #[test]
    fn lru_cache_evicts_least_recent_and_reuses_slots() {
        let mut c = LineCache::new(2);
        assert_eq!(c.insert(1, false), None);
        assert_eq!(c.insert(2, true), None);
        assert!(c.access(1, false));
        assert_eq!(c.insert(3, false), Some((2, true)));
        assert_eq!(c.invalidate(1), Some(false));
        assert_eq!(c.invalidate(1), None);
        assert_eq!(c.insert(4, false), None);
        assert_eq!(c.len(), 2);
        assert_eq!(c.insert(5, false), Some((3, false)));
        assert!(c.access(4, false) && c.access(5, false));
    }

    #[test]
    fn trace_parsing_and_errors() {
        let t = parse_trace("# x\nR 0x40\nw 128 # c\n\n").unwrap();
        assert_eq!(
            t,
            vec![
                TraceOp {
                    write: false,
                    addr: 64
                },
                TraceOp {
                    write: true,
                    addr: 128
                }
            ]
        );
        assert!(parse_trace("X 1").is_err());
        assert!(parse_trace("R zz").is_err());
        assert!(parse_trace("").is_err());
    }
}
