//! ABI of `/dev/cxlnic` (`cxlnic_drv`): the key-value offload (issue
//! #29) of a CXL-NIC's interface, named by its ifindex (in the caller's
//! network namespace). Documented in `Documentation/cxlfabric/cxlnic.rst`
//! ("Key-value offload").
//!
//! Every structure is `#[repr(C)]` of integers with explicit padding (its
//! size is asserted below) and starts with `version`, which the caller
//! sets to [`ABI_VERSION`]: the module refuses any other with `EINVAL`,
//! so a later layout can be told apart. The device node is mode 0600;
//! [`KVS_CONFIG`], [`KVS_PUT`] and [`KVS_DEL`] also need `CAP_NET_ADMIN`.
//!
//! Errors: `ENODEV` the ifindex is not one of this driver's interfaces
//! (or it is going away), `EOPNOTSUPP` its device has no KVS offload,
//! `EINVAL` a bad argument (or enabling outside type2 mode), `ENOENT` no
//! such key (`KVS_GET`, `KVS_DEL`), `ENOSPC` both buckets of a new key
//! are full, `ETIMEDOUT` the device did not take a command or config
//! within a second (a command stays posted: the device may still carry
//! it out), `EPERM` without `CAP_NET_ADMIN`. Each refusal is logged
//! (rate-limited) with its reason.

use super::ioctl::{iow, iowr};

/// Device node: `/dev/cxlnic`.
pub const DEVICE_NAME: &str = "cxlnic";
/// ioctl type byte of `/dev/cxlnic`.
pub const IOC_TYPE: u8 = 0xCB;
/// The layout of this file's structures (their `version` field).
pub const ABI_VERSION: u32 = 1;

/// The longest key, bytes (keys are 1 to this). Equal to the ring
/// core's `kvs::KEY_MAX` (the module asserts it).
pub const KEY_MAX: usize = 32;
/// The longest value, bytes (values are 0 to this). Equal to
/// `kvs::VALUE_MAX`.
pub const VALUE_MAX: usize = 64;
/// Room for counters in [`KvsStatsArgs`].
pub const STATS_MAX: usize = 48;

/// `KVS_CONFIG`: enables (`enable` 1) or disables (0) the offload of an
/// interface whose port is in type2 mode.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvsConfigArgs {
    /// [`ABI_VERSION`].
    pub version: u32,
    /// The interface (`if_nametoindex`).
    pub ifindex: u32,
    /// 1: serve; 0: stop serving (the pairs stay in the host table).
    pub enable: u32,
    /// The UDP port requests come to; 0: the module parameter
    /// `kvs_port` (default 7878).
    pub udp_port: u16,
    /// Padding, 0.
    pub _pad: u16,
    /// The IPv4 address requests come to, network order; all zero: any.
    pub ipv4: [u8; 4],
    /// Cache buckets in device memory (a power of two up to 4096, 4
    /// pairs each); 0: the default (1024).
    pub cache_buckets: u32,
}

/// `KVS_PUT` (in), `KVS_GET` (key in, value out), `KVS_DEL` (key in).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvsPairArgs {
    /// [`ABI_VERSION`].
    pub version: u32,
    /// The interface.
    pub ifindex: u32,
    /// Bytes of the key, 1 to [`KEY_MAX`].
    pub key_len: u32,
    /// Bytes of the value, 0 to [`VALUE_MAX`] (`KVS_GET`: out).
    pub val_len: u32,
    /// The key in its first `key_len` bytes (the rest is ignored).
    pub key: [u8; KEY_MAX],
    /// The value in its first `val_len` bytes (`KVS_GET`: out, the rest
    /// zero).
    pub value: [u8; VALUE_MAX],
}

impl Default for KvsPairArgs {
    fn default() -> KvsPairArgs {
        KvsPairArgs {
            version: ABI_VERSION,
            ifindex: 0,
            key_len: 0,
            val_len: 0,
            key: [0; KEY_MAX],
            value: [0; VALUE_MAX],
        }
    }
}

