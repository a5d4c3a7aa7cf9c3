// SPDX-License-Identifier: GPL-2.0

//! drack0 as the stack sees it (`net_device_ops`, `ethtool_ops`): open
//! and stop, transmit, counters, MTU, and the ethtool settings: `-g`
//! (the queues' entries, fixed by the region's layout), `-l` (one queue
//! pair), `-c/-C rx-usecs` (the polling timer's shortest interval) and
//! the private flag `by-value`.
//!
//! `by-value` is an ethtool private flag rather than a sysfs attribute:
//! it is a per-interface setting of the driver's data path, which is
//! what private flags are for, it needs no sysfs directory of its own,
//! and `ethtool --show-priv-flags` lists it with the others.

use crate::link::{Link, POLL_US_MAX, POLL_US_MIN};
use crate::stats;
use crate::support::netdev::{
    ethtool_string, Change, NetDevice, Netdev, Params, SkBuff, Stats, StringSet, STRING_LEN,
};
use core::sync::atomic::Ordering;
use drack_core::layout::MTU_MAX;
use kernel::prelude::*;
use kernel::sync::Arc;

/// The private flags, a bit each in this order.
const PRIV_FLAGS: [&str; 1] = ["by-value"];
const PRIV_BY_VALUE: u32 = 1 << 0;

/// drack0's MTUs.
pub(crate) const MTU_MIN: u32 = 68;

impl NetDevice for Link {
    fn open(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        this.up.store(true, Ordering::Release);
        // Every peer's queue starts awake: none is stopped for room.
        this.tx.lock().stopped = 0;
        dev.tx_all(true);
        Ok(())
    }

    fn stop(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        dev.tx_disable();
        // Frames that arrive while down are dropped (their buffers go
        // back): the sessions and heartbeats go on.
        this.up.store(false, Ordering::Release);
        Ok(())
    }

    fn start_xmit(
        this: &Arc<Self>,
        dev: &Netdev<'_>,
        skb: SkBuff,
        _queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        this.xmit(dev, skb)
    }

    const HAS_SELECT_QUEUE: bool = true;

    fn select_queue(this: &Arc<Self>, _dev: &Netdev<'_>, skb: &SkBuff) -> u16 {
        // A frame that is not linear is dropped by transmit anyway.
        this.queue_of(skb.linear().unwrap_or(&[]))
    }

    fn stats(this: &Arc<Self>, s: &mut Stats) {
        stats::link_stats(this, s);
    }

    fn change_mtu(_this: &Arc<Self>, _dev: &Netdev<'_>, mtu: u32) -> Result {
        // Frames up to the MTU take up to three buffers whatever it is.
        if !(MTU_MIN..=MTU_MAX).contains(&mtu) {
            return Err(EINVAL);
        }
        Ok(())
    }

    fn params(this: &Arc<Self>) -> Result<Params> {
        let slots = this.geom.ref_slots();
        let by_value = this.by_value.load(Ordering::Relaxed);
        let min_ns = this.poll_ns_min.load(Ordering::Relaxed);
        Ok(Params {
            rx_ring: slots,
            tx_ring: slots,
            rx_ring_max: slots,
            tx_ring_max: slots,
            channels: 1,
            channels_max: 1,
            rx_usecs: u32::try_from(min_ns / 1000).unwrap_or(u32::MAX),
            rx_frames: 0,
            priv_flags: if by_value { PRIV_BY_VALUE } else { 0 },
        })
    }

    fn set_params(this: &Arc<Self>, _dev: &Netdev<'_>, p: &Params, what: Change) -> Result {
        match what {
            Change::PrivFlags => {
                let on = p.priv_flags & PRIV_BY_VALUE != 0;
                if on && !this.geom.by_value() {
                    pr_err!("by-value: the region was formatted without by-value slots\n");
                    return Err(EINVAL);
                }
                this.by_value.store(on, Ordering::Relaxed);
                Ok(())
            }
            Change::Coalesce => {
                if !(POLL_US_MIN..=POLL_US_MAX).contains(&p.rx_usecs) {
                    pr_err!(
                        "rx-usecs {} is outside {}..={}\n",
                        p.rx_usecs,
                        POLL_US_MIN,
                        POLL_US_MAX
                    );
                    return Err(EINVAL);
                }
                let ns = u64::from(p.rx_usecs) * 1000;
                this.poll_ns_min.store(ns, Ordering::Relaxed);
                this.poll_fast();
                Ok(())
            }
            // The queues are the region's layout, fixed when formatted.
            Change::Rings | Change::Channels => Err(crate::support::error::eopnotsupp()),
        }
    }

    fn string_count(this: &Arc<Self>, set: StringSet) -> usize {
        match set {
            StringSet::Stats => stats::count(this.geom.hosts()),
            StringSet::PrivFlags => PRIV_FLAGS.len(),
        }
    }

    fn strings(this: &Arc<Self>, set: StringSet, out: &mut [[u8; STRING_LEN]]) {
        match set {
            StringSet::Stats => stats::names(this, out),
            StringSet::PrivFlags => {
                for (o, name) in out.iter_mut().zip(PRIV_FLAGS) {
                    ethtool_string(o, &[name.as_bytes()]);
                }
            }
        }
    }

    fn stat_values(this: &Arc<Self>, out: &mut [u64]) {
        stats::values(this, out);
    }
}
