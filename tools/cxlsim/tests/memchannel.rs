//! MemChannel at scale (fast sizes): the kernel's control core driving the
//! simulated threads' run windows. Each check fails when the controller
//! does nothing (`enabled = false` gives the "without" numbers).

use cxlsim::mcexp::{self, Contention, McSize, SignalVariant};
use cxlsim::memchannel::{ChannelSpec, ComponentSpec, McParams, MemChannel, Signal};

#[test]
fn isolation_victim_slowdown_is_much_smaller_with_control() {
    let pts = mcexp::isolation_sweep(Contention::InFabric, &[100], McSize::FAST, 1, 0).unwrap();
    let without = pts.iter().find(|p| !p.control).unwrap();
    let with = pts.iter().find(|p| p.control).unwrap();
    eprintln!("{without:?}\n{with:?}");
    assert!(
        without.slowdown > 3.0,
        "contention must hurt: {}",
        without.slowdown
    );
    // At least 2x less slowdown (excess over 1) with control.
    assert!(
        with.slowdown - 1.0 <= (without.slowdown - 1.0) / 2.0,
        "with {} vs without {}",
        with.slowdown,
        without.slowdown
    );
    assert!(with.slowdown < 2.0, "with control {}", with.slowdown);
    assert!(with.utilization >= 0.9, "utilization {}", with.utilization);
}

#[test]
fn isolation_host_adapter() {
    let pts = mcexp::isolation_sweep(Contention::HostAdapter, &[100], McSize::FAST, 1, 0).unwrap();
    let without = pts.iter().find(|p| !p.control).unwrap();
    let with = pts.iter().find(|p| p.control).unwrap();
    eprintln!("{without:?}\n{with:?}");
    assert!(
        with.slowdown - 1.0 <= (without.slowdown - 1.0) / 2.0,
        "with {} vs without {}",
        with.slowdown,
        without.slowdown
    );
}

#[test]
fn fairness_equal_and_unequal_weights() {
    let pts = mcexp::fairness_sweep(&[8], &[(1, 1), (1, 2)], McSize::FAST, 1, 0).unwrap();
    for p in &pts {
        eprintln!("{p:?}");
    }
    let get = |wb: u32, c: bool| {
        pts.iter()
            .find(|p| p.weight_b == wb && p.control == c)
            .unwrap()
    };
    let (w, wo) = (get(1, true), get(1, false));
    assert!(
        w.gap_gbps < 0.25 * wo.gap_gbps,
        "gap with {} vs without {}",
        w.gap_gbps,
        wo.gap_gbps
    );
    let u = get(2, true);
    assert!(
        (u.ratio_vs_weights - 1.0).abs() <= 0.15,
        "B/A = {} of the weight ratio",
        u.ratio_vs_weights
    );
    assert!((get(2, false).ratio_vs_weights - 1.0).abs() > 0.3);
}

#[test]
fn utilization_under_overload_with_control() {
    let pts =
        mcexp::utilization_sweep(&[(4, 4)], SignalVariant::Queue, McSize::FAST, 1, 0).unwrap();
    let with = pts.iter().find(|p| p.control).unwrap();
    let without = pts.iter().find(|p| !p.control).unwrap();
    eprintln!("{with:?}\n{without:?}");
    assert!(with.utilization >= 0.90, "{}", with.utilization);
    assert!(with.jain_fair > 0.98, "{}", with.jain_fair);
    assert!(without.jain_fair < 0.95, "{}", without.jain_fair);
}

