//! What `cxlsim nic-latency` prints: the tables (labelled modelled), the
//! `BENCH` lines for `cargo xtask bench`, each mode's steps, the JSON.

use super::constants::*;
use super::counts::{Milli, ModeCounts};
use super::steps::{self, build, FrameCounts, Side};
use super::{kvs_hits, HostTime, Mode, NicPoint, NicRun, Params, Request};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The command line's settings (`cxlsim nic-latency`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Per-frame counts (JSON, as `cargo xtask bench` writes them from
    /// 40_cxlnic's cost-* series); default: the device model's
    /// documented costs.
    #[arg(long)]
    pub counts: Option<PathBuf>,
    /// Only the host polling set (no interrupts, the paper's loopback);
    /// default: the counts as given, then that set.
    #[arg(long)]
    pub polled: bool,
    #[arg(long, default_value_t = FRAMES)]
    pub frames: u32,
    #[arg(long, default_value_t = SEED)]
    pub seed: u64,
    /// Mean of the exponential jitter per transaction, as a share of
    /// its time.
    #[arg(long, default_value_t = JITTER_CV)]
    pub jitter: f64,
    /// CXL switches between the NIC and the host.
    #[arg(long, default_value_t = 0)]
    pub hops: u32,
    /// Write the results as JSON ("-": standard output).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Print `BENCH` lines for `cargo xtask bench` (one set: the
    /// counts as given, or with --polled the polling set).
    #[arg(long)]
    pub bench: bool,
    /// Print each mode's steps of a frame (64-byte loopback and a KVS
    /// GET, counts rounded to whole transactions) with their mean
    /// times, and nothing else.
    #[arg(long, conflicts_with_all = ["bench", "json"])]
    pub steps: bool,
}

/// `cxlsim nic-latency`: the tables (or the bench lines, the steps) on
/// standard output, the results as JSON if asked.
pub fn main(args: Args) -> Result<()> {
    let Args {
        counts,
        polled,
        frames,
        seed,
        jitter,
        hops,
        json,
        bench,
        steps,
    } = args;
    let source = counts
        .as_ref()
        .map_or("the device model's documented costs".to_string(), |p| {
            p.display().to_string()
        });
    let run = NicRun {
        counts: match &counts {
            Some(p) => ModeCounts::load(p)?,
            None => ModeCounts::default(),
        },
        params: Params { cv: jitter, hops },
        frames,
        seed,
        polled,
    };
    if steps {
        run.params.check()?;
        print!("{}", steps_table(&run)?);
        return Ok(());
    }
    // One set for the bench lines or --polled; else both.
    let sets: &[bool] = if polled || bench {
        if polled {
            &[true]
        } else {
            &[false]
        }
    } else {
        &[false, true]
    };
    let mut all = serde_json::Map::new();
    all.insert("modelled".into(), true.into());
    all.insert("input_counts".into(), serde_json::to_value(run.counts)?);
    all.insert("params".into(), serde_json::to_value(run.params)?);
    all.insert("frames".into(), frames.into());
    all.insert("seed".into(), seed.into());
    for &polled in sets {
        let (host, pts) = super::run(&NicRun {
            polled,
            ..run.clone()
        })?;
        let name = if polled { "polled" } else { "as_given" };
        if bench {
            for l in bench_lines("modelled-", &pts) {
                println!("{l}");
            }
        } else if json.as_deref() != Some(Path::new("-")) {
            let title = if polled {
                format!("Host polling, no interrupts (the paper's loopback); counts from {source}")
            } else {
                format!("Counts as given ({source})")
            };
            println!("{}", table(&title, &host, &pts));
        }
        all.insert(
            name.into(),
            serde_json::json!({ "host_time": host, "points": pts }),
        );
    }
    all.insert(
        "single_operations".into(),
        serde_json::to_value(steps::micro(&run.params))?,
    );
    if !bench && json.as_deref() != Some(Path::new("-")) {
        print!("{}", micro_table(&run.params));
    }
    match json.as_deref() {
        Some(p) if p == Path::new("-") => {
            println!("{}", serde_json::to_string_pretty(&all)?)
        }
        Some(p) => crate::output::write_json(p, &all)?,
        None => {}
    }
    Ok(())
}

/// The paper's ratio to its PCIe NIC for a point, where it gives one.
pub fn paper_ratio(mode: Mode, req: Request) -> Option<(f64, f64)> {
    match (mode, req) {
        (Mode::Type1, Request::Rr64) => Some(PAPER_TYPE1_RR64),
        (Mode::Type1, Request::Rr1500) => Some(PAPER_TYPE1_RR1500),
        (Mode::Type2, Request::KvsZipf) => Some(PAPER_KVS_ZIPF),
        _ => None,
    }
}

