//! Test bodies of the control core shared by the host tests and the KUnit
//! suite `mchannel_core_kunit`: plain functions returning `Outcome` (see
//! `cxlf_common::outcome`), listed once in `suites!` so that neither side can
//! miss one. Property tests against f64 references stay in `tests/` (the
//! kernel has no floating point); these use exact integer expectations.

// The cases are named by what they check.
#![allow(missing_docs)]
// Test arithmetic is on small constants; the kernel runs it with overflow
// checks, so a slip is a failed case, not wrong memory.
#![allow(clippy::arithmetic_side_effects)]
#![allow(clippy::result_large_err)]

use super::component::{fair_share, Component, ParamError, Params, MIN_CAPACITY_SHIFT};
use super::congestion::Congestion;
use super::estimator::{Estimator, Ewma, Sample};
use super::fixed::{div_u128, exp_neg, mul_div, Q32};
use super::meter::Meter;
use super::outcome::Outcome;
use super::thread::{OnCpu, RunState};
use super::tree::{self, Node, TreeError, ROOT};
use super::window::{
    default_min_run_ns, exact_run_ns, path_share, stagger_phase, Budget, RunWindow, WEIGHT_MAX,
};

/// The shared cases, by KUnit suite: calls `$m!(suite, [case, ...])` once
/// per suite.
#[macro_export]
macro_rules! suites {
    ($m:ident) => {
        $m!(
            mchannel_core_fixed,
            [
                exp_neg_known_values,
                long_division_of_128_bits,
                ratios_saturate_instead_of_overflowing,
                smoothing_moves_a_fixed_fraction_toward_the_sample,
                rate_is_per_window_and_demand_per_running_time,
                an_idle_window_keeps_the_demand,
            ]
        );
        $m!(
            mchannel_core_share,
            [
                fair_share_scales_by_capacity_over_rate,
                component_parameters_are_checked,
                load_decreases_capacity_and_its_absence_restores_it,
                a_busy_component_is_not_cut_for_load,
                the_model_signal_rises_from_the_knee,
                the_model_brings_the_capacity_down_to_the_device,
                meters_count_bytes_and_cap_what_they_are_told,
                weights_one_to_two_converge_to_one_third_and_two_thirds,
            ]
        );
        $m!(
            mchannel_core_window,
            [
                the_window_is_the_share_over_the_demand,
                windows_are_checked,
                a_short_run_skips_windows_instead,
                a_short_park_stretches_the_window,
                the_path_share_is_the_least_alpha,
                staggered_phases_are_evenly_spaced,
                tree_shapes_are_checked,
                two_tenants_split_first_then_their_channels,
            ]
        );
        $m!(
            mchannel_core_thread,
            [
                a_thread_parks_when_its_budget_is_spent,
                a_slice_across_the_window_end_is_split,
                after_a_long_sleep_the_next_window_starts_now,
                a_late_timer_is_paid_back_by_later_windows,
                time_the_scheduler_charged_counts_against_the_budget,
                the_enforcements_own_time_is_exempt,
                skipped_windows_keep_the_share,
                a_new_phase_moves_the_next_window_onto_it,
            ]
        );
    };
}

const MB: u64 = 1_000_000;
const GB: u64 = 1_000_000_000;

/// `|got - want| <= tolerance`.
fn near(got: u64, want: u64, tolerance: u64) -> bool {
    got.abs_diff(want) <= tolerance
}

pub fn exp_neg_known_values() -> Outcome {
    check_eq!(exp_neg(0, 1), Q32::ONE);
    // floor(e^-x * 2^32), from a reference computation.
    for (num, den, want) in [
        (1, 1, 1_580_030_168),
        (1, 100, 4_252_231_657),
        (1, 2, 2_605_029_347),
    ] {
        let got = exp_neg(num, den).0;
        check!(
            near(got, want, 2),
            "e^-{}/{}: {} vs {}",
            num,
            den,
            got,
            want
        );
    }
    check_eq!(exp_neg(64, 1), Q32::ZERO);
    check_eq!(exp_neg(1, 0), Q32::ZERO);
    check_eq!(exp_neg(u64::MAX, 1), Q32::ZERO);
    check_eq!(exp_neg(1, u64::MAX).0, Q32::ONE.0 - 1);
    Ok(())
}