/// Issue #25: from one thread to 1024 on one bottleneck, in channels of
/// one thread (1, 3, 4, 7, 16, 160, 1024), of four (160, 1024) and of
/// three (3, 5 and 7 channels), 3 x 1 and the channels of three at seeds
/// 1 to 3, and the sizes nobody tuned for (`mcexp::SCALE_UNTUNED`) at
/// seeds 1 to 3, the link carries at least 96 % of its bandwidth and the
/// channels share it with Jain's index at least 0.99, over their max-min
/// fair shares (`mcexp::fair_shares`: the link's achievable bandwidth
/// water-filled over each channel's bandwidth alone). Either check can
/// fail: without control the channels get bandwidth in proportion to
/// their requests in flight (Jain 0.94-0.95), and with the queue signal
/// as it marked before the fix (a message finding 8 or more in the queue)
/// 160 threads held the link at 78-85 % and 1024 at 55-56 %; with the
/// averaged, burst-scaled mark but without the standing-queue gate, 3 and
/// 16 single-thread channels held it at 92.2 % and 92.9 % (4 at 89.3 %);
/// with the gate but windows at golden-ratio phases instead of the core's
/// evenly spaced `stagger_phase`, 4 at 94.8 %; before the core counted a
/// channel held back by the queue at its share in Eq. 4
/// (`tree::counted_rate`), 3 x 1 had Jain 0.9888-0.9902 (the light
/// channel unthrottled 18 % under the others; 0.9999 now); before a
/// channel's threads were stepped so that every slot between the channels
/// holds each rank at its golden-ratio place (`window::stagger_phase`),
/// 5 x 3 held 96.05-96.07 % and 3, 5 and 8 channels of five threads
/// 91.6-91.7 %, 76 % and 67.5 % (`cxlsim.rst`, "Fibonacci numbers of
/// channels"); before each thread's run led its place by an eighth of
/// its length (`window::RunWindow::run_phase`), 3 x 4 held 95.5-95.7 %
/// (96.4-96.5 % now; `cxlsim.rst`, "3 x 4"). With the core's `Model`
/// signal the link is held near the model's knee (90 %). The runs go in
/// parallel: about 30-36 s on two shared cores (70 s of CPU).
#[test]
fn utilization_and_fairness_up_to_1024_threads() {
    let mut items: Vec<_> = mcexp::SCALE_TESTED
        .iter()
        .map(|&p| (p, SignalVariant::Queue, true))
        .collect();
    items.push(((7, 1), SignalVariant::Queue, false));
    items.push(((40, 4), SignalVariant::QueueInstant, true));
    items.push(((40, 4), SignalVariant::Model, true));
    let pts = mcexp::utilization_runs(&items, mcexp::SCALE_SIZE, 1, 0).unwrap();
    let queue_at = |points: &[(u32, u32)]| -> Vec<_> {
        points
            .iter()
            .map(|&p| (p, SignalVariant::Queue, true))
            .collect()
    };
    let untuned = queue_at(&mcexp::SCALE_UNTUNED);
    let mut more = mcexp::utilization_runs(&untuned, mcexp::SCALE_SIZE, 1, 0).unwrap();
    for seed in [2, 3] {
        let mut points = queue_at(&mcexp::SCALE_TESTED_SEEDS);
        points.extend(untuned.iter().copied());
        more.extend(mcexp::utilization_runs(&points, mcexp::SCALE_SIZE, seed, 0).unwrap());
    }
    for p in pts.iter().chain(&more) {
        eprintln!("{p:?}");
    }
    let n = mcexp::SCALE_TESTED.len();
    let (queue, rest) = pts.split_at(n);
    let (without, instant, model) = (&rest[0], &rest[1], &rest[2]);
    let mut bad = Vec::new();
    for p in queue.iter().chain(&more) {
        if p.utilization < 0.96 || p.jain_fair < 0.99 {
            bad.push(format!(
                "{} x {}: utilization {:.4}, Jain over fair shares {:.4}",
                p.channels, p.threads_per_channel, p.utilization, p.jain_fair
            ));
        }
    }
    assert!(bad.is_empty(), "below 96 % or 0.99: {bad:?}");
    assert!(without.jain_fair < 0.99, "without control: {without:?}");
    assert!(instant.utilization < 0.96, "instantaneous: {instant:?}");
    assert!(
        (0.85..0.97).contains(&model.utilization) && model.jain_fair >= 0.99,
        "Model: {model:?}"
    );
}

/// Jain's index over max-min fair shares: a channel held at the
/// bandwidth it takes alone, below an equal split, is treated fairly.
#[test]
fn fair_shares_water_fill_demand_ceilings() {
    let f = mcexp::fair_shares(1.0, &[0.1, 0.6, 0.9], &[1.0, 1.0, 1.0]);
    let want = [0.1, 0.45, 0.45];
    assert!(
        f.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
        "{f:?}"
    );
    // Weights 1:2 and no ceiling reached.
    let f = mcexp::fair_shares(0.9, &[1.0, 1.0], &[1.0, 2.0]);
    assert!(
        (f[0] - 0.3).abs() < 1e-12 && (f[1] - 0.6).abs() < 1e-12,
        "{f:?}"
    );
    // Ceilings under the capacity: each its ceiling.
    let f = mcexp::fair_shares(1.0, &[0.56, 0.42], &[1.0, 1.0]);
    assert_eq!(f, vec![0.56, 0.42]);
    let x = [0.1, 0.45, 0.45];
    assert!((mcexp::jain_normalized(&x, &want) - 1.0).abs() < 1e-12);
    assert!(mcexp::jain(&x) < 0.81);
    assert!(mcexp::jain_normalized(&[0.1, 0.55, 0.35], &want) < 0.99);
}

#[test]
fn channels_reconverge_after_each_join() {
    let tr = mcexp::convergence(3, 20, true, 0.15, 1).unwrap();
    eprintln!(
        "{:?} {:?} {:?}",
        tr.converge_periods, tr.min_utilization, tr.util_recover_periods
    );
    for (j, c) in tr.converge_periods.iter().enumerate() {
        let p = c.unwrap_or_else(|| panic!("join {j}: not within 15% in the interval"));
        assert!(p <= 12, "join {j}: {p} periods");
    }
    // Utilization is back at 90 % or more within the interval.
    for (j, r) in tr.util_recover_periods.iter().enumerate() {
        assert!(r.is_some_and(|p| p <= 15), "join {j}: {r:?}");
    }
}

