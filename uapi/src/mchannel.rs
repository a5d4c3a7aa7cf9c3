//! ABI of `/dev/mchannel` (`mchannel_sched`): fabric components, channels
//! (and the groups above them for hierarchical sharing), attaching threads
//! and processes, injected congestion signals, and per-channel statistics.
//! Documented in `Documentation/cxlfabric/mchannel.rst`.
//!
//! Every structure is `#[repr(C)]` of integers with explicit padding (its
//! size is asserted below). Names are NUL-padded bytes; rates are bytes per
//! second, times nanoseconds, fractions parts per million. Ids are chosen
//! by the kernel. Operations that change anything need `CAP_SYS_NICE`.
//! Attaching needs rights on the channel (its owner's uid, or
//! `CAP_SYS_NICE`) and on the thread (the right to renice it); callers
//! without `CAP_SYS_NICE` attach at most a per-user number of threads
//! (`EDQUOT` past it) and never the last slots of the table, which stay
//! for privileged callers.

use super::ioctl::{iow, iowr};

/// Device node: `/dev/mchannel`.
pub const DEVICE_NAME: &str = "mchannel";
/// ioctl type byte of `/dev/mchannel`.
pub const IOC_TYPE: u8 = 0xCA;
/// Bytes of a name field: up to 31 name bytes and a NUL.
pub const NAME_BYTES: usize = 32;
/// Components on one channel's path (host port, switch, endpoint, and
/// one more level of switching).
pub const PATH_MAX: usize = 4;
/// `ChannelSpec::parent` of a channel or group directly under its
/// components.
pub const NO_PARENT: u32 = u32::MAX;
/// Largest weight (weights are integers from 1). The control core has its
/// own (`mchannel_sched/core/src/window.rs`); `core/tests/abi_agreement.rs`
/// holds them equal.
pub const WEIGHT_MAX: u32 = 10_000;
/// Run window bounds: T_W may be set from 50 us to 10 ms. Shortest
/// run window, ns.
pub const T_W_MIN_NS: u64 = 50_000;
/// Longest run window, ns (10 ms).
pub const T_W_MAX_NS: u64 = 10_000_000;
/// Run window of a channel that gives none (`t_w_ns` 0), ns (100 us).
pub const T_W_DEFAULT_NS: u64 = 100_000;

/// Kinds of fabric component (`ComponentSpec::kind`): a host's port.
pub const COMPONENT_HOST_PORT: u32 = 1;
/// A switch.
pub const COMPONENT_SWITCH: u32 = 2;
/// An endpoint (the memory device).
pub const COMPONENT_ENDPOINT: u32 = 3;

/// A fabric component (`REGISTER_COMPONENT`; the kernel fills `id`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ComponentSpec {
    /// Kernel-chosen id (out).
    pub id: u32,
    /// `COMPONENT_*`.
    pub kind: u32,
    /// Configured maximum capacity, bytes per second (> 0).
    pub max_capacity: u64,
    /// Name, NUL padded.
    pub name: [u8; NAME_BYTES],
}

/// `ChannelSpec::flags`: a group (tenant, application) that channels or
/// groups name as parent; threads attach to channels only.
pub const CHANNEL_GROUP: u32 = 1;
/// `ChannelSpec::flags`: best effort (weight ignored: it gets what the
/// weighted channels leave).
pub const CHANNEL_BEST_EFFORT: u32 = 2;
/// `ChannelSpec::flags`: `owner_uid` names the channel's owner (with
/// `CREATE_CHANNEL`, or to change it with `SET_CHANNEL`). Without it a
/// new channel is owned by its creator's effective uid and `owner_uid`
/// must be 0.
pub const CHANNEL_OWNER: u32 = 4;

/// `ChannelSpec::meter`: how a channel's bytes are counted (the rate and
/// demand its budget is computed from).
/// Not metered: its threads run unthrottled (`meter_scale` 0).
pub const METER_NONE: u32 = 0;
/// Emulated: `meter_scale` bytes per microsecond of running
/// (`1..=METER_SCALE_MAX`), for testbeds with no usable PMU.
pub const METER_EMULATED: u32 = 1;
/// A perf event per thread (`perf_type`, `perf_config`, counting user
/// mode only), each event worth `meter_scale` bytes
/// (`1..=PERF_BYTES_MAX`; 64 for cache-line events).
pub const METER_PERF: u32 = 2;
/// The threads report the bytes they move (`REPORT`; `meter_scale` 0).
pub const METER_REPORTED: u32 = 3;
/// The emulated meter's largest rate, bytes per microsecond (1 TB/s).
pub const METER_SCALE_MAX: u64 = 1_000_000;
/// Most bytes one perf event may stand for.
pub const PERF_BYTES_MAX: u64 = 1 << 20;

