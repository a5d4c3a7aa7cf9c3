//! Oblivious vs adaptive routing, and random configurations never panic.

use cxlsim::config::{Config, LinkSpec, Routing, TopologyConfig};
use cxlsim::rng::Rng;
use std::path::Path;

/// One flow, r0 to m0 (both on fast ports), with two spines between leaves
/// A and B: oblivious routing pins the flow to one spine, adaptive routing
/// spreads its messages over both.
fn two_spines(routing: Routing) -> Config {
    let l = |a: &str, b: &str| LinkSpec {
        a: a.into(),
        b: b.into(),
        ..Default::default()
    };
    let fast = |a: &str, b: &str| LinkSpec {
        bandwidth_gbps: Some(256.0),
        ..l(a, b)
    };
    let mut c = Config {
        topology: TopologyConfig::Custom {
            switches: vec!["A".into(), "B".into(), "S0".into(), "S1".into()],
            requesters: vec!["r0".into()],
            memories: vec!["m0".into()],
            links: vec![
                fast("r0", "A"),
                l("A", "S0"),
                l("A", "S1"),
                l("B", "S0"),
                l("B", "S1"),
                fast("m0", "B"),
            ],
        },
        ..Config::default()
    };
    c.switch.routing = routing;
    c.memory.banks = 1024;
    c.requester.requests = 40_000;
    c.requester.queue_capacity = 1024;
    c
}

#[test]
fn adaptive_routing_uses_both_spines() {
    let o = cxlsim::run(&two_spines(Routing::Oblivious), Path::new(".")).unwrap();
    let a = cxlsim::run(&two_spines(Routing::Adaptive), Path::new(".")).unwrap();
    let (bo, ba) = (o.aggregate_bandwidth_gbps, a.aggregate_bandwidth_gbps);
    assert!((bo / 64.0 - 1.0).abs() < 0.05, "oblivious {bo}");
    assert!(ba / 64.0 > 1.8, "adaptive {ba}");
}

/// Payload (GB/s) on the link direction `from->to`.
fn payload(r: &cxlsim::Report, from: &str, to: &str) -> f64 {
    r.links
        .iter()
        .find(|l| l.from == from && l.to == to)
        .unwrap_or_else(|| panic!("no link {from}->{to}"))
        .payload_gbps
}

/// Spine-leaf with a partly filled leaf on each side (N = 5, 6): its one
/// uplink goes to spine0, which must carry its flows; the full leaves' flows
/// have to favour spine1 by as much, or spine0's links saturate first (a
/// hash on the PBR ids split them evenly: 2.09x and 2.25x).
#[test]
fn spine_leaf_balances_the_spines_and_reaches_n_over_2() {
    use cxlsim::experiments::{topology_config, Family};
    for n in [5u32, 6] {
        let r = cxlsim::run(
            &topology_config(Family::SpineLeaf, n, 500, 1),
            Path::new("."),
        )
        .unwrap();
        assert_eq!(r.window_error, None);
        let multiple = r.aggregate_bandwidth_gbps / 64.0;
        let want = n as f64 / 2.0;
        // Read responses into the full requester leaf, and out of the full
        // memory leaf, split evenly over the spines.
        let down = [0, 1].map(|s| payload(&r, &format!("spine{s}"), "leaf-r0"));
        let up = [0, 1].map(|s| payload(&r, "leaf-m0", &format!("spine{s}")));
        let even = |x: [f64; 2]| (x[0] / x[1] - 1.0).abs() < 0.03;
        assert!(
            even(down) && even(up),
            "n={n}: into leaf-r0 {down:?}, out of leaf-m0 {up:?} GB/s"
        );
        // And they are full.
        assert!(down.iter().all(|&g| g > 0.97 * 64.0), "n={n}: {down:?}");
        assert!(
            (multiple / want - 1.0).abs() < 0.03,
            "n={n}: {multiple:.3}x"
        );
    }
}

#[test]
fn random_configurations_error_or_run() {
    let mut rng = Rng::new(99, 0);
    let mut ran = 0;
    for case in 0..150 {
        let ns = 1 + rng.below(4) as usize;
        let nr = rng.below(3) as usize;
        let nm = rng.below(3) as usize;
        let names: Vec<String> = (0..ns)
            .map(|i| format!("s{i}"))
            .chain((0..nr).map(|i| format!("r{i}")))
            .chain((0..nm).map(|i| format!("m{i}")))
            .collect();
        let pick = |rng: &mut Rng, v: &[f64]| v[rng.below(v.len() as u64) as usize];
        let mut pairs: Vec<(String, String)> = Vec::new();
        // Mostly: every device on some switch, then random extra links
        // (possibly to unknown nodes, to themselves, between devices).
        for i in 1..ns {
            if rng.below(10) > 0 {
                pairs.push((names[i - 1].clone(), names[i].clone()));
            }
        }
        for d in &names[ns..] {
            if rng.below(10) > 0 {
                pairs.push((d.clone(), names[rng.below(ns as u64) as usize].clone()));
            }
        }
        for _ in 0..rng.below(3) {
            let a = names[rng.below(names.len() as u64) as usize].clone();
            let b = if rng.below(10) == 0 {
                "ghost".to_string()
            } else {
                names[rng.below(names.len() as u64) as usize].clone()
            };
            pairs.push((a, b));
        }
        let mut links = Vec::new();
        for (a, b) in pairs {
            links.push(LinkSpec {
                a,
                b,
                bandwidth_gbps: Some(if rng.below(20) == 0 {
                    pick(&mut rng, &[0.0, -1.0, 1e-9, f64::NAN])
                } else {
                    pick(&mut rng, &[64.0, 8.0, 1000.0])
                }),
                header_ratio: Some(if rng.below(20) == 0 {
                    20.0
                } else {
                    pick(&mut rng, &[0.0, 0.5, 0.25])
                }),
                ..Default::default()
            });
        }
        let mut c = Config {
            seed: case,
            topology: TopologyConfig::Custom {
                switches: names[..ns].to_vec(),
                requesters: names[ns..ns + nr].to_vec(),
                memories: names[ns + nr..].to_vec(),
                links,
            },
            ..Config::default()
        };
        c.requester.requests = rng.below(200);
        c.requester.queue_capacity = rng.below(16) as u32;
        c.requester.read_ratio = [0.0, 0.5, 1.0, 1.0, 0.3, 2.0][rng.below(6) as usize];
        c.link.duplex = if rng.below(2) == 0 {
            cxlsim::config::Duplex::Full
        } else {
            cxlsim::config::Duplex::Half
        };
        c.run.max_time_ns = Some(1e6);
        if let Ok(mut sim) = cxlsim::Sim::new(&c, Path::new(".")) {
            let r = sim.run();
            assert!(r.requests_completed <= 200 * nr as u64);
            ran += 1;
        }
    }
    assert!(ran >= 10, "only {ran} random configurations were valid");
}