/// [`KvsStatsArgs::flags`]: the offload is enabled.
pub const KVS_ENABLED: u32 = 1;
/// [`KvsStatsArgs::flags`]: the device took the enabling config and
/// serves.
pub const KVS_SERVING: u32 = 2;
/// [`KvsStatsArgs::flags`]: the host table is allocated.
pub const KVS_TABLE: u32 = 4;

/// The driver's own counters, after the device's in
/// [`KvsStatsArgs::counters`] (`ethtool -S` names them `kvs_<name>`).
pub const DRIVER_STATS: [&str; 3] = ["bad_records", "commands_timed_out", "log_applied"];

/// `KVS_STATS`: the caller sets `version` and `ifindex`, the module the
/// rest.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvsStatsArgs {
    /// [`ABI_VERSION`].
    pub version: u32,
    /// The interface.
    pub ifindex: u32,
    /// `KVS_*` flags.
    pub flags: u32,
    /// The UDP port configured (0 before the first enable).
    pub udp_port: u16,
    /// Padding, 0.
    pub _pad: u16,
    /// The IPv4 address configured (zero: any).
    pub ipv4: [u8; 4],
    /// Cache buckets configured.
    pub cache_buckets: u32,
    /// Host table buckets (0 before it is allocated).
    pub host_buckets: u32,
    /// Counters of the device, in the order of the ring core's
    /// `kvs::KVS_STATS_NAMES`.
    pub device_count: u32,
    /// Counters of the driver that follow them, in [`DRIVER_STATS`]
    /// order.
    pub driver_count: u32,
    /// Padding, 0.
    pub _pad2: u32,
    /// `device_count` device counters, then `driver_count` driver ones.
    pub counters: [u64; STATS_MAX],
}

impl Default for KvsStatsArgs {
    fn default() -> KvsStatsArgs {
        KvsStatsArgs {
            version: ABI_VERSION,
            ifindex: 0,
            flags: 0,
            udp_port: 0,
            _pad: 0,
            ipv4: [0; 4],
            cache_buckets: 0,
            host_buckets: 0,
            device_count: 0,
            driver_count: 0,
            _pad2: 0,
            counters: [0; STATS_MAX],
        }
    }
}

/// Enables or disables the offload ([`KvsConfigArgs`]).
pub const KVS_CONFIG: u32 = iow::<KvsConfigArgs>(IOC_TYPE, 1);
/// Writes a pair ([`KvsPairArgs`]): a new key goes into the host table,
/// an existing one is updated through the device while it serves.
pub const KVS_PUT: u32 = iow::<KvsPairArgs>(IOC_TYPE, 2);
/// Reads a key's value ([`KvsPairArgs`]; `ENOENT` if absent).
pub const KVS_GET: u32 = iowr::<KvsPairArgs>(IOC_TYPE, 3);
/// Deletes a key ([`KvsPairArgs`], value ignored; `ENOENT` if absent).
pub const KVS_DEL: u32 = iow::<KvsPairArgs>(IOC_TYPE, 4);
/// Reads the offload's state and counters ([`KvsStatsArgs`]).
pub const KVS_STATS: u32 = iowr::<KvsStatsArgs>(IOC_TYPE, 5);

// The layout is the ABI: no implicit padding, fixed sizes.
const _: () = {
    assert!(core::mem::size_of::<KvsConfigArgs>() == 24);
    assert!(core::mem::size_of::<KvsPairArgs>() == 16 + KEY_MAX + VALUE_MAX);
    assert!(core::mem::size_of::<KvsStatsArgs>() == 40 + 8 * STATS_MAX);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_distinct_and_sized() {
        let all = [KVS_CONFIG, KVS_PUT, KVS_GET, KVS_DEL, KVS_STATS];
        for (i, a) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|b| a != b));
        }
        assert_eq!(
            super::super::ioctl::size_of_cmd(KVS_STATS),
            core::mem::size_of::<KvsStatsArgs>()
        );
    }

    #[test]
    fn defaults_carry_the_version() {
        assert_eq!(KvsPairArgs::default().version, ABI_VERSION);
        assert_eq!(KvsStatsArgs::default().version, ABI_VERSION);
    }
}