/// `ChannelSpec::perf_type`: the event types of `<linux/perf_event.h>`
/// a channel may use (dynamic PMU types are not accepted):
/// `PERF_TYPE_HARDWARE`.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_HW_CACHE`.
pub const PERF_TYPE_HW_CACHE: u32 = 3;
/// `PERF_TYPE_RAW`.
pub const PERF_TYPE_RAW: u32 = 4;
/// `perf_config` values of `<linux/perf_event.h>` the tools name: LLC
/// misses (the default meter on hardware) and on-CPU time in ns (a
/// software event, so a PMU-less testbed can run the perf path too):
/// `PERF_COUNT_HW_CACHE_MISSES`.
pub const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
/// `PERF_COUNT_SW_TASK_CLOCK`: on-CPU time, ns.
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;

/// A channel or group (`CREATE_CHANNEL`, the kernel fills `id`; and
/// `SET_CHANNEL`, which changes weight, T_W and the meter of `id`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelSpec {
    /// Kernel-chosen id (out of `CREATE_CHANNEL`; in for `SET_CHANNEL`).
    pub id: u32,
    /// `CHANNEL_*`.
    pub flags: u32,
    /// `1..=WEIGHT_MAX`.
    pub weight: u32,
    /// Id of the parent group, or `NO_PARENT`.
    pub parent: u32,
    /// Components on the path (a child's path is its parent's).
    pub path: [u32; PATH_MAX],
    /// Components used in `path` (0 for a child, which takes its parent's).
    pub path_len: u32,
    /// `METER_*` (a group has none).
    pub meter: u32,
    /// Run window T_W (`T_W_MIN_NS..=T_W_MAX_NS`; 0: the default).
    pub t_w_ns: u64,
    /// Per `meter`: bytes per microsecond of running, or per perf event.
    pub meter_scale: u64,
    /// `METER_PERF`: the event's `perf_event_attr::config`.
    pub perf_config: u64,
    /// `METER_PERF`: `PERF_TYPE_*`.
    pub perf_type: u32,
    /// With `CHANNEL_OWNER`: the uid (in the initial user namespace)
    /// that may attach its threads without `CAP_SYS_NICE`.
    pub owner_uid: u32,
    /// Name, NUL padded.
    pub name: [u8; NAME_BYTES],
}

/// `AttachArgs::flags`: the whole process (every thread, and the threads
/// it creates later), not one thread.
pub const ATTACH_PROCESS: u32 = 1;

/// `ATTACH` and `DETACH` (`channel` is ignored by `DETACH`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttachArgs {
    /// The channel to attach to (`ATTACH`).
    pub channel: u32,
    /// `ATTACH_*`.
    pub flags: u32,
    /// Thread id, or process id with `ATTACH_PROCESS` (0: the caller).
    pub pid: i32,
    /// Padding, 0.
    pub _pad: u32,
}

/// `INJECT`: a component's congestion signal (Eq. 6's L: the share of
/// overloaded responses, or backpressure): either fixed, as the testbed's
/// hardware would give it, or from a model of a device that delivers
/// `model_capacity` bytes per second (responses are marked overloaded
/// from 90 % of it on; see `Documentation/cxlfabric/mchannel.rst`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CongestionArgs {
    /// The component's id.
    pub component: u32,
    /// `0..=1_000_000`; 0 with a model.
    pub signal_ppm: u32,
    /// Non-zero: the model's throughput, bytes per second.
    pub model_capacity: u64,
}

/// `QUERY_CHANNEL`: the caller sets `id`, the kernel the rest.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStat {
    /// The channel's id (in).
    pub id: u32,
    /// Threads attached.
    pub threads: u32,
    /// Smoothed rate and demand, bytes per second.
    pub rate: u64,
    /// Smoothed demand, bytes per second.
    pub demand: u64,
    /// Fair share per unit of weight on its path.
    pub alpha: u64,
    /// Current run budget per window.
    pub t_r_ns: u64,
    /// Run window T_W, ns.
    pub t_w_ns: u64,
    /// Windows closed, and the time its threads spent parked.
    pub windows: u64,
    /// Time its threads spent parked (throttled), ns.
    pub throttled_ns: u64,
    /// The time its threads ran in those windows, and their budgets
    /// (running beyond them is debt, paid back by later windows).
    pub run_ns: u64,
    /// Run budgets granted for those windows, ns.
    pub granted_ns: u64,
    /// The most one window of one thread ran beyond its budget in the last
    /// control period (how late the budget timer fires; later windows
    /// pay it back).
    pub max_overrun_ns: u64,
}

/// sysfs: `/sys/class/misc/mchannel/channels/<name>/<attribute>`, one
/// decimal value per file, updated every control period (rates in bytes
/// per second, times in nanoseconds; `parent` is `NO_PARENT` or a group's
/// id). The module's names are checked against these at build time.
pub const SYSFS_ROOT: &str = "/sys/class/misc/mchannel";
/// The attribute files of each channel directory.
pub const CHANNEL_ATTRS: [&str; 16] = [
    "id",
    "weight",
    "parent",
    "meter",
    "threads",
    "rate",
    "demand",
    "alpha",
    "t_r_ns",
    "t_w_ns",
    "windows",
    "throttled_ns",
    "run_ns",
    "granted_ns",
    "max_overrun_ns",
    "owner_uid",
];
/// `.../components/<name>/<attribute>` (`kind` is `COMPONENT_*`; `load_ppm`
/// and `signal_ppm` are parts per million; `rate` is F of every host;
/// `model_capacity` is the congestion model's throughput, 0 when the
/// signal is injected; `peers` counts the other live hosts using it,
/// `owner` is the host index that publishes its alpha).
pub const COMPONENT_ATTRS: [&str; 11] = [
    "id",
    "kind",
    "max_capacity",
    "capacity",
    "rate",
    "load_ppm",
    "alpha",
    "signal_ppm",
    "model_capacity",
    "peers",
    "owner",
];

