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
use super::window::{default_min_run_ns, exact_run_ns, path_share, Budget, RunWindow, WEIGHT_MAX};

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
                channels_are_placed_by_their_bottleneck,
                ranks_give_a_channels_threads_distinct_phases,
                every_slot_holds_each_rank_at_its_golden_place,
                a_run_leads_its_place_by_an_eighth,
                tree_shapes_are_checked,
                two_tenants_split_first_then_their_channels,
                a_leaf_held_back_by_the_queue_counts_at_its_share,
                shares_never_exceed_what_they_divide,
                with_groups_the_component_moves_half_way,
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
        $m!(
            mchannel_core_table,
            [
                table_shapes_are_checked,
                attach_then_detach_leaves_no_trace,
                a_full_table_refuses_and_frees_its_slots,
                a_user_past_its_quota_gets_edquot,
                unprivileged_users_leave_room_for_root,
                the_sweep_keeps_every_chain,
                a_slot_keeps_its_park_item,
                a_forked_thread_inherits_its_channel,
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

// The tree cases, the thread cases, and those of the attached-thread
// bookkeeping.
mod stagger;
mod table;
mod thread;
mod tree_shares;
pub use stagger::*;
pub use table::*;
pub use thread::*;
pub use tree_shares::*;

#[cfg(test)]
mod host {
    extern crate std;

    crate::suites!(host_tests);
}
