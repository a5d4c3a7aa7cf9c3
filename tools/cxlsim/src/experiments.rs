//! The checks against the ESF paper, as reusable experiments: aggregate
//! bandwidth vs topology (section V-A), full/half duplex vs read:write mix
//! and header overhead (V-D), and snoop filter victim policies (V-B).
//! Tests run them at "fast" sizes; `cxlsim bench` at the paper's sizes.
//! Sweeps run in parallel on all cores.

use crate::config::{Config, Duplex, RwPattern, SnoopFilterConfig, TopologyConfig, VictimPolicy};
use crate::sim::Sim;
use crate::stats::Report;
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// When set, the sweeps print each finished point to stderr (long runs).
pub static PROGRESS: AtomicBool = AtomicBool::new(false);

fn progress() -> bool {
    PROGRESS.load(Ordering::Relaxed)
}

/// Runs `f` over `items` on up to `threads` threads (0: all cores), keeping
/// the order of the results.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    par_map_progress(items, threads, None, f)
}

/// [`par_map`], printing `[done/total] label` to stderr as items finish when
/// `label` is given.
#[allow(clippy::type_complexity)]
pub fn par_map_progress<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    label: Option<&(dyn Fn(&T) -> String + Sync)>,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let done = AtomicUsize::new(0);
    let start = std::time::Instant::now();
    let f = |t: &T| {
        let r = f(t);
        if let Some(l) = label {
            let k = done.fetch_add(1, Ordering::Relaxed) + 1;
            eprintln!(
                "  [{k}/{}] {} ({:.1} s)",
                items.len(),
                l(t),
                start.elapsed().as_secs_f64()
            );
        }
        r
    };
    par_map_inner(items, threads, f)
}

fn par_map_inner<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
    .clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                out.lock().expect("no panics while holding the lock")[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .expect("no poisoned lock")
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// Runs `cfg`; a run without a steady-state window is an error.
fn run(cfg: &Config) -> Result<Report> {
    let mut sim = Sim::new(cfg, Path::new("."))?;
    let r = sim.run();
    if let Some(e) = &r.window_error {
        bail!("{}: {e}", r.topology);
    }
    Ok(r)
}

/// Port bandwidth used by the experiments (GB/s, the default).
pub const PORT_GBPS: f64 = 64.0;

// ---------------------------------------------------------------- topology

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Chain,
    Tree,
    Ring,
    SpineLeaf,
    FullyConnected,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Chain,
        Family::Tree,
        Family::Ring,
        Family::SpineLeaf,
        Family::FullyConnected,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Chain => "chain",
            Family::Tree => "tree",
            Family::Ring => "ring",
            Family::SpineLeaf => "spine-leaf",
            Family::FullyConnected => "fully-connected",
        }
    }

    /// The paper's multiple of one port for `n` x `n`.
    pub fn expected(self, n: u32) -> f64 {
        match self {
            Family::Chain | Family::Tree => 1.0,
            Family::Ring => 2.0,
            Family::SpineLeaf => n as f64 / 2.0,
            Family::FullyConnected => n as f64,
        }
    }

    pub fn config(self, n: u32) -> TopologyConfig {
        match self {
            Family::Chain => TopologyConfig::Chain { n },
            Family::Tree => TopologyConfig::Tree { n },
            Family::Ring => TopologyConfig::Ring { n },
            Family::SpineLeaf => TopologyConfig::SpineLeaf {
                n,
                leaf_devices: 4,
                spines: 2,
            },
            Family::FullyConnected => TopologyConfig::FullyConnected { n },
        }
    }
}

/// N x N, uniform random reads, `per_pair` requests from each requester to
/// each memory (the paper: 4000, so 4000 N^2 in all).
pub fn topology_config(family: Family, n: u32, per_pair: u64, seed: u64) -> Config {
    let mut c = Config {
        seed,
        topology: family.config(n),
        ..Config::default()
    };
    c.requester.requests = per_pair * n as u64;
    c.requester.read_ratio = 1.0;
    c.requester.queue_capacity = 512;
    c.requester.interleave_granularity = 64;
    c
}

#[derive(Serialize, Clone, Debug)]
pub struct TopologyPoint {
    pub topology: String,
    pub n: u32,
    /// Aggregate bandwidth / one port.
    pub multiple: f64,
    pub expected: f64,
    pub error: f64,
    pub mean_latency_ns: f64,
    pub events: u64,
}

