//! The simulator: builds the models from a configuration and runs the event
//! loop.
//!
//! A request's life: the requester issues it (`Issue`), it leaves after the
//! requester process time (`Depart`), crosses links (serialisation, then the
//! bus time, then the next device's port delay, plus the switching time in a
//! switch: one `Ready` event per device), is routed hop by hop on shortest
//! paths, waits in output queues (`LinkFree` when a busy link frees), passes
//! the snoop filter and the memory controller and DRAM at the memory, and the
//! response comes back the same way. Statistics cover one time window for
//! all requesters, in which every one of them is in steady state (see
//! [`RunConfig`](crate::config::RunConfig)); a run that never has one says
//! so in [`Report::window_error`].

use crate::config::{check_fraction, ns_to_ps, Config};
use crate::event::{EventQueue, Kind, Ps};
use crate::link::ChanCounters;
use crate::link::{Link, LinkParams, DATA_BIT};
use crate::memory::{Dram, MemCounters, MemoryParams};
use crate::requester::{
    Controller, LinkObservation, NoController, Observation, ReqCounters, Requester,
    RequesterParams, RunWindow,
};
use crate::snoop::{Lookup, SfCounters, SnoopFilter, MAX_INVBLK};
use crate::stats::{
    Histogram, HopLatency, LinkReport, MemoryReport, OccupancySummary, Report, RequesterReport,
    SnoopReport,
};
use crate::switch::{self, SwitchParams};
use crate::topology::{self, Graph, NodeKind, Routes};
use anyhow::{bail, Result};
use std::path::Path;
use std::time::Instant;

/// Bits of an Issue event's argument that hold the generation (the rest is
/// the requester index; at most 4096 requesters).
const GEN_BITS: u32 = 17;

#[inline]
fn issue_arg(r: u32, gen: u32) -> u32 {
    r << GEN_BITS | gen
}

/// Most packets in flight at once (event arguments are 29 bits).
const MAX_PACKETS: u64 = 1 << 28;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PktKind {
    RdReq,
    RdResp,
    WrReq,
    WrAck,
    /// Write-back of a dirty line evicted from a requester cache.
    WbReq,
    WbAck,
    BiSnp,
    BiRsp,
    /// BIRsp carrying a dirty line.
    BiRspData,
    /// A local cache hit (never leaves the requester).
    Hit,
}

impl PktKind {
    #[inline]
    fn is_data(self) -> bool {
        matches!(
            self,
            PktKind::RdResp | PktKind::WrReq | PktKind::WbReq | PktKind::BiRspData
        )
    }
}

#[derive(Clone, Copy, Debug)]
struct Packet {
    kind: PktKind,
    /// Tracked by the snoop filter (the requester has a cache).
    coherent: bool,
    /// The access was a write (cached requesters fetch and dirty the line).
    write: bool,
    /// Node the packet is at.
    at: u32,
    /// Source and destination PBR ids.
    src: u32,
    dst: u32,
    /// Requester index the packet belongs to.
    requester: u32,
    /// Global line address and device line address.
    line: u64,
    dev_line: u64,
    issue: Ps,
    /// BISnp: lines in the block. Waiting request: BIRsps still expected.
    aux: u32,
    /// BISnp/BIRsp: the request packet waiting for it.
    txn: u32,
}

struct Mem {
    dram: Dram,
    sf: Option<SnoopFilter>,
}

/// How the measurement window opens and closes.
enum Window {
    /// Per requester: completions that end its warm-up, and that start its
    /// cool-down (`u64::MAX`: never, a requester without requests).
    Fractions { warm: Vec<u64>, cool: Vec<u64> },
    /// Fixed times; the run stops when the window closes.
    Times { start: Ps, end: Ps },
}

#[derive(Clone, Debug)]
struct Snapshot {
    time: Ps,
    reqs: Vec<(ReqCounters, u128)>,
    chans: Vec<(ChanCounters, u128)>,
    mems: Vec<(MemCounters, Option<SfCounters>)>,
}

