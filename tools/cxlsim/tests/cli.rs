use std::process::Command;

fn cxlsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cxlsim"))
}

/// Asserts that the command exited 0, showing its stderr if not.
fn succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_writes_json_csv_and_svg() {
    let dir = std::env::temp_dir().join(format!("cxlsim-cli-{}", std::process::id()));
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/small.toml");
    let out = cxlsim()
        .args(["run", ex, "--json", "-", "--csv"])
        .arg(&dir)
        .arg("--svg")
        .arg(&dir)
        .output()
        .unwrap();
    succeeded(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests_completed"], 20000);
    for f in ["requesters.csv", "links.csv", "memories.csv", "latency.svg"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(text.len() > 100, "{f}");
    }
    let svg = std::fs::read_to_string(dir.join("latency.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("latency"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_config_fails_cleanly() {
    let dir = std::env::temp_dir().join(format!("cxlsim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(&f, "[link]\nbandwidth_gbps = 0.0\n").unwrap();
    let out = cxlsim().arg("run").arg(&f).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bandwidth_gbps = 0"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn perf_prints_json() {
    let out = cxlsim()
        .args(["perf", "--requests", "20000", "--threads", "1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"], 20000);
    assert!(v["events_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn bench_fast_snoop_writes_files() {
    let dir = std::env::temp_dir().join(format!("cxlsim-bench-{}", std::process::id()));
    let out = cxlsim()
        .args(["bench", "--only", "snoop", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    succeeded(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("LIFO vs FIFO"), "{text}");
    for f in ["snoop.csv", "snoop.svg", "bench.json"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn defaults_parse_back() {
    let out = cxlsim().arg("defaults").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let c = cxlsim::Config::parse(&text).unwrap();
    assert_eq!(c, cxlsim::Config::default());
}

#[test]
fn bench_fast_memchannel_writes_files() {
    let dir = std::env::temp_dir().join(format!("cxlsim-bench-mc-{}", std::process::id()));
    let out = cxlsim()
        .args(["bench", "--only", "memchannel", "--threads", "2", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    succeeded(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("paper's 96.1% sentence"), "{text}");
    for f in [
        "memchannel-isolation.csv",
        "memchannel-isolation.svg",
        "memchannel-fairness.csv",
        "memchannel-fairness.svg",
        "memchannel-convergence.csv",
        "memchannel-convergence.svg",
        "bench.json",
    ] {
        assert!(dir.join(f).exists(), "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_memchannel_scale_prints_bench_lines() {
    let dir = std::env::temp_dir().join(format!("cxlsim-bench-scale-{}", std::process::id()));
    let out = cxlsim()
        .args([
            "bench",
            "--only",
            "memchannel-scale",
            "--threads",
            "2",
            "--bench",
        ])
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    succeeded(&out);
    // The table goes to standard error, BENCH lines to standard output.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("instantaneous"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let series: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("BENCH "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let labels: Vec<&str> = series
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "with 1x1",
            "with 7x1",
            "instantaneous 1x1",
            "instantaneous 7x1",
            "without 1x1",
            "without 7x1"
        ]
    );
    for s in &series {
        let u = s["utilization_pct"].as_f64().unwrap();
        let j = s["jain_fair_pct"].as_f64().unwrap();
        let r = s["jain_raw_pct"].as_f64().unwrap();
        assert!([u, j, r].iter().all(|v| (0.0..=100.0).contains(v)), "{s}");
    }
    for f in ["memchannel-scale.csv", "memchannel-scale.svg", "bench.json"] {
        assert!(dir.join(f).exists(), "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn perf_bench_lines_put_the_event_queue_first() {
    let out = cxlsim()
        .args(["perf", "--requests", "20000", "--threads", "1", "--bench"])
        .output()
        .unwrap();
    succeeded(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let series: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l.strip_prefix("BENCH ").expect(l)).unwrap())
        .collect();
    let labels: Vec<&str> = series
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["event-queue", "cxlsim", "cxlsim-1-copies"]);
    for s in &series {
        assert!(s["events_per_s"].as_f64().unwrap() > 0.0, "{s}");
    }
    assert!(series[1]["run_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn run_stopped_before_the_window_fails_and_says_why() {
    let dir = std::env::temp_dir().join(format!("cxlsim-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/small.toml");
    let text = std::fs::read_to_string(ex).unwrap();
    // 1 us: before any requester has finished its warm-up.
    let f = dir.join("cut.toml");
    std::fs::write(&f, format!("{text}max_time_ns = 1000.0\n")).unwrap();
    let out = cxlsim().arg("run").arg(&f).arg("--quiet").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit 0; stderr: {err}");
    assert!(err.contains("max_time_ns = 1000"), "{err}");
    assert!(err.contains("bandwidth"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