/// Registers a fabric component ([`ComponentSpec`]).
pub const REGISTER_COMPONENT: u32 = iowr::<ComponentSpec>(IOC_TYPE, 1);
/// Creates a channel or group ([`ChannelSpec`]).
pub const CREATE_CHANNEL: u32 = iowr::<ChannelSpec>(IOC_TYPE, 2);
/// Changes weight, T_W and meter of channel `id` ([`ChannelSpec`]).
pub const SET_CHANNEL: u32 = iow::<ChannelSpec>(IOC_TYPE, 3);
/// Destroys a channel or group (its id, a `u32`); `EBUSY` while threads
/// are attached or children remain.
pub const DESTROY_CHANNEL: u32 = iow::<u32>(IOC_TYPE, 4);
/// Attaches a thread or process to a channel ([`AttachArgs`]).
pub const ATTACH: u32 = iow::<AttachArgs>(IOC_TYPE, 5);
/// Detaches a thread or process ([`AttachArgs`]).
pub const DETACH: u32 = iow::<AttachArgs>(IOC_TYPE, 6);
/// Sets a component's congestion signal ([`CongestionArgs`]).
pub const INJECT: u32 = iow::<CongestionArgs>(IOC_TYPE, 7);
/// Reads a channel's statistics ([`ChannelStat`]).
pub const QUERY_CHANNEL: u32 = iowr::<ChannelStat>(IOC_TYPE, 8);
/// The calling thread, attached to a `METER_REPORTED` channel, moved this
/// many bytes since its last report (`u64`).
pub const REPORT: u32 = iow::<u64>(IOC_TYPE, 9);

// The layout is the ABI: no implicit padding, fixed sizes.
const _: () = {
    assert!(core::mem::size_of::<ComponentSpec>() == 16 + NAME_BYTES);
    assert!(core::mem::size_of::<ChannelSpec>() == 16 + 4 * PATH_MAX + 8 + 32 + NAME_BYTES);
    assert!(core::mem::size_of::<AttachArgs>() == 16);
    assert!(core::mem::size_of::<CongestionArgs>() == 16);
    assert!(core::mem::size_of::<ChannelStat>() == 8 + 8 * 10);
};

/// A name as NUL-padded ABI bytes; `None` if it does not fit (one byte is
/// kept for the NUL) or holds a NUL or a control character.
pub fn name_bytes(name: &str) -> Option<[u8; NAME_BYTES]> {
    let b = name.as_bytes();
    if b.is_empty() || b.len() >= NAME_BYTES || b.iter().any(|&c| c < 0x20 || c == 0x7f) {
        return None;
    }
    let mut out = [0u8; NAME_BYTES];
    out.get_mut(..b.len())?.copy_from_slice(b);
    Some(out)
}

/// The name in ABI bytes, if it is NUL-terminated, non-empty and
/// printable (what the kernel accepts).
pub fn name_of(bytes: &[u8; NAME_BYTES]) -> Option<&str> {
    let len = bytes.iter().position(|&c| c == 0)?;
    let name = core::str::from_utf8(bytes.get(..len)?).ok()?;
    name_bytes(name).map(|_| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_are_refused() {
        let b = name_bytes("tenant-a").unwrap();
        assert_eq!(name_of(&b), Some("tenant-a"));
        assert_eq!(name_bytes(""), None);
        assert_eq!(name_bytes(&"x".repeat(NAME_BYTES)), None);
        assert!(name_bytes(&"x".repeat(NAME_BYTES - 1)).is_some());
        assert_eq!(name_bytes("a\nb"), None);
        assert_eq!(name_of(&[b'x'; NAME_BYTES]), None, "no NUL");
        let mut ctl = [0u8; NAME_BYTES];
        ctl[0] = 0x1b;
        assert_eq!(name_of(&ctl), None);
    }

    #[test]
    fn commands_are_distinct() {
        let all = [
            REGISTER_COMPONENT,
            CREATE_CHANNEL,
            SET_CHANNEL,
            DESTROY_CHANNEL,
            ATTACH,
            DETACH,
            INJECT,
            QUERY_CHANNEL,
            REPORT,
        ];
        for (i, a) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|b| a != b));
        }
    }

    #[test]
    fn the_window_bounds_hold_the_default() {
        assert!((T_W_MIN_NS..=T_W_MAX_NS).contains(&T_W_DEFAULT_NS));
    }
}
