// SPDX-License-Identifier: GPL-2.0

//! `/dev/mchannel`: the device, its open files and its sysfs counters,
//! and the dispatch of the ioctls of `uapi/src/mchannel.rs` to their
//! families: the fabric's (`ioctl_fabric.rs`) and the threads'
//! (`ioctl_threads.rs`). Every argument is checked (`ioctl_checks.rs`,
//! and who may do what: `ioctl_rights.rs`); every refusal has an errno
//! and a (rate-limited) log line that says why.
//!
//! Lock order: `fabric` (a mutex), then the thread table's insert lock,
//! then a thread's own lock (see `threads.rs`). The scheduler's own locks
//! (the runqueue's, a task's `pi_lock`) are taken outside ours, since the
//! `sched_switch` probe takes a thread's lock under the runqueue lock:
//! nothing wakes a task while holding a thread's lock.

use crate::fabric::Fabric;
use crate::park::Shared;
use crate::support::miscdevice::{AttributeBuffer, MiscDevice, MiscDeviceRegistration};
use crate::support::uapi::ioctl::size_of_cmd;
use crate::support::uapi::mchannel as abi;
use core::fmt::Write;
use core::sync::atomic::Ordering;
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::uaccess::UserSlice;

/// The device: what every open file shares.
#[pin_data]
pub(crate) struct Device {
    pub(crate) shared: Arc<Shared>,
    #[pin]
    pub(crate) fabric: Mutex<Fabric>,
}

/// An open file; it only reaches the device.
pub(crate) struct MchannelFile {
    dev: Arc<Device>,
}

/// The module's counters; each channel and component has a directory
/// (`sysfs.rs`).
const ATTRIBUTES: &[&CStr] = &[
    c_str!("threads"),
    c_str!("parks"),
    c_str!("park_misses"),
    c_str!("forks"),
    c_str!("fork_misses"),
    c_str!("perf_misses"),
    c_str!("park_cost_ns"),
    c_str!("min_run_ns"),
];

#[vtable]
impl MiscDevice for MchannelFile {
    type Ptr = KBox<MchannelFile>;
    type RegistrationData = Arc<Device>;

    const ATTRIBUTES: &'static [&'static CStr] = ATTRIBUTES;

    fn open(
        _file: &crate::support::fs::File,
        misc: &MiscDeviceRegistration<Self>,
    ) -> Result<KBox<MchannelFile>> {
        Ok(KBox::new(
            MchannelFile {
                dev: misc.data().clone(),
            },
            GFP_KERNEL,
        )?)
    }

    fn show_attribute(dev: &Arc<Device>, index: usize, out: &mut AttributeBuffer<'_>) -> Result {
        let c = &dev.shared.counters;
        let value = match index {
            0 => dev.shared.threads.live() as u64,
            1 => c.parks.load(Ordering::Relaxed),
            2 => c.park_misses.load(Ordering::Relaxed),
            3 => c.forks.load(Ordering::Relaxed),
            4 => c.fork_misses.load(Ordering::Relaxed),
            5 => dev.fabric.lock().perf.misses,
            6 => dev.shared.park_cost.ns(),
            7 => dev.shared.park_cost.min_run_ns(),
            _ => return Err(EINVAL),
        };
        writeln!(out, "{}", value).map_err(|_| EINVAL)
    }

    fn ioctl(
        this: &MchannelFile,
        _file: &crate::support::fs::File,
        cmd: u32,
        arg: usize,
    ) -> Result<isize> {
        let user = UserSlice::new(arg, size_of_cmd(cmd));
        let dev = &this.dev;
        match cmd {
            abi::REGISTER_COMPONENT => dev.register_component(user)?,
            abi::CREATE_CHANNEL => dev.create_channel(user)?,
            abi::SET_CHANNEL => dev.set_channel(user)?,
            abi::DESTROY_CHANNEL => dev.destroy_channel(user)?,
            abi::ATTACH => dev.attach(user)?,
            abi::DETACH => dev.detach(user)?,
            abi::INJECT => dev.inject(user)?,
            abi::QUERY_CHANNEL => dev.query_channel(user)?,
            abi::REPORT => dev.report(user)?,
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }
}