pub fn long_division_of_128_bits() -> Outcome {
    // Quotients from a reference computation (the kernel has no 128-bit
    // division to compare with: that is why `div_u128` exists).
    check_eq!(
        div_u128(184_467_440_737_095_516_167, 3),
        61_489_146_912_365_172_055
    );
    check_eq!(div_u128(u128::MAX, u64::MAX), 18_446_744_073_709_551_617);
    check_eq!(
        div_u128(u128::MAX, 12_345_678_901),
        27_562_871_969_185_557_830_617_889_276
    );
    check_eq!(div_u128(u128::MAX, 1), u128::MAX);
    check_eq!(div_u128(1_000, 7), 142);
    check_eq!(div_u128(5, 0), 0);
    Ok(())
}

pub fn ratios_saturate_instead_of_overflowing() -> Outcome {
    check_eq!(Q32::ratio(u64::MAX, 1).0, u64::MAX);
    check_eq!(Q32::ratio(1, 0), Q32::ZERO);
    check_eq!(Q32::ONE.mul_u64(u64::MAX), u64::MAX);
    check_eq!(Q32(u64::MAX).mul_u64(u64::MAX), u64::MAX);
    check_eq!(mul_div(u64::MAX, u64::MAX, 1), u64::MAX);
    check_eq!(mul_div(7, 3, 0), 0);
    check_eq!(Q32::from_ppm(2_000_000), Q32::ONE);
    check_eq!(Q32::from_ppm(250_000).to_ppm(), 250_000);
    Ok(())
}

pub fn smoothing_moves_a_fixed_fraction_toward_the_sample() -> Outcome {
    let mut e = Ewma::default();
    check_eq!(
        e.update(1_000, Q32::from_ppm(900_000)),
        1_000,
        "first sample as is"
    );
    // 0.1 * 2000 + 0.9 * 1000, each term rounded down.
    let v = e.update(2_000, Q32::from_ppm(900_000));
    check!((1_098..=1_100).contains(&v), "{}", v);
    check_eq!(e.update(u64::MAX, Q32::ZERO), u64::MAX);
    // A keep above one is taken as one: the old value stays.
    check_eq!(e.update(5, Q32(u64::MAX)), u64::MAX);
    Ok(())
}

pub fn rate_is_per_window_and_demand_per_running_time() -> Outcome {
    let s = Sample {
        bytes: 1_000,
        run_ns: 25_000,
        window_ns: 100_000,
    };
    check_eq!(s.rate(), 10_000_000);
    check_eq!(s.demand(), Some(40_000_000));
    check_eq!(Sample { run_ns: 0, ..s }.demand(), None);
    let hostile = Sample {
        bytes: u64::MAX,
        run_ns: 1,
        window_ns: 0,
    };
    check_eq!(hostile.rate(), 0);
    check_eq!(hostile.demand(), Some(u64::MAX));
    Ok(())
}

pub fn an_idle_window_keeps_the_demand() -> Outcome {
    let mut est = Estimator::default();
    let busy = Sample {
        bytes: 4_000,
        run_ns: 50_000,
        window_ns: 100_000,
    };
    est.update(&busy, 1_000_000);
    let demand = est.demand();
    let idle = Sample {
        bytes: 0,
        run_ns: 0,
        window_ns: 100_000,
    };
    est.update(&idle, 1_000_000);
    check_eq!(est.demand(), demand);
    check!(est.rate() < busy.rate());
    Ok(())
}

pub fn fair_share_scales_by_capacity_over_rate() -> Outcome {
    check_eq!(fair_share(10 * GB, 20 * GB, 40 * GB, 100 * GB), 5 * GB);
    check_eq!(
        fair_share(10 * GB, 20 * GB, 10 * GB, 15 * GB),
        15 * GB,
        "capped by the demand"
    );
    check_eq!(
        fair_share(10 * GB, 20 * GB, 0, 3 * GB),
        3 * GB,
        "no traffic"
    );
    check_eq!(fair_share(10 * GB, 20 * GB, 0, 0), 20 * GB, "nothing known");
    check_eq!(fair_share(0, 20 * GB, u64::MAX, 5), 1, "never zero");
    check_eq!(fair_share(u64::MAX, u64::MAX, 1, 0), u64::MAX);
    Ok(())
}

pub fn component_parameters_are_checked() -> Outcome {
    let ok = Params::default_for(GB);
    check_eq!(ok.check(), Ok(()));
    let bad = [
        (
            Params {
                max_capacity: 0,
                ..ok
            },
            ParamError::Capacity,
        ),
        (Params { k_ns: 0, ..ok }, ParamError::Period),
        (
            Params {
                g: Q32(Q32::ONE.0 + 1),
                ..ok
            },
            ParamError::Gain,
        ),
        (
            Params {
                delta: Q32::ONE,
                ..ok
            },
            ParamError::Threshold,
        ),
    ];
    for (p, e) in bad {
        check_eq!(Component::new(p).err(), Some(e));
    }
    Ok(())
}

