//! `/dev/cxlnic` from user space: the key-value offload of a CXL-NIC
//! interface (enable, put, get, del, stats). The ABI is
//! `uapi/src/cxlnic.rs`.

use std::fs::{File, OpenOptions};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::Path;
use uapi::cxlnic as abi;

pub use abi::{KvsStatsArgs, ABI_VERSION, DRIVER_STATS, KEY_MAX, VALUE_MAX};

pub const DEFAULT_DEVICE: &str = "/dev/cxlnic";

/// An open `/dev/cxlnic`.
pub struct Cxlnic {
    file: File,
}

fn ioctl<T>(file: &File, cmd: u32, arg: *mut T) -> io::Result<()> {
    // SAFETY: `arg` points to a live value of the type the command
    // expects (the command encodes its size; uapi asserts the layouts).
    let ret = unsafe { nix::libc::ioctl(file.as_raw_fd(), cmd as _, arg) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// `KVS_PUT`/`GET`/`DEL` arguments for `key` (and `value`), checked.
pub fn pair_args(ifindex: u32, key: &[u8], value: &[u8]) -> io::Result<abi::KvsPairArgs> {
    if key.is_empty() || key.len() > KEY_MAX {
        return Err(invalid(format!(
            "a key is 1 to {KEY_MAX} bytes, not {}",
            key.len()
        )));
    }
    if value.len() > VALUE_MAX {
        return Err(invalid(format!(
            "a value is 0 to {VALUE_MAX} bytes, not {}",
            value.len()
        )));
    }
    let mut a = abi::KvsPairArgs {
        ifindex,
        key_len: key.len() as u32,
        val_len: value.len() as u32,
        ..Default::default()
    };
    a.key[..key.len()].copy_from_slice(key);
    a.value[..value.len()].copy_from_slice(value);
    Ok(a)
}

/// What `KVS_CONFIG` enables with (zeros: the module's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Enable {
    pub udp_port: u16,
    pub ipv4: Option<Ipv4Addr>,
    pub cache_buckets: u32,
}

impl Cxlnic {
    pub fn open(path: impl AsRef<Path>) -> io::Result<Cxlnic> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Cxlnic { file })
    }

    /// Enables the offload of interface `ifindex` (`Some`) or disables it.
    pub fn config(&self, ifindex: u32, enable: Option<Enable>) -> io::Result<()> {
        let e = enable.unwrap_or_default();
        let mut a = abi::KvsConfigArgs {
            version: ABI_VERSION,
            ifindex,
            enable: u32::from(enable.is_some()),
            udp_port: e.udp_port,
            _pad: 0,
            ipv4: e.ipv4.map_or([0; 4], |ip| ip.octets()),
            cache_buckets: e.cache_buckets,
        };
        ioctl(&self.file, abi::KVS_CONFIG, &mut a)
    }

    pub fn put(&self, ifindex: u32, key: &[u8], value: &[u8]) -> io::Result<()> {
        let mut a = pair_args(ifindex, key, value)?;
        ioctl(&self.file, abi::KVS_PUT, &mut a)
    }

    /// The value of `key` (`NotFound`, `ENOENT`, if absent).
    pub fn get(&self, ifindex: u32, key: &[u8]) -> io::Result<Vec<u8>> {
        let mut a = pair_args(ifindex, key, &[])?;
        ioctl(&self.file, abi::KVS_GET, &mut a)?;
        let n = (a.val_len as usize).min(VALUE_MAX);
        Ok(a.value[..n].to_vec())
    }

    pub fn del(&self, ifindex: u32, key: &[u8]) -> io::Result<()> {
        let mut a = pair_args(ifindex, key, &[])?;
        ioctl(&self.file, abi::KVS_DEL, &mut a)
    }

    pub fn stats(&self, ifindex: u32) -> io::Result<Stats> {
        let mut a = KvsStatsArgs {
            ifindex,
            ..Default::default()
        };
        ioctl(&self.file, abi::KVS_STATS, &mut a)?;
        Stats::from_args(&a)
    }

    /// Raw ioctl, for tests that send what the library would not.
    pub fn raw_ioctl<T>(&self, cmd: u32, arg: &mut T) -> io::Result<()> {
        ioctl(&self.file, cmd, arg)
    }
}

/// `KVS_STATS`, named.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    pub enabled: bool,
    pub serving: bool,
    pub table: bool,
    pub udp_port: u16,
    pub ipv4: String,
    pub cache_buckets: u32,
    pub host_buckets: u32,
    /// The device's counters, in `kvs::KVS_STATS_NAMES` order.
    pub device: Vec<(String, u64)>,
    /// The driver's, in `DRIVER_STATS` order.
    pub driver: Vec<(String, u64)>,
}

