// SPDX-License-Identifier: GPL-2.0

//! Suite `cxlfabric_support_spinlock_irq`: the interrupt-disabling raw
//! spinlock.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::flags::GFP_KERNEL;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

use cxlf_support as support;
use support::hrtimer::{HrTimer, HrTimerCallback, HrTimerMode, HrTimerPointer, HrTimerRestart};
use support::spinlock_irq::RawSpinLockIrq;
use support::{impl_has_hr_timer, kassert_eq, kunit_tests};

/// A counter bumped both from a pinned timer (hard interrupt, this CPU)
/// and from process context, under one [`RawSpinLockIrq`].
#[pin_data]
struct LockedCounter {
    #[pin]
    timer: HrTimer<LockedCounter>,
    #[pin]
    count: RawSpinLockIrq<u64>,
    runs: AtomicU32,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for LockedCounter { self.timer }
}

const TIMER_BUMPS: u32 = 200;

impl HrTimerCallback for LockedCounter {
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart {
        *this.count.lock() += 1;
        if this.runs.fetch_add(1, Ordering::Relaxed) + 1 < TIMER_BUMPS {
            this.timer.forward_now(20_000);
            HrTimerRestart::Restart
        } else {
            HrTimerRestart::NoRestart
        }
    }
}

fn raw_spinlock_irq_excludes_a_timer_on_the_same_cpu() -> Result {
    let c = Arc::pin_init(
        pin_init!(LockedCounter {
            timer <- HrTimer::new(HrTimerMode::RelativePinned),
            count <- crate::support::new_raw_spinlock_irq!(0u64, "kunit:locked_counter"),
            runs: AtomicU32::new(0),
        }),
        GFP_KERNEL,
    )?;
    // Were interrupts on while the lock is held, the timer firing on this
    // CPU inside the loop would spin on the lock for ever (and lockdep
    // would report the inversion).
    let handle = c.clone().start(20_000);
    let mut bumps = 0u64;
    let mut waited_ms = 0;
    while c.runs.load(Ordering::Relaxed) < TIMER_BUMPS && waited_ms < 2_000 {
        for _ in 0..1_000 {
            *c.count.lock() += 1;
            bumps += 1;
        }
        support::time::sleep_ms_interruptible(1)?;
        waited_ms += 1;
    }
    drop(handle);
    kassert_eq!(c.runs.load(Ordering::Relaxed), TIMER_BUMPS);
    kassert_eq!(*c.count.lock(), bumps + u64::from(TIMER_BUMPS));
    Ok(())
}

kunit_tests!(
    cxlfabric_support_spinlock_irq,
    [raw_spinlock_irq_excludes_a_timer_on_the_same_cpu]
);
