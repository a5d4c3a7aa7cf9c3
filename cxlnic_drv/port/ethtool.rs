// SPDX-License-Identifier: GPL-2.0

//! Settings an operator changes (`ethtool -G`, `-L`, `-C`,
//! `--set-priv-flags`, an MTU change): checked, logged when refused, and
//! applied at once by restarting the queues of an interface that is up.
//!
//! Locks: `settings` only to copy or store them (`start` copies them
//! under `up`: take nothing under it), `up` alone to see whether the
//! interface is up; `apply` stops the watch before it restarts.

use super::settings::Settings;
use super::state::Port;
use crate::ring::device::{mode_bit, MODE_PCIE, MODE_TYPE1, MODE_TYPE2};
use crate::ring::index::RingSize;
use crate::support::netdev::{Change, Netdev, Params};
use crate::ticker::{PERIOD_US_MAX, PERIOD_US_MIN};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Private flag (`ethtool --set-priv-flags`) of type2 mode, while down.
pub(super) const PRIV_TYPE2: u32 = 1 << 0;
/// Private flag of pcie mode, while down (neither flag: type1).
pub(super) const PRIV_PCIE: u32 = 1 << 1;
/// Private flag of the key-value offload (type2 mode; up or down).
pub(super) const PRIV_KVS: u32 = 1 << 2;
/// The private flags' names, by bit.
pub(super) const PRIV_FLAGS: [&str; 3] = ["type2", "pcie", "kvs"];

/// `ethtool -G`: both ring sizes, each at least a batch; why not if not.
fn set_rings(s: &mut Settings, p: &Params) -> &'static str {
    match (RingSize::new(p.tx_ring), RingSize::new(p.rx_ring)) {
        (Some(tx), Some(rx)) if s.batch <= tx.get().min(rx.get()) => {
            s.tx = tx;
            s.rx = rx;
            ""
        }
        (Some(_), Some(_)) => "rings must hold at least a batch (ethtool -C rx-frames)",
        _ => "ring sizes are powers of two from 8 to 4096",
    }
}

/// `ethtool -C`: the polling period and the batch; why not if not.
fn set_coalesce(s: &mut Settings, p: &Params) -> &'static str {
    let usecs_ok = p.rx_usecs == 0 || (PERIOD_US_MIN..=PERIOD_US_MAX).contains(&p.rx_usecs);
    if !usecs_ok {
        "rx-usecs is 0 (interrupts) or a polling period of 10 to 100000"
    } else if p.rx_frames == 0 || p.rx_frames > s.tx.get().min(s.rx.get()) {
        "rx-frames (the batch) is 1 up to the smaller ring"
    } else {
        s.rx_usecs = p.rx_usecs;
        s.batch = p.rx_frames;
        ""
    }
}

impl Port {
    /// `old` with what ethtool changed, checked; `EINVAL` (or `EBUSY`)
    /// with a log line saying why not.
    pub(super) fn settings_for(
        &self,
        dev: &Netdev<'_>,
        old: Settings,
        p: &Params,
        what: Change,
    ) -> Result<Settings> {
        let mut s = old;
        let why = match what {
            Change::Rings => set_rings(&mut s, p),
            Change::Channels => self.set_channels(&mut s, p),
            Change::Coalesce => set_coalesce(&mut s, p),
            Change::PrivFlags => self.set_mode(dev, &mut s, p)?,
        };
        if !why.is_empty() {
            pr_info!("{}: {}\n", dev.name(), why);
            return Err(EINVAL);
        }
        s.shape()?;
        Ok(s)
    }

    /// `ethtool -L`: 1 up to the device's queue pairs; why not if not.
    fn set_channels(&self, s: &mut Settings, p: &Params) -> &'static str {
        if (1..=self.queues_max).contains(&p.channels) {
            s.queues = p.channels;
            ""
        } else {
            "channels are 1 up to the device's queue pairs"
        }
    }

    /// `--set-priv-flags`: a mode the device has, changed only while the
    /// interface is down and, away from type2, the offload is off
    /// (`EBUSY`, logged); why not if not. (The `kvs` flag is
    /// `set_priv_flags`'.)
    fn set_mode(&self, dev: &Netdev<'_>, s: &mut Settings, p: &Params) -> Result<&'static str> {
        let mode = match p.priv_flags & (PRIV_TYPE2 | PRIV_PCIE) {
            0 => MODE_TYPE1,
            PRIV_TYPE2 => MODE_TYPE2,
            PRIV_PCIE => MODE_PCIE,
            _ => 0,
        };
        Ok(
            if p.priv_flags & !(PRIV_TYPE2 | PRIV_PCIE | PRIV_KVS) != 0 || mode == 0 {
                "one mode at most: type2 or pcie (neither: type1)"
            } else if mode != s.mode && self.up.lock().is_some() {
                pr_info!("{}: set the mode while the interface is down\n", dev.name());
                return Err(EBUSY);
            } else if mode != s.mode && mode != MODE_TYPE2 && self.kvs.enabled() {
                pr_info!(
                    "{}: the KVS offload needs type2 mode: turn it off first\n",
                    dev.name()
                );
                return Err(EBUSY);
            } else if self.modes & mode_bit(mode) == 0 {
                "the device does not have that mode"
            } else {
                s.mode = mode;
                ""
            },
        )
    }

    /// `--set-priv-flags`: the mode (restarting the queues only if it
    /// changed), then the key-value offload (with the settings it has:
    /// the `kvs_port` parameter's port unless `KVS_CONFIG` named one).
    pub(super) fn set_priv_flags(this: &Arc<Self>, dev: &Netdev<'_>, p: &Params) -> Result {
        let old = *this.settings.lock();
        let new = this.settings_for(dev, old, p, Change::PrivFlags)?;
        if new.mode != old.mode {
            Self::apply(this, dev, new)?;
        }
        let want = p.priv_flags & PRIV_KVS != 0;
        if want == this.kvs.enabled() {
            return Ok(());
        }
        let settings = this.kvs.snapshot().settings;
        this.kvs_switch_rtnl(dev.name(), want, settings)
    }

    /// Takes `new` settings; while up, the queues start again with them
    /// (and with the old ones if that fails).
    pub(super) fn apply(this: &Arc<Self>, dev: &Netdev<'_>, new: Settings) -> Result {
        let old = core::mem::replace(&mut *this.settings.lock(), new);
        if this.up.lock().is_none() {
            return Ok(());
        }
        this.stop_watch();
        let r = this.restart(dev);
        if r.is_err() {
            *this.settings.lock() = old;
            let _ = this.restart(dev);
        }
        let _ = Self::start_watch(this, dev);
        r
    }
}