pub fn load_decreases_capacity_and_its_absence_restores_it() -> Outcome {
    let mut c = ok!(Component::new(Params::default_for(10 * GB)));
    c.update_share(5 * GB, 10 * GB);
    for _ in 0..200 {
        c.update_load(Q32::ONE);
    }
    check!(c.load() > Q32::from_ppm(990_000));
    let before = c.capacity();
    c.adjust_capacity();
    // Cut by (1 - 0.1) / (2 * 0.9) = 1/2 at full load.
    let cut = c.capacity();
    check!(near(cut, before / 2, before / 100), "{}", cut);
    // 5 GB/s carried is above C after the next cut: no further cut.
    c.adjust_capacity();
    let floor = c.capacity();
    check!(floor < cut);
    c.adjust_capacity();
    check_eq!(c.capacity(), floor);
    c.update_share(0, 0);
    for _ in 0..100 {
        c.adjust_capacity();
    }
    check_eq!(c.capacity(), (10 * GB) >> MIN_CAPACITY_SHIFT);
    for _ in 0..400 {
        c.update_load(Q32::ZERO);
    }
    check!(c.load() < Q32::from_ppm(100_000));
    for _ in 0..1_000 {
        c.adjust_capacity();
    }
    check_eq!(c.capacity(), 10 * GB, "never above the configured maximum");
    Ok(())
}

pub fn a_busy_component_is_not_cut_for_load() -> Outcome {
    // Carrying more than C explains the load: Eq. 4 lowers alpha instead.
    let mut c = ok!(Component::new(Params::default_for(10 * GB)));
    c.update_share(10 * GB + 1, 10 * GB);
    c.update_load(Q32::ONE);
    c.update_load(Q32::ONE);
    c.adjust_capacity();
    check_eq!(c.capacity(), 10 * GB);
    // Carrying exactly C does not: a saturated component under load has
    // less capacity than estimated (with `F < C`, as Algorithm 1 writes
    // it, a fluid equilibrium at F = C would never be cut).
    c.update_share(10 * GB, 10 * GB);
    c.adjust_capacity();
    check!(c.capacity() < 10 * GB);
    Ok(())
}

pub fn the_model_signal_rises_from_the_knee() -> Outcome {
    let m = Congestion::Model {
        capacity: 1_000 * MB,
    };
    check_eq!(m.signal(0), Q32::ZERO);
    check_eq!(m.signal(900 * MB), Q32::ZERO);
    check_eq!(m.signal(950 * MB).to_ppm(), 500_000);
    check_eq!(m.signal(1_000 * MB), Q32::ONE);
    check_eq!(m.signal(u64::MAX), Q32::ONE, "capped at one");
    // Degenerate devices: idle or overloaded.
    let tiny = Congestion::Model { capacity: 1 };
    check_eq!(tiny.signal(0), Q32::ZERO);
    check_eq!(tiny.signal(1), Q32::ONE);
    check_eq!(Congestion::Model { capacity: 0 }.signal(1), Q32::ONE);
    let injected = Congestion::Injected(Q32::from_ppm(250_000));
    check_eq!(injected.signal(u64::MAX), Q32::from_ppm(250_000));
    check_eq!(Congestion::Injected(Q32(u64::MAX)).signal(0), Q32::ONE);
    Ok(())
}

pub fn the_model_brings_the_capacity_down_to_the_device() -> Outcome {
    // Configured 400 MB/s, the device delivers 100: two channels that
    // would take 300 each.
    let mut c = ok!(Component::new(Params::default_for(400 * MB)));
    let model = Congestion::Model { capacity: 100 * MB };
    let (mut f, mut sum, mut most) = (0u64, 0u64, 0u64);
    for period in 0..400 {
        c.update_load(model.signal(c.rate()));
        c.adjust_capacity();
        let alpha = c.update_share(f, 300 * MB);
        f = 2 * alpha.min(300 * MB);
        if period >= 200 {
            sum += f;
            most = most.max(c.capacity());
        }
    }
    let mean = sum / 200;
    check!((70 * MB..=100 * MB).contains(&mean), "mean F {}", mean);
    check!(most <= 105 * MB, "C up to {}", most);
    Ok(())
}

