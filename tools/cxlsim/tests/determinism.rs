use cxlsim::config::{Config, TopologyConfig};
use std::path::Path;

fn json(cfg: &Config) -> String {
    serde_json::to_string(&cxlsim::run(cfg, Path::new(".")).unwrap()).unwrap()
}

fn config(seed: u64) -> Config {
    let mut c = Config {
        seed,
        topology: TopologyConfig::SpineLeaf {
            n: 4,
            leaf_devices: 2,
            spines: 2,
        },
        ..Config::default()
    };
    c.switch.routing = cxlsim::config::Routing::Adaptive;
    c.requester.requests = 2000;
    c.requester.read_ratio = 0.6;
    c
}

#[test]
fn same_seed_same_report_different_seed_different_report() {
    let a = json(&config(5));
    let b = json(&config(5));
    let c = json(&config(6));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn examples_are_deterministic_too() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for f in ["small.toml", "testbed.toml", "custom.json"] {
        let (cfg, base) = Config::load(&dir.join(f)).unwrap();
        let r1 = cxlsim::run(&cfg, &base).unwrap();
        let r2 = cxlsim::run(&cfg, &base).unwrap();
        let mut sim = cxlsim::Sim::new(&cfg, &base).unwrap();
        let r3 = sim.run();
        assert_eq!(r3, sim.run(), "a second run() returns the same report");
        assert_eq!(r1, r3);
        assert_eq!(
            serde_json::to_string(&r1).unwrap(),
            serde_json::to_string(&r2).unwrap(),
            "{f}"
        );
        assert!(r1.requests_completed > 0);
    }
}
