// SPDX-License-Identifier: GPL-2.0

//! MemChannel: per-thread run windows with CSFQ fair-share rate control
//!
//! Threads attached to a channel through `/dev/mchannel` run only T_R out of
//! every T_W; a control loop every K sets T_R from each channel's measured
//! rate and demand and its components' fair share. Design and ABI:
//! `Documentation/cxlfabric/mchannel.rst`.
//!
//! Teardown is by drop order of [`MchannelSched`]'s fields, after the sysfs
//! directories of channels and components: the device goes first (no new
//! attach), then the control loop, then the scheduler probes
//! (and with them the budget timers), and last the [`Release`] guard, which
//! detaches every thread, wakes the parked ones and waits until every
//! queued park item has run.

use kernel::prelude::*;

use cxlf_support as support;

/// Refuses with `err`, saying why (a rate-limited log line: any user can
/// cause a refusal). For the modules below.
macro_rules! refuse {
    ($err:expr, $($arg:tt)+) => {{
        $crate::support::pr_info_ratelimited!($($arg)+);
        return Err($err);
    }};
}

mod attached;
mod chardev;
// The control core, a crate of its own (`core/`), under its short name.
use mchannel_core as control;
mod cross;
mod enforce;
mod fabric;
mod ioctl_checks;
mod ioctl_fabric;
mod ioctl_rights;
mod ioctl_threads;
mod meter;
mod park;
mod stagger;
mod sysfs;
mod threads;

use chardev::{Device, MchannelFile};
use core::sync::atomic::Ordering;
use enforce::Enforcer;
use kernel::sync::Arc;
use park::Shared;
use support::miscdevice::{MiscDeviceOptions, MiscDeviceRegistration};
use support::params::{module_param_string, module_param_uint};
use support::tracepoint::SchedRegistration;
use support::workqueue::{Periodic, PeriodicWork};

module! {
    type: MchannelSched,
    name: "mchannel_sched",
    author: "cxlfabric developers",
    description: "MemChannel: per-thread run windows with CSFQ fair-share rate control",
    license: "GPL",
}

module_param_uint!(
    /// Most threads attached at once (16..=65536).
    max_threads
);
module_param_uint!(
    /// Most threads one user without `CAP_SYS_NICE` attaches
    /// (1..=max_threads).
    user_threads
);
module_param_uint!(
    /// The shortest run a thread is given when it runs less than its
    /// whole window, in microseconds (0..=1000; 0: 1 % of T_W).
    min_run_us
);
module_param_string!(
    /// The beluga pool holding the cross-host slots; empty: this host
    /// alone.
    pool
);
module_param_uint!(
    /// This host's index among those sharing the fabric.
    host_index
);
module_param_uint!(
    /// A peer whose slot stops changing for this long is dropped.
    lease_ms
);

/// The control loop, every K.
struct Control(Arc<Device>);

impl PeriodicWork for Control {
    fn run(&self) -> u32 {
        let threads = &self.0.shared.threads;
        let mut fabric = self.0.fabric.lock();
        // Reading counters may take a while: the period ends after it.
        fabric.collect_counters(threads);
        let now = support::time::monotonic_ns();
        let min_run = self.0.shared.park_cost.min_run();
        if let Err(e) = fabric.step(threads, now, min_run) {
            pr_warn!("control step failed: {}\n", e.to_errno());
        }
        drop(fabric);
        // What the probes leave to process context: park items for
        // threads without one, and the tombstones of detached threads.
        self.0.shared.refill_spares();
        threads.sweep();
        (fabric::K_NS / 1_000_000) as u32
    }
}

/// Last to go: no thread stays attached, parked, or with park work queued
/// in this module's code, and the table's park items (which hold the
/// shared state) are freed.
struct Release(Arc<Shared>);

impl Drop for Release {
    fn drop(&mut self) {
        let shared = &self.0;
        shared.shutdown.store(true, Ordering::Release);
        match shared.threads.tasks(None) {
            Ok(tasks) => {
                for t in tasks.iter() {
                    if let Some(a) = shared.threads.remove(t) {
                        // Unconditionally: a thread about to park sleeps
                        // at most to its window's end anyway.
                        a.task().wake_up();
                    }
                }
            }
            Err(_) => {
                pr_err!("no memory to list threads; parked ones wake at their window's end\n")
            }
        }
        // Nothing gives a slot an item any more: no thread is attached,
        // and the probes, the device and the control loop are gone.
        shared.threads.drain_spares();
        shared.pending.wait_idle("mchannel_sched");
    }
}

struct MchannelSched {
    _misc: Pin<KBox<MiscDeviceRegistration<MchannelFile>>>,
    _control: Periodic<Control>,
    _probes: SchedRegistration<Enforcer>,
    _release: Release,
}

impl kernel::Module for MchannelSched {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let max = max_threads();
        if !(16..=65536).contains(&max) {
            pr_err!("max_threads={} is outside 16..=65536\n", max);
            return Err(EINVAL);
        }
        let per_user = user_threads();
        if !(1..=max).contains(&per_user) {
            pr_err!(
                "user_threads={} is outside 1..=max_threads ({})\n",
                per_user,
                max
            );
            return Err(EINVAL);
        }
        if min_run_us() > 1000 {
            pr_err!("min_run_us={} is above 1000\n", min_run_us());
            return Err(EINVAL);
        }
        let shared = Shared::new(max as usize, per_user as usize)?;
        let release = Release(shared.clone());
        let probes = SchedRegistration::register(Enforcer::new(shared.clone())?)?;
        let dev = Arc::pin_init(
            pin_init!(Device {
                shared,
                fabric <- kernel::new_mutex!(
                    fabric::Fabric::new(support::time::monotonic_ns()),
                    "mchannel:fabric"
                ),
            }),
            GFP_KERNEL,
        )?;
        let control = Periodic::start(Arc::new(Control(dev.clone()), GFP_KERNEL)?, 0)?;
        let options = MiscDeviceOptions {
            name: kernel::c_str!("mchannel"),
            mode: 0o666,
        };
        // No channel or component exists before their sysfs parent does,
        // nor before the fabric is shared.
        let mut fabric = dev.fabric.lock();
        if !pool().is_empty() {
            fabric.set_cross(cross::CrossHost::new(pool(), host_index(), lease_ms())?)?;
        }
        let misc = KBox::pin_init(
            MiscDeviceRegistration::register(options, dev.clone()),
            GFP_KERNEL,
        )?;
        fabric.set_sysfs(sysfs::Root::new(misc.as_parent())?)?;
        drop(fabric);
        pr_info!(
            "loaded: up to {} threads ({} per unprivileged user), K = {} ms\n",
            max,
            per_user,
            fabric::K_NS / 1_000_000
        );
        Ok(MchannelSched {
            _misc: misc,
            _control: control,
            _probes: probes,
            _release: release,
        })
    }
}

impl Drop for MchannelSched {
    fn drop(&mut self) {
        pr_info!("unloading\n");
        // Before the device they live under; no file is open (each holds
        // a module reference), so no ioctl creates more meanwhile.
        self._misc.data().fabric.lock().remove_sysfs();
    }
}
