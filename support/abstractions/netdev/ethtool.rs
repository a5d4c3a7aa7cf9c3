// SPDX-License-Identifier: GPL-2.0

//! The `ethtool_ops` callbacks of a [`NetDevice`] type: driver info, ring
//! sizes, channels, coalescing, private flags, strings and statistics.

use super::ops::this;
use super::{Change, NetDevice, Netdev, Params, StringSet, STRING_LEN};
use crate::bindings;
use crate::helpers;
use kernel::error::from_result;
use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;

/// Copies `src` into the C string buffer `dst`, cut and NUL-terminated.
fn copy_cstr(dst: &mut [c_char], src: &[u8]) {
    let n = src.len().min(dst.len().saturating_sub(1));
    for (d, s) in dst.iter_mut().zip(&src[..n]) {
        *d = *s as c_char;
    }
    if let Some(end) = dst.get_mut(n) {
        *end = 0;
    }
}

/// # Safety
///
/// Called by the ethtool core, under RTNL, for an interface registered by
/// [`Registration<T>`]; `info` is the caller's, zeroed.
pub(super) unsafe extern "C" fn et_get_drvinfo<T: NetDevice>(
    dev: *mut bindings::net_device,
    info: *mut bindings::ethtool_drvinfo,
) {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: `info` is valid for the call (function contract).
    let info = unsafe { &mut *info };
    // The module's name (the log prefix is the module's name and a NUL).
    let module = crate::__LOG_PREFIX;
    copy_cstr(
        &mut info.driver,
        module.strip_suffix(b"\0").unwrap_or(module),
    );
    // SAFETY: the interface lives for the call; its parent, if any, too.
    let bus = unsafe { helpers::cxlf_netdev_parent_name(dev) };
    if !bus.is_null() {
        // SAFETY: a live device's name is a NUL-terminated string.
        let bus = unsafe { CStr::from_char_ptr(bus) };
        copy_cstr(&mut info.bus_info, bus.as_bytes());
    }
    T::drvinfo(&this.0, info);
}

/// The driver's settings, for an ethtool callback.
///
/// # Safety
///
/// As [`et_get_drvinfo`].
unsafe fn params<T: NetDevice>(dev: *mut bindings::net_device) -> Result<Params> {
    // SAFETY: a registered interface (function contract).
    T::params(&unsafe { this::<T>(dev) }.0)
}

/// Hands `p`, of which `what` changed, to the driver.
///
/// # Safety
///
/// As [`et_get_drvinfo`].
unsafe fn set_params<T: NetDevice>(
    dev: *mut bindings::net_device,
    p: &Params,
    what: Change,
) -> c_int {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    from_result(|| T::set_params(&this.0, &dev, p, what).map(|()| 0))
}

/// # Safety
///
/// As [`et_get_drvinfo`]; the parameter structs are the caller's.
pub(super) unsafe extern "C" fn et_get_ringparam<T: NetDevice>(
    dev: *mut bindings::net_device,
    ring: *mut bindings::ethtool_ringparam,
    _kring: *mut bindings::kernel_ethtool_ringparam,
    _extack: *mut bindings::netlink_ext_ack,
) {
    // SAFETY: function contract.
    let (Ok(p), ring) = (unsafe { params::<T>(dev) }, unsafe { &mut *ring }) else {
        return;
    };
    ring.rx_max_pending = p.rx_ring_max;
    ring.tx_max_pending = p.tx_ring_max;
    ring.rx_pending = p.rx_ring;
    ring.tx_pending = p.tx_ring;
}

/// # Safety
///
/// As [`et_get_ringparam`].
pub(super) unsafe extern "C" fn et_set_ringparam<T: NetDevice>(
    dev: *mut bindings::net_device,
    ring: *mut bindings::ethtool_ringparam,
    _kring: *mut bindings::kernel_ethtool_ringparam,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    // SAFETY: function contract.
    let ring = unsafe { &*ring };
    // SAFETY: function contract.
    let mut p = match unsafe { params::<T>(dev) } {
        Ok(p) => p,
        Err(e) => return e.to_errno(),
    };
    if ring.rx_mini_pending != 0 || ring.rx_jumbo_pending != 0 {
        return EINVAL.to_errno();
    }
    p.rx_ring = ring.rx_pending;
    p.tx_ring = ring.tx_pending;
    // SAFETY: function contract.
    unsafe { set_params::<T>(dev, &p, Change::Rings) }
}

/// # Safety
///
/// As [`et_get_ringparam`].
pub(super) unsafe extern "C" fn et_get_channels<T: NetDevice>(
    dev: *mut bindings::net_device,
    ch: *mut bindings::ethtool_channels,
) {
    // SAFETY: function contract.
    let (Ok(p), ch) = (unsafe { params::<T>(dev) }, unsafe { &mut *ch }) else {
        return;
    };
    ch.max_combined = p.channels_max;
    ch.combined_count = p.channels;
}

