//! `cargo xtask bench`: boots the testbed in bench mode, runs every
//! `tests/vm/bench/*.sh`, and reports each series side by side with the
//! benchmark's anchor (its first series) as ratios. Absolute numbers from
//! an emulated machine mean little; the ratios within one run are the
//! result. A benchmark that measures a series several times (rounds,
//! each running every series once, so drift hits all alike) prints one
//! line per time: the table shows the median and the spread (max - min
//! over the median), and ratios are the medians'. Writes
//! `target/xtask/bench/results.json` and prints a table.

use crate::util::{out_dir, Phases};
use crate::vm::{self, Mode, VmOptions};
use anyhow::{bail, Result};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One `BENCH {json}` line: a series of a benchmark.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub metrics: Vec<(String, f64)>,
}

/// Parses the `BENCH {json}` lines of one benchmark's output. Numeric
/// fields whose name ends in `_per_s`, `_ns`, `_pct`, `_ppm` (parts per
/// million), `_of_raw` (a ratio the benchmark computed itself) or
/// `_per_frame` (a count per frame) are metrics.
pub fn parse_series(text: &str) -> Result<Vec<Series>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(json) = line.trim().strip_prefix("BENCH ") else {
            continue;
        };
        let value: Map<String, Value> = serde_json::from_str(json)?;
        let label = value
            .get("label")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let metrics = value
            .iter()
            .filter(|(k, _)| {
                ["_per_s", "_ns", "_pct", "_ppm", "_of_raw", "_per_frame"]
                    .iter()
                    .any(|suffix| k.ends_with(suffix))
            })
            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
            .collect();
        out.push(Series { label, metrics });
    }
    Ok(out)
}

/// A metric over the times its series was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Metric {
    /// (max - min) / median: how far apart the runs were.
    pub fn spread(&self) -> Option<f64> {
        (self.runs > 1 && self.median > 0.0).then(|| (self.max - self.min) / self.median)
    }
}

