// SPDX-License-Identifier: GPL-2.0

//! `/dev/mchannel`: the ioctls of `uapi/src/mchannel.rs`. Every argument
//! is checked; every refusal has an errno and a (rate-limited) log line
//! that says why.
//!
//! Lock order: `fabric` (a mutex), then the thread table's insert lock,
//! then a thread's own lock (see `threads.rs`). The scheduler's own locks
//! (the runqueue's, a task's `pi_lock`) are taken outside ours, since the
//! `sched_switch` probe takes a thread's lock under the runqueue lock:
//! nothing wakes a task while holding a thread's lock.

#![deny(clippy::arithmetic_side_effects)]

use crate::control::congestion::Congestion;
use crate::control::estimator::Estimator;
use crate::control::fixed::Q32;
use crate::control::thread::RunState;
use crate::fabric::{self, Channel, Fabric};
use crate::meter::{self, ChannelMeter};
use crate::support::cred;
use crate::support::error::edquot;
use crate::support::kvec::VecExt;
use crate::support::miscdevice::{AttributeBuffer, MiscDevice, MiscDeviceRegistration};
use crate::support::pr_info_ratelimited;
use crate::support::task;
use crate::support::time::monotonic_ns;
use crate::support::uapi::ioctl::size_of_cmd;
use crate::support::uapi::mchannel as abi;
use crate::support::uapi::{ReadAbi, WriteAbi};
use crate::sysfs::ChannelAttrs;
use crate::threads::{Attached, Shared};
use core::fmt::Write;
use core::sync::atomic::Ordering;
use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::task::Task;
use kernel::types::ARef;
use kernel::uaccess::UserSlice;

/// The device: what every open file shares.
#[pin_data]
pub(crate) struct Device {
    pub(crate) shared: Arc<Shared>,
    #[pin]
    pub(crate) fabric: Mutex<Fabric>,
}

/// Logs why a new component or channel (`what`, at most `max` of them)
/// was refused, if the caller caused it; returns the error.
fn not_created(e: Error, what: &str, max: usize) -> Error {
    if e == EEXIST {
        pr_info_ratelimited!("mchannel: a {} has that name\n", what);
    } else if e == ENOSPC {
        pr_info_ratelimited!("mchannel: {} {}s at most\n", max, what);
    }
    e
}

fn require_nice(what: &str) -> Result {
    if !cred::capable_sys_nice() {
        refuse!(EPERM, "mchannel: {} needs CAP_SYS_NICE\n", what);
    }
    Ok(())
}

/// A name from the ABI: NUL-terminated, printable, zero-padded.
fn check_name(bytes: &[u8; abi::NAME_BYTES], what: &str) -> Result<[u8; abi::NAME_BYTES]> {
    let Some(name) = abi::name_of(bytes) else {
        refuse!(
            EINVAL,
            "mchannel: {} name is empty, unterminated or not printable\n",
            what
        );
    };
    // It names a sysfs directory.
    if name.contains('/') || name == "." || name == ".." {
        refuse!(
            EINVAL,
            "mchannel: {} name may not hold '/' or be '.' or '..'\n",
            what
        );
    }
    if bytes
        .get(name.len()..)
        .map_or(true, |tail| tail.iter().any(|&b| b != 0))
    {
        refuse!(EINVAL, "mchannel: {} name has bytes after its NUL\n", what);
    }
    Ok(*bytes)
}

fn check_window(t_w_ns: u64) -> Result<u64> {
    let t_w = if t_w_ns == 0 {
        abi::T_W_DEFAULT_NS
    } else {
        t_w_ns
    };
    if !(abi::T_W_MIN_NS..=abi::T_W_MAX_NS).contains(&t_w) {
        refuse!(
            EINVAL,
            "mchannel: T_W {} ns is outside {}..={} ns\n",
            t_w,
            abi::T_W_MIN_NS,
            abi::T_W_MAX_NS
        );
    }
    Ok(t_w)
}

