// SPDX-License-Identifier: GPL-2.0

//! The port as the stack sees it (`net_device_ops`, `ethtool_ops`):
//! open and stop, transmit, the TX watchdog, counters and parameters.
//! Everything but transmits and counters runs under RTNL.

use super::ethtool::{PRIV_FLAGS, PRIV_KVS, PRIV_PCIE, PRIV_TYPE2};
use super::lifecycle::Finish;
use super::settings::Settings;
use super::state::{Port, TxSlot};
use crate::ring::device::{MODE_PCIE, MODE_TYPE2};
use crate::ring::index::RING_MAX;
use crate::stats;
use crate::support::netdev::{
    ethtool_string, Change, NetDevice, Netdev, Params, SkBuff, Stats, StringSet, STRING_LEN,
};
use core::sync::atomic::Ordering;
use kernel::prelude::*;
use kernel::sync::Arc;

impl NetDevice for Port {
    fn open(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        dev.set_carrier(false);
        let queues = this.settings.lock().queues;
        dev.set_queues(queues, queues)?;
        this.reap(dev);
        let up = this.start(dev)?;
        *this.up.lock() = Some(up);
        if let Err(e) = Self::start_watch(this, dev) {
            if let Some(up) = this.up.lock().take() {
                this.finish(dev, up, Finish::Tell);
            }
            return Err(e);
        }
        Ok(())
    }

    fn stop(this: &Arc<Self>, dev: &Netdev<'_>) -> Result {
        this.stop_watch();
        let up = this.up.lock().take();
        if let Some(up) = up {
            this.finish(dev, up, Finish::Tell);
        }
        Ok(())
    }

    const HAS_TX_TIMEOUT: bool = true;

    fn tx_timeout(this: &Arc<Self>, _dev: &Netdev<'_>, queue: u32) {
        // Softirq, queues frozen: the watch restarts the rings.
        let bit = 1u32.checked_shl(queue).unwrap_or(0);
        this.timed_out.fetch_or(bit, Ordering::Relaxed);
    }

    fn start_xmit(
        this: &Arc<Self>,
        dev: &Netdev<'_>,
        skb: SkBuff,
        queue: u16,
    ) -> core::result::Result<(), SkBuff> {
        // Only this TX queue's slot (see `txq`).
        let q = this.txq.get(usize::from(queue)).and_then(TxSlot::get);
        match q {
            Some(q) => q.xmit(dev, skb),
            None => {
                // A TX queue the stack took on (`ethtool -L`) before the
                // restart that brings its queue pair.
                if let Some(c) = this.retired.get(usize::from(queue)) {
                    c.tx_dropped.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
        }
    }

    fn stats(this: &Arc<Self>, stats: &mut Stats) {
        this.sum(stats);
    }

    fn change_mtu(this: &Arc<Self>, dev: &Netdev<'_>, mtu: u32) -> Result {
        let (lo, hi) = Self::mtu_range();
        if !(lo..=hi).contains(&mtu) {
            return Err(EINVAL);
        }
        let new = Settings {
            mtu,
            ..*this.settings.lock()
        };
        // Buffers are sized for the MTU.
        Self::apply(this, dev, new)
    }

    fn params(this: &Arc<Self>) -> Result<Params> {
        let s = *this.settings.lock();
        let mode = match s.mode {
            MODE_TYPE2 => PRIV_TYPE2,
            MODE_PCIE => PRIV_PCIE,
            _ => 0,
        };
        let flags = if this.kvs.enabled() {
            mode | PRIV_KVS
        } else {
            mode
        };
        Ok(Params {
            rx_ring: s.rx.get(),
            tx_ring: s.tx.get(),
            rx_ring_max: RING_MAX,
            tx_ring_max: RING_MAX,
            channels: s.queues,
            channels_max: this.queues_max,
            rx_usecs: s.rx_usecs,
            rx_frames: s.batch,
            priv_flags: flags,
        })
    }

    fn set_params(this: &Arc<Self>, dev: &Netdev<'_>, p: &Params, what: Change) -> Result {
        if what == Change::PrivFlags {
            return Self::set_priv_flags(this, dev, p);
        }
        let old = *this.settings.lock();
        let new = this.settings_for(dev, old, p, what)?;
        if what == Change::Channels && new.queues != old.queues {
            dev.set_queues(new.queues, new.queues)?;
        }
        let r = Self::apply(this, dev, new);
        if r.is_err() && what == Change::Channels {
            let _ = dev.set_queues(old.queues, old.queues);
        }
        r
    }

    fn string_count(this: &Arc<Self>, set: StringSet) -> usize {
        match set {
            StringSet::Stats => stats::count(this.settings.lock().queues as usize),
            StringSet::PrivFlags => PRIV_FLAGS.len(),
        }
    }

    fn strings(_this: &Arc<Self>, set: StringSet, out: &mut [[u8; STRING_LEN]]) {
        match set {
            StringSet::Stats => stats::names(out),
            StringSet::PrivFlags => {
                for (o, name) in out.iter_mut().zip(PRIV_FLAGS) {
                    ethtool_string(o, &[name.as_bytes()]);
                }
            }
        }
    }

    fn stat_values(this: &Arc<Self>, out: &mut [u64]) {
        // The offload's counters first: reading them takes no lock.
        let (port, queues) = out.split_at_mut(stats::PORT_STATS.min(out.len()));
        stats::port_values(&this.resets, &this.kvs, port);
        let lanes = this.lanes.lock();
        stats::values(&this.io, &this.retired, &lanes, queues);
    }
}