pub fn meters_count_bytes_and_cap_what_they_are_told() -> Outcome {
    let path = 1_000 * MB;
    // 1 ms of running.
    let run = 1_000_000;
    check_eq!(Meter::None.bytes(run, 5, path), 0);
    check!(!Meter::None.metered());
    check_eq!(
        Meter::Emulated { bytes_per_us: 100 }.bytes(run, 5, path),
        100_000
    );
    let perf = Meter::Perf {
        bytes_per_event: 64,
    };
    check_eq!(perf.bytes(run, 1_000, path), 64_000);
    // The path carries at most 1 MB in 1 ms.
    check_eq!(perf.bytes(run, u64::MAX, path), MB);
    check_eq!(Meter::Reported.bytes(run, 4_096, path), 4_096);
    check_eq!(Meter::Reported.bytes(run, u64::MAX, path), MB);
    check_eq!(Meter::Reported.bytes(0, 4_096, path), 0, "it did not run");
    check_eq!(
        Meter::Reported.bytes(u64::MAX, u64::MAX, u64::MAX),
        u64::MAX
    );
    // What the cap held back waits for the next period, up to a second.
    check_eq!(perf.left(run, 1_000, path), 0);
    check_eq!(perf.left(run, 20_000, path), 20_000 - MB / 64);
    check_eq!(perf.left(0, u64::MAX, path), 1_000 * MB / 64);
    check_eq!(Meter::Reported.left(run, 3 * MB, path), 2 * MB);
    check_eq!(Meter::Reported.left(0, u64::MAX, path), 1_000 * MB);
    check_eq!(Meter::Emulated { bytes_per_us: 100 }.left(run, 5, path), 0);
    // The rate counts the emulated meter's charged time, others' bytes.
    let emulated = Meter::Emulated { bytes_per_us: 100 };
    check_eq!(emulated.rate_bytes(100_000, 250_000), 25_000);
    check_eq!(perf.rate_bytes(64_000, 0), 64_000);
    check_eq!(Meter::Reported.rate_bytes(7, 1_000_000), 7);
    Ok(())
}

pub fn weights_one_to_two_converge_to_one_third_and_two_thirds() -> Outcome {
    let mut c = ok!(Component::new(Params::default_for(9 * GB)));
    let flows = [(1u64, 20 * GB), (2u64, 20 * GB)];
    let cap = 20 * GB;
    let rate = |alpha: u64, (w, d): (u64, u64)| (alpha * w).min(d);
    for _ in 0..50 {
        let f = flows.iter().map(|&fl| rate(c.alpha(), fl)).sum();
        c.update_share(f, cap);
    }
    check!(
        near(rate(c.alpha(), flows[0]), 3 * GB, 3 * GB / 1000),
        "{}",
        c.alpha()
    );
    check!(near(rate(c.alpha(), flows[1]), 6 * GB, 6 * GB / 1000));
    Ok(())
}

pub fn the_window_is_the_share_over_the_demand() -> Outcome {
    check_eq!(exact_run_ns(100_000, 1, 5 * GB, 10 * GB), 50_000);
    check_eq!(exact_run_ns(100_000, 2, 5 * GB, 10 * GB), 100_000);
    check_eq!(exact_run_ns(100_000, 1, 20 * GB, 10 * GB), 100_000);
    check_eq!(exact_run_ns(100_000, 1, 0, 10 * GB), 0);
    check_eq!(exact_run_ns(100_000, 1, 1, 0), 100_000, "no demand seen");
    check_eq!(
        exact_run_ns(u64::MAX, WEIGHT_MAX, u64::MAX, u64::MAX),
        u64::MAX
    );
    Ok(())
}

pub fn windows_are_checked() -> Outcome {
    const K: u64 = 10_000_000;
    check_eq!(RunWindow::new(100_000, 0, K), None);
    check_eq!(RunWindow::new(0, 1_000, K), None);
    check_eq!(RunWindow::new(100_000, 1_000, 50_000), None, "T_W > max");
    check_eq!(RunWindow::new(100_000, K + 1, K), None, "min run > max");
    check!(
        RunWindow::new(100_000, 200_000, K).is_some(),
        "min run > T_W"
    );
    // The longest window is whole windows: 250 us is two of 100 us.
    check_eq!(RunWindow::new(100_000, 250_000, 250_000), None);
    let two = ok!(RunWindow::new(100_000, 1_000, 250_000));
    check_eq!(two.max_window_ns(), 200_000);
    check_eq!(default_min_run_ns(100_000), 1_000);
    check_eq!(default_min_run_ns(50), 1);
    let w = ok!(RunWindow::new(100_000, 2_000, K));
    let b = |t_r_ns, t_w_ns| Budget { t_r_ns, t_w_ns };
    check_eq!(w.budget(1, u64::MAX, 10 * GB), b(100_000, 100_000));
    check_eq!(w.budget(1, 1, 0), b(100_000, 100_000), "no demand seen");
    check_eq!(w.budget(1, 5 * GB, 10 * GB), b(50_000, 100_000));
    check_eq!(
        w.budget(1, 200 * MB, 10 * GB),
        b(2_000, 100_000),
        "at the minimum"
    );
    Ok(())
}

