//! Bad configurations are rejected with clear errors, never panics.

use cxlsim::config::{Config, LinkSpec, TopologyConfig};
use cxlsim::Sim;
use std::path::Path;

fn err(cfg: &Config) -> String {
    match Sim::new(cfg, Path::new(".")) {
        Ok(_) => panic!("accepted: {cfg:?}"),
        Err(e) => format!("{e:#}"),
    }
}

fn parse_err(text: &str) -> String {
    format!("{:#}", Config::parse(text).unwrap_err())
}

fn link(a: &str, b: &str) -> LinkSpec {
    LinkSpec {
        a: a.into(),
        b: b.into(),
        ..Default::default()
    }
}

fn custom(links: Vec<LinkSpec>) -> Config {
    Config {
        topology: TopologyConfig::Custom {
            switches: vec!["s0".into(), "s1".into()],
            requesters: vec!["r0".into()],
            memories: vec!["m0".into()],
            links,
        },
        ..Config::default()
    }
}

#[test]
fn zero_bandwidth() {
    let mut c = Config::default();
    c.link.bandwidth_gbps = 0.0;
    assert!(err(&c).contains("bandwidth_gbps = 0"), "{}", err(&c));
    c.link.bandwidth_gbps = f64::NAN;
    assert!(err(&c).contains("bandwidth_gbps"));
    c.link.unlimited = true;
    Sim::new(&c, Path::new(".")).unwrap();
}

#[test]
fn unknown_node() {
    let c = custom(vec![link("r0", "s0"), link("s0", "nope")]);
    assert!(err(&c).contains("unknown node \"nope\""), "{}", err(&c));
}

#[test]
fn disconnected_topology() {
    // s1 - m0 is an island.
    let c = custom(vec![link("r0", "s0"), link("s1", "m0")]);
    let e = err(&c);
    assert!(e.contains("s0") || e.contains("disconnected"), "{e}");
    let c = custom(vec![link("r0", "s0"), link("s0", "s0b"), link("s1", "m0")]);
    assert!(err(&c).contains("unknown node"));
    let mut c = custom(vec![link("r0", "s0"), link("s1", "m0"), link("s1", "s1")]);
    assert!(err(&c).contains("to itself"));
    if let TopologyConfig::Custom { links, .. } = &mut c.topology {
        links.pop();
        links.push(link("s0", "r0"));
    }
    // s1 has a link, s0 too, but r0 cannot reach m0.
    assert!(err(&c).contains("disconnected topology"), "{}", err(&c));
}

#[test]
fn zero_n_and_empty_things() {
    for t in [
        TopologyConfig::Chain { n: 0 },
        TopologyConfig::Ring { n: 0 },
        TopologyConfig::Tree { n: 0 },
        TopologyConfig::FullyConnected { n: 0 },
        TopologyConfig::SpineLeaf {
            n: 0,
            leaf_devices: 4,
            spines: 2,
        },
    ] {
        let c = Config {
            topology: t,
            ..Config::default()
        };
        assert!(err(&c).contains("n = 0"), "{}", err(&c));
    }
    let c = Config {
        topology: TopologyConfig::FullyConnected { n: 100_000 },
        ..Config::default()
    };
    assert!(err(&c).contains("at most"));
    let c = Config {
        topology: TopologyConfig::SpineLeaf {
            n: 4,
            leaf_devices: 0,
            spines: 2,
        },
        ..Config::default()
    };
    assert!(err(&c).contains("leaf_devices = 0"));
}

