//! The run-window gate and the controller hook.

use cxlsim::config::{Config, TopologyConfig};
use cxlsim::event::Ps;
use cxlsim::requester::{Controller, Observation, RunWindow};
use cxlsim::Sim;
use std::path::Path;

fn config() -> Config {
    let mut c = Config {
        topology: TopologyConfig::FullyConnected { n: 2 },
        ..Config::default()
    };
    c.requester.requests = 20_000;
    c
}

#[test]
fn run_window_limits_bandwidth() {
    let open = cxlsim::run(&config(), Path::new(".")).unwrap();
    let mut c = config();
    c.requester_override
        .push(cxlsim::config::RequesterOverride {
            name: "r1".into(),
            run_ns: Some(1000.0),
            window_ns: Some(4000.0),
            ..Default::default()
        });
    let gated = cxlsim::run(&c, Path::new(".")).unwrap();
    let (o, g) = (
        open.requesters[1].bandwidth_gbps,
        gated.requesters[1].bandwidth_gbps,
    );
    assert!(g < 0.5 * o, "gated {g} vs open {o}");
    assert!(gated.requesters[1].gated_ns > 0.0);
}

/// Halves r0's window after it has moved 100 KB; records what it saw.
struct Halver {
    ticks: u32,
    seen: Vec<Observation>,
}

impl Controller for Halver {
    fn period_ps(&self) -> Option<Ps> {
        Some(1_000_000) // 1 us
    }
    fn on_tick(&mut self, _now: Ps, obs: &[Observation], windows: &mut [RunWindow]) {
        self.ticks += 1;
        self.seen.push(obs[0].clone());
        if obs[0].bytes_total > 100_000 {
            windows[0] = RunWindow::new(500_000, 1_000_000);
        }
    }
}

#[test]
fn controller_sees_requesters_and_changes_windows() {
    let mut sim = Sim::with_controller(
        &config(),
        Path::new("."),
        Halver {
            ticks: 0,
            seen: vec![],
        },
    )
    .unwrap();
    let r = sim.run();
    let h = sim.controller();
    assert!(h.ticks > 5, "{}", h.ticks);
    assert!(h
        .seen
        .iter()
        .any(|o| o.bytes_since_last > 0 && o.mean_outstanding > 0.0));
    assert!(r.requesters[0].gated_ns > 0.0);
    assert!(r.requesters[0].bandwidth_gbps < r.requesters[1].bandwidth_gbps);
    assert_eq!(r.requests_completed, 40_000);
}
