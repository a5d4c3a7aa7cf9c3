// SPDX-License-Identifier: GPL-2.0

//! `/dev/cxlnic` (mode 0600): the key-value offload's ioctls of
//! `uapi/src/cxlnic.rs`, each naming an interface by ifindex. Every
//! argument is checked, every refusal logged (rate-limited) with its
//! errno; the ones that change anything (`KVS_CONFIG`, `KVS_PUT`,
//! `KVS_DEL`) also need `CAP_NET_ADMIN`, checked at each call.
//!
//! Why ioctls on a misc device and not a generic netlink family (as
//! ethtool's own): the support layer has misc devices
//! (`support::miscdevice`) and the project's tools already speak ioctls
//! through the `uapi` crate, while 6.12 has no Rust bindings for netlink
//! families (`genl_register_family`, attribute policies, `nla_*` are all
//! C macros and inlines) and a wrapper for them would be a new layer.
//! The per-interface switch is also an ethtool private flag (`kvs`).
//!
//! Locks: RTNL (`KVS_CONFIG`, as ethtool takes it), then the NIC's
//! `kvs` mutex; `nics` alone, released before either.

#![deny(clippy::arithmetic_side_effects)]

use crate::nics::Nics;
use crate::port::Port;
use crate::ring::kvs::{KEY_MAX, KVS_STATS_NAMES, VALUE_MAX};
use crate::support::cred;
use crate::support::error::eopnotsupp;
use crate::support::fs::File;
use crate::support::miscdevice::{MiscDevice, MiscDeviceRegistration};
use crate::support::netdev::NetdevRef;
use crate::support::pr_info_ratelimited;
use crate::support::uapi::cxlnic as abi;
use crate::support::uapi::ioctl::size_of_cmd;
use crate::support::uapi::{ReadAbi, WriteAbi};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserSlice;

// One limit for the kernel and the tools.
const _: () = assert!(abi::KEY_MAX == KEY_MAX && abi::VALUE_MAX == VALUE_MAX);
const _: () = assert!(
    KVS_STATS_NAMES
        .len()
        .saturating_add(abi::DRIVER_STATS.len())
        <= abi::STATS_MAX
);

/// Refuses with `err`, saying why (rate-limited: any caller can cause it).
macro_rules! refuse {
    ($err:expr, $($arg:tt)+) => {{
        pr_info_ratelimited!($($arg)+);
        return Err($err);
    }};
}

/// An open file: it reaches the bound NICs.
pub(crate) struct CxlnicFile {
    nics: Arc<Nics>,
}

#[vtable]
impl MiscDevice for CxlnicFile {
    type Ptr = KBox<CxlnicFile>;
    type RegistrationData = Arc<Nics>;

    fn open(_file: &File, misc: &MiscDeviceRegistration<Self>) -> Result<KBox<CxlnicFile>> {
        Ok(KBox::new(
            CxlnicFile {
                nics: misc.data().clone(),
            },
            GFP_KERNEL,
        )?)
    }

    fn ioctl(this: &CxlnicFile, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let user = UserSlice::new(arg, size_of_cmd(cmd));
        match cmd {
            abi::KVS_CONFIG => this.config(user)?,
            abi::KVS_PUT => this.put(user)?,
            abi::KVS_GET => this.get(user)?,
            abi::KVS_DEL => this.del(user)?,
            abi::KVS_STATS => this.stats(user)?,
            _ => return Err(ENOTTY),
        }
        Ok(0)
    }
}

/// `what` changes the store: it needs `CAP_NET_ADMIN`.
fn require_admin(what: &str) -> Result {
    if !cred::capable_net_admin() {
        refuse!(EPERM, "cxlnic: {} needs CAP_NET_ADMIN\n", what);
    }
    Ok(())
}

fn check_version(version: u32, what: &str) -> Result {
    if version != abi::ABI_VERSION {
        refuse!(
            EINVAL,
            "cxlnic: {} of ABI version {}, this module speaks {}\n",
            what,
            version,
            abi::ABI_VERSION
        );
    }
    Ok(())
}

/// The key and value of `a` (the value only `with_value`), checked.
fn pair(a: &abi::KvsPairArgs, with_value: bool) -> Result<(&[u8], &[u8])> {
    let key = usize::try_from(a.key_len)
        .ok()
        .filter(|n| (1..=KEY_MAX).contains(n));
    let Some(key) = key.and_then(|n| a.key.get(..n)) else {
        refuse!(
            EINVAL,
            "cxlnic: key of {} bytes (1 to {})\n",
            a.key_len,
            KEY_MAX
        );
    };
    if !with_value {
        return Ok((key, &[]));
    }
    let val = usize::try_from(a.val_len).ok().filter(|&n| n <= VALUE_MAX);
    let Some(value) = val.and_then(|n| a.value.get(..n)) else {
        refuse!(
            EINVAL,
            "cxlnic: value of {} bytes (0 to {})\n",
            a.val_len,
            VALUE_MAX
        );
    };
    Ok((key, value))
}

