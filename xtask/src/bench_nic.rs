//! The modelled NIC latencies beside 40_cxlnic's measurements (issue
//! #29): `cxlsim nic-latency` on this machine, fed the per-frame device
//! counters the benchmark measured (its `cost-*` series, medians over the
//! rounds), or the device model's documented costs when it did not run
//! or did not report them all. Two blocks: the counts as given (with the
//! driver's interrupts) and the host polling (the paper's loopback). When
//! 44_cxlnic_kvs ran too, its measured hit rate feeds the model's `kvs`
//! request type. The rows are modelled, not measured; their anchor is the
//! PCIe mode.

use crate::bench::{parse_series, summarize, Series};
use anyhow::{bail, Result};
use serde_json::{Map, Value};
use std::process::{Command, Stdio};

/// The name `--only` selects the model by ("40_cxlnic" selects it with
/// the VM benchmark).
pub const NAME: &str = "40_cxlnic_model";
/// The VM benchmark whose counters feed it.
const MEASURED: &str = "40_cxlnic";
/// The VM benchmark whose KVS hit rate feeds its `kvs` request type.
const MEASURED_KVS: &str = "44_cxlnic_kvs";
/// That benchmark's hit rate: the offload's, read-only Zipfian GETs.
const KVS_HIT_PCT: &str = "zipf_hit_pct";

const FIELDS: [&str; 5] = [
    "desc_reads_per_frame",
    "empty_polls_per_frame",
    "head_writes_per_frame",
    "interrupts_per_frame",
    "doorbells_per_frame",
];

/// The counts file for `cxlsim nic-latency --counts` from 40_cxlnic's
/// `cost-<mode>` series, if every mode has every count.
pub fn counts_json(series: &[Series]) -> Option<Value> {
    let summary = summarize(series);
    let mut out = Map::new();
    for mode in ["type1", "type2", "pcie"] {
        let s = summary.iter().find(|s| s.label == format!("cost-{mode}"))?;
        let mut m = Map::new();
        for f in FIELDS {
            let v = s.metrics.iter().find(|x| x.name == f)?.median;
            m.insert(f.into(), serde_json::Number::from_f64(v)?.into());
        }
        out.insert(mode.into(), Value::Object(m));
    }
    Some(Value::Object(out))
}

/// Adds the KVS transactions per request 44_cxlnic_kvs measured (its
/// offload series' median hit rate: a hit is a device-memory read, the
/// rest host-bias reads) to every mode of `counts`. Returns whether it
/// found them.
pub fn add_kvs(counts: &mut Value, kvs: &[Series]) -> bool {
    let summary = summarize(kvs);
    let Some(pct) = summary
        .iter()
        .find(|s| s.label == "offload")
        .and_then(|s| s.metrics.iter().find(|m| m.name == KVS_HIT_PCT))
        .map(|m| m.median)
        .filter(|p| (0.0..=100.0).contains(p))
    else {
        return false;
    };
    let hits = pct / 100.0;
    let Some(modes) = counts.as_object_mut() else {
        return false;
    };
    for m in modes.values_mut().filter_map(Value::as_object_mut) {
        for (k, v) in [
            ("kvs_hits_per_request", hits),
            ("kvs_misses_per_request", 1.0 - hits),
        ] {
            if let Some(n) = serde_json::Number::from_f64(v) {
                m.insert(k.into(), n.into());
            }
        }
    }
    true
}

fn cxlsim(args: &[&str]) -> Result<Vec<Series>> {
    let root = crate::util::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "run",
            "-q",
            "--release",
            "-p",
            "cxlsim",
            "--",
            "nic-latency",
            "--bench",
        ])
        .args(args)
        .current_dir(&root)
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        bail!("cxlsim nic-latency failed: {}", out.status);
    }
    parse_series(&String::from_utf8_lossy(&out.stdout))
}

