//! The measurement window: one time interval in which every requester is
//! in steady state, and runs that never get one are errors.

use cxlsim::config::{Config, RequesterOverride, TopologyConfig};
use cxlsim::Report;
use std::path::Path;

/// Ring of three: r0 and r1 share the bridge link into s0, r2 has the
/// other bridge to itself, so in steady state r2 moves twice as much.
fn ring3(requests: u64) -> Config {
    let mut c = Config {
        topology: TopologyConfig::Ring { n: 3 },
        ..Config::default()
    };
    c.requester.requests = requests;
    c.requester.queue_capacity = 512;
    c.requester.interleave_granularity = 64;
    c
}

fn run(c: &Config) -> Report {
    cxlsim::run(c, Path::new(".")).unwrap()
}

fn near(x: f64, want: f64, tol: f64) -> bool {
    (x / want - 1.0).abs() <= tol
}

#[test]
fn requesters_at_different_rates_share_one_steady_state_window() {
    let r = run(&ring3(12_000));
    let bw: Vec<f64> = r.requesters.iter().map(|q| q.bandwidth_gbps).collect();
    let multiple = r.aggregate_bandwidth_gbps / 64.0;
    // Over a window closed by completion counts this was 1.55x: r2 had
    // finished and sat idle for part of it.
    assert!(near(multiple, 2.0, 0.01), "{multiple:.3}x, {bw:?}");
    assert!(near(bw[0], 32.0, 0.02) && near(bw[1], 32.0, 0.02), "{bw:?}");
    assert!(near(bw[2], 64.0, 0.02), "{bw:?}");
    assert_eq!(r.window_error, None);
}

#[test]
fn a_time_window_counts_everyone_over_the_same_interval_then_stops() {
    let mut c = ring3(1 << 30);
    c.run.warmup_ns = Some(2_000.0);
    c.run.measure_ns = Some(10_000.0);
    let r = run(&c);
    assert_eq!(r.window_error, None);
    assert_eq!((r.window_start_ns, r.window_end_ns), (2_000.0, 12_000.0));
    assert_eq!(
        r.sim_time_ns, 12_000.0,
        "the run stops when the window closes"
    );
    let multiple = r.aggregate_bandwidth_gbps / 64.0;
    assert!(near(multiple, 2.0, 0.01), "{multiple:.3}x");
    // Too few requests for the window: r2, the fastest, runs out inside it.
    let mut c = c.clone();
    c.requester.requests = 5_000;
    let e = run(&c).window_error.expect("an error");
    assert!(e.contains("r2 issued its last request"), "{e}");
    // Half a window is refused.
    c.run.measure_ns = None;
    let e = cxlsim::Sim::new(&c, Path::new(".")).err().expect("refused");
    assert!(e.to_string().contains("warmup_ns and measure_ns"), "{e}");
}

#[test]
fn no_common_steady_state_is_an_error() {
    // r2 is done before r0 and r1 have finished their warm-up.
    let mut c = ring3(12_000);
    c.requester_override.push(RequesterOverride {
        name: "r2".into(),
        requests: Some(500),
        ..Default::default()
    });
    let r = run(&c);
    let e = r.window_error.expect("an error");
    assert!(
        e.contains("no measurement window") && e.contains("r2"),
        "{e}"
    );
    assert!(e.contains("warmup_ns"), "{e}");
    // The run itself still completes every request.
    assert_eq!(r.requests_completed, 24_500);
}

#[test]
fn max_time_before_the_window_closes_is_an_error() {
    let mut c = ring3(12_000);
    c.run.max_time_ns = Some(1_000.0);
    let r = run(&c);
    let e = r.window_error.expect("an error");
    assert!(
        e.starts_with("no measurement window: max_time_ns = 1000"),
        "{e}"
    );
    assert_eq!(r.aggregate_bandwidth_gbps, 0.0);
    // Opened but cut short: the figures cover part of the window only.
    c.run.max_time_ns = Some(5_000.0);
    let r = run(&c);
    let e = r.window_error.expect("an error");
    assert!(e.contains("before the measurement window closed"), "{e}");
    assert!(r.sim_time_ns <= 5_000.0 && r.window_end_ns == r.sim_time_ns);
    // Long enough: no error.
    c.run.max_time_ns = Some(1e6);
    assert_eq!(run(&c).window_error, None);
}