impl CxlnicFile {
    /// The port of interface `ifindex` (in the caller's namespace), if it
    /// is one of this driver's.
    fn port(&self, ifindex: u32) -> Result<(Arc<Port>, NetdevRef)> {
        match self.nics.find(ifindex) {
            Some(found) => Ok(found),
            None => refuse!(ENODEV, "cxlnic: ifindex {} is not a CXL-NIC\n", ifindex),
        }
    }

    fn config(&self, user: UserSlice) -> Result {
        require_admin("KVS_CONFIG")?;
        let a: abi::KvsConfigArgs = user.reader().read_abi()?;
        check_version(a.version, "KVS_CONFIG")?;
        if a._pad != 0 || a.enable > 1 {
            refuse!(EINVAL, "cxlnic: KVS_CONFIG: enable is 0 or 1, padding 0\n");
        }
        let (port, dev) = self.port(a.ifindex)?;
        let want = port.kvs_settings(a.udp_port, a.ipv4, a.cache_buckets);
        // Nothing is copied back: the call's effect is all it returns.
        port.kvs_switch(dev.get().name(), a.enable == 1, want)
    }

    fn put(&self, user: UserSlice) -> Result {
        require_admin("KVS_PUT")?;
        let a: abi::KvsPairArgs = user.reader().read_abi()?;
        check_version(a.version, "KVS_PUT")?;
        let (key, value) = pair(&a, true)?;
        let (port, dev) = self.port(a.ifindex)?;
        // Nothing is copied back (write-only): once the store took the
        // pair, the call has done what it says.
        port.kvs.put(dev.get().name(), key, value)
    }

    fn get(&self, user: UserSlice) -> Result {
        let (mut reader, mut writer) = user.reader_writer();
        let mut a: abi::KvsPairArgs = reader.read_abi()?;
        check_version(a.version, "KVS_GET")?;
        let (key, _) = pair(&a, false)?;
        let (port, dev) = self.port(a.ifindex)?;
        let rec = port.kvs.get(dev.get().name(), key)?;
        let value = rec.value();
        a.value = [0; VALUE_MAX];
        a.value
            .get_mut(..value.len())
            .ok_or(EINVAL)?
            .copy_from_slice(value);
        a.val_len = u32::try_from(value.len()).map_err(|_| EINVAL)?;
        // A read: a failed copy changed nothing.
        writer.write_abi(&a)
    }

    fn del(&self, user: UserSlice) -> Result {
        require_admin("KVS_DEL")?;
        let a: abi::KvsPairArgs = user.reader().read_abi()?;
        check_version(a.version, "KVS_DEL")?;
        let (key, _) = pair(&a, false)?;
        let (port, dev) = self.port(a.ifindex)?;
        // Write-only, as `put`.
        port.kvs.del(dev.get().name(), key)
    }

    fn stats(&self, user: UserSlice) -> Result {
        let (mut reader, mut writer) = user.reader_writer();
        let mut a: abi::KvsStatsArgs = reader.read_abi()?;
        check_version(a.version, "KVS_STATS")?;
        let (port, dev) = self.port(a.ifindex)?;
        let kvs = &port.kvs;
        let Some(area) = &kvs.area else {
            refuse!(
                eopnotsupp(),
                "{}: device has no KVS offload\n",
                dev.get().name()
            );
        };
        let snap = kvs.snapshot();
        a.flags = [
            (snap.enabled, abi::KVS_ENABLED),
            (snap.serving, abi::KVS_SERVING),
            (snap.host_buckets.is_some(), abi::KVS_TABLE),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |f, (_, bit)| f | bit);
        a.udp_port = snap.settings.udp_port;
        a._pad = 0;
        a.ipv4 = snap.settings.ipv4;
        a.cache_buckets = snap.settings.cache_buckets;
        a.host_buckets = snap.host_buckets.unwrap_or(0);
        a._pad2 = 0;
        let device = area.stats()?.values();
        let driver = kvs.counters.values();
        a.device_count = u32::try_from(device.len()).map_err(|_| EINVAL)?;
        a.driver_count = u32::try_from(driver.len()).map_err(|_| EINVAL)?;
        a.counters = [0; abi::STATS_MAX];
        for (o, v) in a
            .counters
            .iter_mut()
            .zip(Iterator::chain(device.iter(), driver.iter()))
        {
            *o = *v;
        }
        writer.write_abi(&a)
    }
}