/// Runs the model and returns its blocks, named for the table.
pub fn blocks(measured: &[(String, Vec<Series>)]) -> Result<Vec<(String, Vec<Series>)>> {
    let mut counts = measured
        .iter()
        .find(|(n, _)| n == MEASURED)
        .and_then(|(_, s)| counts_json(s));
    let kvs = measured.iter().find(|(n, _)| n == MEASURED_KVS);
    if let (Some(c), Some((_, kvs))) = (counts.as_mut(), kvs) {
        if add_kvs(c, kvs) {
            println!("{NAME}: the kvs request type takes the hit rate {MEASURED_KVS} measured");
        }
    }
    let mut args: Vec<String> = Vec::new();
    match &counts {
        Some(c) => {
            let dir = crate::util::out_dir().join("bench");
            std::fs::create_dir_all(&dir)?;
            let file = dir.join("cxlnic-counts.json");
            std::fs::write(&file, serde_json::to_string_pretty(c)?)?;
            println!(
                "{NAME}: modelled (cxlsim nic-latency), not measured: counts measured by {MEASURED} ({})",
                file.display()
            );
            args.extend(["--counts".into(), file.display().to_string()]);
        }
        None => println!(
            "{NAME}: modelled (cxlsim nic-latency), not measured: the device model's documented counts ({MEASURED} gave none)"
        ),
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let given = cxlsim(&args)?;
    let polled = cxlsim(&[args.as_slice(), &["--polled"]].concat())?;
    Ok(vec![
        (NAME.to_string(), given),
        (format!("{NAME}_polled"), polled),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_from_every_modes_cost_series_medians() {
        let line = |mode: &str, d: f64| {
            format!(
                "BENCH {{\"label\":\"cost-{mode}\",\"desc_reads_per_frame\":{d},\"empty_polls_per_frame\":2,\"head_writes_per_frame\":1,\"interrupts_per_frame\":0.5,\"doorbells_per_frame\":0}}\n"
            )
        };
        let text = [
            line("type1", 1.0),
            line("type1", 3.0),
            line("type1", 2.0),
            line("type2", 1.0),
            "BENCH {\"label\":\"cxlnic-type1\",\"rr64_p50_ns\":5}\n".into(),
        ]
        .concat();
        let series = parse_series(&text).unwrap();
        assert_eq!(counts_json(&series), None, "pcie missing");
        let series = parse_series(&(text + &line("pcie", 1.0))).unwrap();
        let c = counts_json(&series).unwrap();
        assert_eq!(c["type1"]["desc_reads_per_frame"], 2.0, "the median");
        assert_eq!(c["pcie"]["interrupts_per_frame"], 0.5);
        assert_eq!(c["type2"].as_object().unwrap().len(), 5);
    }

    #[test]
    fn the_kvs_hit_rate_feeds_every_mode() {
        let mut c = serde_json::json!({"type1": {}, "type2": {}, "pcie": {}});
        let none = parse_series("BENCH {\"label\":\"baseline\",\"zipf_get_p50_ns\":5}\n").unwrap();
        assert!(!add_kvs(&mut c, &none));
        let text = [60.0, 80.0, 70.0]
            .map(|p| format!("BENCH {{\"label\":\"offload\",\"zipf_hit_pct\":{p}}}\n"))
            .concat();
        assert!(add_kvs(&mut c, &parse_series(&text).unwrap()));
        assert_eq!(c["type2"]["kvs_hits_per_request"], 0.7, "the median");
        let misses = c["pcie"]["kvs_misses_per_request"].as_f64().unwrap();
        assert!((misses - 0.3).abs() < 1e-9);
        let bad = parse_series("BENCH {\"label\":\"offload\",\"zipf_hit_pct\":140}\n").unwrap();
        let mut c2 = serde_json::json!({"type2": {}});
        assert!(!add_kvs(&mut c2, &bad), "a hit rate past 100 % taken");
    }
}
