// SPDX-License-Identifier: GPL-2.0

//! The polling timer: the pool raises no interrupts, so an hrtimer
//! schedules drack0's NAPI poll, at the interval the poll leaves in
//! [`Link::poll_ns`] (short under traffic, doubling to 1 ms when idle).
//! It runs from load to unload, up or down (heartbeats, leases and
//! sessions need the poll either way), or until the region is revoked.

use crate::link::{Link, POLL_NS_MAX};
use crate::support::hrtimer::{
    ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerMode, HrTimerPointer, HrTimerRestart,
};
use crate::support::napi::Napi;
use core::sync::atomic::Ordering;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};

#[pin_data]
pub(crate) struct Ticker {
    #[pin]
    timer: HrTimer<Ticker>,
    napi: Arc<Napi<Link>>,
}

crate::support::impl_has_hr_timer!(impl HasHrTimer<Self> for Ticker { self.timer });

impl Ticker {
    /// Polls `napi` until the handle is dropped.
    pub(crate) fn start(napi: Arc<Napi<Link>>) -> Result<ArcHrTimerHandle<Ticker>> {
        let first = napi.data().poll_ns.load(Ordering::Relaxed);
        let t = Arc::pin_init(
            pin_init!(Ticker {
                timer <- HrTimer::new(HrTimerMode::Relative),
                napi,
            }),
            GFP_KERNEL,
        )?;
        Ok(t.start(first))
    }
}

impl HrTimerCallback for Ticker {
    fn run(this: ArcBorrow<'_, Self>) -> HrTimerRestart {
        this.napi.schedule();
        // Revoked: the poll just scheduled takes the carrier down, and
        // nothing is left to poll for.
        if this.napi.data().pool.is_revoked() {
            return HrTimerRestart::NoRestart;
        }
        let ns = this.napi.data().poll_ns.load(Ordering::Relaxed);
        this.timer.forward_now(ns.clamp(1000, POLL_NS_MAX));
        HrTimerRestart::Restart
    }
}