/// A configured simulation, ready to run once.
pub struct Sim<C: Controller = NoController> {
    q: EventQueue,
    graph: Graph,
    routes: Routes,
    links: Vec<Link>,
    /// Destination node of each link direction.
    ends: Vec<[u32; 2]>,
    /// Bus time + the destination's ingress delay, per link direction.
    post_ps: Vec<[Ps; 2]>,
    kinds: Vec<NodeKind>,
    adaptive: bool,
    reqs: Vec<Requester>,
    mems: Vec<Mem>,
    sf_lookup_ps: Ps,
    packets: Vec<Packet>,
    free: Vec<u32>,
    n_req: u32,
    ctrl: C,
    /// Link counters at the previous controller tick, per direction.
    last_chans: Vec<ChanCounters>,
    total: u64,
    completed: u64,
    window: Window,
    /// Requesters with requests still in their warm-up (fractions).
    warming: usize,
    /// The first requester to leave steady state: (index, time, what it did).
    left_steady: Option<(usize, Ps, &'static str)>,
    /// Between the window's two snapshots.
    measuring: bool,
    /// Why the window is not a steady-state window (set by `run`).
    window_error: Option<String>,
    ran: bool,
    warmup_fraction: f64,
    snap_start: Option<Snapshot>,
    snap_end: Option<Snapshot>,
    latency: Histogram,
    /// Window completions and latency sums by hops to the memory (0: cache
    /// hits).
    by_hops: Vec<(u64, u128)>,
    max_time: Option<Ps>,
    progress: bool,
    topology_name: String,
    seed: u64,
    line_bytes: u64,
}

fn topology_name(cfg: &Config) -> String {
    use crate::config::TopologyConfig as T;
    match &cfg.topology {
        T::Chain { n } => format!("chain n={n}"),
        T::Tree { n } => format!("tree n={n}"),
        T::Ring { n } => format!("ring n={n}"),
        T::SpineLeaf { n, .. } => format!("spine-leaf n={n}"),
        T::FullyConnected { n } => format!("fully-connected n={n}"),
        T::Custom { .. } => "custom".into(),
        T::Cxlctl { .. } => "cxlctl".into(),
    }
}

impl Sim<NoController> {
    /// Validates `cfg` and builds the simulation (`base`: directory for
    /// relative file names in the configuration).
    pub fn new(cfg: &Config, base: &Path) -> Result<Self> {
        Sim::with_controller(cfg, base, NoController)
    }
}

impl<C: Controller> Sim<C> {
    pub fn with_controller(cfg: &Config, base: &Path, ctrl: C) -> Result<Self> {
        let graph = topology::build(&cfg.topology, base)?;
        let mut routes = graph.routes();
        let line_bytes = cfg.requester.line_bytes;
        let mut links = Vec::with_capacity(graph.links.len());
        let mut ends = Vec::with_capacity(graph.links.len());
        for def in &graph.links {
            links.push(Link::new(LinkParams::resolve(
                &cfg.link, &def.spec, line_bytes,
            )?));
            ends.push([def.b, def.a]);
        }
        let mem_names: Vec<String> = graph
            .memories
            .iter()
            .map(|&m| graph.nodes[m as usize].name.clone())
            .collect();
        let req_names: Vec<String> = graph
            .requesters
            .iter()
            .map(|&r| graph.nodes[r as usize].name.clone())
            .collect();
        for (i, o) in cfg.requester_override.iter().enumerate() {
            if !req_names.contains(&o.name) {
                bail!(
                    "requester_override names {:?}, which is not a requester",
                    o.name
                );
            }
            if cfg.requester_override[..i].iter().any(|p| p.name == o.name) {
                bail!("requester_override for {:?} given twice", o.name);
            }
        }
        let mut reqs = Vec::with_capacity(req_names.len());
        for (i, name) in req_names.iter().enumerate() {
            let c = match cfg.requester_override.iter().find(|o| &o.name == name) {
                Some(o) => cfg.requester.with(o),
                None => cfg.requester.clone(),
            };
            let params = RequesterParams::resolve(name, &c, &mem_names, base)?;
            for &t in &params.targets {
                let pbr = (req_names.len() + t as usize) as u32;
                if routes.hops(graph.requesters[i], pbr).is_none() {
                    bail!(
                        "disconnected topology: requester {name} cannot reach memory {}",
                        mem_names[t as usize]
                    );
                }
            }
            reqs.push(Requester::new(params, cfg.seed, i as u64));
        }
        // Oblivious routes: every requester-memory pair with traffic, both
        // ways, as equal loads.
        let mut flows = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            if r.params.requests > 0 {
                for &t in &r.params.targets {
                    let m = (req_names.len() + t as usize) as u32;
                    flows.extend([(i as u32, m), (m, i as u32)]);
                }
            }
        }
        routes.balance(&graph, &flows);
        let mp = MemoryParams::resolve(&cfg.memory, line_bytes)?;
        let (sf_lookup_ps, sf_cfg) = match &cfg.snoop_filter {
            None => (0, None),
            Some(s) => {
                if s.entries == 0 || s.entries > 1 << 32 {
                    bail!("snoop_filter entries = {}: between 1 and 2^32", s.entries);
                }
                if s.invblk_max == 0 || s.invblk_max > MAX_INVBLK {
                    bail!(
                        "snoop_filter invblk_max = {}: between 1 and {MAX_INVBLK}",
                        s.invblk_max
                    );
                }
                if req_names.len() > 64 {
                    bail!(
                        "a snoop filter tracks at most 64 requesters; this fabric has {}",
                        req_names.len()
                    );
                }
                (ns_to_ps("snoop_filter lookup_ns", s.lookup_ns)?, Some(s))
            }
        };
        let mems = mem_names
            .iter()
            .map(|_| Mem {
                dram: Dram::new(mp.clone()),
                sf: sf_cfg.map(|s| SnoopFilter::new(s.entries as usize, s.policy, s.invblk_max)),
            })
            .collect();
        let sw = SwitchParams::resolve(&cfg.switch)?;
        let kinds: Vec<NodeKind> = graph.nodes.iter().map(|n| n.kind).collect();
        let ingress_ps: Vec<Ps> = kinds
            .iter()
            .map(|k| match k {
                NodeKind::Switch => sw.switch_ingress_ps(),
                _ => sw.port_ps,
            })
            .collect();
        let warm = check_fraction("run warmup_fraction", cfg.run.warmup_fraction)?;
        let cool = check_fraction("run cooldown_fraction", cfg.run.cooldown_fraction)?;
        if warm + cool >= 1.0 {
            bail!("run warmup_fraction + cooldown_fraction must be below 1");
        }
        let total: u64 = reqs.iter().map(|r| r.params.requests).sum();
        // Requests in flight, a write-back and a BISnp per request at most.
        let in_flight: u64 = reqs
            .iter()
            .map(|r| r.params.queue_capacity as u64 * 3)
            .sum();
        if in_flight > MAX_PACKETS {
            bail!("the sum of the requesters' queue capacities is too large");
        }
        if links.len() as u64 >= 1 << 28 {
            bail!("too many links");
        }
        if total == 0 {
            bail!("no requests to simulate (requests = 0 everywhere)");
        }
        let window = match (cfg.run.warmup_ns, cfg.run.measure_ns) {
            (None, None) => {
                // warm + cool < 1 keeps warm below cool for any request count.
                let share = |n: u64, f: f64| (n as f64 * f).floor() as u64;
                let (warm, cool) = reqs
                    .iter()
                    .map(|r| match r.params.requests {
                        0 => (0, u64::MAX),
                        n => (share(n, warm), n - share(n, cool)),
                    })
                    .unzip();
                Window::Fractions { warm, cool }
            }
            (Some(w), Some(m)) => {
                let start = ns_to_ps("run warmup_ns", w)?;
                let len = ns_to_ps("run measure_ns", m)?;
                if len == 0 {
                    bail!("run measure_ns = {m}: must be above 0");
                }
                Window::Times {
                    start,
                    end: start.saturating_add(len),
                }
            }
            _ => bail!("run warmup_ns and measure_ns go together"),
        };
        let warming = match &window {
            Window::Fractions { warm, .. } => warm.iter().filter(|&&w| w > 0).count(),
            Window::Times { .. } => 0,
        };
        let max_time = cfg
            .run
            .max_time_ns
            .map(|t| ns_to_ps("run max_time_ns", t))
            .transpose()?;
        if let Some(p) = ctrl.period_ps() {
            if p == 0 {
                bail!("controller period must be > 0");
            }
        }
        let mut ctrl = ctrl;
        if let Some(m) = ctrl.marking() {
            for l in &mut links {
                l.marking = Some(m);
            }
        }
        let mut windows: Vec<RunWindow> = reqs.iter().map(|r| r.window).collect();
        ctrl.on_start(&mut windows);
        for (r, w) in reqs.iter_mut().zip(windows) {
            r.window = if w.window_ps == 0 { RunWindow::OPEN } else { w };
        }
        let last_chans = vec![ChanCounters::default(); links.len() * 2];
        let post_ps = links
            .iter()
            .zip(&ends)
            .map(|(l, e)| {
                let t = |n: u32| l.params.bus_ps.saturating_add(ingress_ps[n as usize]);
                [t(e[0]), t(e[1])]
            })
            .collect();
        Ok(Sim {
            post_ps,
            q: EventQueue::new(),
            n_req: reqs.len() as u32,
            routes,
            links,
            ends,
            kinds,
            adaptive: sw.adaptive,
            reqs,
            mems,
            sf_lookup_ps,
            packets: Vec::new(),
            free: Vec::new(),
            ctrl,
            last_chans,
            total,
            completed: 0,
            window,
            warming,
            left_steady: None,
            measuring: false,
            window_error: None,
            ran: false,
            warmup_fraction: warm,
            snap_start: None,
            snap_end: None,
            latency: Histogram::default(),
            by_hops: Vec::new(),
            max_time,
            progress: cfg.run.progress,
            topology_name: topology_name(cfg),
            seed: cfg.seed,
            line_bytes: line_bytes as u64,
            graph,
        })
    }

