// SPDX-License-Identifier: GPL-2.0

//! The net core's and the ethtool core's tables of a [`NetDevice`] type,
//! and the `net_device_ops` trampolines into it.

use super::ethtool::*;
use super::{NetDevice, Netdev, SkBuff, Stats};
use crate::bindings;
use crate::helpers;
use kernel::error::from_result;
use kernel::ffi::{c_int, c_uint, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

/// The net core's and the ethtool core's view of a driver's callbacks:
/// one pair of tables per [`NetDevice`] type, in read-only memory.
pub(super) struct Ops<T>(core::marker::PhantomData<T>);

impl<T: NetDevice> Ops<T> {
    pub(super) const NETDEV: bindings::net_device_ops = bindings::net_device_ops {
        ndo_open: Some(ndo_open::<T>),
        ndo_stop: Some(ndo_stop::<T>),
        ndo_start_xmit: Some(ndo_start_xmit::<T>),
        ndo_select_queue: if T::HAS_SELECT_QUEUE {
            Some(ndo_select_queue::<T>)
        } else {
            None
        },
        ndo_get_stats64: Some(ndo_get_stats64::<T>),
        ndo_change_mtu: Some(ndo_change_mtu::<T>),
        ndo_validate_addr: Some(bindings::eth_validate_addr),
        ndo_set_mac_address: Some(bindings::eth_mac_addr),
        // The net core arms its TX watchdog only if this is set.
        ndo_tx_timeout: if T::HAS_TX_TIMEOUT {
            Some(ndo_tx_timeout::<T>)
        } else {
            None
        },
        // SAFETY: every other field is an optional callback, for which
        // zero means "not provided".
        ..unsafe { core::mem::zeroed() }
    };

    pub(super) const ETHTOOL: bindings::ethtool_ops = {
        // SAFETY: as above: optional callbacks and flags, zero is "none".
        let mut ops: bindings::ethtool_ops = unsafe { core::mem::zeroed() };
        ops.supported_coalesce_params = bindings::CXLF_ETHTOOL_COALESCE_RX_USECS
            | bindings::CXLF_ETHTOOL_COALESCE_RX_MAX_FRAMES;
        ops.get_drvinfo = Some(et_get_drvinfo::<T>);
        ops.get_link = Some(bindings::ethtool_op_get_link);
        ops.get_ringparam = Some(et_get_ringparam::<T>);
        ops.set_ringparam = Some(et_set_ringparam::<T>);
        ops.get_channels = Some(et_get_channels::<T>);
        ops.set_channels = Some(et_set_channels::<T>);
        ops.get_coalesce = Some(et_get_coalesce::<T>);
        ops.set_coalesce = Some(et_set_coalesce::<T>);
        ops.get_priv_flags = Some(et_get_priv_flags::<T>);
        ops.set_priv_flags = Some(et_set_priv_flags::<T>);
        ops.get_sset_count = Some(et_get_sset_count::<T>);
        ops.get_strings = Some(et_get_strings::<T>);
        ops.get_ethtool_stats = Some(et_get_stats::<T>);
        ops
    };
}

/// The `Arc<T>` of a registered interface, borrowed for a callback.
///
/// # Safety
///
/// `dev` is an interface registered by [`Registration<T>`] whose
/// callbacks are running (so it is not yet unregistered).
pub(super) unsafe fn this<'a, T: NetDevice>(dev: *mut bindings::net_device) -> ArcRef<'a, T> {
    // SAFETY: the private area holds the foreign form of the
    // registration's `Arc<T>` (its invariant), live until unregistering
    // has waited out every callback; `ManuallyDrop` keeps this borrow
    // from releasing it.
    ArcRef(
        core::mem::ManuallyDrop::new(unsafe {
            Arc::<T>::from_foreign(*helpers::cxlf_netdev_priv(dev).cast::<*const c_void>())
        }),
        core::marker::PhantomData,
    )
}

/// A borrowed `Arc<T>` (does not drop the reference).
pub(super) struct ArcRef<'a, T>(
    pub(super) core::mem::ManuallyDrop<Arc<T>>,
    core::marker::PhantomData<&'a ()>,
);