/// A series with its repeats folded in.
#[derive(Debug, Clone)]
pub struct Summary {
    pub label: String,
    pub metrics: Vec<Metric>,
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Folds the lines that share a label (the series' repeats), in the
/// order labels first appear: each metric's median, min and max over the
/// lines that have it.
pub fn summarize(series: &[Series]) -> Vec<Summary> {
    let mut labels: Vec<&str> = Vec::new();
    for s in series {
        if !labels.contains(&s.label.as_str()) {
            labels.push(&s.label);
        }
    }
    labels
        .into_iter()
        .map(|label| {
            let lines: Vec<&Series> = series.iter().filter(|s| s.label == label).collect();
            let mut names: Vec<&str> = Vec::new();
            for (name, _) in lines.iter().flat_map(|s| &s.metrics) {
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
            let metrics = names
                .into_iter()
                .map(|name| {
                    let mut values: Vec<f64> = lines
                        .iter()
                        .filter_map(|s| s.metrics.iter().find(|(n, _)| n == name))
                        .map(|(_, v)| *v)
                        .collect();
                    values.sort_by(f64::total_cmp);
                    Metric {
                        name: name.to_string(),
                        median: median(&values),
                        min: values.first().copied().unwrap_or(f64::NAN),
                        max: values.last().copied().unwrap_or(f64::NAN),
                        runs: values.len(),
                    }
                })
                .collect();
            Summary {
                label: label.to_string(),
                metrics,
            }
        })
        .collect()
}

/// Each series' medians divided by the anchor's (the first series).
pub fn ratios(series: &[Summary]) -> Vec<Vec<Option<f64>>> {
    let Some(anchor) = series.first() else {
        return Vec::new();
    };
    series
        .iter()
        .map(|s| {
            s.metrics
                .iter()
                .map(|m| {
                    let base = anchor.metrics.iter().find(|a| a.name == m.name)?.median;
                    (base > 0.0).then(|| m.median / base)
                })
                .collect()
        })
        .collect()
}

fn human(value: f64, metric: &str) -> String {
    if metric.ends_with("bit_per_s") {
        format!("{:.2} Mbit/s", value / 1e6)
    } else if metric.ends_with("bytes_per_s") {
        format!("{:.1} MB/s", value / 1e6)
    } else if metric.ends_with("_ns") {
        format!("{value:.0} ns")
    } else if metric.ends_with("_pct") {
        format!("{value:.3} %")
    } else if metric.ends_with("_ppm") {
        format!("{value:.0} ppm")
    } else if metric.ends_with("_of_raw") {
        format!("{value:.3}x")
    } else if metric.ends_with("_per_frame") {
        format!("{value:.2}/frame")
    } else {
        format!("{value:.0}/s")
    }
}

/// The lines of a benchmark's output that say a figure cannot be
/// trusted (`warning: ...`), without the prefix.
pub fn warnings(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("warning:"))
        .map(|w| w.trim().to_string())
        .collect()
}

/// A `--only` filter: it goes on the guests' kernel command line, so one
/// word of the characters benchmark names use.
pub fn parse_only(s: &str) -> std::result::Result<String, String> {
    let ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(s.to_string())
    } else {
        Err("letters, digits, '_' and '-' only".into())
    }
}

/// The benchmarks in `dir` (`*.sh`) whose names (without `.sh`) contain
/// `only`, sorted.
fn scripts(dir: &Path, only: Option<&str>) -> Result<Vec<String>> {
    let mut names = Vec::new();
    if !dir.is_dir() {
        return Ok(names);
    }
    for entry in std::fs::read_dir(dir)? {
        let file = entry?.file_name().to_string_lossy().into_owned();
        if let Some(name) = file.strip_suffix(".sh") {
            let wanted = match only {
                Some(o) => name.contains(o),
                None => true,
            };
            if wanted {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Runs the host benchmarks (`tests/bench-host/NAME.sh`, from the
/// repository's root, on this machine rather than in a VM: the
/// simulators' speed), each one's `BENCH` lines under its name.
fn host_benches(names: &[String]) -> Result<Vec<(String, Vec<Series>)>> {
    let root = crate::util::repo_root();
    let mut out = Vec::new();
    for name in names {
        eprintln!("==> host benchmark {name}");
        let script = root.join(HOST_DIR).join(format!("{name}.sh"));
        let result = Command::new("sh")
            .arg(&script)
            .current_dir(&root)
            .stderr(Stdio::inherit())
            .output()?;
        if !result.status.success() {
            bail!("host benchmark {name} failed: {}", result.status);
        }
        let text = String::from_utf8_lossy(&result.stdout);
        out.push((name.clone(), parse_series(&text)?));
    }
    Ok(out)
}

const VM_DIR: &str = "tests/vm/bench";
const HOST_DIR: &str = "tests/bench-host";

pub fn bench(timeout: Duration, flavor: crate::kernel::Flavor, only: Option<String>) -> Result<()> {
    let root = crate::util::repo_root();
    let vm_names = scripts(&root.join(VM_DIR), only.as_deref())?;
    let host_names = scripts(&root.join(HOST_DIR), only.as_deref())?;
    // The modelled NIC latencies, beside 40_cxlnic (bench_nic.rs).
    let nic_model = match only.as_deref() {
        Some(o) => crate::bench_nic::NAME.contains(o),
        None => true,
    };
    if let Some(o) = &only {
        if vm_names.is_empty() && host_names.is_empty() && !nic_model {
            bail!("--only {o}: no benchmark in {VM_DIR} or {HOST_DIR} has that in its name");
        }
    }
    // Host benchmarks first, while nothing else runs on the machine.
    let mut blocks = host_benches(&host_names)?;
    let mut runs = Vec::new();
    if !vm_names.is_empty() {
        let mut phases = Phases::default();
        let (tree, initramfs) = vm::prepare(&mut phases, flavor)?;
        // Two hosts: the RPC and remote-allocation benchmarks need a peer.
        let mut opts = VmOptions::new(Mode::Bench, 2, timeout);
        opts.only = only;
        runs = phases.time("boot", || vm::boot(&tree, &initramfs, &opts))?;
        phases.summary();
    }
    // A benchmark's series from every host, host 0 first: its first series
    // is the anchor.
    let mut warned: Vec<(String, usize, String)> = Vec::new();
    for run in &runs {
        for block in run.report.blocks("bench") {
            for w in warnings(&block.text) {
                warned.push((block.name.clone(), run.host, w));
            }
            let series = parse_series(&block.text)?;
            match blocks.iter_mut().find(|(n, _)| n == &block.name) {
                Some((_, all)) => all.extend(series),
                None => blocks.push((block.name.clone(), series)),
            }
        }
    }

    // A failed model run spoils no measurement: the table still prints.
    let mut model_error = None;
    if nic_model {
        match crate::bench_nic::blocks(&blocks) {
            Ok(model) => blocks.extend(model),
            Err(e) => {
                eprintln!("{}: {e:#}", crate::bench_nic::NAME);
                model_error = Some(format!("{e:#}"));
            }
        }
    }

    let mut results = Map::new();
    println!(
        "{:<16} {:<20} {:<22} {:>14} {:>11} {:>9}",
        "benchmark", "series", "metric", "value", "spread", "vs anchor"
    );
    for (name, lines) in &blocks {
        if lines.is_empty() {
            continue;
        }
        let series = summarize(lines);
        let ratios = ratios(&series);
        let mut rows = Vec::new();
        for (s, r) in series.iter().zip(&ratios) {
            for (m, ratio) in s.metrics.iter().zip(r) {
                let ratio_text = ratio.map_or("-".to_string(), |x| format!("{x:.3}x"));
                let spread_text = m.spread().map_or("-".to_string(), |x| {
                    format!("{:.0}% /{}", x * 100.0, m.runs)
                });
                println!(
                    "{:<16} {:<20} {:<22} {:>14} {:>11} {:>9}",
                    name,
                    s.label,
                    m.name,
                    human(m.median, &m.name),
                    spread_text,
                    ratio_text
                );
                rows.push(json!({
                    "series": s.label, "metric": m.name, "value": m.median,
                    "min": m.min, "max": m.max, "runs": m.runs,
                    "ratio_to_anchor": ratio,
                }));
            }
        }
        let anchor = series.first().map(|s| s.label.clone());
        let warnings: Vec<&str> = warned
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, _, w)| w.as_str())
            .collect();
        results.insert(
            name.clone(),
            json!({ "anchor": anchor, "rows": rows, "warnings": warnings }),
        );
    }
    // What the benchmarks said cannot be trusted, under the table.
    for (name, host, w) in &warned {
        println!("warning: {name} (host {host}): {w}");
    }
    let failed: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.report.blocks("error"))
        .map(|b| b.name.as_str())
        .collect();
    for (run, block) in runs
        .iter()
        .flat_map(|r| r.report.blocks("error").map(move |b| (r, b)))
    {
        eprintln!(
            "benchmark {} failed on host {}:\n{}",
            block.name, run.host, block.text
        );
    }
    let dir = out_dir().join("bench");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("results.json");
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&Value::Object(results))?,
    )?;
    println!("results: {}", file.display());
    let unfinished: Vec<String> = runs
        .iter()
        .filter(|r| !r.finished())
        .map(|r| format!("host {}: {}", r.host, r.describe_exit()))
        .collect();
    if !unfinished.is_empty() || !failed.is_empty() {
        bail!("bench run incomplete ({unfinished:?}; failed: {failed:?})");
    }
    if let Some(e) = model_error {
        bail!("{}: {e}", crate::bench_nic::NAME);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_relative_to_the_first_series() {
        let text =
            "noise\nBENCH {\"label\":\"ram\",\"write_bytes_per_s\":1000,\"path\":\"anon\"}\n\
                    BENCH {\"label\":\"cxl\",\"write_bytes_per_s\":10,\"cpu_pct\":0.5,\"ratio\":1}\n";
        let series = parse_series(text).unwrap();
        assert_eq!(series.len(), 2);
        assert_eq!(series[1].label, "cxl");
        assert_eq!(series[1].metrics.len(), 2, "_pct is a metric, ratio is not");
        assert_eq!(
            ratios(&summarize(&series)),
            vec![vec![Some(1.0)], vec![None, Some(0.01)]]
        );
        assert_eq!(human(0.5, "cpu_pct"), "0.500 %");
        assert_eq!(human(0.4181, "cxl_put_of_raw"), "0.418x");
        assert_eq!(human(4000.0, "abs_err_at_10pct_ppm"), "4000 ppm");
        assert_eq!(human(9.5e6, "tcp_bit_per_s"), "9.50 Mbit/s");
        assert_eq!(human(2e6, "tcp_bytes_per_s"), "2.0 MB/s");
    }

    #[test]
    fn repeats_fold_into_medians_and_ratios_use_them() {
        let line =
            |label: &str, v: f64| format!("BENCH {{\"label\":\"{label}\",\"x_per_s\":{v}}}\n");
        // Rounds interleave the series; the anchor's repeats fold too.
        let text: String = [
            line("a", 100.0),
            line("b", 50.0),
            line("a", 300.0),
            line("b", 70.0),
            line("a", 200.0),
            line("b", 400.0),
            line("c", 9.0),
        ]
        .concat();
        let s = summarize(&parse_series(&text).unwrap());
        let labels: Vec<&str> = s.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["a", "b", "c"]);
        let a = &s[0].metrics[0];
        assert_eq!((a.median, a.min, a.max, a.runs), (200.0, 100.0, 300.0, 3));
        assert_eq!(a.spread(), Some(1.0));
        assert_eq!(s[1].metrics[0].median, 70.0, "the median, not the mean");
        assert_eq!(s[2].metrics[0].spread(), None, "one run has no spread");
        assert_eq!(
            ratios(&s),
            vec![vec![Some(1.0)], vec![Some(0.35)], vec![Some(0.045)]]
        );
        assert_eq!(median(&[1.0, 2.0, 4.0, 10.0]), 3.0);
    }

    #[test]
    fn only_filters_are_one_word() {
        assert_eq!(parse_only("22_kv").unwrap(), "22_kv");
        assert!(parse_only("").is_err());
        assert!(parse_only("kv panic=1").is_err());
        assert!(parse_only("a;b").is_err());
    }

    #[test]
    fn warning_lines_are_collected_without_their_prefix() {
        let text = "BENCH {\"label\":\"a\",\"x_ns\":1}\nwarning: the CPU limits\nnote: fine\n  warning:  stall = pause\n";
        assert_eq!(warnings(text), ["the CPU limits", "stall = pause"]);
        assert!(warnings("no warnings: here\n").is_empty());
    }

    /// A line with a label and no metric names the anchor (44_cxlnic_kvs:
    /// host 0, whose lines come first, serves; host 1 measures), and a
    /// series' metrics fold in from both hosts' lines under its label.
    #[test]
    fn a_line_without_metrics_names_the_anchor() {
        let host0 = "BENCH {\"label\":\"baseline\"}\n\
                     BENCH {\"label\":\"offload\",\"zipf_hit_pct\":80}\n";
        let host1 = "BENCH {\"label\":\"baseline\",\"zipf_get_p50_ns\":400}\n\
                     BENCH {\"label\":\"offload\",\"zipf_get_p50_ns\":100}\n";
        let s = summarize(&parse_series(&format!("{host0}{host1}")).unwrap());
        assert_eq!(s[0].label, "baseline");
        assert_eq!(s[1].metrics.len(), 2);
        assert_eq!(
            ratios(&s),
            vec![vec![Some(1.0)], vec![None, Some(0.25)]],
            "hit rate: no anchor value; latency: against the baseline's"
        );
    }

    #[test]
    fn malformed_bench_line_is_an_error() {
        assert!(parse_series("BENCH {not json").is_err());
    }
}
