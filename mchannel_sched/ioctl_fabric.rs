// SPDX-License-Identifier: GPL-2.0

//! The fabric's ioctls (`chardev.rs` dispatches them): components,
//! channels and groups, injected congestion, and a channel's statistics.
//! All but `QUERY_CHANNEL` need `CAP_SYS_NICE`.

#![deny(clippy::arithmetic_side_effects)]

use crate::chardev::Device;
use crate::control::congestion::Congestion;
use crate::control::estimator::Estimator;
use crate::control::fixed::Q32;
use crate::fabric::{self, Channel, Fabric};
use crate::ioctl_checks::{
    check_flags, check_name, check_owner, check_weight_meter, check_window, not_created,
};
use crate::ioctl_rights::require_nice;
use crate::meter::ChannelMeter;
use crate::support::cred;
use crate::support::kvec::VecExt;
use crate::support::uapi::mchannel as abi;
use crate::support::uapi::{ReadAbi, WriteAbi};
use crate::sysfs::ChannelAttrs;
use kernel::prelude::*;
use kernel::uaccess::UserSlice;

/// A new channel of `spec`, checked, named `name`, owned by `owner`, on
/// `path` (its components, and the groups above it), with `meter` and
/// windows of `t_w` nanoseconds (its first budget: the whole window).
fn new_channel(
    spec: &abi::ChannelSpec,
    name: [u8; abi::NAME_BYTES],
    owner: u32,
    (path, depth): (KVec<u32>, u8),
    meter: ChannelMeter,
    t_w: u64,
) -> Result<Channel> {
    let window = fabric::run_window(t_w)?;
    Ok(Channel {
        name,
        flags: spec.flags & !abi::CHANNEL_OWNER,
        weight: spec.weight,
        owner,
        parent: spec.parent,
        depth,
        path,
        alphas: [u64::MAX; abi::PATH_MAX],
        sums: (0, 0),
        window,
        meter,
        estimator: Estimator::default(),
        alpha: u64::MAX,
        t_r_ns: t_w,
        windows: 0,
        throttled_ns: 0,
        run_ns: 0,
        granted_ns: 0,
        max_overrun_ns: 0,
        threads: 0,
        next_rank: 0,
        place: (0, 1),
        attrs: ChannelAttrs::new()?,
        dir: None,
    })
}

impl Device {
    pub(crate) fn register_component(&self, user: UserSlice) -> Result {
        require_nice("REGISTER_COMPONENT")?;
        let (mut reader, mut writer) = user.reader_writer();
        let mut spec: abi::ComponentSpec = reader.read_abi()?;
        let name = check_name(&spec.name, "component")?;
        if !(abi::COMPONENT_HOST_PORT..=abi::COMPONENT_ENDPOINT).contains(&spec.kind) {
            refuse!(EINVAL, "mchannel: unknown component kind {}\n", spec.kind);
        }
        if spec.max_capacity == 0 {
            refuse!(EINVAL, "mchannel: component capacity 0\n");
        }
        let mut fabric = self.fabric.lock();
        spec.id = fabric
            .new_component(name, spec.kind, spec.max_capacity)
            .map_err(|e| not_created(e, "component", fabric::MAX_COMPONENTS))?;
        if let Err(e) = writer.write_abi(&spec) {
            // The caller cannot learn the id: undo (it is the last one).
            fabric.components.pop();
            return Err(e);
        }
        Ok(())
    }

    pub(crate) fn create_channel(&self, user: UserSlice) -> Result {
        require_nice("CREATE_CHANNEL")?;
        let (mut reader, mut writer) = user.reader_writer();
        let mut spec: abi::ChannelSpec = reader.read_abi()?;
        let name = check_name(&spec.name, "channel")?;
        check_flags(&spec)?;
        let meter = check_weight_meter(&spec)?;
        let owner = check_owner(&spec)?.unwrap_or_else(cred::current_euid);
        let t_w = check_window(spec.t_w_ns)?;
        let mut fabric = self.fabric.lock();
        let path = if spec.parent == abi::NO_PARENT {
            (Self::path_of(&fabric, &spec)?, 0)
        } else {
            Self::inherited_path(&fabric, &spec)?
        };
        let channel = new_channel(&spec, name, owner, path, meter, t_w)?;
        spec.id = fabric
            .new_channel(channel)
            .map_err(|e| not_created(e, "channel", fabric::MAX_CHANNELS))?;
        spec.t_w_ns = t_w;
        if let Err(e) = writer.write_abi(&spec) {
            if let Some(slot) = fabric.channels.get_mut(spec.id as usize) {
                *slot = None;
            }
            return Err(e);
        }
        Ok(())
    }

    /// The components on a top-level channel's path, each once.
    fn path_of(fabric: &Fabric, spec: &abi::ChannelSpec) -> Result<KVec<u32>> {
        let len = spec.path_len as usize;
        let Some(path) = spec.path.get(..len) else {
            refuse!(
                EINVAL,
                "mchannel: path of {} components, {} at most\n",
                len,
                abi::PATH_MAX
            );
        };
        let mut ids = KVec::with_capacity(len, GFP_KERNEL)?;
        for (i, &c) in path.iter().enumerate() {
            if fabric.components.get(c as usize).is_none() {
                refuse!(ENOENT, "mchannel: no component {}\n", c);
            }
            if path.get(..i).is_some_and(|before| before.contains(&c)) {
                refuse!(EINVAL, "mchannel: component {} twice on a path\n", c);
            }
            ids.push(c, GFP_KERNEL)?;
        }
        Ok(ids)
    }

