//! `cxlsim bench --only memchannel` and `--only memchannel-scale`: the
//! MemChannel experiments run at bench size, printed next to the paper's
//! numbers, plotted and written as CSV. The four experiments of
//! `memchannel` are a table of named runs.

use super::{
    convergence, fairness_sweep, isolation_sweep, overload_apps, run_apps, scale_points,
    utilization_runs, Contention, ConvergenceTrace, FairnessPoint, IsolationPoint, McParams,
    McSize, Signal, SignalVariant, UtilizationPoint, SCALE_GBPS, SCALE_SIZE, SCALE_TESTED,
};
use crate::experiments::par_map;
use crate::output;
use crate::plot::{self, Line};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// The paper's numbers quoted next to ours.
pub const PAPER_UTILIZATION: f64 = 0.961;

/// What every experiment of the bench gets.
struct Bench<'a> {
    full: bool,
    size: McSize,
    out: &'a Path,
    seed: u64,
    threads: usize,
}

type Json = serde_json::Map<String, serde_json::Value>;

/// One experiment: its name, and the run that prints its table, writes
/// its files and adds its results to the JSON.
type Experiment = (&'static str, fn(&Bench, &mut Json) -> Result<()>);

/// The experiments of `cxlsim bench --only memchannel`, in the order they
/// run and print.
const EXPERIMENTS: &[Experiment] = &[
    ("isolation (Fig. 9/10)", isolation),
    ("fairness (Fig. 11)", fairness),
    ("utilization with the core's gain", core_gain),
    ("re-convergence (Fig. 13)", reconvergence),
];

/// `cxlsim bench --only memchannel`: runs the four experiments, prints ours
/// next to the paper's, writes `memchannel-*.{csv,svg}` into `out` and
/// returns the JSON of everything.
pub fn bench(full: bool, out: &Path, seed: u64, threads: usize) -> Result<serde_json::Value> {
    let size = if full { McSize::FULL } else { McSize::FAST };
    let b = Bench {
        full,
        size,
        out,
        seed,
        threads,
    };
    let mut all = Json::new();
    all.insert("size".into(), serde_json::to_value(size)?);
    for (name, run) in EXPERIMENTS {
        run(&b, &mut all).with_context(|| format!("MemChannel {name}"))?;
    }
    Ok(serde_json::Value::Object(all))
}

const CONTENTIONS: [Contention; 2] = [Contention::HostAdapter, Contention::InFabric];

/// Isolation (Fig. 9/10): the victim's slowdown against contending load,
/// with and without control.
fn isolation(b: &Bench, all: &mut Json) -> Result<()> {
    let loads: &[u32] = if b.full {
        &[0, 20, 40, 60, 80, 100]
    } else {
        &[0, 50, 100]
    };
    let t = Instant::now();
    let mut iso = Vec::new();
    for kind in CONTENTIONS {
        iso.extend(isolation_sweep(kind, loads, b.size, b.seed, b.threads)?);
    }
    println!(
        "MemChannel isolation: victim slowdown vs contending load ({} + {} periods of K, {:.1} s)",
        b.size.warmup,
        b.size.measure,
        t.elapsed().as_secs_f64()
    );
    print_isolation(&iso, loads);
    let heavy: Vec<f64> = iso
        .iter()
        .filter(|p| p.control && p.load_pct >= 80)
        .map(|p| p.utilization)
        .collect();
    let heavy_mean = heavy.iter().sum::<f64>() / heavy.len().max(1) as f64;
    println!(
        "  utilization with control at contending load >= 80% (the paper's 96.1% sentence): ours {:.1}%, paper {:.1}%",
        heavy_mean * 100.0,
        PAPER_UTILIZATION * 100.0
    );
    all.insert("utilization_heavy_contention".into(), heavy_mean.into());
    plot_isolation(&iso, b.out)?;
    output::write(
        &b.out.join("memchannel-isolation.csv"),
        &output::to_csv(&iso)?,
    )?;
    all.insert("isolation".into(), serde_json::to_value(&iso)?);
    Ok(())
}

fn print_isolation(iso: &[IsolationPoint], loads: &[u32]) {
    println!(
        "  {:<13} {:>5} {:>10} {:>10} {:>9} {:>9}",
        "contention", "load", "without", "with", "util w/o", "util with"
    );
    for kind in CONTENTIONS {
        for &l in loads {
            let get = |c: bool| {
                iso.iter()
                    .find(|p| p.contention == kind && p.load_pct == l && p.control == c)
            };
            if let (Some(a), Some(b)) = (get(false), get(true)) {
                println!(
                    "  {:<13} {:>4}% {:>9.2}x {:>9.2}x {:>8.1}% {:>8.1}%",
                    kind.name(),
                    l,
                    a.slowdown,
                    b.slowdown,
                    a.utilization * 100.0,
                    b.utilization * 100.0
                );
            }
        }
    }
    println!("  paper at 100%: host adapter (Fig. 9) 7.0x/8.8x without, 2.5x with; in fabric (Fig. 10) 7.2x/4.2x without, 3.1x/2.1x with");
}

fn plot_isolation(iso: &[IsolationPoint], out: &Path) -> Result<()> {
    let mut lines = Vec::new();
    for (ki, kind) in CONTENTIONS.into_iter().enumerate() {
        for c in [false, true] {
            lines.push(Line {
                label: format!(
                    "{} {}",
                    kind.name(),
                    if c { "with MemChannel" } else { "without" }
                ),
                points: iso
                    .iter()
                    .filter(|p| p.contention == kind && p.control == c)
                    .map(|p| (p.load_pct as f64, p.slowdown))
                    .collect(),
                dashed: !c,
                color: ki,
            });
        }
    }
    plot::lines(
        "Victim slowdown vs contending traffic (Fig. 9/10)",
        "contending load, % of the bottleneck",
        "victim slowdown (x)",
        &lines,
        &out.join("memchannel-isolation.svg"),
    )
}

/// Fairness (Fig. 11): two applications on one host, equal and unequal
/// weights.
fn fairness(b: &Bench, all: &mut Json) -> Result<()> {
    let ns: &[u32] = if b.full { &[1, 2, 4, 8, 12] } else { &[1, 8] };
    let t = Instant::now();
    let fair = fairness_sweep(ns, &[(1, 1), (1, 2)], b.size, b.seed, b.threads)?;
    println!(
        "MemChannel fairness: A (4 in flight per thread) vs B (1), one host ({:.1} s)",
        t.elapsed().as_secs_f64()
    );
    print_fairness(&fair);
    plot_fairness(&fair, b.out)?;
    output::write(
        &b.out.join("memchannel-fairness.csv"),
        &output::to_csv(&fair)?,
    )?;
    all.insert("fairness".into(), serde_json::to_value(&fair)?);
    Ok(())
}

fn print_fairness(fair: &[FairnessPoint]) {
    println!(
        "  {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "weights", "threads", "control", "A GB/s", "B GB/s", "gap", "B/A/wts", "util"
    );
    for p in fair {
        println!(
            "  {:>4}:{:<2} {:>7} {:>8} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>8.1}%",
            p.weight_a,
            p.weight_b,
            p.threads,
            if p.control { "with" } else { "without" },
            p.a_gbps,
            p.b_gbps,
            p.gap_gbps,
            p.ratio_vs_weights,
            p.utilization * 100.0
        );
    }
    println!("  paper (15 threads): gap 8.9 -> 1.3 GB/s (Bwaves+Silo), 11.5 -> 1.8 (Bwaves+MICA), 3.1 -> 0.1 (MICA+Silo)");
}

fn plot_fairness(fair: &[FairnessPoint], out: &Path) -> Result<()> {
    let mut lines = Vec::new();
    for (i, (app, c)) in [("A", false), ("B", false), ("A", true), ("B", true)]
        .into_iter()
        .enumerate()
    {
        lines.push(Line {
            label: format!("{app} {}", if c { "with MemChannel" } else { "without" }),
            points: fair
                .iter()
                .filter(|p| p.control == c && p.weight_a == p.weight_b)
                .map(|p| {
                    (
                        p.threads as f64,
                        if app == "A" { p.a_gbps } else { p.b_gbps },
                    )
                })
                .collect(),
            dashed: !c,
            color: i % 2,
        });
    }
    plot::lines(
        "Two applications, equal weights (Fig. 11)",
        "threads per application",
        "bandwidth, GB/s (bottleneck 1 GB/s)",
        &lines,
        &out.join("memchannel-fairness.svg"),
    )
}

/// The gains set side by side: DCTCP's 1/16 and the core's 1/2.
const GAINS: [(&str, u32); 2] = [
    ("g = 1/16 (DCTCP's)", 62_500),
    ("g = 1/2 (the core's)", 500_000),
];

/// The core's gain g = 1/2 beside DCTCP's 1/16, which the core used
/// until this simulator showed the load factor outliving an overload
/// (with the old cut rule too, C collapsed: 37.9 % and 36.4 %), with
/// the queue signal as it marked then (the queue a message finds, at 8)
/// and the core's increase (10 % per period).
fn core_gain(b: &Bench, all: &mut Json) -> Result<()> {
    let periods = b.size.warmup + b.size.measure;
    let cases: Vec<(usize, Signal)> = (0..GAINS.len())
        .flat_map(|v| [(v, Signal::Queue), (v, Signal::Model)])
        .collect();
    let cd = par_map(&cases, b.threads, |&(v, sig)| {
        let p = McParams {
            signal: sig,
            g_ppm: GAINS[v].1,
            increase_ppm_per_k: 100_000,
            ..McParams::instantaneous_queue()
        };
        run_apps(
            &overload_apps(4, 4),
            2.0 * SCALE_GBPS,
            SCALE_GBPS,
            &p,
            periods,
            b.seed,
        )
        .map(|r| {
            (
                v,
                sig,
                r.utilization(b.size.warmup as usize),
                r.min_utilization(),
            )
        })
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    for (v, sig, u, min) in &cd {
        println!(
            "  4 channels, with, {} and 10%/K, {sig:?} signal: utilization {:.1}% (least in a period {:.1}%)",
            GAINS[*v].0,
            u * 100.0,
            min * 100.0
        );
    }
    let rows: Vec<serde_json::Value> = cd
        .iter()
        .map(|(v, s, u, min)| {
            serde_json::json!({
                "g": GAINS[*v].0, "signal": format!("{s:?}"),
                "utilization": u, "least_in_a_period": min,
            })
        })
        .collect();
    all.insert(
        "utilization_core_defaults".into(),
        serde_json::to_value(rows)?,
    );
    Ok(())
}

/// Re-convergence (Fig. 13): four channels joining one by one, with and
/// without control.
fn reconvergence(b: &Bench, all: &mut Json) -> Result<()> {
    let every = if b.full { 40 } else { 20 };
    let t = Instant::now();
    let traces = par_map(&[false, true], b.threads, |&c| {
        convergence(4, every, c, 0.15, b.seed)
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    println!(
        "MemChannel re-convergence: 4 channels join every {every} periods ({:.1} s)",
        t.elapsed().as_secs_f64()
    );
    for tr in &traces {
        print_trace(tr);
    }
    println!("  paper (Fig. 13): bandwidth drops at each join and recovers within about 0.5 s (50 periods of 10 ms)");
    plot_convergence(&traces, b.out)?;
    write_convergence_csv(&traces, b.out)?;
    all.insert("convergence".into(), serde_json::to_value(&traces)?);
    Ok(())
}

fn print_trace(tr: &ConvergenceTrace) {
    let conv: Vec<String> = tr
        .converge_periods
        .iter()
        .map(|c| c.map_or("-".into(), |p| format!("{p} K")))
        .collect();
    let rec: Vec<String> = tr
        .util_recover_periods
        .iter()
        .zip(&tr.min_utilization)
        .map(|(c, m)| {
            format!(
                "{:.0}% -> {}",
                m * 100.0,
                c.map_or("-".into(), |p| format!("{p} K"))
            )
        })
        .collect();
    println!(
        "  {:<7}: within {:.0}% of the equal share after each join: {}; utilization at the end {:.1}%",
        if tr.control { "with" } else { "without" },
        tr.tolerance * 100.0,
        conv.join(", "),
        tr.utilization * 100.0
    );
    println!(
        "           least utilization after each join -> periods until >= 90% for good: {}",
        rec.join(", ")
    );
}

fn plot_convergence(traces: &[ConvergenceTrace], out: &Path) -> Result<()> {
    let mut lines = Vec::new();
    for tr in traces {
        for (c, g) in tr.gbps.iter().enumerate() {
            lines.push(Line {
                label: format!("ch{c} {}", if tr.control { "with" } else { "without" }),
                points: tr
                    .t_ms
                    .iter()
                    .copied()
                    .zip(g.iter().copied())
                    .skip(c * tr.join_every as usize)
                    .collect(),
                dashed: !tr.control,
                color: c,
            });
        }
    }
    plot::lines(
        "Channels joining at run time (Fig. 13)",
        "time, ms (K = 1 ms)",
        "bandwidth, GB/s",
        &lines,
        &out.join("memchannel-convergence.svg"),
    )
}

fn write_convergence_csv(traces: &[ConvergenceTrace], out: &Path) -> Result<()> {
    #[derive(Serialize)]
    struct Row {
        control: bool,
        t_ms: f64,
        channel: usize,
        gbps: f64,
    }
    let mut rows = Vec::new();
    for tr in traces {
        for (c, g) in tr.gbps.iter().enumerate() {
            for (t, v) in tr.t_ms.iter().zip(g) {
                rows.push(Row {
                    control: tr.control,
                    t_ms: *t,
                    channel: c,
                    gbps: *v,
                });
            }
        }
    }
    output::write(
        &out.join("memchannel-convergence.csv"),
        &output::to_csv(&rows)?,
    )
}

/// `cxlsim bench --only memchannel-scale`: utilization and Jain's index of
/// channels overloading one link, from one thread to 1024, with the queue
/// signal as it marks now, as it marked until issue #25's fix
/// (instantaneous), without control, and with the core's `Model` signal;
/// prints a table (on stderr
/// when `bench_lines`, which prints `BENCH` lines for `cargo xtask bench`
/// on stdout: the tested sizes, one series per size and signal, metrics
/// `utilization_pct`, `jain_fair_pct` (Jain's index of the bandwidths over
/// the max-min fair shares, in percent) and `jain_raw_pct` (of the raw
/// bandwidths)), writes
/// `memchannel-scale.{csv,svg}` into `out` and returns the JSON of the
/// points.
pub fn scale_bench(
    full: bool,
    out: &Path,
    seed: u64,
    threads: usize,
    bench_lines: bool,
) -> Result<serde_json::Value> {
    let points = scale_points(full);
    let model_points: &[(u32, u32)] = if full {
        &[(40, 4), (256, 4), (111, 3)]
    } else {
        &[(7, 1)]
    };
    let t = Instant::now();
    let mut items = Vec::new();
    for &p in &points {
        items.push((p, SignalVariant::Queue, true));
        items.push((p, SignalVariant::QueueInstant, true));
        items.push((p, SignalVariant::Queue, false));
    }
    items.extend(
        model_points
            .iter()
            .map(|&p| (p, SignalVariant::Model, true)),
    );
    let util = utilization_runs(&items, SCALE_SIZE, seed, threads)?;
    let say = |s: String| {
        if bench_lines {
            eprintln!("{s}");
        } else {
            println!("{s}");
        }
    };
    say(format!(
        "MemChannel utilization and Jain's index, channels overloading one link ({} + {} periods, {:.1} s)",
        SCALE_SIZE.warmup,
        SCALE_SIZE.measure,
        t.elapsed().as_secs_f64()
    ));
    print_scale(&util, &points, say);
    plot_scale(&util, out)?;
    output::write(&out.join("memchannel-scale.csv"), &output::to_csv(&util)?)?;
    if bench_lines {
        print_scale_bench_lines(&util, &points);
    }
    Ok(serde_json::to_value(&util)?)
}

/// The point of `util` for `n` channels of `per` threads, signal `sig`,
/// with control or not.
fn scale_point(
    util: &[UtilizationPoint],
    n: u32,
    per: u32,
    sig: SignalVariant,
    c: bool,
) -> Option<&UtilizationPoint> {
    util.iter().find(|p| {
        p.channels == n && p.threads_per_channel == per && p.signal == sig && p.control == c
    })
}

fn print_scale(util: &[UtilizationPoint], points: &[(u32, u32)], say: impl Fn(String)) {
    say(format!(
        "  {:>7} {:>10} {:>24} {:>24} {:>24} {:>24}",
        "threads", "channels", "with", "instantaneous", "without", "Model signal"
    ));
    let cell = |p: Option<&UtilizationPoint>| {
        p.map_or(String::from("-"), |p| {
            format!(
                "{:.1}% {:.4} {:.4}",
                p.utilization * 100.0,
                p.jain_fair,
                p.jain_raw
            )
        })
    };
    let get = |n, per, sig, c| scale_point(util, n, per, sig, c);
    for &(n, per) in points {
        say(format!(
            "  {:>7} {:>10} {:>24} {:>24} {:>24} {:>24}",
            n * per,
            format!("{n} x {per}"),
            cell(get(n, per, SignalVariant::Queue, true)),
            cell(get(n, per, SignalVariant::QueueInstant, true)),
            cell(get(n, per, SignalVariant::Queue, false)),
            cell(get(n, per, SignalVariant::Model, true)),
        ));
    }
    say("  (utilization of the link, Jain's index of the channels' bandwidth over their max-min fair shares, and of the raw bandwidths; issue #25 asks for >= 96 % and >= 0.99 of the first two)".into());
}

fn plot_scale(util: &[UtilizationPoint], out: &Path) -> Result<()> {
    let mut lines = Vec::new();
    for (i, (what, sig, c)) in [
        ("utilization", SignalVariant::Queue, true),
        (
            "utilization, instantaneous queue",
            SignalVariant::QueueInstant,
            true,
        ),
        ("Jain's index over fair shares", SignalVariant::Queue, true),
        (
            "Jain's index over fair shares, without control",
            SignalVariant::Queue,
            false,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut pts: Vec<(f64, f64)> = util
            .iter()
            .filter(|p| p.control == c && p.signal == sig && p.threads_per_channel == 4)
            .map(|p| {
                let y = if i < 2 { p.utilization } else { p.jain_fair };
                (p.threads as f64, y)
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        lines.push(Line {
            label: what.into(),
            points: pts,
            dashed: i % 2 == 1,
            color: i / 2,
        });
    }
    plot::lines(
        "Channels of 4 threads overloading one link",
        "threads",
        "utilization, Jain's index",
        &lines,
        &out.join("memchannel-scale.svg"),
    )
}

/// `BENCH` lines for `cargo xtask bench`: the tested sizes among `points`.
fn print_scale_bench_lines(util: &[UtilizationPoint], points: &[(u32, u32)]) {
    for (sig, c, what) in [
        (SignalVariant::Queue, true, "with"),
        (SignalVariant::QueueInstant, true, "instantaneous"),
        (SignalVariant::Queue, false, "without"),
    ] {
        for &(n, per) in SCALE_TESTED.iter().filter(|p| points.contains(p)) {
            if let Some(p) = scale_point(util, n, per, sig, c) {
                println!(
                    "BENCH {}",
                    serde_json::json!({
                        "label": format!("{what} {}x{}", n, per),
                        "utilization_pct": p.utilization * 100.0,
                        "jain_fair_pct": p.jain_fair * 100.0,
                        "jain_raw_pct": p.jain_raw * 100.0,
                    })
                );
            }
        }
    }
}
