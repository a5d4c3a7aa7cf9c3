//! `cxlsim`: the command line of the CXL fabric simulator.
#![forbid(unsafe_code)]

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use cxlsim::experiments::{self, SnoopSize, PAPER_LIFO_VS_FIFO};
use cxlsim::{output, plot, Config, Sim};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "cxlsim",
    version,
    about = "Event-driven CXL fabric simulator (after ESF)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a configuration file (TOML or JSON).
    Run {
        config: PathBuf,
        /// Override the seed of the configuration.
        #[arg(long)]
        seed: Option<u64>,
        /// Write the full report as JSON ("-": standard output).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write requesters.csv, links.csv and memories.csv into this directory.
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Write latency.svg (latency distribution) into this directory.
        #[arg(long)]
        svg: Option<PathBuf>,
        /// Print progress to stderr about once a second (the default when
        /// stderr is a terminal).
        #[arg(long)]
        progress: bool,
        /// No progress on stderr.
        #[arg(long, conflicts_with = "progress")]
        quiet: bool,
    },
    /// Validate a configuration and print its fabric.
    Check { config: PathBuf },
    /// Print the default configuration (ESF Table III latencies) as TOML.
    Defaults,
    /// Reproduce the paper's experiments and compare with its numbers.
    Bench {
        /// Paper sizes (4000 requests per requester-memory pair, N up to 16,
        /// longer duplex and snoop runs) instead of the fast sizes of the tests.
        #[arg(long)]
        full: bool,
        /// Which experiments.
        #[arg(long, value_enum, default_values_t = vec![Exp::Topology, Exp::Duplex, Exp::Snoop, Exp::Memchannel, Exp::MemchannelScale])]
        only: Vec<Exp>,
        /// Directory for JSON, CSV and SVG results.
        #[arg(long, default_value = "cxlsim-bench")]
        out: PathBuf,
        /// Worker threads for the sweeps (0: all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print `BENCH` lines of the MemChannel scale sweep for `cargo
        /// xtask bench` on standard output (its table goes to standard
        /// error).
        #[arg(long)]
        bench: bool,
    },
    /// The NIC modes' latency, modelled (issue #29): each mode's
    /// per-frame transactions (from the device model's counts) replayed
    /// with ESF Table III's and the CXL-NIC paper's PCIe latencies.
    NicLatency(cxlsim::nicexp::report::Args),
    /// Measure simulator speed; prints JSON (events/s, time of a run).
    Perf {
        /// Requests of the timed run (all requesters together).
        #[arg(long, default_value_t = 1_000_000)]
        requests: u64,
        /// Requesters = memories of the fully connected fabric.
        #[arg(long, default_value_t = 4)]
        n: u32,
        /// Also run this many copies at once (0: one per core) and report the
        /// aggregate rate of a parallel sweep.
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Print `BENCH` lines for `cargo xtask bench` instead of JSON, with
        /// the bare event queue's rate on as many events as the anchor.
        #[arg(long)]
        bench: bool,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Exp {
    Topology,
    Duplex,
    Snoop,
    /// MemChannel: isolation, fairness, the core's gain, joins.
    Memchannel,
    /// MemChannel: channels overloading one link, one thread to 1024.
    MemchannelScale,
}

fn load(path: &Path) -> Result<(Config, PathBuf)> {
    Config::load(path)
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run {
            config,
            seed,
            json,
            csv,
            svg,
            progress,
            quiet,
        } => {
            let (mut cfg, base) = load(&config)?;
            if let Some(s) = seed {
                cfg.seed = s;
            }
            use std::io::IsTerminal;
            cfg.run.progress |= progress || std::io::stderr().is_terminal();
            if quiet {
                cfg.run.progress = false;
            }
            let mut sim = Sim::new(&cfg, &base)?;
            let report = sim.run();
            match json.as_deref() {
                Some(p) if p == Path::new("-") => {
                    println!("{}", serde_json::to_string_pretty(&report)?)
                }
                Some(p) => {
                    output::write_json(p, &report)?;
                    print!("{}", output::summary(&report));
                }
                None => print!("{}", output::summary(&report)),
            }
            if let Some(dir) = csv {
                output::write_report_csv(&dir, &report)?;
            }
            if let Some(dir) = svg {
                plot::latency_cdf(&sim.latency_cdfs(), &dir.join("latency.svg"))?;
            }
            // The files are written (they carry the error too), but the
            // figures are no steady-state measurement.
            if let Some(e) = &report.window_error {
                bail!("{e}");
            }
        }
        Cmd::Check { config } => {
            let (cfg, base) = load(&config)?;
            let sim = Sim::new(&cfg, &base)?;
            let g = sim.graph();
            let routes = g.routes();
            println!(
                "ok: {} requesters, {} memories, {} switches, {} links",
                g.requesters.len(),
                g.memories.len(),
                g.nodes.len() - g.requesters.len() - g.memories.len(),
                g.links.len()
            );
            for l in &g.links {
                println!(
                    "  link {} - {}",
                    g.nodes[l.a as usize].name, g.nodes[l.b as usize].name
                );
            }
            for (i, &r) in g.requesters.iter().enumerate() {
                let hops: Vec<String> = g
                    .memories
                    .iter()
                    .enumerate()
                    .map(|(j, &m)| {
                        let h = routes.hops(r, (g.requesters.len() + j) as u32);
                        format!(
                            "{}:{}",
                            g.nodes[m as usize].name,
                            h.map_or("-".into(), |h| h.to_string())
                        )
                    })
                    .collect();
                println!(
                    "  {} (PBR id {i}) hops to {}",
                    g.nodes[r as usize].name,
                    hops.join(" ")
                );
            }
        }
        Cmd::Defaults => print!("{}", toml::to_string_pretty(&Config::default())?),
        Cmd::Bench {
            full,
            only,
            out,
            threads,
            seed,
            bench: lines,
        } => bench(full, &only, &out, threads, seed, lines)?,
        Cmd::NicLatency(args) => cxlsim::nicexp::report::main(args)?,
        Cmd::Perf {
            requests,
            n,
            threads,
            bench,
        } => perf(requests, n, threads, bench)?,
    }
    Ok(())
}