#[test]
fn deterministic_per_seed() {
    let run = |seed| {
        let r = mcexp::run_apps(
            &mcexp::fairness_apps(2, 1, 1),
            1.0,
            2.0,
            &McParams::default(),
            6,
            seed,
        )
        .unwrap();
        serde_json::to_string(&r.ctrl.records).unwrap()
    };
    // (The seed only picks addresses; with one memory and 64 banks the
    // rates hardly depend on it, so no inequality is asserted.)
    assert_eq!(run(1), run(1));
    assert_eq!(run(7), run(7));
}

#[test]
fn bad_configuration_is_an_error_not_a_panic() {
    let comp = || ComponentSpec {
        name: "c".into(),
        links: vec![0],
        capacity_bps: 1_000_000_000,
    };
    let chan = |w: u32, path: Vec<usize>, threads: Vec<usize>| ChannelSpec {
        name: "x".into(),
        weight: w,
        threads,
        path,
        join_ns: 0,
    };
    let mk = |p: McParams, comps: Vec<ComponentSpec>, chans: Vec<ChannelSpec>| {
        MemChannel::new(p, comps, chans, 2, 1, 64)
    };
    let ok = McParams::default();
    assert!(mk(ok.clone(), vec![comp()], vec![chan(1, vec![0], vec![0])]).is_ok());
    assert!(mk(ok.clone(), vec![comp()], vec![chan(0, vec![0], vec![0])]).is_err());
    assert!(mk(ok.clone(), vec![comp()], vec![chan(1, vec![], vec![0])]).is_err());
    assert!(mk(ok.clone(), vec![comp()], vec![chan(1, vec![3], vec![0])]).is_err());
    assert!(mk(ok.clone(), vec![comp()], vec![chan(1, vec![0], vec![5])]).is_err());
    assert!(mk(
        ok.clone(),
        vec![comp()],
        vec![chan(1, vec![0], vec![0]), chan(1, vec![0], vec![0])]
    )
    .is_err());
    let mut c = comp();
    c.capacity_bps = 0;
    assert!(mk(ok.clone(), vec![c], vec![chan(1, vec![0], vec![0])]).is_err());
    let mut c = comp();
    c.links = vec![9];
    assert!(mk(ok.clone(), vec![c], vec![chan(1, vec![0], vec![0])]).is_err());
    for p in [
        McParams {
            t_w_ns: 0,
            ..ok.clone()
        },
        McParams {
            k_ns: 10,
            ..ok.clone()
        },
        McParams {
            delta_ppm: 1_000_000,
            ..ok.clone()
        },
        McParams {
            g_ppm: 2_000_000,
            ..ok.clone()
        },
        McParams {
            mark_threshold: 0,
            ..ok.clone()
        },
        McParams {
            mark_ramp: 0,
            ..ok.clone()
        },
        McParams {
            mark_average_ns: 0,
            ..ok.clone()
        },
        McParams {
            mark_average_ns: 2_000_000_000,
            ..ok.clone()
        },
        McParams {
            k_ns: u64::MAX,
            ..ok.clone()
        },
        McParams {
            mark_standing_ns: 2_000_000_000,
            ..ok.clone()
        },
        McParams {
            mark_average_ns: 0,
            mark_burst_scaling: false,
            ..ok.clone()
        },
        McParams {
            max_window_ns: ok.t_w_ns - 1,
            ..ok.clone()
        },
    ] {
        assert!(mk(p, vec![comp()], vec![chan(1, vec![0], vec![0])]).is_err());
    }
    // Saturating arithmetic on huge but valid values.
    let mut c = comp();
    c.capacity_bps = u64::MAX;
    let p = McParams {
        increase_ppm_per_k: u32::MAX,
        ..ok
    };
    assert!(mk(p, vec![c], vec![chan(1, vec![0], vec![0])]).is_ok());
}

/// The core's own `Congestion::Model` as the signal (what the kernel uses
/// without hardware signals) works too: fair shares, weights, and
/// utilization near its 90 % knee.
#[test]
fn model_signal_fairness_and_utilization() {
    let p = McParams {
        signal: Signal::Model,
        ..McParams::default()
    };
    let run = |wb| mcexp::run_apps(&mcexp::fairness_apps(8, 1, wb), 1.0, 2.0, &p, 30, 1).unwrap();
    let eq = run(1);
    let (a, b) = (eq.mean_rate(0, 20), eq.mean_rate(1, 20));
    assert!((a - b).abs() < 0.05 * (a + b), "{a} {b}");
    assert!(eq.utilization(20) > 0.85, "{}", eq.utilization(20));
    let w = run(2);
    let ratio = w.mean_rate(1, 20) / w.mean_rate(0, 20);
    assert!((ratio / 2.0 - 1.0).abs() < 0.15, "{ratio}");
}
