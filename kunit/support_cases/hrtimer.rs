// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_hrtimer`: the hrtimer wrapper.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

use cxlf_support as support;
use support::hrtimer::{
    ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerMode, HrTimerPointer, HrTimerRestart,
};
use support::{impl_has_hr_timer, kassert, kassert_eq, kunit_tests};

/// Counts its callbacks; restarts (1 ms later) until it has run `runs`
/// times.
#[pin_data]
struct Ticker {
    #[pin]
    timer: HrTimer<Ticker>,
    count: AtomicU32,
    runs: u32,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Ticker { self.timer }
}

impl HrTimerCallback for Ticker {
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart {
        let n = this.count.fetch_add(1, Ordering::Relaxed) + 1;
        if n < this.runs {
            this.timer.forward_now(1_000_000);
            HrTimerRestart::Restart
        } else {
            HrTimerRestart::NoRestart
        }
    }
}

fn ticker(runs: u32, mode: HrTimerMode) -> Result<Arc<Ticker>> {
    Arc::pin_init(
        pin_init!(Ticker {
            timer <- HrTimer::new(mode),
            count: AtomicU32::new(0),
            runs,
        }),
        GFP_KERNEL,
    )
}

fn hrtimer_fires_once_after_its_delay() -> Result {
    let t = ticker(1, HrTimerMode::Relative)?;
    let handle = t.clone().start(1_000_000);
    support::time::sleep_ms_interruptible(30)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 1);
    kassert!(!handle.cancel(), "not armed any more");
    Ok(())
}

fn hrtimer_cancelled_before_expiry_never_runs() -> Result {
    let t = ticker(1, HrTimerMode::RelativePinned)?;
    let handle = t.clone().start(10_000_000_000);
    kassert!(handle.get().timer.is_active());
    kassert_eq!(handle.try_cancel(), Some(true));
    kassert_eq!(handle.try_cancel(), Some(false));
    drop(handle);
    kassert_eq!(t.count.load(Ordering::Relaxed), 0);
    Ok(())
}

fn hrtimer_restarts_after_moving_forward() -> Result {
    let t = ticker(3, HrTimerMode::Relative)?;
    let handle = t.clone().start(1_000_000);
    support::time::sleep_ms_interruptible(60)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 3);
    kassert!(!t.timer.is_active());
    drop(handle);
    Ok(())
}

fn hrtimer_dropping_the_handle_cancels() -> Result {
    let t = ticker(1, HrTimerMode::Relative)?;
    drop(t.clone().start(2_000_000));
    support::time::sleep_ms_interruptible(20)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 0);
    kassert!(!t.timer.is_active());
    Ok(())
}

fn hrtimer_idle_handle_runs_only_when_restarted() -> Result {
    let t = ticker(1, HrTimerMode::RelativePinned)?;
    let handle = ArcHrTimerHandle::idle(t.clone());
    support::time::sleep_ms_interruptible(5)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 0);
    kassert!(!t.timer.is_active());
    handle.restart(1_000_000);
    support::time::sleep_ms_interruptible(30)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 1);
    // Restarting an armed timer moves its expiry: it runs once, late.
    handle.restart(1_000_000);
    handle.restart(10_000_000_000);
    support::time::sleep_ms_interruptible(30)?;
    kassert_eq!(t.count.load(Ordering::Relaxed), 1);
    kassert!(t.timer.is_active());
    kassert!(handle.cancel(), "was armed");
    kassert!(!t.timer.is_active());
    Ok(())
}

kunit_tests!(
    cxlfabric_support_hrtimer,
    [
        hrtimer_fires_once_after_its_delay,
        hrtimer_cancelled_before_expiry_never_runs,
        hrtimer_restarts_after_moving_forward,
        hrtimer_dropping_the_handle_cancels,
        hrtimer_idle_handle_runs_only_when_restarted,
    ]
);
