//! A thread's run windows driven as the scheduler hooks drive them: it
//! comes on a CPU, runs until it blocks or its budget timer fires (late by
//! up to a slack), parks until its window ends. For any behaviour of the
//! thread, no window holds more than T_R (plus the timer's slack) of
//! running, windows never overlap, and every nanosecond of running is
//! accounted to exactly one window.

use mchannel_core::thread::{Closed, OnCpu, RunState, MAX_DEBT_NS};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Case {
    t_w: u64,
    t_r: u64,
    slack: u64,
    /// (run this long unless stopped, then block this long).
    bursts: Vec<(u64, u64)>,
    /// Budget changes: (after this many bursts, new T_R). Budgets are at
    /// least 1 us, as `RunWindow` keeps them above zero (a thread with
    /// none would never run again).
    budget_changes: Vec<(usize, u64)>,
    /// Window length changes: (after this many bursts, new T_W), up to
    /// the 10 ms a short T_R stretches a window to in the kernel.
    window_changes: Vec<(usize, u64)>,
}

fn case() -> impl Strategy<Value = Case> {
    (50_000u64..1_000_000, 1u64..=100, 0u64..5_000).prop_flat_map(|(t_w, pct, slack)| {
        (
            Just(t_w),
            Just(t_w * pct / 100),
            Just(slack),
            prop::collection::vec((0u64..3 * t_w, 0u64..3 * t_w), 1..200),
            prop::collection::vec((0usize..200, 1_000..=t_w), 0..5),
            prop::collection::vec((0usize..200, 50_000u64..10_000_000), 0..3),
        )
            .prop_map(
                |(t_w, t_r, slack, bursts, budget_changes, window_changes)| Case {
                    t_w,
                    t_r,
                    slack,
                    bursts,
                    budget_changes,
                    window_changes,
                },
            )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn windows_hold_at_most_their_budget_and_account_for_all_running(c in case()) {
        let mut now = 1_000_000u64;
        let start = now;
        let mut s = RunState::new(now, c.t_w, c.t_r);
        let mut total_run = 0u64;
        let mut closed = Closed::default();
        // (start, length) of every window seen.
        let mut starts = vec![(s.window_end_ns() - c.t_w, c.t_w)];
        let take = |s: &mut RunState, closed: &mut Closed, starts: &mut Vec<(u64, u64)>| {
            let c2 = s.take_closed();
            closed.windows += c2.windows;
            closed.run_ns += c2.run_ns;
            closed.charged_ns += c2.charged_ns;
            closed.window_ns += c2.window_ns;
            closed.max_overrun_ns = closed.max_overrun_ns.max(c2.max_overrun_ns);
            let st = s.window_end_ns() - s.t_w_ns();
            if starts.last().unwrap().0 != st {
                starts.push((st, s.t_w_ns()));
            }
        };
        for (i, &(want_run, block)) in c.bursts.iter().enumerate() {
            for &(at, t_r) in &c.budget_changes {
                if at == i {
                    s.set_budget(t_r);
                }
            }
            for &(at, t_w) in &c.window_changes {
                if at == i {
                    s.set_window(t_w);
                    // A budget larger than the new window is clamped.
                    prop_assert!(s.next_ns().0 <= t_w);
                }
            }
            let mut left = want_run;
            // Runs until it has run `want_run`, parking when its budget
            // timer fires (`slack` late at most).
            while left > 0 {
                s.switch_in(now);
                let step = match s.check(now) {
                    OnCpu::Park { until_ns } => {
                        s.switch_out(now);
                        take(&mut s, &mut closed, &mut starts);
                        prop_assert!(until_ns > now);
                        now = until_ns;
                        s.roll(now);
                        take(&mut s, &mut closed, &mut starts);
                        continue;
                    }
                    OnCpu::Unlimited => left,
                    OnCpu::Budget(b) => left.min(b + c.slack),
                };
                now += step;
                total_run += step;
                left -= step;
                // Blocks, or the timer fired (then it parks on the next
                // round: `check` says so).
                s.switch_out(now);
                take(&mut s, &mut closed, &mut starts);
            }
            now += block;
        }
        s.roll(now);
        take(&mut s, &mut closed, &mut starts);
        let current = s.ran_ns(now);
        // No window ran more than its budget plus the timer's lateness.
        prop_assert!(closed.max_overrun_ns <= c.slack, "overran by {}", closed.max_overrun_ns);
        prop_assert!(current <= s.budget_ns() + c.slack);
        // Windows in order and disjoint, and they tile the time closed.
        for pair in starts.windows(2) {
            prop_assert!(pair[1].0 >= pair[0].0 + pair[0].1, "{:?}", pair);
        }
        prop_assert!(closed.window_ns <= s.window_end_ns() - s.t_w_ns() - start);
        // Conservation: every nanosecond of running is in one window, and
        // charged to a budget or still owed.
        prop_assert_eq!(closed.run_ns + current, total_run);
        prop_assert_eq!(closed.charged_ns + s.debt_ns(), closed.run_ns);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A thread that always wants to run, whose budget timer fires up to
    /// three windows late: whatever each window overran is paid back by
    /// the windows after it, so it runs exactly T_R per closed window plus
    /// the debt it still owes (the lateness stays below the debt cap).
    #[test]
    fn late_timers_are_paid_back_exactly(
        t_w in 50_000u64..1_000_000,
        pct in 1u64..100,
        lateness in prop::collection::vec(0u64..3_000_000, 1..300),
    ) {
        let t_r = t_w * pct / 100;
        let mut now = 1_000_000u64;
        let mut s = RunState::new(now, t_w, t_r);
        let (mut total_run, mut windows, mut granted) = (0u64, 0u64, 0u64);
        let mut charged = 0u64;
        for &late in &lateness {
            s.switch_in(now);
            match s.check(now) {
                OnCpu::Park { until_ns } => {
                    s.switch_out(now);
                    now = until_ns;
                }
                OnCpu::Budget(b) => {
                    let step = b + late.min(3 * t_w);
                    now += step;
                    total_run += step;
                    s.switch_out(now);
                }
                OnCpu::Unlimited => prop_assert!(false, "a budget below the window"),
            }
            let c = s.take_closed();
            (windows, granted) = (windows + c.windows, granted + c.granted_ns);
            // Charged time never runs ahead of the budgets: it is what
            // they allowed, however late the timer.
            charged += c.charged_ns;
            prop_assert!(charged <= granted, "charged {} of {} granted", charged, granted);
        }
        s.roll(now);
        let c = s.take_closed();
        (windows, granted) = (windows + c.windows, granted + c.granted_ns);
        charged += c.charged_ns;
        let owed = s.debt_ns() + s.ran_ns(now);
        prop_assert!(s.debt_ns() < MAX_DEBT_NS);
        prop_assert_eq!(granted, windows * t_r);
        prop_assert_eq!(total_run, granted + owed);
        // Every closed nanosecond is charged, or still owed.
        prop_assert_eq!(charged + s.debt_ns(), total_run - s.ran_ns(now));
    }
}

/// Threads attached within one window (a process's threads), always
/// wanting to run, all given a budget in one window of ten at the same
/// control period: their runs spread over the ten. (Windows of the new
/// length used to start where the old ones ended, within one T_W of each
/// other: every thread ran in the same tenth of the time, and the others
/// stayed idle.)
#[test]
fn threads_skipping_windows_run_in_different_ones() {
    const US: u64 = 1_000;
    let (t_w, long) = (100 * US, 1_000 * US);
    let mut slots = [0u32; 10];
    for i in 0..64u64 {
        let mut now = 1_000_000 + i * 1_300;
        let mut s = RunState::new(now, t_w, 2 * US);
        let mut changed = false;
        while now < 20_000 * US {
            if !changed && now >= 2_000 * US {
                s.set_window(long);
                s.set_budget(10 * US);
                changed = true;
            }
            s.switch_in(now);
            match s.check(now) {
                OnCpu::Budget(b) => {
                    if now >= 5_000 * US {
                        slots[((now % long) / t_w) as usize] += 1;
                    }
                    now += b;
                    s.switch_out(now);
                }
                OnCpu::Park { until_ns } => {
                    s.switch_out(now);
                    now = until_ns;
                }
                OnCpu::Unlimited => unreachable!("a budget below the window"),
            }
        }
    }
    let mean = slots.iter().sum::<u32>() / 10;
    assert!(mean > 0);
    assert!(
        slots.iter().all(|&n| n <= 2 * mean),
        "runs per tenth of the window: {slots:?}"
    );
}