pub fn a_short_park_stretches_the_window() -> Outcome {
    let w = ok!(RunWindow::new(100_000, 50_000, 10_000_000));
    let b = |t_r_ns, t_w_ns| Budget { t_r_ns, t_w_ns };
    // 90 %: a 10 us park every 100 us costs as much as a long one; parked
    // at least 50 us: 450 us of every 500 us.
    check_eq!(w.budget(1, 9 * GB, 10 * GB), b(450_000, 500_000));
    // 50 %: a 50 us park is long enough.
    check_eq!(w.budget(1, 5 * GB, 10 * GB), b(50_000, 100_000));
    // 99.99 %: the longest window, at the share.
    check_eq!(w.budget(1, 9_999 * MB, 10 * GB), b(9_999_000, 10_000_000));
    Ok(())
}

pub fn a_short_run_skips_windows_instead() -> Outcome {
    let w = ok!(RunWindow::new(100_000, 2_000, 10_000_000));
    let b = |t_r_ns, t_w_ns| Budget { t_r_ns, t_w_ns };
    // 1 % of the window: 2 us in one window of two, not 2 us in each.
    check_eq!(w.budget(1, 100 * MB, 10 * GB), b(2_000, 200_000));
    check_eq!(w.budget(2, 50 * MB, 10 * GB), b(2_000, 200_000), "weight 2");
    // 0.3 %: Eq. 7 gives 300 ns; 2 us needs 666.7 us, so one window of
    // seven, and 0.3 % of 700 us.
    check_eq!(w.budget(1, 30 * MB, 10 * GB), b(2_100, 700_000));
    // 0.01 % would need 20 ms: the longest window, the least share.
    check_eq!(w.budget(1, MB, 10 * GB), b(2_000, 10_000_000));
    check_eq!(w.budget(1, 0, 10 * GB), b(2_000, 10_000_000));
    // A minimum run beyond T_W: whole windows, or at least the minimum.
    let long = ok!(RunWindow::new(50_000, 100_000, 10_000_000));
    check_eq!(long.budget(1, u64::MAX, 10 * GB), b(50_000, 50_000));
    check_eq!(long.budget(1, 5 * GB, 10 * GB), b(100_000, 200_000));
    // T_W as long as the longest window (the kernel at T_W = K = 10 ms):
    // the least share is the minimum run.
    let one = ok!(RunWindow::new(100_000, 1_000, 100_000));
    check_eq!(one.budget(1, 10 * MB, 10 * GB), b(1_000, 100_000));
    // Saturating at the extremes.
    let wide = ok!(RunWindow::new(1_000, 1_000, u64::MAX));
    check_eq!(
        wide.budget(1, 1, u64::MAX),
        b(1_000, u64::MAX / 1_000 * 1_000)
    );
    let full = ok!(RunWindow::new(u64::MAX, 1, u64::MAX));
    check_eq!(
        full.budget(WEIGHT_MAX, 1, u64::MAX),
        b(u64::from(WEIGHT_MAX), u64::MAX)
    );
    Ok(())
}

pub fn the_path_share_is_the_least_alpha() -> Outcome {
    check_eq!(path_share([7, 3, 9]), 3);
    check_eq!(path_share([]), u64::MAX, "no component: no limit");
    check_eq!(
        exact_run_ns(100_000, 1, path_share([5 * GB, 2 * GB]), 8 * GB),
        25_000
    );
    Ok(())
}

pub fn tree_shapes_are_checked() -> Outcome {
    let mut ok = [Node::new(ROOT, 1), Node::new(0, 2), Node::new(0, 1)];
    check_eq!(tree::check(&mut ok), Ok(()));
    check!(ok[0].inner && !ok[1].inner);
    let mut forward = [Node::new(1, 1), Node::new(ROOT, 1)];
    check_eq!(tree::check(&mut forward), Err(TreeError::Parent(0)));
    let mut own = [Node::new(0, 1)];
    check_eq!(tree::check(&mut own), Err(TreeError::Parent(0)));
    let mut weight = [Node::new(ROOT, 0)];
    check_eq!(tree::check(&mut weight), Err(TreeError::Weight(0)));
    let mut heavy = [Node::new(ROOT, WEIGHT_MAX + 1)];
    check_eq!(tree::check(&mut heavy), Err(TreeError::Weight(0)));
    Ok(())
}