/// The weight and the meter of `spec`, checked (a perf event is tried on
/// the caller).
fn check_weight_meter(spec: &abi::ChannelSpec) -> Result<ChannelMeter> {
    if spec.weight == 0 || spec.weight > abi::WEIGHT_MAX {
        refuse!(
            EINVAL,
            "mchannel: weight {} is outside 1..={}\n",
            spec.weight,
            abi::WEIGHT_MAX
        );
    }
    meter::meter_of(spec)
}

/// The owner `spec` names (`CHANNEL_OWNER`), or `None`; `owner_uid` is 0
/// without the flag.
fn check_owner(spec: &abi::ChannelSpec) -> Result<Option<u32>> {
    if spec.flags & abi::CHANNEL_OWNER != 0 {
        return Ok(Some(spec.owner_uid));
    }
    if spec.owner_uid != 0 {
        refuse!(
            EINVAL,
            "mchannel: owner_uid {} without CHANNEL_OWNER\n",
            spec.owner_uid
        );
    }
    Ok(None)
}

impl Device {
    fn register_component(&self, user: UserSlice) -> Result {
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

    fn create_channel(&self, user: UserSlice) -> Result {
        require_nice("CREATE_CHANNEL")?;
        let (mut reader, mut writer) = user.reader_writer();
        let mut spec: abi::ChannelSpec = reader.read_abi()?;
        let name = check_name(&spec.name, "channel")?;
        let known = abi::CHANNEL_GROUP | abi::CHANNEL_BEST_EFFORT | abi::CHANNEL_OWNER;
        if spec.flags & !known != 0 {
            refuse!(
                EINVAL,
                "mchannel: unknown channel flags {:#x}\n",
                spec.flags
            );
        }
        let group = spec.flags & abi::CHANNEL_GROUP != 0;
        if group && (spec.meter != abi::METER_NONE || spec.flags & abi::CHANNEL_BEST_EFFORT != 0) {
            refuse!(
                EINVAL,
                "mchannel: a group runs no threads: no meter, not best effort\n"
            );
        }
        let meter = check_weight_meter(&spec)?;
        let owner = check_owner(&spec)?.unwrap_or_else(cred::current_euid);
        let t_w = check_window(spec.t_w_ns)?;
        let mut fabric = self.fabric.lock();
        let (ids, depth) = if spec.parent == abi::NO_PARENT {
            (Self::path_of(&fabric, &spec)?, 0)
        } else {
            Self::inherited_path(&fabric, &spec)?
        };
        let window = fabric::run_window(t_w)?;
        let channel = Channel {
            name,
            flags: spec.flags & !abi::CHANNEL_OWNER,
            weight: spec.weight,
            owner,
            parent: spec.parent,
            depth,
            path: ids,
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
            attrs: ChannelAttrs::new()?,
            dir: None,
        };
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

    fn set_channel(&self, user: UserSlice) -> Result {
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

    fn destroy_channel(&self, user: UserSlice) -> Result {
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

    /// The target of ATTACH or DETACH (the caller for pid 0).
    fn target(args: &abi::AttachArgs) -> Result<ARef<Task>> {
        if args.flags & !abi::ATTACH_PROCESS != 0 || args._pad != 0 {
            refuse!(EINVAL, "mchannel: unknown attach flags {:#x}\n", args.flags);
        }
        if args.pid < 0 {
            refuse!(EINVAL, "mchannel: pid {} is negative\n", args.pid);
        }
        let found = if args.pid == 0 {
            Some(ARef::from(kernel::current!()))
        } else {
            task::get_by_vpid(args.pid)
        };
        let Some(t) = found else {
            refuse!(ESRCH, "mchannel: no thread {}\n", args.pid);
        };
        if !task::is_live_user(&t) {
            refuse!(
                EINVAL,
                "mchannel: thread {} is a kernel thread or exiting\n",
                args.pid
            );
        }
        Ok(t)
    }

    /// The target and whether the caller is privileged, if it may act on
    /// the target at all (the renice rule).
    fn permitted(args: &abi::AttachArgs, verb: &str) -> Result<(ARef<Task>, bool)> {
        let t = Self::target(args)?;
        let privileged = cred::capable_sys_nice();
        if !privileged && !task::may_renice(&t) {
            refuse!(
                EPERM,
                "mchannel: may not {} thread {} (could not renice it)\n",
                verb,
                args.pid
            );
        }
        Ok((t, privileged))
    }

    /// The threads an ATTACH or DETACH acts on.
    fn threads_of(&self, t: &Task, process: bool) -> Result<KVec<ARef<Task>>> {
        let mut out = KVec::new();
        if !process {
            out.push(ARef::from(t), GFP_KERNEL)?;
            return Ok(out);
        }
        let mut n = 0usize;
        task::for_each_thread(t, |_| {
            n = n.saturating_add(1);
            true
        });
        // Room for threads created meanwhile; the second pass of an
        // ATTACH catches any more.
        let room = n.saturating_add(16);
        let mut out = KVec::with_capacity(room, GFP_KERNEL)?;
        task::for_each_thread(t, |th| {
            out.len() < room && out.push(ARef::from(th), GFP_NOWAIT).is_ok()
        });
        Ok(out)
    }

    fn attach(&self, user: UserSlice) -> Result {
        let args: abi::AttachArgs = user.reader().read_abi()?;
        let (t, privileged) = Self::permitted(&args, "attach")?;
        let fabric = self.fabric.lock();
        let Some(ch) = fabric.channel(args.channel) else {
            refuse!(ENOENT, "mchannel: no channel {}\n", args.channel);
        };
        if ch.is_group() {
            refuse!(
                EINVAL,
                "mchannel: {} is a group; threads attach to its channels\n",
                args.channel
            );
        }
        // Rights on the channel: a user may not crowd a channel it does
        // not own (its threads would share that channel's budget).
        let user = (!privileged).then(cred::current_euid);
        if let Some(uid) = user.filter(|&uid| uid != ch.owner) {
            refuse!(
                EPERM,
                "mchannel: channel {} belongs to uid {}; uid {} needs CAP_SYS_NICE to attach to it\n",
                args.channel,
                ch.owner,
                uid
            );
        }
        let (t_w, t_r) = (ch.window.t_w_ns(), ch.t_r_ns);
        let mut done = KVec::new();
        let result = self.attach_threads(&t, &args, user, (t_w, t_r), &mut done);
        if result.is_err() {
            // All or nothing: the threads this call attached go again.
            for th in done.iter() {
                if let Some(a) = self.shared.threads.remove(th) {
                    if a.is_parked() {
                        a.task().wake_up();
                    }
                }
            }
        }
        drop(fabric);
        result?;
        if done.is_empty() {
            refuse!(
                EBUSY,
                "mchannel: every thread of {} is attached already\n",
                args.pid
            );
        }
        Ok(())
    }

    /// Attaches `t` (or its process) to `args.channel` with budget `t_r`
    /// of windows `t_w`, for `user`'s quota (`None`: privileged); `done`
    /// collects the threads attached.
    fn attach_threads(
        &self,
        t: &Task,
        args: &abi::AttachArgs,
        user: Option<u32>,
        (t_w, t_r): (u64, u64),
        done: &mut KVec<ARef<Task>>,
    ) -> Result {
        let process = args.flags & abi::ATTACH_PROCESS != 0;
        // Two passes: a thread created during the first by one not yet
        // attached is in the list by the second; later ones are followed
        // by the fork probe.
        for pass in 0..2 {
            if pass == 1 && !process {
                break;
            }
            for th in self.threads_of(t, process)?.iter() {
                // Room first: a thread attached is always recorded.
                done.reserve(1, GFP_KERNEL)?;
                // A park item in case its slot has none (slots keep
                // theirs), allocated before any lock; freed below if not
                // needed.
                let mut spare = Some(self.shared.park_item(GFP_KERNEL)?);
                let run = RunState::new(monotonic_ns(), t_w, t_r);
                let added = self
                    .shared
                    .threads
                    .insert(th, || Attached::new(th, args.channel, process, user, run));
                match added {
                    Ok(()) if task::is_exiting(th) => {
                        // Its exit probe may have run already and would
                        // never remove it: PF_EXITING is set before it.
                        drop(self.shared.threads.remove(th));
                    }
                    Ok(()) => {
                        let _ = self.shared.threads.with(th, |a| a.refill(&mut spare));
                        drop(spare);
                        done.push(th.clone(), GFP_NOWAIT)?;
                        self.shared.settle(th);
                    }
                    Err(e) if e == EEXIST && (process || pass == 1) => {}
                    Err(e) if e == EEXIST => {
                        refuse!(EBUSY, "mchannel: thread {} is attached already\n", args.pid)
                    }
                    Err(e) => return Err(Self::not_attached(e, user, &self.shared)),
                }
            }
        }
        Ok(())
    }

    /// Logs why a thread could not be attached; returns the error.
    fn not_attached(e: Error, user: Option<u32>, shared: &Shared) -> Error {
        match (user, e) {
            (Some(_), e) if e == ENOSPC => pr_info_ratelimited!(
                "mchannel: the thread table's part for callers without CAP_SYS_NICE is full\n"
            ),
            (None, e) if e == ENOSPC => pr_info_ratelimited!("mchannel: thread table full\n"),
            (Some(uid), e) if e == edquot() => pr_info_ratelimited!(
                "mchannel: uid {} has {} threads attached, its quota (user_threads)\n",
                uid,
                shared.threads.user_threads(uid)
            ),
            _ => {}
        }
        e
    }

    fn detach(&self, user: UserSlice) -> Result {
        let args: abi::AttachArgs = user.reader().read_abi()?;
        let (t, privileged) = Self::permitted(&args, "detach")?;
        let process = args.flags & abi::ATTACH_PROCESS != 0;
        let _fabric = self.fabric.lock();
        let mut detached = 0usize;
        for th in self.threads_of(&t, process)?.iter() {
            if !privileged {
                // Only the privileged may undo what the privileged did.
                let mut by_admin = false;
                if let Some(privileged) = self.shared.threads.with(th, |a| a.privileged()) {
                    by_admin = privileged;
                }
                if by_admin {
                    refuse!(
                        EPERM,
                        "mchannel: thread attached with CAP_SYS_NICE; detaching needs it\n"
                    );
                }
            }
            if let Some(a) = self.shared.threads.remove(th) {
                detached = detached.saturating_add(1);
                if a.is_parked() {
                    a.task().wake_up();
                }
            }
        }
        if detached == 0 {
            refuse!(ENOENT, "mchannel: thread {} is not attached\n", args.pid);
        }
        Ok(())
    }

    fn inject(&self, user: UserSlice) -> Result {
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

    /// The caller's own count of bytes moved, for a reported meter.
    fn report(&self, user: UserSlice) -> Result {
        let bytes: u64 = user.reader().read()?;
        let me = kernel::current!();
        let fabric = self.fabric.lock();
        let Some(id) = self.shared.threads.with(me, |a| a.channel()) else {
            refuse!(
                EINVAL,
                "mchannel: REPORT from a thread that is not attached\n"
            );
        };
        if fabric.channel(id).map(|c| c.meter.kind()) != Some(abi::METER_REPORTED) {
            refuse!(
                EINVAL,
                "mchannel: REPORT to channel {}, whose meter is not reported\n",
                id
            );
        }
        self.shared.threads.with(me, |a| a.count(bytes));
        Ok(())
    }

    fn query_channel(&self, user: UserSlice) -> Result {
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