pub fn topology_sweep(
    ns: &[u32],
    per_pair: u64,
    seed: u64,
    threads: usize,
) -> Result<Vec<TopologyPoint>> {
    let items: Vec<(Family, u32)> = ns
        .iter()
        .flat_map(|&n| Family::ALL.iter().map(move |&f| (f, n)))
        .collect();
    let label = |&(f, n): &(Family, u32)| format!("{} n={n}", f.name());
    par_map_progress(&items, threads, progress().then_some(&label), |&(f, n)| {
        let r = run(&topology_config(f, n, per_pair, seed))?;
        let multiple = r.aggregate_bandwidth_gbps / PORT_GBPS;
        let expected = f.expected(n);
        Ok(TopologyPoint {
            topology: f.name().into(),
            n,
            multiple,
            expected,
            error: (multiple - expected) / expected,
            mean_latency_ns: r.latency.mean_ns,
            events: r.events,
        })
    })
    .into_iter()
    .collect()
}

// ------------------------------------------------------------------ duplex

/// One requester, one switch, four memories; the requester's link is the
/// bottleneck. `read_ratio` r, header ratio h.
pub fn duplex_config(
    read_ratio: f64,
    header: f64,
    duplex: Duplex,
    requests: u64,
    seed: u64,
) -> Config {
    let mut c = Config {
        seed,
        topology: TopologyConfig::Custom {
            switches: vec!["s0".into()],
            requesters: vec!["r0".into()],
            memories: (0..4).map(|i| format!("m{i}")).collect(),
            links: std::iter::once(("r0".to_string(), "s0".to_string()))
                .chain((0..4).map(|i| (format!("m{i}"), "s0".to_string())))
                .map(|(a, b)| crate::config::LinkSpec {
                    a,
                    b,
                    ..Default::default()
                })
                .collect(),
        },
        ..Config::default()
    };
    c.link.duplex = duplex;
    c.link.header_ratio = header;
    c.link.turnaround_ns = 0.0;
    c.requester.requests = requests;
    c.requester.read_ratio = read_ratio;
    c.requester.rw_pattern = RwPattern::Random;
    c.requester.queue_capacity = 1024;
    c.requester.interleave_granularity = 64;
    c
}

/// The closed form of payload bandwidth / link bandwidth.
pub fn duplex_closed_form(r: f64, h: f64, duplex: Duplex) -> f64 {
    match duplex {
        Duplex::Full => 1.0 / (r * h + (1.0 - r)).max(r + (1.0 - r) * h),
        Duplex::Half => 1.0 / (1.0 + h),
    }
}

#[derive(Serialize, Clone, Debug)]
pub struct DuplexPoint {
    pub duplex: String,
    pub read_ratio: f64,
    pub header_ratio: f64,
    /// Payload bandwidth / one direction's bandwidth.
    pub measured: f64,
    pub closed_form: f64,
    pub error: f64,
    /// Busy fraction of the requester's link (full duplex: mean of the two
    /// directions; half duplex: the shared medium).
    pub bus_utility: f64,
}

pub const DUPLEX_R: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];
pub const DUPLEX_H: [f64; 4] = [0.0, 0.25, 0.5, 1.0];

pub fn duplex_sweep(requests: u64, seed: u64, threads: usize) -> Result<Vec<DuplexPoint>> {
    let mut items = Vec::new();
    for d in [Duplex::Full, Duplex::Half] {
        for h in DUPLEX_H {
            for r in DUPLEX_R {
                items.push((d, r, h));
            }
        }
    }
    let label = |&(d, r, h): &(Duplex, f64, f64)| format!("{d:?} duplex r={r} h={h}");
    par_map_progress(
        &items,
        threads,
        progress().then_some(&label),
        |&(d, r, h)| {
            let rep = run(&duplex_config(r, h, d, requests, seed))?;
            let measured = rep.aggregate_bandwidth_gbps / PORT_GBPS;
            let closed = duplex_closed_form(r, h, d);
            // ESF's bus utility: busy time over run time, averaged over the
            // directions; a half-duplex bus is one medium, its directions add.
            let busy: f64 = rep
                .links
                .iter()
                .filter(|l| l.from == "r0" || l.to == "r0")
                .map(|l| l.utilization)
                .sum();
            let util = match d {
                Duplex::Full => busy / 2.0,
                Duplex::Half => busy,
            };
            Ok(DuplexPoint {
                duplex: match d {
                    Duplex::Full => "full",
                    Duplex::Half => "half",
                }
                .into(),
                read_ratio: r,
                header_ratio: h,
                measured,
                closed_form: closed,
                error: (measured - closed) / closed,
                bus_utility: util,
            })
        },
    )
    .into_iter()
    .collect()
}