/// # Safety
///
/// Called by the net core, under RTNL, for an interface registered by
/// [`Registration<T>`].
unsafe extern "C" fn ndo_open<T: NetDevice>(dev: *mut bindings::net_device) -> c_int {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    from_result(|| T::open(&this.0, &dev).map(|()| 0))
}

/// # Safety
///
/// As [`ndo_open`].
unsafe extern "C" fn ndo_stop<T: NetDevice>(dev: *mut bindings::net_device) -> c_int {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    from_result(|| T::stop(&this.0, &dev).map(|()| 0))
}

/// # Safety
///
/// Called by the net core with the TX queue's lock held, for an interface
/// registered by [`Registration<T>`], with a buffer the driver now owns.
unsafe extern "C" fn ndo_start_xmit<T: NetDevice>(
    skb: *mut bindings::sk_buff,
    dev: *mut bindings::net_device,
) -> bindings::netdev_tx_t {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    // SAFETY: the stack set the buffer's queue before handing it over.
    let queue = unsafe { (*skb).queue_mapping };
    // INVARIANT: the stack hands the driver `skb` to send or free.
    let skb = SkBuff { raw: skb };
    match T::start_xmit(&this.0, &dev, skb, queue) {
        Ok(()) => bindings::netdev_tx_NETDEV_TX_OK,
        Err(back) => {
            // The stack keeps the buffer and retries.
            core::mem::forget(back);
            bindings::netdev_tx_NETDEV_TX_BUSY
        }
    }
}

/// # Safety
///
/// Called by the net core in transmit context, for an interface
/// registered by [`Registration<T>`], with a buffer it keeps.
unsafe extern "C" fn ndo_select_queue<T: NetDevice>(
    dev: *mut bindings::net_device,
    skb: *mut bindings::sk_buff,
    _sb_dev: *mut bindings::net_device,
) -> u16 {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    // Lent for the call: never dropped here, so never freed.
    let skb = core::mem::ManuallyDrop::new(SkBuff { raw: skb });
    T::select_queue(&this.0, &dev, &skb)
}

/// # Safety
///
/// As [`ndo_open`] (without RTNL); `out` is the caller's, zeroed.
unsafe extern "C" fn ndo_get_stats64<T: NetDevice>(
    dev: *mut bindings::net_device,
    out: *mut bindings::rtnl_link_stats64,
) {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    let mut s = Stats::default();
    T::stats(&this.0, &mut s);
    // SAFETY: `out` is valid for writes for the call (function contract).
    let out = unsafe { &mut *out };
    out.rx_packets = s.rx_packets;
    out.tx_packets = s.tx_packets;
    out.rx_bytes = s.rx_bytes;
    out.tx_bytes = s.tx_bytes;
    out.rx_errors = s.rx_errors;
    out.tx_errors = s.tx_errors;
    out.rx_dropped = s.rx_dropped;
    out.tx_dropped = s.tx_dropped;
}

/// # Safety
///
/// As [`ndo_open`]; `mtu` is within the range given at registration.
unsafe extern "C" fn ndo_change_mtu<T: NetDevice>(
    dev: *mut bindings::net_device,
    mtu: c_int,
) -> c_int {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: the interface lives for the call.
    let netdev = unsafe { Netdev::from_raw(dev) };
    from_result(|| {
        let new = u32::try_from(mtu).map_err(|_| EINVAL)?;
        T::change_mtu(&this.0, &netdev, new)?;
        // The driver took it; the device's MTU is ours to set.
        // SAFETY: the interface lives for the call; under RTNL.
        unsafe { helpers::cxlf_netdev_write_mtu(dev, new) };
        Ok(0)
    })
}

/// # Safety
///
/// Called by the net core's TX watchdog (softirq, every TX queue frozen)
/// for an interface registered by [`Registration<T>`].
unsafe extern "C" fn ndo_tx_timeout<T: NetDevice>(dev: *mut bindings::net_device, queue: c_uint) {
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    T::tx_timeout(&this.0, &dev, queue);
}
