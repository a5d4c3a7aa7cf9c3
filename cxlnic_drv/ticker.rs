// SPDX-License-Identifier: GPL-2.0

//! Timer polling (`ethtool -C rx-usecs N`, N > 0): the device raises no
//! interrupts, and an hrtimer schedules the queue's NAPI poll every N
//! microseconds instead. The trade the ntb_netdev users measured: a
//! short period costs CPU, a long one adds latency, and neither stalls
//! a full ring as a jiffies timer did.

use crate::queue::Queue;
use crate::support::hrtimer::{
    ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerMode, HrTimerPointer, HrTimerRestart,
};
use crate::support::napi::Napi;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

/// Shortest and longest polling periods, microseconds.
pub(crate) const PERIOD_US_MIN: u32 = 10;
pub(crate) const PERIOD_US_MAX: u32 = 100_000;

#[pin_data]
pub(crate) struct Ticker {
    #[pin]
    timer: HrTimer<Ticker>,
    napi: Arc<Napi<Queue>>,
    period_ns: u64,
}

crate::support::impl_has_hr_timer!(impl HasHrTimer<Self> for Ticker { self.timer });

impl Ticker {
    /// Polls `napi` every `period_us` until the handle is dropped.
    pub(crate) fn start(
        napi: Arc<Napi<Queue>>,
        period_us: u32,
    ) -> Result<ArcHrTimerHandle<Ticker>> {
        let period_ns = u64::from(period_us.clamp(PERIOD_US_MIN, PERIOD_US_MAX)) * 1000;
        let t = Arc::pin_init(
            pin_init!(Ticker {
                timer <- HrTimer::new(HrTimerMode::Relative),
                napi,
                period_ns,
            }),
            GFP_KERNEL,
        )?;
        Ok(t.start(period_ns))
    }
}

impl HrTimerCallback for Ticker {
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart {
        this.napi.schedule();
        this.timer.forward_now(this.period_ns);
        HrTimerRestart::Restart
    }
}