#[derive(Serialize)]
struct SnoopSummary {
    ours_lifo_vs_fifo: [f64; 3],
    paper_lifo_vs_fifo: [f64; 3],
    points: Vec<experiments::SnoopPoint>,
}

fn bench(
    full: bool,
    only: &[Exp],
    out: &Path,
    threads: usize,
    seed: u64,
    lines: bool,
) -> Result<()> {
    let t0 = Instant::now();
    experiments::PROGRESS.store(true, std::sync::atomic::Ordering::Relaxed);
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut all = serde_json::Map::new();
    all.insert("full".into(), full.into());
    if only.contains(&Exp::Topology) {
        let (ns, per_pair): (&[u32], u64) = if full {
            (&[2, 4, 8, 16], 4000)
        } else {
            (&[4, 8], 250)
        };
        let t = Instant::now();
        let pts = experiments::topology_sweep(ns, per_pair, seed, threads)?;
        println!(
            "Aggregate bandwidth vs topology, multiples of one port ({per_pair} requests per pair, {:.1} s)",
            t.elapsed().as_secs_f64()
        );
        println!(
            "  {:<16} {:>3} {:>8} {:>8} {:>8} {:>10}",
            "topology", "N", "ours", "paper", "error", "latency"
        );
        for p in &pts {
            println!(
                "  {:<16} {:>3} {:>8.3} {:>8.1} {:>+7.1}% {:>8.0}ns",
                p.topology,
                p.n,
                p.multiple,
                p.expected,
                p.error * 100.0,
                p.mean_latency_ns
            );
        }
        output::write(&out.join("topology.csv"), &output::to_csv(&pts)?)?;
        plot::topology(&pts, &out.join("topology.svg"))?;
        all.insert("topology".into(), serde_json::to_value(&pts)?);
    }
    if only.contains(&Exp::Duplex) {
        let requests = if full { 200_000 } else { 20_000 };
        let t = Instant::now();
        let pts = experiments::duplex_sweep(requests, seed, threads)?;
        println!(
            "Payload bandwidth / link bandwidth vs read ratio r and header ratio h ({requests} requests, {:.1} s)",
            t.elapsed().as_secs_f64()
        );
        println!(
            "  {:<6} {:>5} {:>5} {:>8} {:>8} {:>8} {:>8}",
            "duplex", "h", "r", "ours", "closed", "error", "utility"
        );
        for p in &pts {
            println!(
                "  {:<6} {:>5} {:>5} {:>8.4} {:>8.4} {:>+7.2}% {:>8.3}",
                p.duplex,
                p.header_ratio,
                p.read_ratio,
                p.measured,
                p.closed_form,
                p.error * 100.0,
                p.bus_utility
            );
        }
        let max = pts.iter().map(|p| p.error.abs()).fold(0.0, f64::max);
        println!("  max |error| vs closed form: {:.2}%", max * 100.0);
        output::write(&out.join("duplex.csv"), &output::to_csv(&pts)?)?;
        plot::duplex(&pts, &out.join("duplex.svg"))?;
        all.insert("duplex".into(), serde_json::to_value(&pts)?);
        all.insert("duplex_max_error".into(), max.into());
    }
    if only.contains(&Exp::Snoop) {
        let size = if full {
            SnoopSize {
                footprint_lines: 16384,
                requests: 1_000_000,
            }
        } else {
            SnoopSize {
                footprint_lines: 4096,
                requests: 100_000,
            }
        };
        let t = Instant::now();
        let pts = experiments::snoop_sweep(size, seed, threads)?;
        println!(
            "Snoop filter victim policies, hot/cold ({} lines, {} accesses, {:.1} s), vs FIFO",
            size.footprint_lines,
            size.requests,
            t.elapsed().as_secs_f64()
        );
        println!(
            "  {:<6} {:>10} {:>10} {:>12} {:>9} {:>9} {:>9}",
            "policy", "GB/s", "lat ns", "BISnp", "bw", "latency", "inval"
        );
        for p in &pts {
            println!(
                "  {:<6} {:>10.2} {:>10.1} {:>12} {:>+8.1}% {:>+8.1}% {:>+8.1}%",
                p.policy,
                p.bandwidth_gbps,
                p.mean_latency_ns,
                p.invalidations,
                p.bandwidth_vs_fifo * 100.0,
                p.latency_vs_fifo * 100.0,
                p.invalidations_vs_fifo * 100.0
            );
        }
        let lifo = pts
            .iter()
            .find(|p| p.policy == "LIFO")
            .context("LIFO result")?;
        let (pb, pl, pi) = PAPER_LIFO_VS_FIFO;
        println!(
            "  LIFO vs FIFO: ours bandwidth {:+.1}%, latency {:+.1}%, invalidations {:+.1}%; paper {:+.0}%, {:+.0}%, {:+.0}%",
            lifo.bandwidth_vs_fifo * 100.0,
            lifo.latency_vs_fifo * 100.0,
            lifo.invalidations_vs_fifo * 100.0,
            pb * 100.0,
            pl * 100.0,
            pi * 100.0
        );
        output::write(&out.join("snoop.csv"), &output::to_csv(&pts)?)?;
        plot::snoop(&pts, &out.join("snoop.svg"))?;
        let s = SnoopSummary {
            ours_lifo_vs_fifo: [
                lifo.bandwidth_vs_fifo,
                lifo.latency_vs_fifo,
                lifo.invalidations_vs_fifo,
            ],
            paper_lifo_vs_fifo: [pb, pl, pi],
            points: pts,
        };
        all.insert("snoop".into(), serde_json::to_value(&s)?);
    }
    if only.contains(&Exp::Memchannel) {
        let v = cxlsim::mcexp::bench(full, out, seed, threads)?;
        all.insert("memchannel".into(), v);
    }
    if only.contains(&Exp::MemchannelScale) {
        let v = cxlsim::mcexp::scale_bench(full, out, seed, threads, lines)?;
        all.insert("memchannel_scale".into(), v);
    }
    all.insert("seconds".into(), t0.elapsed().as_secs_f64().into());
    output::write_json(&out.join("bench.json"), &all)?;
    println!("results in {}", out.display());
    Ok(())
}