pub fn two_tenants_split_first_then_their_channels() -> Outcome {
    // 10 GB/s; tenant A (one channel) and tenant B (two channels), all
    // wanting 20 GB/s: A's channel 5, B's channels 2.5 each.
    let mut nodes = [
        Node::new(ROOT, 1),
        Node::new(0, 1),
        Node::new(ROOT, 1),
        Node::new(2, 1),
        Node::new(2, 1),
    ];
    ok!(tree::check(&mut nodes));
    let leaves = [1, 3, 4];
    for &l in &leaves {
        nodes[l].demand = 20 * GB;
    }
    let mut alpha = 10 * GB;
    for _ in 0..100 {
        for &l in &leaves {
            let n = &mut nodes[l];
            n.rate = tree::leaf_fraction(n).mul_u64(n.demand);
        }
        alpha = tree::update(&mut nodes, 10 * GB, alpha);
    }
    let got = |n: &Node| tree::leaf_fraction(n).mul_u64(n.demand);
    check!(
        near(got(&nodes[1]), 5 * GB, 5 * GB / 1000),
        "{}",
        got(&nodes[1])
    );
    check!(
        near(got(&nodes[3]), 2_500_000_000, 2_500_000),
        "{}",
        got(&nodes[3])
    );
    check!(near(got(&nodes[4]), 2_500_000_000, 2_500_000));
    check!(near(nodes[2].granted, 5 * GB, 5 * GB / 1000));
    Ok(())
}

const US: u64 = 1_000;

pub fn a_thread_parks_when_its_budget_is_spent() -> Outcome {
    // T_W = 100 us, T_R = 30 us, attached at 1 ms.
    let mut s = RunState::new(1_000 * US, 100 * US, 30 * US);
    s.switch_in(1_000 * US);
    check_eq!(s.check(1_000 * US), OnCpu::Budget(30 * US));
    s.switch_out(1_010 * US);
    s.switch_in(1_020 * US);
    check_eq!(s.check(1_020 * US), OnCpu::Budget(20 * US));
    check_eq!(
        s.check(1_040 * US),
        OnCpu::Park {
            until_ns: 1_100 * US
        }
    );
    s.switch_out(1_041 * US);
    // It wakes at the window's end with a new, full budget.
    s.roll(1_100 * US);
    let closed = s.take_closed();
    check_eq!((closed.windows, closed.run_ns), (1, 31 * US));
    check_eq!(closed.max_overrun_ns, US);
    // The microsecond it overran is charged to the next window.
    s.switch_in(1_100 * US);
    check_eq!(s.debt_ns(), US);
    check_eq!(s.check(1_100 * US), OnCpu::Budget(29 * US));
    Ok(())
}

pub fn a_late_timer_is_paid_back_by_later_windows() -> Outcome {
    // T_W = 100 us, T_R = 10 us; the budget timer fires 250 us late.
    let mut s = RunState::new(0, 100 * US, 10 * US);
    s.switch_in(0);
    check_eq!(s.check(0), OnCpu::Budget(10 * US));
    // 90 us over in each of the two windows it ran through, 60 us into
    // its third: it parks until 23 windows have paid 230 us.
    check_eq!(
        s.check(260 * US),
        OnCpu::Park {
            until_ns: 2_600 * US
        }
    );
    check_eq!(s.debt_ns(), 180 * US);
    s.switch_out(260 * US);
    // Woken early, it is told to sleep on.
    s.switch_in(2_500 * US);
    check_eq!(s.debt_ns(), 10 * US);
    check_eq!(
        s.check(2_500 * US),
        OnCpu::Park {
            until_ns: 2_600 * US
        }
    );
    s.switch_out(2_500 * US);
    s.switch_in(2_600 * US);
    check_eq!(s.debt_ns(), 0);
    check_eq!(s.check(2_600 * US), OnCpu::Budget(10 * US));
    // 26 windows granted 260 us, and it ran 260 us.
    let closed = s.take_closed();
    check_eq!(
        (closed.windows, closed.run_ns, closed.granted_ns),
        (26, 260 * US, 260 * US)
    );
    Ok(())
}