    /// The fabric graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn controller(&self) -> &C {
        &self.ctrl
    }

    /// The controller, after the run.
    pub fn into_controller(self) -> C {
        self.ctrl
    }

    #[inline]
    fn alloc(&mut self, p: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.packets[i as usize] = p;
                i
            }
            None => {
                self.packets.push(p);
                (self.packets.len() - 1) as u32
            }
        }
    }

    #[inline]
    fn release(&mut self, id: u32) {
        self.free.push(id);
    }

    /// Runs to completion (or `max_time_ns`, or the end of a `measure_ns`
    /// window) and returns the report. A simulation runs once: later calls
    /// return the same report.
    pub fn run(&mut self) -> Report {
        if self.ran {
            return self.report();
        }
        self.ran = true;
        let wall = Instant::now();
        let mut last_print = wall;
        // Before the first issues, so a window opening at 0 sees them.
        match self.window {
            Window::Times { start, end } => {
                self.q.schedule(start, Kind::Window, 0);
                self.q.schedule(end, Kind::Window, 1);
            }
            Window::Fractions { .. } => {
                if self.warming == 0 {
                    self.open_window();
                }
            }
        }
        for r in 0..self.n_req {
            self.q.schedule(0, Kind::Issue, issue_arg(r, 0));
        }
        if let Some(p) = self.ctrl.period_ps() {
            self.q.schedule(p, Kind::Tick, 0);
        }
        let mut cut = None;
        loop {
            // Peek, so the clock (and the last snapshot) stays at or before it.
            if let Some(m) = self.max_time {
                if self.q.peek_time().is_some_and(|t| t > m) {
                    cut = Some(m);
                    break;
                }
            }
            let Some(ev) = self.q.pop() else { break };
            match ev.kind {
                Kind::Issue => self.on_issue(
                    (ev.arg >> GEN_BITS) as usize,
                    ev.arg & ((1 << GEN_BITS) - 1),
                ),
                Kind::Ready => self.on_ready(ev.arg),
                Kind::Depart => {
                    let node = self.packets[ev.arg as usize].at;
                    self.forward(node, ev.arg);
                }
                Kind::LinkFree => self.on_link_free(ev.arg >> 1, (ev.arg & 1) as u8),
                Kind::Tick => self.on_tick(),
                Kind::Window if ev.arg == 0 => self.open_window(),
                Kind::Window => {
                    self.close_window();
                    break;
                }
            }
            if self.progress && self.q.processed() & 0xF_FFFF == 0 {
                let t = Instant::now();
                if t.duration_since(last_print).as_secs_f64() >= 1.0 {
                    last_print = t;
                    let secs = t.duration_since(wall).as_secs_f64();
                    eprintln!(
                        "cxlsim: {} events ({:.1} M/s), simulated {:.3} us, {}/{} requests",
                        self.q.processed(),
                        self.q.processed() as f64 / secs / 1e6,
                        self.q.now() as f64 / 1e6,
                        self.completed,
                        self.total
                    );
                }
            }
        }
        self.finish(cut);
        self.report()
    }

    fn name(&self, r: usize) -> &str {
        &self.graph.nodes[self.graph.requesters[r] as usize].name
    }

    fn open_window(&mut self) {
        let fractions = matches!(self.window, Window::Fractions { .. });
        // With fractions, a requester that left steady state first leaves
        // no interval with all of them in it.
        if self.snap_start.is_some() || (fractions && self.left_steady.is_some()) {
            return;
        }
        self.snap_start = Some(self.snapshot());
        self.measuring = true;
    }

    fn close_window(&mut self) {
        if self.measuring {
            self.snap_end = Some(self.snapshot());
            self.measuring = false;
        }
    }

    /// Requester `r` stops offering its steady load (`what` it did).
    fn leave_steady(&mut self, r: usize, what: &'static str) {
        if self.left_steady.is_some() {
            return;
        }
        self.left_steady = Some((r, self.q.now(), what));
        if matches!(self.window, Window::Fractions { .. }) {
            self.close_window();
        }
    }

    /// Takes the snapshots the run did not reach and says why the figures
    /// cannot be trusted then (`cut`: the `max_time_ns` that stopped it).
    fn finish(&mut self, cut: Option<Ps>) {
        let now = self.q.now();
        let ns = |t: Ps| t as f64 / 1000.0;
        let stop = match cut {
            Some(m) => format!("max_time_ns = {} stopped the run", ns(m)),
            None => format!("the run had no events left at {:.1} ns", ns(now)),
        };
        let left = self
            .left_steady
            .map(|(r, t, what)| format!("{} {what} at {:.1} ns", self.name(r), ns(t)));
        self.window_error = match (&self.snap_start, &self.snap_end, &self.window) {
            (None, _, w) => {
                let why = match (&left, w) {
                    (Some(l), Window::Fractions { .. }) => format!(
                        "{l}, before every requester had completed its warm-up \
                         (warmup_fraction {} of its requests): the requesters run at \
                         different rates; give the faster ones more requests, or set \
                         warmup_ns and measure_ns",
                        self.warmup_fraction
                    ),
                    _ => format!("{stop}, before the measurement window opened"),
                };
                Some(format!(
                    "no measurement window: {why}; bandwidth, latency, utilization and \
                     every other windowed figure are empty"
                ))
            }
            (Some(a), None, _) => Some(format!(
                "{stop}, before the measurement window closed: bandwidth, latency and \
                 utilization cover only {:.1}-{:.1} ns",
                ns(a.time),
                ns(now)
            )),
            // The run stops at the window's end: whoever left did so inside.
            (Some(_), Some(b), Window::Times { .. }) => left.map(|l| {
                format!(
                    "{l}, before the measurement window closed at {:.1} ns: its \
                     bandwidth over the window is not steady state; raise its requests",
                    ns(b.time)
                )
            }),
            (Some(_), Some(_), Window::Fractions { .. }) => None,
        };
        if self.snap_start.is_none() {
            self.snap_start = Some(self.snapshot());
        }
        if self.snap_end.is_none() {
            self.snap_end = Some(self.snapshot());
        }
        self.measuring = false;
    }

    fn on_issue(&mut self, r: usize, gen: u32) {
        let now = self.q.now();
        let node = self.graph.requesters[r];
        let rq = &mut self.reqs[r];
        if gen != rq.issue_gen || rq.issued >= rq.params.requests {
            return;
        }
        if rq.outstanding >= rq.params.queue_capacity {
            rq.blocked = true;
            return;
        }
        let open = rq.window.next_open(now);
        if open == Ps::MAX {
            // Closed: a controller's window change reschedules it.
            return;
        }
        if open > now {
            rq.counters.gated_ps += open - now;
            self.q.schedule(open, Kind::Issue, issue_arg(r as u32, gen));
            return;
        }
        if rq.issued + 1 == rq.params.requests {
            // From here its load only drains.
            self.leave_steady(r, "issued its last request");
        }
        let rq = &mut self.reqs[r];
        let (write, line) = rq.generate();
        rq.issued += 1;
        rq.outstanding += 1;
        rq.occupancy.set(now, rq.outstanding);
        rq.next_issue = now.saturating_add(rq.params.issue_interval_ps);
        if rq.issued < rq.params.requests {
            if rq.outstanding < rq.params.queue_capacity {
                self.q
                    .schedule(rq.next_issue, Kind::Issue, issue_arg(r as u32, gen));
            } else {
                rq.blocked = true;
            }
        }
        let mut depart = now.saturating_add(rq.params.process_ps);
        let mut coherent = false;
        if let Some(cache) = &mut rq.cache {
            if cache.access(line, write) {
                rq.counters.cache_hits += 1;
                let t = now.saturating_add(rq.params.cache_ps);
                let id = self.alloc(Packet {
                    kind: PktKind::Hit,
                    coherent: false,
                    write,
                    at: node,
                    src: r as u32,
                    dst: r as u32,
                    requester: r as u32,
                    line,
                    dev_line: 0,
                    issue: now,
                    aux: 0,
                    txn: 0,
                });
                self.q.schedule(t, Kind::Ready, id);
                return;
            }
            rq.counters.cache_misses += 1;
            depart = depart.saturating_add(rq.params.cache_ps);
            coherent = true;
            rq.inflight.entry(line).or_insert((0, false)).0 += 1;
        }
        let (mem, dev_line) = rq.target(line);
        let kind = if write && !coherent {
            PktKind::WrReq
        } else {
            PktKind::RdReq
        };
        let id = self.alloc(Packet {
            kind,
            coherent,
            write,
            at: node,
            src: r as u32,
            dst: self.n_req + mem,
            requester: r as u32,
            line,
            dev_line,
            issue: now,
            aux: 0,
            txn: 0,
        });
        self.q.schedule(depart, Kind::Depart, id);
    }

    #[inline]
    fn on_ready(&mut self, id: u32) {
        let node = self.packets[id as usize].at;
        match self.kinds[node as usize] {
            NodeKind::Switch => self.forward(node, id),
            NodeKind::Memory => self.at_memory(node, id),
            NodeKind::Requester => self.at_requester(node, id),
        }
    }

    /// Picks the egress port of `node` for packet `id` and sends it.
    #[inline]
    fn forward(&mut self, node: u32, id: u32) {
        let now = self.q.now();
        let p = &self.packets[id as usize];
        let (src, dst, data, who) = (p.src, p.dst, p.kind.is_data(), p.requester);
        let cands = self.routes.candidates(node, dst);
        let ports = &self.graph.nodes[node as usize].ports;
        assert!(
            !cands.is_empty(),
            "no route from node {node} to PBR id {dst} (validated at build)"
        );
        let links = &self.links;
        let routes = &self.routes;
        let first = |n| routes.preferred(node, src, dst, n);
        let pi = switch::choose(cands, first, self.adaptive, |c| {
            let port = ports[c as usize];
            links[port.link as usize].load(port.dir, now)
        });
        let port = ports[pi as usize];
        let msg = id | if data { DATA_BIT } else { 0 };
        match self.links[port.link as usize].offer(now, port.dir, msg, who) {
            crate::link::Offer::Started { end } => self.arrive(id, port.link, port.dir, end),
            crate::link::Offer::Queued { wake } => {
                if let Some(w) = wake {
                    self.q
                        .schedule(w, Kind::LinkFree, port.link << 1 | port.dir as u32);
                }
            }
        }
    }

    /// Packet `id`'s transfer on `link` in `dir` ends at `end`.
    #[inline]
    fn arrive(&mut self, id: u32, link: u32, dir: u8, end: Ps) {
        let dest = self.ends[link as usize][dir as usize];
        let t = end.saturating_add(self.post_ps[link as usize][dir as usize]);
        self.packets[id as usize].at = dest;
        self.q.schedule(t, Kind::Ready, id);
    }

    fn on_link_free(&mut self, link: u32, dir: u8) {
        let now = self.q.now();
        let (next, wake) = self.links[link as usize].on_free(now, dir);
        if let Some(n) = next {
            self.arrive(n.msg & !DATA_BIT, link, n.dir, n.end);
            if let Some(w) = wake {
                self.q.schedule(w, Kind::LinkFree, link << 1 | n.dir as u32);
            }
        }
    }

    fn at_memory(&mut self, node: u32, id: u32) {
        let now = self.q.now();
        let m = self.graph.nodes[node as usize].index as usize;
        let p = self.packets[id as usize];
        match p.kind {
            PktKind::RdReq => {
                if p.coherent {
                    if let Some(sf) = &mut self.mems[m].sf {
                        let t = now.saturating_add(self.sf_lookup_ps);
                        match sf.read(p.line, p.requester) {
                            Lookup::Ready => self.serve(m, id, t),
                            Lookup::Evict(v) => {
                                self.packets[id as usize].aux = v.owners.count_ones();
                                let mut owners = v.owners;
                                while owners != 0 {
                                    let o = owners.trailing_zeros();
                                    owners &= owners - 1;
                                    let s = self.alloc(Packet {
                                        kind: PktKind::BiSnp,
                                        coherent: true,
                                        write: false,
                                        at: node,
                                        src: p.dst,
                                        dst: o,
                                        requester: o,
                                        line: v.first,
                                        dev_line: 0,
                                        issue: now,
                                        aux: v.len,
                                        txn: id,
                                    });
                                    self.q.schedule(t, Kind::Depart, s);
                                }
                            }
                        }
                        return;
                    }
                }
                self.serve(m, id, now);
            }
            PktKind::WrReq | PktKind::WbReq => {
                if p.kind == PktKind::WbReq {
                    if let Some(sf) = &mut self.mems[m].sf {
                        sf.write_back(p.line, p.requester);
                    }
                }
                self.serve(m, id, now);
            }
            PktKind::BiRsp | PktKind::BiRspData => {
                if p.kind == PktKind::BiRspData {
                    // The dirty data is written; it occupies its bank.
                    self.mems[m].dram.access(now, p.dev_line, true);
                }
                self.release(id);
                let w = &mut self.packets[p.txn as usize];
                w.aux -= 1;
                if w.aux == 0 {
                    if let Some(sf) = &mut self.mems[m].sf {
                        sf.counters.waits += 1;
                        sf.counters.wait_ps += now - p.issue;
                    }
                    self.serve(m, p.txn, now);
                }
            }
            _ => self.release(id),
        }
    }

    /// The memory serves request `id` (controller + DRAM) from time `t` and
    /// sends the response when the data is ready.
    fn serve(&mut self, m: usize, id: u32, t: Ps) {
        let p = &mut self.packets[id as usize];
        let write = matches!(p.kind, PktKind::WrReq | PktKind::WbReq);
        let done = self.mems[m].dram.access(t, p.dev_line, write);
        p.kind = match p.kind {
            PktKind::RdReq => PktKind::RdResp,
            PktKind::WrReq => PktKind::WrAck,
            _ => PktKind::WbAck,
        };
        std::mem::swap(&mut p.src, &mut p.dst);
        self.q.schedule(done, Kind::Depart, id);
    }

    fn at_requester(&mut self, node: u32, id: u32) {
        let now = self.q.now();
        let p = self.packets[id as usize];
        match p.kind {
            PktKind::RdResp | PktKind::WrAck | PktKind::Hit => self.complete(node, id),
            PktKind::BiSnp => {
                let r = p.requester as usize;
                let rq = &mut self.reqs[r];
                let mut dirty = false;
                for l in p.line..p.line + p.aux as u64 {
                    if let Some(cache) = &mut rq.cache {
                        if let Some(d) = cache.invalidate(l) {
                            rq.counters.lines_invalidated += 1;
                            dirty |= d;
                        }
                    }
                    if let Some(e) = rq.inflight.get_mut(&l) {
                        e.1 = true;
                    }
                }
                let dev_line = rq.target(p.line).1;
                let t = now.saturating_add(rq.params.cache_ps);
                let q = &mut self.packets[id as usize];
                q.kind = if dirty {
                    PktKind::BiRspData
                } else {
                    PktKind::BiRsp
                };
                q.dev_line = dev_line;
                std::mem::swap(&mut q.src, &mut q.dst);
                self.q.schedule(t, Kind::Depart, id);
            }
            _ => self.release(id),
        }
    }

    fn complete(&mut self, node: u32, id: u32) {
        let now = self.q.now();
        let p = self.packets[id as usize];
        self.release(id);
        let r = p.requester as usize;
        let line_bytes = self.line_bytes;
        let rq = &mut self.reqs[r];
        rq.outstanding -= 1;
        rq.occupancy.set(now, rq.outstanding);
        let c = &mut rq.counters;
        c.completed += 1;
        c.bytes += line_bytes;
        if p.write {
            c.writes += 1;
        } else {
            c.reads += 1;
        }
        let lat = now - p.issue;
        let done = c.completed;
        self.completed += 1;
        if self.measuring {
            rq.latency.record(lat);
            self.latency.record(lat);
            let hops = if p.kind == PktKind::Hit {
                0
            } else {
                self.routes.hops(node, p.src).unwrap_or(0) as usize
            };
            if self.by_hops.len() <= hops {
                self.by_hops.resize(hops + 1, (0, 0));
            }
            self.by_hops[hops].0 += 1;
            self.by_hops[hops].1 += lat as u128;
        }
        let mut writeback = None;
        if p.kind == PktKind::RdResp && p.coherent {
            let mut drop = false;
            if let Some(e) = rq.inflight.get_mut(&p.line) {
                drop = e.1;
                e.0 -= 1;
                if e.0 == 0 {
                    rq.inflight.remove(&p.line);
                }
            }
            if !drop {
                if let Some(cache) = &mut rq.cache {
                    if let Some((victim, true)) = cache.insert(p.line, p.write) {
                        writeback = Some(victim);
                    }
                }
            }
        }
        if rq.blocked && rq.issued < rq.params.requests {
            rq.blocked = false;
            let t = rq.next_issue.max(now);
            let gen = rq.issue_gen;
            self.q.schedule(t, Kind::Issue, issue_arg(r as u32, gen));
        }
        if let Some(victim) = writeback {
            let (mem, dev_line) = self.reqs[r].target(victim);
            let wb = self.alloc(Packet {
                kind: PktKind::WbReq,
                coherent: true,
                write: true,
                at: node,
                src: r as u32,
                dst: self.n_req + mem,
                requester: r as u32,
                line: victim,
                dev_line,
                issue: now,
                aux: 0,
                txn: 0,
            });
            self.forward(node, wb);
        }
        let (warm, cool) = match &self.window {
            Window::Fractions { warm, cool } => (warm[r], cool[r]),
            Window::Times { .. } => (0, u64::MAX),
        };
        if done == warm {
            self.warming -= 1;
            if self.warming == 0 {
                self.open_window();
            }
        }
        if done == cool {
            self.leave_steady(r, "completed all but its cool-down share of its requests");
        }
    }

    fn on_tick(&mut self) {
        let now = self.q.now();
        let Some(period) = self.ctrl.period_ps() else {
            return;
        };
        let obs: Vec<Observation> = self
            .reqs
            .iter_mut()
            .map(|rq| {
                rq.occupancy.flush(now);
                let o = Observation {
                    bytes_total: rq.counters.bytes,
                    bytes_since_last: rq.counters.bytes - rq.last_bytes,
                    outstanding: rq.outstanding,
                    mean_outstanding: (rq.occupancy.integral - rq.last_integral) as f64
                        / period as f64,
                };
                rq.last_bytes = rq.counters.bytes;
                rq.last_integral = rq.occupancy.integral;
                o
            })
            .collect();
        let mut links = Vec::with_capacity(self.last_chans.len());
        for (i, last) in self.last_chans.iter_mut().enumerate() {
            let c = &self.links[i / 2].chans[i % 2].counters;
            links.push(LinkObservation {
                messages: c.messages - last.messages,
                data_messages: c.data_messages - last.data_messages,
                marked_ppm: c.marked_ppm - last.marked_ppm,
                offered: c.offered - last.offered,
                busy_ps: c.busy_ps - last.busy_ps,
            });
            *last = c.clone();
        }
        let mut windows: Vec<RunWindow> = self.reqs.iter().map(|r| r.window).collect();
        self.ctrl.on_tick_links(now, &obs, &links, &mut windows);
        for (r, w) in windows.into_iter().enumerate() {
            let rq = &mut self.reqs[r];
            let w = if w.window_ps == 0 { RunWindow::OPEN } else { w };
            if w != rq.window {
                rq.window = w;
                if !rq.blocked && rq.issued < rq.params.requests {
                    rq.issue_gen = (rq.issue_gen + 1) & ((1 << GEN_BITS) - 1);
                    let t = rq.next_issue.max(now);
                    self.q
                        .schedule(t, Kind::Issue, issue_arg(r as u32, rq.issue_gen));
                }
            }
        }
        if self.completed < self.total {
            self.q.schedule(now.saturating_add(period), Kind::Tick, 0);
        }
    }

    fn snapshot(&mut self) -> Snapshot {
        let now = self.q.now();
        let reqs = self
            .reqs
            .iter_mut()
            .map(|r| {
                r.occupancy.flush(now);
                (r.counters.clone(), r.occupancy.integral)
            })
            .collect();
        let mut chans = Vec::with_capacity(self.links.len() * 2);
        for l in &mut self.links {
            for ch in &mut l.chans {
                ch.occupancy.flush(now);
                chans.push((ch.counters.clone(), ch.occupancy.integral));
            }
        }
        let mems = self
            .mems
            .iter()
            .map(|m| {
                (
                    m.dram.counters.clone(),
                    m.sf.as_ref().map(|s| s.counters.clone()),
                )
            })
            .collect();
        Snapshot {
            time: now,
            reqs,
            chans,
            mems,
        }
    }

    fn report(&self) -> Report {
        let a = self.snap_start.as_ref().expect("start snapshot");
        let b = self.snap_end.as_ref().expect("end snapshot");
        let dur_ps = b.time.saturating_sub(a.time).max(1) as f64;
        let per_ns = |bytes: u64| bytes as f64 / dur_ps * 1000.0;
        let occ = |i0: u128, i1: u128, max: u32| OccupancySummary {
            mean: (i1 - i0) as f64 / dur_ps,
            max,
        };
        let mut requesters = Vec::new();
        for (i, rq) in self.reqs.iter().enumerate() {
            let (c0, i0) = &a.reqs[i];
            let (c1, i1) = &b.reqs[i];
            requesters.push(RequesterReport {
                name: self.graph.nodes[self.graph.requesters[i] as usize]
                    .name
                    .clone(),
                completed: c1.completed - c0.completed,
                reads: c1.reads - c0.reads,
                writes: c1.writes - c0.writes,
                bandwidth_gbps: per_ns(c1.bytes - c0.bytes),
                latency: rq.latency.summary(),
                queue: occ(*i0, *i1, rq.occupancy.max),
                cache_hits: c1.cache_hits - c0.cache_hits,
                cache_misses: c1.cache_misses - c0.cache_misses,
                lines_invalidated: c1.lines_invalidated - c0.lines_invalidated,
                gated_ns: (c1.gated_ps - c0.gated_ps) as f64 / 1000.0,
            });
        }
        let mut links = Vec::new();
        for (l, link) in self.links.iter().enumerate() {
            let def = &self.graph.links[l];
            for dir in 0..2 {
                let (from, to) = if dir == 0 {
                    (def.a, def.b)
                } else {
                    (def.b, def.a)
                };
                let from = self.graph.nodes[from as usize].name.clone();
                let to = self.graph.nodes[to as usize].name.clone();
                let (c0, i0) = &a.chans[2 * l + dir];
                let (c1, i1) = &b.chans[2 * l + dir];
                links.push(LinkReport {
                    name: format!("{from}->{to}"),
                    from,
                    to,
                    duplex: if link.params.half { "half" } else { "full" }.into(),
                    utilization: (c1.busy_ps - c0.busy_ps) as f64 / dur_ps,
                    payload_gbps: per_ns((c1.data_messages - c0.data_messages) * self.line_bytes),
                    messages: c1.messages - c0.messages,
                    turnaround_ns: (c1.turnaround_ps - c0.turnaround_ps) as f64 / 1000.0,
                    queue: occ(*i0, *i1, link.chans[dir].occupancy.max),
                });
            }
        }
        let mut memories = Vec::new();
        for (m, mem) in self.mems.iter().enumerate() {
            let (d0, s0) = &a.mems[m];
            let (d1, s1) = &b.mems[m];
            let hits = d1.row_hits - d0.row_hits;
            let misses = d1.row_misses - d0.row_misses;
            memories.push(MemoryReport {
                name: self.graph.nodes[self.graph.memories[m] as usize]
                    .name
                    .clone(),
                reads: d1.reads - d0.reads,
                writes: d1.writes - d0.writes,
                mean_bank_wait_ns: if hits + misses == 0 {
                    0.0
                } else {
                    (d1.bank_wait_ps - d0.bank_wait_ps) as f64 / (hits + misses) as f64 / 1000.0
                },
                row_hit_rate: if hits + misses == 0 {
                    0.0
                } else {
                    hits as f64 / (hits + misses) as f64
                },
                snoop_filter: match (s0, s1, &mem.sf) {
                    (Some(s0), Some(s1), Some(sf)) => Some(SnoopReport {
                        policy: format!("{:?}", sf_policy(sf)),
                        hits: s1.hits - s0.hits,
                        misses: s1.misses - s0.misses,
                        bisnp: s1.bisnp - s0.bisnp,
                        lines_evicted: s1.lines_evicted - s0.lines_evicted,
                        mean_wait_ns: {
                            let n = s1.waits - s0.waits;
                            if n == 0 {
                                0.0
                            } else {
                                (s1.wait_ps - s0.wait_ps) as f64 / n as f64 / 1000.0
                            }
                        },
                    }),
                    _ => None,
                },
            });
        }
        Report {
            seed: self.seed,
            topology: self.topology_name.clone(),
            sim_time_ns: self.q.now() as f64 / 1000.0,
            window_start_ns: a.time as f64 / 1000.0,
            window_end_ns: b.time as f64 / 1000.0,
            window_error: self.window_error.clone(),
            events: self.q.processed(),
            requests_completed: self.completed,
            aggregate_bandwidth_gbps: requesters.iter().map(|r| r.bandwidth_gbps).sum(),
            latency: self.latency.summary(),
            latency_by_hops: self
                .by_hops
                .iter()
                .enumerate()
                .filter(|(_, &(n, _))| n > 0)
                .map(|(h, &(n, sum))| HopLatency {
                    hops: h as u32,
                    count: n,
                    mean_ns: sum as f64 / n as f64 / 1000.0,
                })
                .collect(),
            requesters,
            links,
            memories,
        }
    }

    /// Per-requester latency histograms (window), for plots.
    pub fn latency_cdfs(&self) -> Vec<(String, Vec<(f64, f64)>)> {
        self.reqs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    self.graph.nodes[self.graph.requesters[i] as usize]
                        .name
                        .clone(),
                    r.latency.cdf(),
                )
            })
            .collect()
    }
}

fn sf_policy(sf: &SnoopFilter) -> crate::config::VictimPolicy {
    sf.policy()
}

/// Builds and runs `cfg`.
pub fn run(cfg: &Config, base: &Path) -> Result<Report> {
    let mut sim = Sim::new(cfg, base)?;
    Ok(sim.run())
}