#[derive(Serialize)]
struct PerfResult {
    requests: u64,
    events: u64,
    seconds: f64,
    events_per_sec: f64,
    requests_per_sec: f64,
    /// CPU time of the run (differs from `seconds` when the core is shared).
    cpu_seconds: Option<f64>,
    events_per_cpu_sec: Option<f64>,
    /// Parallel copies run at once in the sweep measurement.
    sweep_threads: usize,
    sweep_events_per_sec: f64,
    sweep_seconds: f64,
}

fn perf_config(requests: u64, n: u32) -> Result<Config> {
    if n == 0 {
        bail!("--n must be at least 1");
    }
    let mut c = experiments::topology_config(experiments::Family::FullyConnected, n, 1, 1);
    c.requester.requests = requests.div_ceil(n as u64);
    Ok(c)
}

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`), so
/// the rate can be told apart from time spent waiting for a busy core.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Events pending in the anchor's hold run: about what a 4 x 4 fabric with
/// full requester queues keeps scheduled.
const HOLD_PENDING: usize = 1024;
/// Largest gap between an event and the one it schedules in the hold run
/// (the models' delays are 1 to 100 ns).
const HOLD_GAP_PS: u64 = 100_000;

fn perf(requests: u64, n: u32, threads: usize, bench: bool) -> Result<()> {
    let cfg = perf_config(requests, n)?;
    let mut sim = Sim::new(&cfg, Path::new("."))?;
    let cpu0 = thread_cpu_seconds();
    let t = Instant::now();
    let rep = sim.run();
    let secs = t.elapsed().as_secs_f64();
    let cpu = match (cpu0, thread_cpu_seconds()) {
        (Some(a), Some(b)) if b > a => Some(b - a),
        _ => None,
    };
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    let copies: Vec<u64> = (0..threads as u64).collect();
    let t = Instant::now();
    let events: Vec<Result<u64>> = experiments::par_map(&copies, threads, |&seed| {
        let mut c = cfg.clone();
        c.seed = seed + 2;
        let mut s = Sim::new(&c, Path::new("."))?;
        Ok(s.run().events)
    });
    let sweep_seconds = t.elapsed().as_secs_f64();
    let total: u64 = events.into_iter().sum::<Result<u64>>()?;
    let r = PerfResult {
        requests: rep.requests_completed,
        events: rep.events,
        seconds: secs,
        events_per_sec: rep.events as f64 / secs,
        requests_per_sec: rep.requests_completed as f64 / secs,
        cpu_seconds: cpu,
        events_per_cpu_sec: cpu.map(|c| rep.events as f64 / c),
        sweep_threads: threads,
        sweep_events_per_sec: total as f64 / sweep_seconds,
        sweep_seconds,
    };
    if !bench {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    let hold = cxlsim::perf::hold(rep.events, HOLD_PENDING, HOLD_GAP_PS, 1);
    println!(
        "BENCH {}",
        serde_json::json!({
            "label": "event-queue",
            "events_per_s": hold.events_per_sec(),
        })
    );
    println!(
        "BENCH {}",
        serde_json::json!({
            "label": "cxlsim",
            "events_per_s": r.events_per_sec,
            "cpu_events_per_s": r.events_per_cpu_sec,
            "requests_per_s": r.requests_per_sec,
            "run_ns": r.seconds * 1e9,
        })
    );
    println!(
        "BENCH {}",
        serde_json::json!({
            "label": format!("cxlsim-{}-copies", r.sweep_threads),
            "events_per_s": r.sweep_events_per_sec,
        })
    );
    Ok(())
}