/// The table `cxlsim nic-latency` prints.
pub fn table(title: &str, host: &HostTime, pts: &[NicPoint]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{title} (modelled, not measured; host software {:.0} ns at 64 B, {:.0} ns at 1500 B from Fig. 3)",
        host.at_64_ns, host.at_1500_ns
    );
    let _ = writeln!(
        s,
        "  {:<9} {:<12} {:>9} {:>9} {:>8} {:>8} {:>13} {:>11}",
        "mode",
        "request",
        "p50 ns",
        "p99 ns",
        "p50/pcie",
        "p99/pcie",
        "paper p50/p99",
        "poll lines"
    );
    for p in pts {
        let paper = paper_ratio(p.mode, p.request)
            .map_or("-".to_string(), |(a, b)| format!("{a:.2} / {b:.2}"));
        let poll = match p.request {
            Request::Rr64 | Request::Rr1500 => format!("{:.2}", p.poll_lines_per_frame),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            s,
            "  {:<9} {:<12} {:>9.0} {:>9.0} {:>7.3}x {:>7.3}x {:>13} {:>11}",
            p.mode.name(),
            p.request.name(),
            p.p50_ns,
            p.p99_ns,
            p.p50_vs_pcie,
            p.p99_vs_pcie,
            paper,
            poll
        );
    }
    s
}

/// Every mode and request type's steps for one frame carrying each count
/// once (rounded), with their mean times: what the replay times.
pub fn steps_table(r: &NicRun) -> Result<String> {
    use std::fmt::Write;
    let [t1, t2, pcie] = r.counts.check()?;
    let host = HostTime::calibrate(&r.params)?;
    let mut s = String::new();
    for &mode in &Mode::ALL {
        let c = match mode {
            Mode::Pcie => pcie,
            Mode::Type1 | Mode::Type1Co => t1,
            Mode::Type2 => t2,
        };
        // A frame with each count rounded to whole transactions.
        let whole = |m: Milli| m.saturating_add(500) / 1000;
        let (h, m) = kvs_hits(true);
        let n = FrameCounts {
            desc_reads: whole(c.desc_reads),
            head_writes: whole(c.head_writes),
            interrupts: if r.polled {
                0
            } else {
                whole(c.interrupts.saturating_mul(2))
            },
            doorbells: whole(c.doorbells),
            kvs_hits: whole(c.kvs_hits.unwrap_or(h)),
            kvs_misses: whole(c.kvs_misses.unwrap_or(m)),
        };
        for req in [Request::Rr64, Request::Kvs] {
            let mut st = Vec::new();
            build(&mut st, &r.params, mode, req, &n, &|x| host.at(x));
            let total: f64 = st.iter().map(|x| x.dist.mean(r.params.cv)).sum();
            let _ = writeln!(s, "{} {} (mean {total:.0} ns):", mode.name(), req.name());
            for x in &st {
                let side = if x.side == Side::Nic { "nic" } else { "host" };
                let _ = writeln!(
                    s,
                    "  {:<40} {:>4} {:>9.1} ns",
                    x.what,
                    side,
                    x.dist.mean(r.params.cv)
                );
            }
        }
    }
    Ok(s)
}

/// Fig. 4's single operations, the model's against the paper's.
pub fn micro_table(p: &Params) -> String {
    use std::fmt::Write;
    let mut s =
        String::from("Single operations, CXL against PCIe (Fig. 4, §4.3; modelled means)\n");
    let _ = writeln!(
        s,
        "  {:<38} {:>8} {:>8} {:>8} {:>8}",
        "operation", "CXL ns", "PCIe ns", "ours", "paper"
    );
    for m in steps::micro(p) {
        let _ = writeln!(
            s,
            "  {:<38} {:>8.0} {:>8.0} {:>+7.0}% {:>+7.0}%",
            m.what,
            m.cxl_ns,
            m.pcie_ns,
            -m.reduction() * 100.0,
            -m.paper_reduction * 100.0
        );
    }
    s
}

/// `BENCH` lines for `cargo xtask bench`: one series per mode, PCIe
/// first (the anchor), metrics `<request>_p50_ns` and `_p99_ns` and the
/// polling lines per frame.
pub fn bench_lines(prefix: &str, pts: &[NicPoint]) -> Vec<String> {
    let mut out = Vec::new();
    for &mode in &Mode::ALL {
        let mut m = serde_json::Map::new();
        m.insert("label".into(), format!("{prefix}{}", mode.name()).into());
        for p in pts.iter().filter(|p| p.mode == mode) {
            m.insert(format!("{}_p50_ns", p.request.name()), p.p50_ns.into());
            m.insert(format!("{}_p99_ns", p.request.name()), p.p99_ns.into());
        }
        if let Some(p) = pts.iter().find(|p| p.mode == mode) {
            m.insert("poll_lines_per_frame".into(), p.poll_lines_per_frame.into());
        }
        out.push(format!("BENCH {}", serde_json::Value::Object(m)));
    }
    out
}
