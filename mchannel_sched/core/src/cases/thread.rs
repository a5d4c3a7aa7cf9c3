//! Shared cases of a thread's run window (`thread`): suite
//! `mchannel_core_thread`.

use super::super::outcome::Outcome;
use super::super::thread::{OnCpu, RunState};

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