impl Stats {
    /// The answer named; `InvalidData` if its counts are not the ones
    /// this tool knows.
    pub fn from_args(a: &KvsStatsArgs) -> io::Result<Stats> {
        let names = cxlnic_ring::kvs::KVS_STATS_NAMES;
        let (dev, drv) = (a.device_count as usize, a.driver_count as usize);
        if dev != names.len() || drv != DRIVER_STATS.len() || dev + drv > a.counters.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the module reports {dev} device and {drv} driver counters, this tool knows {} and {}",
                    names.len(),
                    DRIVER_STATS.len()
                ),
            ));
        }
        let named = |names: &[&str], values: &[u64]| {
            names
                .iter()
                .zip(values)
                .map(|(n, v)| (n.to_string(), *v))
                .collect()
        };
        Ok(Stats {
            enabled: a.flags & abi::KVS_ENABLED != 0,
            serving: a.flags & abi::KVS_SERVING != 0,
            table: a.flags & abi::KVS_TABLE != 0,
            udp_port: a.udp_port,
            ipv4: Ipv4Addr::from(a.ipv4).to_string(),
            cache_buckets: a.cache_buckets,
            host_buckets: a.host_buckets,
            device: named(names, &a.counters[..dev]),
            driver: named(&DRIVER_STATS, &a.counters[dev..dev + drv]),
        })
    }
}

/// The errno's name and what it means for `/dev/cxlnic`'s ioctls.
pub fn explain(errno: i32) -> (&'static str, &'static str) {
    use nix::libc;
    match errno {
        libc::ENODEV => (
            "ENODEV",
            "not an interface of cxlnic_drv in this network namespace (or it is going away)",
        ),
        libc::EOPNOTSUPP => ("EOPNOTSUPP", "the device has no KVS offload"),
        libc::EINVAL => (
            "EINVAL",
            "invalid argument: enabling needs the port in type2 mode (ethtool --set-priv-flags IFACE type2 on, while down); the kernel log says which",
        ),
        libc::ENOENT => ("ENOENT", "no such key"),
        libc::ENOSPC => ("ENOSPC", "both buckets of the key in the host table are full"),
        libc::ETIMEDOUT => (
            "ETIMEDOUT",
            "the device did not answer within a second (a command stays posted and may still be carried out)",
        ),
        libc::EPERM => ("EPERM", "changing the store needs CAP_NET_ADMIN"),
        libc::EACCES => ("EACCES", "/dev/cxlnic is mode 0600: run as root"),
        libc::ENOMEM => ("ENOMEM", "no memory for the host table"),
        libc::ENOTTY => ("ENOTTY", "the module does not know this ioctl (an older cxlnic_drv?)"),
        libc::EFAULT => ("EFAULT", "bad address"),
        _ => ("E?", "unexpected error"),
    }
}

/// Why `/dev/cxlnic` (or `--dev`) could not be opened, by errno.
pub fn explain_open(errno: i32) -> (&'static str, &'static str) {
    use nix::libc;
    match errno {
        libc::ENOENT => ("ENOENT", "no such device node: is cxlnic_drv loaded?"),
        libc::EACCES => ("EACCES", "the device node is mode 0600: run as root"),
        libc::ENXIO | libc::ENODEV => ("ENODEV", "the device node has no driver behind it"),
        _ => ("E?", "cannot open the device node"),
    }
}

/// An open error as "ENOENT (No such file or directory): no such device
/// node: is cxlnic_drv loaded?".
pub fn describe_open(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => {
            let (name, why) = explain_open(code);
            format!("{name} ({err}): {why}")
        }
        None => err.to_string(),
    }
}

/// `err` as "ENOSPC (No space left on device): both buckets ...".
pub fn describe(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => {
            let (name, why) = explain(code);
            format!("{name} ({err}): {why}")
        }
        None => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_checked_and_laid_out() {
        let a = pair_args(3, b"key", b"value").unwrap();
        assert_eq!((a.version, a.ifindex, a.key_len, a.val_len), (1, 3, 3, 5));
        assert_eq!(&a.key[..4], b"key\0");
        assert_eq!(&a.value[..6], b"value\0");
        assert!(pair_args(1, b"", b"").is_err());
        assert!(pair_args(1, &[b'k'; KEY_MAX + 1], b"").is_err());
        assert!(pair_args(1, &[b'k'; KEY_MAX], &[0; VALUE_MAX]).is_ok());
        assert!(pair_args(1, b"k", &[0; VALUE_MAX + 1]).is_err());
    }

    #[test]
    fn stats_are_named_in_abi_order() {
        let names = cxlnic_ring::kvs::KVS_STATS_NAMES;
        let mut a = KvsStatsArgs {
            flags: abi::KVS_ENABLED | abi::KVS_TABLE,
            udp_port: 7878,
            ipv4: [10, 0, 0, 1],
            device_count: names.len() as u32,
            driver_count: DRIVER_STATS.len() as u32,
            ..Default::default()
        };
        for (i, c) in a.counters.iter_mut().enumerate() {
            *c = i as u64;
        }
        let s = Stats::from_args(&a).unwrap();
        assert!(s.enabled && !s.serving && s.table);
        assert_eq!(s.ipv4, "10.0.0.1");
        assert_eq!(s.device[0], (names[0].to_string(), 0));
        assert_eq!(s.driver[0], ("bad_records".to_string(), names.len() as u64));
        a.device_count += 1;
        assert!(
            Stats::from_args(&a).is_err(),
            "a count this tool does not know"
        );
    }

    #[test]
    fn errors_name_the_errno_and_the_reason() {
        let e = io::Error::from_raw_os_error(nix::libc::ENOSPC);
        let d = describe(&e);
        assert!(d.starts_with("ENOSPC ("), "{d}");
        assert!(d.contains("buckets"), "{d}");
        assert_eq!(explain(nix::libc::EOPNOTSUPP).0, "EOPNOTSUPP");
    }
}
