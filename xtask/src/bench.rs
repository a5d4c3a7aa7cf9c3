//! `cargo xtask bench`: boots the testbed in bench mode, runs every
//! `tests/vm/bench/*.sh`, and reports each series side by side with the
//! benchmark's anchor (its first series) as ratios. Absolute numbers from
//! an emulated machine mean little; the ratios within one run are the
//! result. Writes `target/xtask/bench/results.json` and prints a table.

use crate::util::{out_dir, Phases};
use crate::vm::{self, Mode, VmOptions};
use anyhow::{bail, Result};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// One `BENCH {json}` line: a series of a benchmark.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub metrics: Vec<(String, f64)>,
}

/// Parses the `BENCH {json}` lines of one benchmark's output. Numeric
/// fields whose name ends in `_per_s`, `_ns`, `_pct`, `_of_raw` (a
/// ratio the benchmark computed itself) or `_per_frame` (a count per
/// frame) are metrics.
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
                ["_per_s", "_ns", "_pct", "_of_raw", "_per_frame"]
                    .iter()
                    .any(|suffix| k.ends_with(suffix))
            })
            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
            .collect();
        out.push(Series { label, metrics });
    }
    Ok(out)
}

/// Each series' metrics divided by the anchor's (the first series).
pub fn ratios(series: &[Series]) -> Vec<Vec<Option<f64>>> {
    let Some(anchor) = series.first() else {
        return Vec::new();
    };
    series
        .iter()
        .map(|s| {
            s.metrics
                .iter()
                .map(|(name, value)| {
                    let base = anchor.metrics.iter().find(|(n, _)| n == name)?.1;
                    (base > 0.0).then(|| value / base)
                })
                .collect()
        })
        .collect()
}

fn human(value: f64, metric: &str) -> String {
    if metric.ends_with("bytes_per_s") {
        format!("{:.1} MB/s", value / 1e6)
    } else if metric.ends_with("_ns") {
        format!("{value:.0} ns")
    } else if metric.ends_with("_pct") {
        format!("{value:.3} %")
    } else if metric.ends_with("_of_raw") {
        format!("{value:.3}x")
    } else if metric.ends_with("_per_frame") {
        format!("{value:.2}/frame")
    } else {
        format!("{value:.0}/s")
    }
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

pub fn bench(timeout: Duration, flavor: crate::kernel::Flavor, only: Option<String>) -> Result<()> {
    if let Some(o) = &only {
        let dir = crate::util::repo_root().join("tests/vm/bench");
        let mut any = false;
        for entry in std::fs::read_dir(&dir)? {
            let file = entry?.file_name().to_string_lossy().into_owned();
            // As the guest matches: the name without `.sh`.
            any |= file
                .strip_suffix(".sh")
                .is_some_and(|name| name.contains(o.as_str()));
        }
        if !any {
            bail!(
                "--only {o}: no benchmark in {} has that in its name",
                dir.display()
            );
        }
    }
    let mut phases = Phases::default();
    let (tree, initramfs) = vm::prepare(&mut phases, flavor)?;
    // Two hosts: the RPC and remote-allocation benchmarks need a peer.
    let mut opts = VmOptions::new(Mode::Bench, 2, timeout);
    opts.only = only;
    let runs = phases.time("boot", || vm::boot(&tree, &initramfs, &opts))?;
    phases.summary();
    // A benchmark's series from every host, host 0 first: its first series
    // is the anchor.
    let mut names: Vec<String> = Vec::new();
    for run in &runs {
        for block in run.report.blocks("bench") {
            if !names.contains(&block.name) {
                names.push(block.name.clone());
            }
        }
    }

    let mut results = Map::new();
    println!(
        "{:<16} {:<18} {:<22} {:>14} {:>9}",
        "benchmark", "series", "metric", "value", "vs anchor"
    );
    for name in &names {
        let mut series = Vec::new();
        for run in &runs {
            for block in run.report.blocks("bench").filter(|b| &b.name == name) {
                series.extend(parse_series(&block.text)?);
            }
        }
        if series.is_empty() {
            continue;
        }
        let ratios = ratios(&series);
        let mut rows = Vec::new();
        for (s, r) in series.iter().zip(&ratios) {
            for ((metric, value), ratio) in s.metrics.iter().zip(r) {
                let ratio_text = ratio.map_or("-".to_string(), |x| format!("{x:.3}x"));
                println!(
                    "{:<16} {:<18} {:<22} {:>14} {:>9}",
                    name,
                    s.label,
                    metric,
                    human(*value, metric),
                    ratio_text
                );
                rows.push(json!({ "series": s.label, "metric": metric, "value": value, "ratio_to_anchor": ratio }));
            }
        }
        let anchor = series.first().map(|s| s.label.clone());
        results.insert(name.clone(), json!({ "anchor": anchor, "rows": rows }));
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
            ratios(&series),
            vec![vec![Some(1.0)], vec![None, Some(0.01)]]
        );
        assert_eq!(human(0.5, "cpu_pct"), "0.500 %");
        assert_eq!(human(0.4181, "cxl_put_of_raw"), "0.418x");
    }

    #[test]
    fn only_filters_are_one_word() {
        assert_eq!(parse_only("22_kv").unwrap(), "22_kv");
        assert!(parse_only("").is_err());
        assert!(parse_only("kv panic=1").is_err());
        assert!(parse_only("a;b").is_err());
    }

    #[test]
    fn malformed_bench_line_is_an_error() {
        assert!(parse_series("BENCH {not json").is_err());
    }
}