pub fn a_slice_across_the_window_end_is_split() -> Outcome {
    let mut s = RunState::new(0, 100 * US, 100 * US);
    s.switch_in(90 * US);
    check_eq!(s.check(90 * US), OnCpu::Unlimited);
    s.switch_out(130 * US);
    let closed = s.take_closed();
    check_eq!((closed.windows, closed.run_ns), (1, 10 * US));
    check_eq!(s.ran_ns(130 * US), 30 * US);
    // A budget running past the window's end is re-armed there.
    let mut t = RunState::new(0, 100 * US, 50 * US);
    t.switch_in(95 * US);
    check_eq!(t.check(95 * US), OnCpu::Budget(5 * US));
    Ok(())
}

pub fn time_the_scheduler_charged_counts_against_the_budget() -> Outcome {
    // T_W = 100 us, T_R = 30 us: a 20 us slice the scheduler charged 35.
    let mut s = RunState::new(0, 100 * US, 30 * US);
    s.switch_in(0);
    s.switch_out(20 * US);
    s.reconcile(20 * US, 35 * US);
    s.switch_in(40 * US);
    check_eq!(s.check(40 * US), OnCpu::Park { until_ns: 100 * US });
    // What it ran over (the charge, and the microsecond before it left)
    // is the next window's debt, and counts as run.
    s.switch_out(41 * US);
    s.roll(100 * US);
    check_eq!(s.debt_ns(), 6 * US);
    check_eq!(s.take_closed().run_ns, 36 * US);
    // A slice charged less is credit against the next one charged more.
    let mut t = RunState::new(0, 100 * US, 30 * US);
    t.switch_in(0);
    t.switch_out(10 * US);
    t.reconcile(10 * US, 4 * US);
    t.switch_in(20 * US);
    t.switch_out(30 * US);
    t.reconcile(10 * US, 15 * US);
    check_eq!(t.ran_ns(30 * US), 20 * US, "5 us over, 6 us credit");
    t.switch_in(40 * US);
    t.switch_out(45 * US);
    t.reconcile(5 * US, 8 * US);
    check_eq!(t.ran_ns(45 * US), 27 * US, "3 over, 1 of credit left");
    Ok(())
}

pub fn the_enforcements_own_time_is_exempt() -> Outcome {
    // T_W = 100 us, T_R = 30 us; the park item starts at 30 us and the
    // thread sleeps at 50: those 20 us are not its running.
    let mut s = RunState::new(0, 100 * US, 30 * US);
    s.switch_in(0);
    s.exempt(50 * US, 30 * US);
    check_eq!(s.ran_ns(50 * US), 30 * US);
    s.switch_out(50 * US);
    check_eq!(s.ran_ns(50 * US), 30 * US, "the slice restarted at 50 us");
    // Woken in the next window at 100 us, back to user space at 110 us:
    // the way back is exempt too (the item started before the slice).
    s.switch_in(100 * US);
    s.exempt(110 * US, 30 * US);
    check_eq!(s.ran_ns(110 * US), 0);
    check_eq!(s.debt_ns(), 0, "no overrun was charged");
    check_eq!(s.check(110 * US), OnCpu::Budget(30 * US));
    // Running before the item started still counts.
    let mut t = RunState::new(0, 100 * US, 30 * US);
    t.switch_in(0);
    t.exempt(20 * US, 15 * US);
    check_eq!(t.ran_ns(25 * US), 20 * US);
    Ok(())
}

pub fn after_a_long_sleep_the_next_window_starts_now() -> Outcome {
    let mut s = RunState::new(0, 100 * US, 50 * US);
    s.set_budget(20 * US);
    s.switch_in(1_234 * US);
    check_eq!(s.window_end_ns(), 1_334 * US, "not aligned to the old grid");
    check_eq!(
        s.budget_ns(),
        20 * US,
        "the new budget starts with the window"
    );
    let closed = s.take_closed();
    check_eq!((closed.windows, closed.run_ns), (12, 0));
    Ok(())
}