/// # Safety
///
/// As [`et_get_ringparam`].
pub(super) unsafe extern "C" fn et_set_channels<T: NetDevice>(
    dev: *mut bindings::net_device,
    ch: *mut bindings::ethtool_channels,
) -> c_int {
    // SAFETY: function contract.
    let ch = unsafe { &*ch };
    // SAFETY: function contract.
    let mut p = match unsafe { params::<T>(dev) } {
        Ok(p) => p,
        Err(e) => return e.to_errno(),
    };
    if ch.rx_count != 0 || ch.tx_count != 0 || ch.other_count != 0 {
        return EINVAL.to_errno();
    }
    p.channels = ch.combined_count;
    // SAFETY: function contract.
    unsafe { set_params::<T>(dev, &p, Change::Channels) }
}

/// # Safety
///
/// As [`et_get_ringparam`].
pub(super) unsafe extern "C" fn et_get_coalesce<T: NetDevice>(
    dev: *mut bindings::net_device,
    c: *mut bindings::ethtool_coalesce,
    _kc: *mut bindings::kernel_ethtool_coalesce,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    // SAFETY: function contract.
    let c = unsafe { &mut *c };
    // SAFETY: function contract.
    match unsafe { params::<T>(dev) } {
        Ok(p) => {
            c.rx_coalesce_usecs = p.rx_usecs;
            c.rx_max_coalesced_frames = p.rx_frames;
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// As [`et_get_ringparam`].
pub(super) unsafe extern "C" fn et_set_coalesce<T: NetDevice>(
    dev: *mut bindings::net_device,
    c: *mut bindings::ethtool_coalesce,
    _kc: *mut bindings::kernel_ethtool_coalesce,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    // SAFETY: function contract.
    let c = unsafe { &*c };
    // SAFETY: function contract.
    let mut p = match unsafe { params::<T>(dev) } {
        Ok(p) => p,
        Err(e) => return e.to_errno(),
    };
    p.rx_usecs = c.rx_coalesce_usecs;
    p.rx_frames = c.rx_max_coalesced_frames;
    // SAFETY: function contract.
    unsafe { set_params::<T>(dev, &p, Change::Coalesce) }
}

/// # Safety
///
/// As [`et_get_drvinfo`].
pub(super) unsafe extern "C" fn et_get_priv_flags<T: NetDevice>(
    dev: *mut bindings::net_device,
) -> u32 {
    // SAFETY: function contract.
    unsafe { params::<T>(dev) }.map_or(0, |p| p.priv_flags)
}

/// # Safety
///
/// As [`et_get_drvinfo`].
pub(super) unsafe extern "C" fn et_set_priv_flags<T: NetDevice>(
    dev: *mut bindings::net_device,
    flags: u32,
) -> c_int {
    // SAFETY: function contract.
    let mut p = match unsafe { params::<T>(dev) } {
        Ok(p) => p,
        Err(e) => return e.to_errno(),
    };
    p.priv_flags = flags;
    // SAFETY: function contract.
    unsafe { set_params::<T>(dev, &p, Change::PrivFlags) }
}

/// # Safety
///
/// As [`et_get_drvinfo`].
pub(super) unsafe extern "C" fn et_get_sset_count<T: NetDevice>(
    dev: *mut bindings::net_device,
    sset: c_int,
) -> c_int {
    let Some(set) = u32::try_from(sset).ok().and_then(StringSet::from_raw) else {
        return crate::error::eopnotsupp().to_errno();
    };
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    c_int::try_from(T::string_count(&this.0, set)).unwrap_or(0)
}

/// # Safety
///
/// As [`et_get_drvinfo`]; `buf` holds as many strings as
/// [`et_get_sset_count`] said, under the same RTNL hold.
pub(super) unsafe extern "C" fn et_get_strings<T: NetDevice>(
    dev: *mut bindings::net_device,
    sset: u32,
    buf: *mut u8,
) {
    let Some(set) = StringSet::from_raw(sset) else {
        return;
    };
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    let n = T::string_count(&this.0, set);
    // SAFETY: the core sized `buf` from `et_get_sset_count` (the same
    // count: RTNL is held); arrays of u8 need no alignment.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<[u8; STRING_LEN]>(), n) };
    T::strings(&this.0, set, out);
}

/// # Safety
///
/// As [`et_get_drvinfo`]; `data` holds `stats.n_stats` counters.
pub(super) unsafe extern "C" fn et_get_stats<T: NetDevice>(
    dev: *mut bindings::net_device,
    stats: *mut bindings::ethtool_stats,
    data: *mut u64,
) {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: `data` holds `n_stats` counters (function contract).
    let out = unsafe { core::slice::from_raw_parts_mut(data, (*stats).n_stats as usize) };
    T::stat_values(&this.0, out);
}