// ------------------------------------------------------------ snoop filter

/// Sizes of the snoop filter experiment.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SnoopSize {
    /// Footprint in lines.
    pub footprint_lines: u64,
    /// Accesses of the requester.
    pub requests: u64,
}

/// The paper's hot/cold setup (V-B): one requester, 90% of accesses to the
/// hot 10% of the footprint, a local cache of 20% of the footprint, an
/// infinite-bandwidth bus, four memories each with a snoop filter of the
/// cache's size.
pub fn snoop_config(policy: VictimPolicy, size: SnoopSize, seed: u64) -> Config {
    let line = 64u64;
    let mut c = duplex_config(1.0, 0.25, Duplex::Full, size.requests, seed);
    c.link.unlimited = true;
    c.requester.footprint_bytes = size.footprint_lines * line;
    c.requester.hot_fraction = 0.1;
    c.requester.hot_probability = 0.9;
    c.requester.cache_lines = size.footprint_lines / 5;
    c.requester.queue_capacity = 16;
    c.requester.interleave_granularity = 256;
    c.snoop_filter = Some(SnoopFilterConfig {
        // The filters together have the cache's size.
        entries: (size.footprint_lines / 5 / 4).max(1),
        policy,
        invblk_max: 1,
        ..SnoopFilterConfig::default()
    });
    // Steady state only: skip the cold start that fills cache and filters.
    c.run.warmup_fraction = 0.5;
    c.run.cooldown_fraction = 0.05;
    c
}

#[derive(Serialize, Clone, Debug)]
pub struct SnoopPoint {
    pub policy: String,
    pub bandwidth_gbps: f64,
    pub mean_latency_ns: f64,
    /// BISnp messages in the window.
    pub invalidations: u64,
    pub cache_hit_rate: f64,
    /// Normalised to FIFO.
    pub bandwidth_vs_fifo: f64,
    pub latency_vs_fifo: f64,
    pub invalidations_vs_fifo: f64,
}

/// The paper's figure 14, normalised to FIFO (LIFO: +5%, -15%, -16%; LFI
/// invalidations -15%).
pub const PAPER_LIFO_VS_FIFO: (f64, f64, f64) = (0.05, -0.15, -0.16);

pub fn snoop_sweep(size: SnoopSize, seed: u64, threads: usize) -> Result<Vec<SnoopPoint>> {
    let label = |p: &VictimPolicy| p.name().to_string();
    let reports: Vec<Result<Report>> = par_map_progress(
        &VictimPolicy::ALL,
        threads,
        progress().then_some(&label),
        |&p| run(&snoop_config(p, size, seed)),
    );
    let mut pts = Vec::new();
    for (p, r) in VictimPolicy::ALL.iter().zip(reports) {
        let r = r?;
        let inv: u64 = r
            .memories
            .iter()
            .filter_map(|m| m.snoop_filter.as_ref())
            .map(|s| s.bisnp)
            .sum();
        let rq = &r.requesters[0];
        pts.push(SnoopPoint {
            policy: p.name().into(),
            bandwidth_gbps: r.aggregate_bandwidth_gbps,
            mean_latency_ns: r.latency.mean_ns,
            invalidations: inv,
            cache_hit_rate: rq.cache_hits as f64 / (rq.cache_hits + rq.cache_misses).max(1) as f64,
            bandwidth_vs_fifo: 0.0,
            latency_vs_fifo: 0.0,
            invalidations_vs_fifo: 0.0,
        });
    }
    let (b, l, i) = (
        pts[0].bandwidth_gbps,
        pts[0].mean_latency_ns,
        pts[0].invalidations.max(1) as f64,
    );
    for p in &mut pts {
        p.bandwidth_vs_fifo = p.bandwidth_gbps / b - 1.0;
        p.latency_vs_fifo = p.mean_latency_ns / l - 1.0;
        p.invalidations_vs_fifo = p.invalidations as f64 / i - 1.0;
    }
    Ok(pts)
}
