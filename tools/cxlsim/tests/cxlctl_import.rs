//! The testbed topology from `cxlctl --json topology`.

use cxlsim::config::{Config, TopologyConfig};
use cxlsim::topology::NodeKind;
use cxlsim::Sim;
use std::path::Path;

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

#[test]
fn sample_json_mirrors_the_switch() {
    let text = std::fs::read_to_string(examples().join("testbed-topology.json")).unwrap();
    let topo = cxlsim::cxlctl::parse(&text).unwrap();
    let g = cxlsim::cxlctl::to_graph(&topo, 2).unwrap();
    let names = |k: NodeKind| -> Vec<&str> {
        g.nodes
            .iter()
            .filter(|n| n.kind == k)
            .map(|n| n.name.as_str())
            .collect()
    };
    assert_eq!(names(NodeKind::Switch), vec!["root0", "port1", "port2"]);
    assert_eq!(names(NodeKind::Requester), vec!["r0", "r1"]);
    assert_eq!(names(NodeKind::Memory), vec!["mem0", "mem1"]);
    // host -> root0 -> port1 -> port2 -> memdev: four links.
    let routes = g.routes();
    for &r in &g.requesters {
        for m in 0..2 {
            assert_eq!(routes.hops(r, 2 + m), Some(4));
        }
    }
    // Both memories hang off the switch port.
    let port2 = g.find("port2").unwrap();
    let peers: Vec<&str> = g.nodes[port2 as usize]
        .ports
        .iter()
        .map(|p| g.nodes[p.peer as usize].name.as_str())
        .collect();
    assert_eq!(peers, vec!["port1", "mem0", "mem1"]);
}

#[test]
fn testbed_example_runs() {
    let (cfg, base) = Config::load(&examples().join("testbed.toml")).unwrap();
    assert!(matches!(cfg.topology, TopologyConfig::Cxlctl { .. }));
    let mut sim = Sim::new(&cfg, &base).unwrap();
    let r = sim.run();
    assert_eq!(r.requests_completed, 40_000);
    assert_eq!(r.requesters.len(), 2);
    assert!(r.aggregate_bandwidth_gbps > 1.0);
    // The shared host bridge link carries both hosts.
    let up = r.links.iter().find(|l| l.name == "root0->port1").unwrap();
    assert!(up.utilization > 0.1);
}

/// The testbed's topology with `edits` of (device, new parent) applied.
fn with_parents(edits: &[(&str, &str)]) -> cxlsim::cxlctl::Topology {
    let text = std::fs::read_to_string(examples().join("testbed-topology.json")).unwrap();
    let mut topo = cxlsim::cxlctl::parse(&text).unwrap();
    for (name, parent) in edits {
        let d = topo.devices.iter_mut().find(|d| d.name == *name).unwrap();
        d.parent = Some(parent.to_string());
    }
    topo
}

#[test]
fn parent_cycles_are_refused() {
    // A loop of ports cut off from the root, and one through the root.
    for edits in [
        &[("port1", "port2")][..],
        &[("root0", "port2")][..],
        &[("region0", "dax_region0")][..],
    ] {
        let e = cxlsim::cxlctl::to_graph(&with_parents(edits), 1).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("parent cycle"), "{edits:?}: {msg}");
        assert!(
            msg.contains(edits[0].0) && msg.contains(edits[0].1),
            "{msg}"
        );
    }
    // Through a configuration, too.
    let cfg = Config {
        topology: TopologyConfig::Cxlctl {
            file: None,
            json: Some(serde_json::to_value(with_parents(&[("port1", "port2")])).unwrap()),
            requesters_per_root: 1,
        },
        ..Config::default()
    };
    let e = Sim::new(&cfg, Path::new(".")).err().expect("refused");
    assert!(format!("{e:#}").contains("parent cycle"), "{e:#}");
    // The unedited topology still imports.
    assert!(cxlsim::cxlctl::to_graph(&with_parents(&[]), 1).is_ok());
}