    /// A child's path (its parent group's) and depth.
    fn inherited_path(fabric: &Fabric, spec: &abi::ChannelSpec) -> Result<(KVec<u32>, u8)> {
        let Some(parent) = fabric.channel(spec.parent) else {
            refuse!(ENOENT, "mchannel: no parent group {}\n", spec.parent);
        };
        if !parent.is_group() {
            refuse!(EINVAL, "mchannel: parent {} is not a group\n", spec.parent);
        }
        if spec.path_len != 0 {
            refuse!(EINVAL, "mchannel: a child takes its parent's path\n");
        }
        let depth = parent.depth.saturating_add(1);
        // A group needs room for the channels under it.
        let below = usize::from(spec.flags & abi::CHANNEL_GROUP != 0);
        if usize::from(depth).saturating_add(below) >= fabric::MAX_DEPTH {
            refuse!(
                EINVAL,
                "mchannel: {} levels at most (groups, then channels)\n",
                fabric::MAX_DEPTH
            );
        }
        let mut ids = KVec::with_capacity(parent.path.len(), GFP_KERNEL)?;
        for &c in parent.path.iter() {
            ids.push(c, GFP_KERNEL)?;
        }
        Ok((ids, depth))
    }

    pub(crate) fn set_channel(&self, user: UserSlice) -> Result {
        require_nice("SET_CHANNEL")?;
        let spec: abi::ChannelSpec = user.reader().read_abi()?;
        let meter = check_weight_meter(&spec)?;
        let owner = check_owner(&spec)?;
        let t_w = check_window(spec.t_w_ns)?;
        let window = fabric::run_window(t_w)?;
        let mut fabric = self.fabric.lock();
        let Some(ch) = fabric.channel_mut(spec.id) else {
            refuse!(ENOENT, "mchannel: no channel {}\n", spec.id);
        };
        if ch.is_group() && spec.meter != abi::METER_NONE {
            refuse!(EINVAL, "mchannel: a group runs no threads: no meter\n");
        }
        ch.weight = spec.weight;
        if let Some(uid) = owner {
            // Threads attached already stay: ownership rules new attaches.
            ch.owner = uid;
        }
        if ch.meter != meter {
            // Counts in the old meter's units go; a perf counter for the
            // old event is dropped next period and one made for the new.
            self.shared.threads.for_each(|a| {
                if a.channel() == spec.id {
                    a.reset_meter();
                }
            });
        }
        ch.meter = meter;
        ch.window = window;
        // The next control period recomputes T_R for the new window.
        ch.t_r_ns = ch.t_r_ns.min(t_w);
        ch.publish(spec.id as usize);
        Ok(())
    }

    pub(crate) fn destroy_channel(&self, user: UserSlice) -> Result {
        require_nice("DESTROY_CHANNEL")?;
        let id: u32 = user.reader().read()?;
        let mut fabric = self.fabric.lock();
        if fabric.channel(id).is_none() {
            refuse!(ENOENT, "mchannel: no channel {}\n", id);
        }
        let mut users = 0usize;
        self.shared.threads.for_each(|a| {
            if a.channel() == id {
                users = users.saturating_add(1);
            }
        });
        if users > 0 {
            refuse!(
                EBUSY,
                "mchannel: channel {} has {} attached threads\n",
                id,
                users
            );
        }
        if fabric.channels.iter().flatten().any(|c| c.parent == id) {
            refuse!(EBUSY, "mchannel: group {} has children\n", id);
        }
        if let Some(slot) = fabric.channels.get_mut(id as usize) {
            *slot = None;
        }
        Ok(())
    }

    pub(crate) fn inject(&self, user: UserSlice) -> Result {
        require_nice("INJECT")?;
        let args: abi::CongestionArgs = user.reader().read_abi()?;
        if args.signal_ppm > 1_000_000 {
            refuse!(
                EINVAL,
                "mchannel: signal {} ppm is above 1000000\n",
                args.signal_ppm
            );
        }
        let signal = if args.model_capacity == 0 {
            Congestion::Injected(Q32::from_ppm(args.signal_ppm))
        } else if args.signal_ppm != 0 {
            refuse!(EINVAL, "mchannel: a signal or a model, not both\n");
        } else {
            Congestion::Model {
                capacity: args.model_capacity,
            }
        };
        let mut fabric = self.fabric.lock();
        let Some(c) = fabric.components.get_mut(args.component as usize) else {
            refuse!(ENOENT, "mchannel: no component {}\n", args.component);
        };
        c.signal = signal;
        Ok(())
    }

    pub(crate) fn query_channel(&self, user: UserSlice) -> Result {
        let (mut reader, mut writer) = user.reader_writer();
        let mut stat: abi::ChannelStat = reader.read_abi()?;
        let fabric = self.fabric.lock();
        let Some(ch) = fabric.channel(stat.id) else {
            refuse!(ENOENT, "mchannel: no channel {}\n", stat.id);
        };
        let mut threads = 0u32;
        self.shared.threads.for_each(|a| {
            if a.channel() == stat.id {
                threads = threads.saturating_add(1);
            }
        });
        stat = abi::ChannelStat {
            id: stat.id,
            threads,
            rate: ch.estimator.rate(),
            demand: ch.estimator.demand(),
            alpha: ch.alpha,
            t_r_ns: ch.t_r_ns,
            t_w_ns: ch.window.t_w_ns(),
            windows: ch.windows,
            throttled_ns: ch.throttled_ns,
            run_ns: ch.run_ns,
            granted_ns: ch.granted_ns,
            max_overrun_ns: ch.max_overrun_ns,
        };
        drop(fabric);
        writer.write_abi(&stat)
    }
}
