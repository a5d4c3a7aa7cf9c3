//! The checks against the ESF paper, at fast sizes (`cxlsim bench --full`
//! runs the paper's sizes).

use cxlsim::config::Duplex;
use cxlsim::experiments::{self, SnoopSize, DUPLEX_H, DUPLEX_R};

#[test]
fn topology_multiples_within_ten_percent() {
    let pts = experiments::topology_sweep(&[4, 8], 250, 1, 0).unwrap();
    assert_eq!(pts.len(), 10);
    for p in &pts {
        assert!(
            p.error.abs() <= 0.10,
            "{} n={}: {:.3} x one port, expected {}",
            p.topology,
            p.n,
            p.multiple,
            p.expected
        );
    }
}

#[test]
fn duplex_follows_the_closed_form_within_two_percent() {
    let pts = experiments::duplex_sweep(20_000, 1, 0).unwrap();
    assert_eq!(pts.len(), 2 * DUPLEX_R.len() * DUPLEX_H.len());
    for p in &pts {
        assert!(
            p.error.abs() <= 0.02,
            "{} duplex r={} h={}: {:.4} vs closed form {:.4}",
            p.duplex,
            p.read_ratio,
            p.header_ratio,
            p.measured,
            p.closed_form
        );
    }
    // The paper's qualitative findings: at h = 0 a 1:1 mix nearly doubles a
    // full-duplex link; at h = 1 mixing gains nothing; half duplex is flat.
    let get = |d: &str, r: f64, h: f64| {
        pts.iter()
            .find(|p| p.duplex == d && p.read_ratio == r && p.header_ratio == h)
            .unwrap()
            .measured
    };
    assert!(get("full", 0.5, 0.0) / get("full", 1.0, 0.0) > 1.9);
    assert!((get("full", 0.5, 1.0) / get("full", 1.0, 1.0) - 1.0).abs() < 0.02);
    assert!((get("half", 0.5, 0.0) / get("half", 1.0, 0.0) - 1.0).abs() < 0.02);
}

#[test]
fn closed_form_matches_known_points() {
    assert_eq!(experiments::duplex_closed_form(0.5, 0.0, Duplex::Full), 2.0);
    assert_eq!(
        experiments::duplex_closed_form(1.0, 0.25, Duplex::Full),
        1.0
    );
    assert_eq!(experiments::duplex_closed_form(0.3, 1.0, Duplex::Half), 0.5);
}

#[test]
fn lifo_beats_fifo_on_bandwidth_latency_and_invalidations() {
    let pts = experiments::snoop_sweep(
        SnoopSize {
            footprint_lines: 4096,
            requests: 60_000,
        },
        1,
        0,
    )
    .unwrap();
    let get = |name: &str| pts.iter().find(|p| p.policy == name).unwrap();
    let (fifo, lifo) = (get("FIFO"), get("LIFO"));
    assert!(lifo.bandwidth_gbps > fifo.bandwidth_gbps, "{pts:#?}");
    assert!(lifo.mean_latency_ns < fifo.mean_latency_ns, "{pts:#?}");
    assert!(lifo.invalidations < fifo.invalidations, "{pts:#?}");
    // The paper: FIFO ~ LRU, LIFO ~ MRU, LFI in between.
    let lfi = get("LFI");
    assert!(lfi.invalidations < fifo.invalidations && lfi.invalidations > lifo.invalidations);
    assert!((get("LRU").bandwidth_vs_fifo).abs() < 0.05);
    assert!((get("MRU").bandwidth_gbps / lifo.bandwidth_gbps - 1.0).abs() < 0.05);
}