pub fn skipped_windows_keep_the_share() -> Outcome {
    // 50 us of 100, then a budget of 2 us in one window of three (as a
    // channel's `Budget` is applied: window, then budget), for a thread
    // that always runs. Attached at 0, its grid of 300 us windows is at
    // multiples of 300 us: the window at 100 us runs on to 600 us with
    // 5/3 of the budget, then 2 us per 300 us.
    let mut s = RunState::new(0, 100 * US, 50 * US);
    s.set_window(300 * US);
    s.set_budget(2 * US);
    check_eq!(s.next_ns(), (2 * US, 300 * US));
    s.switch_in(0);
    check_eq!(s.check(0), OnCpu::Budget(50 * US));
    s.switch_out(50 * US);
    s.switch_in(100 * US);
    check_eq!(s.check(100 * US), OnCpu::Budget(3_333));
    check_eq!(s.window_end_ns(), 600 * US);
    s.switch_out(100 * US + 3_333);
    s.switch_in(104 * US);
    check_eq!(s.check(104 * US), OnCpu::Park { until_ns: 600 * US });
    s.switch_out(104 * US);
    for k in 0..8 {
        let start = (600 + 300 * k) * US;
        s.switch_in(start);
        check_eq!(s.check(start), OnCpu::Budget(2 * US));
        s.switch_out(start + 2 * US);
    }
    s.roll(3_000 * US);
    let closed = s.take_closed();
    check_eq!(
        (closed.windows, closed.run_ns, closed.window_ns),
        (10, 69 * US + 333, 3_000 * US)
    );
    check_eq!(closed.granted_ns, 69 * US + 333);
    // Back to 50 us of 100 (budget first, then window: either order).
    s.set_budget(50 * US);
    s.set_window(100 * US);
    check_eq!(s.next_ns(), (50 * US, 100 * US));
    Ok(())
}

pub fn staggered_phases_are_evenly_spaced() -> Outcome {
    const Q: u32 = 1 << 30;
    // Thread 0 of each channel: the channels evenly spaced.
    for (i, want) in [0, Q, 2 * Q, 3 * Q].into_iter().enumerate() {
        check_eq!(stagger_phase(i as u64, 4, 0), want);
    }
    check_eq!(stagger_phase(5, 4, 0), Q, "modulo the channels");
    check_eq!(stagger_phase(1, 3, 0), 1_431_655_765);
    check_eq!(stagger_phase(2, 3, 0), 2_863_311_530);
    check_eq!(stagger_phase(7, 0, 0), 0);
    check_eq!(stagger_phase(7, 1, 0), 0);
    check_eq!(stagger_phase(u64::MAX - 1, u64::MAX, 0), u32::MAX);
    // A channel's threads: frac(rank phi) past the channel's start
    // (0.618, 0.236, 0.854, 0.472 of the window), modulo the window.
    let golden = [
        2_654_435_769u32,
        1_013_904_242,
        3_668_340_012,
        2_027_808_485,
    ];
    for (rank, g) in (1u64..).zip(golden) {
        check_eq!(stagger_phase(0, 1, rank), g);
        check_eq!(stagger_phase(3, 4, rank), g.wrapping_add(3 * Q));
    }
    // Spaced by 2^32 / n (floor) for any n, increasing with the channel.
    for n in [2u64, 5, 7, 1024, 1 << 31] {
        let (a, b) = (stagger_phase(0, n, 0), stagger_phase(1, n, 0));
        check!(u64::from(b - a) == (1u64 << 32) / n, "n = {}", n);
        check!(
            stagger_phase(n - 1, n, 0) > stagger_phase(n - 2, n, 0),
            "n = {}",
            n
        );
    }
    Ok(())
}

pub fn a_new_phase_moves_the_next_window_onto_it() -> Outcome {
    // A thread attached at 0 (phase 0) runs 50 us of every 100; moved to
    // slot 1 of 4 (25 us past multiples of 100 us), the window at 100 us
    // runs on to 225 us with 5/4 of the budget, then 100 us windows again.
    let mut s = RunState::new(0, 100 * US, 50 * US);
    s.set_phase(stagger_phase(1, 4, 0));
    s.switch_in(0);
    check_eq!(s.check(0), OnCpu::Budget(50 * US));
    check_eq!(s.window_end_ns(), 100 * US, "the current window stays");
    s.switch_out(50 * US);
    s.switch_in(100 * US);
    check_eq!(s.window_end_ns(), 225 * US);
    check_eq!(s.budget_ns(), 62_500);
    s.switch_out(100 * US + 62_500);
    s.switch_in(225 * US);
    check_eq!(s.window_end_ns(), 325 * US);
    check_eq!(s.budget_ns(), 50 * US);
    // The same phase again: the windows stay.
    s.set_phase(stagger_phase(5, 4, 0));
    s.switch_out(275 * US);
    s.switch_in(325 * US);
    check_eq!(s.window_end_ns(), 425 * US);
    // A new length starts on the grid too: 200 us windows at 50 us past
    // multiples of 200 us (the window at 425 us runs on to 650 us).
    s.set_window(200 * US);
    s.switch_out(375 * US);
    s.switch_in(425 * US);
    check_eq!(s.window_end_ns(), 650 * US);
    Ok(())
}

#[cfg(test)]
mod host {
    extern crate std;

    crate::suites!(host_tests);
}
