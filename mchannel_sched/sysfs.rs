// SPDX-License-Identifier: GPL-2.0

//! sysfs: `/sys/class/misc/mchannel/channels/<name>/` and
//! `.../components/<name>/`, one value per file, as the control loop last
//! computed them (every K, and at creation and SET_CHANNEL). Reads take no
//! lock: each directory shows atomics that the fabric, under its lock,
//! publishes.

use crate::support::sysfs::{AttributeBuffer, Attributes, Dir, NoAttributes, Parent};
use crate::support::uapi::mchannel as abi;
use core::fmt::Write;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// Whether `ours` are the ABI's names, in order.
const fn same(ours: &[&CStr], abi: &[&str]) -> bool {
    if ours.len() != abi.len() {
        return false;
    }
    let mut i = 0;
    while i < ours.len() {
        // `a` ends in its NUL.
        let (a, b) = (ours[i].as_bytes_with_nul(), abi[i].as_bytes());
        if a.len() != b.len() + 1 {
            return false;
        }
        let mut j = 0;
        while j < b.len() {
            if a[j] != b[j] {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

const _: () = assert!(same(&CHANNEL_NAMES, &abi::CHANNEL_ATTRS));
const _: () = assert!(same(&COMPONENT_NAMES, &abi::COMPONENT_ATTRS));

/// Rates are bytes per second, times nanoseconds (`uapi`'s names).
const CHANNEL_NAMES: [&CStr; 16] = [
    c_str!("id"),
    c_str!("weight"),
    c_str!("parent"),
    c_str!("meter"),
    c_str!("threads"),
    c_str!("rate"),
    c_str!("demand"),
    c_str!("alpha"),
    c_str!("t_r_ns"),
    c_str!("t_w_ns"),
    c_str!("windows"),
    c_str!("throttled_ns"),
    c_str!("run_ns"),
    c_str!("granted_ns"),
    c_str!("max_overrun_ns"),
    c_str!("owner_uid"),
];

/// A channel's values, in `CHANNEL_NAMES` order.
pub(crate) type ChannelAttrs = Values<ChannelNames, { CHANNEL_NAMES.len() }>;

pub(crate) struct ChannelNames;

impl Names for ChannelNames {
    const NAMES: &'static [&'static CStr] = &CHANNEL_NAMES;
}

/// `load` and `signal` are parts per million.
const COMPONENT_NAMES: [&CStr; 11] = [
    c_str!("id"),
    c_str!("kind"),
    c_str!("max_capacity"),
    c_str!("capacity"),
    c_str!("rate"),
    c_str!("load_ppm"),
    c_str!("alpha"),
    c_str!("signal_ppm"),
    c_str!("model_capacity"),
    c_str!("peers"),
    c_str!("owner"),
];

/// A component's values, in `COMPONENT_NAMES` order.
pub(crate) type ComponentAttrs = Values<ComponentNames, { COMPONENT_NAMES.len() }>;

pub(crate) struct ComponentNames;

impl Names for ComponentNames {
    const NAMES: &'static [&'static CStr] = &COMPONENT_NAMES;
}

/// The file names of a kind of directory.
pub(crate) trait Names: Send + Sync + 'static {
    const NAMES: &'static [&'static CStr];
}

/// One directory's values, one per name of `K`, in order.
pub(crate) struct Values<K: Names, const N: usize>([AtomicU64; N], PhantomData<K>);

impl<K: Names, const N: usize> Values<K, N> {
    /// One value per name.
    const FITS: () = assert!(N == K::NAMES.len());

    pub(crate) fn new() -> Result<Arc<Self>> {
        let () = Self::FITS;
        Ok(Arc::new(
            Values([(); N].map(|()| AtomicU64::new(0)), PhantomData),
            GFP_KERNEL,
        )?)
    }

    pub(crate) fn publish(&self, values: &[u64; N]) {
        for (a, &v) in self.0.iter().zip(values) {
            a.store(v, Ordering::Relaxed);
        }
    }
}

impl<K: Names, const N: usize> Attributes for Values<K, N> {
    const NAMES: &'static [&'static CStr] = K::NAMES;

    fn show(&self, index: usize, out: &mut AttributeBuffer<'_>) -> Result {
        let v = self.0.get(index).ok_or(EINVAL)?.load(Ordering::Relaxed);
        writeln!(out, "{}", v).map_err(|_| EINVAL)
    }
}

/// `channels/` and `components/` under the device.
pub(crate) struct Root {
    pub(crate) channels: Dir<NoAttributes>,
    pub(crate) components: Dir<NoAttributes>,
}

impl Root {
    pub(crate) fn new(device: Parent<'_>) -> Result<Root> {
        let none = || Arc::new(NoAttributes, GFP_KERNEL);
        Ok(Root {
            channels: Dir::new(device, b"channels", none()?)?,
            components: Dir::new(device, b"components", none()?)?,
        })
    }
}

/// A channel's or component's directory, named after it.
pub(crate) fn dir_of<T: Attributes>(
    parent: Parent<'_>,
    name: &[u8; abi::NAME_BYTES],
    attrs: &Arc<T>,
) -> Result<Dir<T>> {
    let len = name.iter().position(|&b| b == 0).ok_or(EINVAL)?;
    Dir::new(parent, name.get(..len).ok_or(EINVAL)?, attrs.clone())
}
