// SPDX-License-Identifier: GPL-2.0

//! A NIC port's network interface: registered when the NIC binds,
//! carrier off until the device's link is up. The queues and modes come
//! next (issue #11); until then the interface takes no traffic: what the
//! stack sends is dropped and counted, and `open` leaves the device
//! unconfigured.

use crate::ring::layout::{FRAME_MIN, MTU_MAX};
use crate::support::netdev::{NetDevice, SkBuff, Stats};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The smallest MTU (IPv4's).
pub(crate) const MTU_MIN: u32 = 68;
const _: () = assert!(MTU_MIN > FRAME_MIN);

/// One port's interface state, shared with the net core's callbacks.
pub(crate) struct Port {
    mtu: AtomicU32,
    tx_dropped: AtomicU64,
}

impl Port {
    pub(crate) fn new() -> Result<Arc<Port>> {
        Ok(Arc::new(
            Port {
                mtu: AtomicU32::new(1500),
                tx_dropped: AtomicU64::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// The MTU range the interface offers.
    pub(crate) const fn mtu_range() -> (u32, u32) {
        (MTU_MIN, MTU_MAX)
    }
}

impl NetDevice for Port {
    fn open(_this: &Arc<Self>) -> Result {
        Ok(())
    }

    fn stop(_this: &Arc<Self>) -> Result {
        Ok(())
    }

    fn start_xmit(this: &Arc<Self>, skb: SkBuff, _queue: u16) -> core::result::Result<(), SkBuff> {
        // No queues yet: dropped, counted.
        this.tx_dropped.fetch_add(1, Ordering::Relaxed);
        drop(skb);
        Ok(())
    }

    fn stats(this: &Arc<Self>, stats: &mut Stats) {
        stats.tx_dropped = this.tx_dropped.load(Ordering::Relaxed);
    }

    fn change_mtu(this: &Arc<Self>, mtu: u32) -> Result {
        let (lo, hi) = Self::mtu_range();
        if !(lo..=hi).contains(&mtu) {
            return Err(EINVAL);
        }
        this.mtu.store(mtu, Ordering::Relaxed);
        Ok(())
    }
}
