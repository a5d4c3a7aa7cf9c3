//! Output: JSON and CSV files of reports and sweep results (CSV columns
//! in name order).

use crate::stats::Report;
use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// Quotes a CSV field when it needs it.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, x, out);
            }
        }
        Value::Null => out.push((prefix.to_string(), String::new())),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        Value::Array(a) => out.push((prefix.to_string(), format!("{} items", a.len()))),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// CSV of a list of records (nested fields become `a.b` columns).
pub fn to_csv<T: Serialize>(rows: &[T]) -> Result<String> {
    let mut header: Option<Vec<String>> = None;
    let mut out = String::new();
    for r in rows {
        let mut cells = Vec::new();
        flatten("", &serde_json::to_value(r)?, &mut cells);
        // Columns by name, whatever order serde_json's map keeps.
        cells.sort_by(|a, b| a.0.cmp(&b.0));
        if header.is_none() {
            let h: Vec<String> = cells.iter().map(|(k, _)| k.clone()).collect();
            out.push_str(&h.iter().map(|k| field(k)).collect::<Vec<_>>().join(","));
            out.push('\n');
            header = Some(h);
        }
        out.push_str(
            &cells
                .iter()
                .map(|(_, v)| field(v))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
    }
    Ok(out)
}

pub fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

pub fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<()> {
    write(path, &(serde_json::to_string_pretty(v)? + "\n"))
}

/// Writes `requesters.csv`, `links.csv` and `memories.csv` into `dir`.
pub fn write_report_csv(dir: &Path, r: &Report) -> Result<()> {
    write(&dir.join("requesters.csv"), &to_csv(&r.requesters)?)?;
    write(&dir.join("links.csv"), &to_csv(&r.links)?)?;
    write(&dir.join("memories.csv"), &to_csv(&r.memories)?)?;
    Ok(())
}

/// A short human-readable summary of a report.
pub fn summary(r: &Report) -> String {
    let mut s = String::new();
    if let Some(e) = &r.window_error {
        s.push_str(&format!("NOT A STEADY-STATE MEASUREMENT: {e}\n"));
    }
    s += &format!(
        "{}: {} requests, {} events, simulated {:.1} us (window {:.1}-{:.1} us)\n\
         aggregate bandwidth {:.2} GB/s, latency mean {:.1} ns p50 {:.0} p99 {:.0} max {:.0}\n",
        r.topology,
        r.requests_completed,
        r.events,
        r.sim_time_ns / 1000.0,
        r.window_start_ns / 1000.0,
        r.window_end_ns / 1000.0,
        r.aggregate_bandwidth_gbps,
        r.latency.mean_ns,
        r.latency.p50_ns,
        r.latency.p99_ns,
        r.latency.max_ns
    );
    if r.latency_by_hops.len() > 1 {
        s.push_str("  latency by hops:");
        for h in &r.latency_by_hops {
            s.push_str(&format!(" {}: {:.0} ns ({})", h.hops, h.mean_ns, h.count));
        }
        s.push('\n');
    }
    for q in &r.requesters {
        s.push_str(&format!(
            "  {:<10} {:>8.2} GB/s  mean {:>8.1} ns  p99 {:>8.0} ns  queue {:>6.1}\n",
            q.name, q.bandwidth_gbps, q.latency.mean_ns, q.latency.p99_ns, q.queue.mean
        ));
    }
    let mut busy: Vec<_> = r.links.iter().filter(|l| l.utilization > 0.0).collect();
    busy.sort_by(|a, b| b.utilization.total_cmp(&a.utilization));
    for l in busy.iter().take(5) {
        s.push_str(&format!(
            "  link {:<20} utilization {:>5.1}%  queue mean {:.1} max {}\n",
            l.name,
            l.utilization * 100.0,
            l.queue.mean,
            l.queue.max
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Inner {
        x: f64,
    }
    #[derive(Serialize)]
    struct Row {
        name: String,
        inner: Inner,
    }

    #[test]
    fn csv_flattens_and_quotes() {
        let rows = vec![
            Row {
                name: "a,b".into(),
                inner: Inner { x: 1.5 },
            },
            Row {
                name: "c".into(),
                inner: Inner { x: 2.0 },
            },
        ];
        assert_eq!(to_csv(&rows).unwrap(), "inner.x,name\n1.5,\"a,b\"\n2.0,c\n");
    }
}