#[test]
fn requester_values() {
    let mut c = Config::default();
    c.requester.queue_capacity = 0;
    assert!(err(&c).contains("queue_capacity = 0"));
    let mut c = Config::default();
    c.requester.read_ratio = 1.5;
    assert!(err(&c).contains("read_ratio"));
    let mut c = Config::default();
    c.requester.line_bytes = 48;
    assert!(err(&c).contains("line_bytes"));
    let mut c = Config::default();
    c.requester.issue_interval_ns = -1.0;
    assert!(err(&c).contains("issue_interval_ns"));
    let mut c = Config::default();
    c.requester.requests = 0;
    assert!(err(&c).contains("no requests"));
    let mut c = Config::default();
    c.requester.targets = Some(vec!["m9".into()]);
    assert!(err(&c).contains("\"m9\" is not a memory"));
    let mut c = Config::default();
    c.requester.traffic = cxlsim::config::Traffic::Trace;
    assert!(err(&c).contains("trace_file"));
    c.requester.trace_file = Some("/nonexistent/trace".into());
    assert!(err(&c).contains("reading"));
    let mut c = Config::default();
    c.requester.run_ns = Some(10.0);
    assert!(err(&c).contains("go together"));
    c.requester.window_ns = Some(5.0);
    assert!(err(&c).contains("run_ns <= window_ns"));
    let mut c = Config::default();
    c.requester.hot_fraction = 0.0000001;
    c.requester.footprint_bytes = 64 * 10;
    assert!(err(&c).contains("hot_fraction"));
}

#[test]
fn other_sections() {
    let mut c = Config::default();
    c.memory.banks = 0;
    assert!(err(&c).contains("banks = 0"));
    let mut c = Config::default();
    c.switch.port_delay_ns = f64::INFINITY;
    assert!(err(&c).contains("port_delay_ns"));
    let mut c = Config::default();
    c.link.header_ratio = -0.5;
    assert!(err(&c).contains("header_ratio"));
    let mut c = Config::default();
    c.run.warmup_fraction = 0.6;
    c.run.cooldown_fraction = 0.5;
    assert!(err(&c).contains("below 1"));
    let c = Config {
        snoop_filter: Some(cxlsim::config::SnoopFilterConfig {
            invblk_max: 5,
            ..Default::default()
        }),
        ..Config::default()
    };
    assert!(err(&c).contains("invblk_max = 5"));
    let mut c = Config::default();
    c.requester_override
        .push(cxlsim::config::RequesterOverride {
            name: "zz".into(),
            ..Default::default()
        });
    assert!(err(&c).contains("\"zz\", which is not a requester"));
}

#[test]
fn parse_errors() {
    assert!(parse_err("sed = 1").contains("unknown field"));
    assert!(parse_err("[topology]\nkind = \"moebius\"\nn = 3").contains("unknown variant"));
    assert!(parse_err("[topology]\nkind = \"ring\"").contains("missing field `n`"));
    assert!(parse_err("[link]\nbandwidth_gbps = \"fast\"").contains("invalid type"));
    assert!(parse_err("{\"seed\": -1}").contains("invalid value"));
    let c = Config::parse("[topology]\nkind = \"ring\"\nn = 3\n").unwrap();
    assert_eq!(c.topology, TopologyConfig::Ring { n: 3 });
}

#[test]
fn cxlctl_errors() {
    let mk = |json: serde_json::Value| Config {
        topology: TopologyConfig::Cxlctl {
            file: None,
            json: Some(json),
            requesters_per_root: 1,
        },
        ..Config::default()
    };
    let e = err(&mk(serde_json::json!({"devices": []})));
    assert!(e.contains("no root"), "{e}");
    let e = err(&mk(serde_json::json!({"devices": [
        {"name": "root0", "kind": "root"},
        {"name": "port1", "kind": "switch", "parent": "ghost"}
    ]})));
    assert!(e.contains("\"ghost\" is not in the topology"), "{e}");
    let e = err(&mk(
        serde_json::json!({"devices": [{"name": "root0", "kind": "root"}]}),
    ));
    assert!(e.contains("no memory device"), "{e}");
    let e = err(&mk(
        serde_json::json!({"devices": [{"name": "root0", "kind": "wizard"}]}),
    ));
    assert!(e.contains("unknown variant"), "{e}");
    let c = Config {
        topology: TopologyConfig::Cxlctl {
            file: None,
            json: None,
            requesters_per_root: 1,
        },
        ..Config::default()
    };
    assert!(err(&c).contains("exactly one of file or json"));
}
