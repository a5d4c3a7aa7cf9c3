// SPDX-License-Identifier: GPL-2.0

//! Ethernet network devices. Upstream has no `net_device` abstraction
//! (6.12-6.17; the 2023 RFC series proposed `kernel::net::Device`, a
//! `Registration` and a `DeviceOperations` trait, which this follows):
//! a [`NetDevice`] implementation is the driver's per-interface object,
//! shared ([`Arc`]) with the callbacks; a [`Registration`] allocates and
//! registers the interface and unregisters and frees it on drop, after
//! which no callback runs.
//!
//! The `net_device_ops` and `ethtool_ops` tables are built here, per
//! [`NetDevice`] type, with their trampolines. `struct net_device` stays
//! opaque (6.12's bindings declare it so): its fields and static inlines
//! are reached through one-line helpers (`helpers/netdev.c`).

use super::bindings;
use super::coherent::Coherent;
use super::helpers;
use kernel::error::{from_result, to_result};
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

/// The interface counters `ip -s link` shows.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Stats {
    pub(crate) rx_packets: u64,
    pub(crate) tx_packets: u64,
    pub(crate) rx_bytes: u64,
    pub(crate) tx_bytes: u64,
    pub(crate) rx_errors: u64,
    pub(crate) tx_errors: u64,
    pub(crate) rx_dropped: u64,
    pub(crate) tx_dropped: u64,
}

/// What a driver's interface does when the stack calls it.
pub(crate) trait NetDevice: Send + Sync + Sized + 'static {
    /// `ip link set up` (under RTNL).
    fn open(this: &Arc<Self>, dev: &Netdev<'_>) -> Result;
    /// `ip link set down` (under RTNL; transmits have stopped).
    fn stop(this: &Arc<Self>, dev: &Netdev<'_>) -> Result;
    /// Sends (or drops, counting it) `skb` on TX queue `queue`; `Err`
    /// gives it back to the stack to retry (the queue is full).
    fn start_xmit(
        this: &Arc<Self>,
        dev: &Netdev<'_>,
        skb: SkBuff,
        queue: u16,
    ) -> core::result::Result<(), SkBuff>;
    /// The counters.
    fn stats(this: &Arc<Self>, stats: &mut Stats);
    /// A new MTU (in the range given at registration), while down or up.
    fn change_mtu(this: &Arc<Self>, dev: &Netdev<'_>, mtu: u32) -> Result;
    /// Fills `ethtool -i` beyond the driver and bus names.
    fn drvinfo(_this: &Arc<Self>, _info: &mut bindings::ethtool_drvinfo) {}
    /// The settings `ethtool -g`, `-l`, `-c` and `--show-priv-flags`
    /// show (`EOPNOTSUPP`: none).
    fn params(_this: &Arc<Self>) -> Result<Params> {
        Err(super::error::eopnotsupp())
    }
    /// Takes `p`, of which the part `what` changed (under RTNL, up or
    /// down).
    fn set_params(_this: &Arc<Self>, _dev: &Netdev<'_>, _p: &Params, _what: Change) -> Result {
        Err(super::error::eopnotsupp())
    }
    /// How many strings `set` has (`ethtool -S` counters, private flags).
    fn string_count(_this: &Arc<Self>, _set: StringSet) -> usize {
        0
    }
    /// Writes `set`'s strings, NUL-padded, one per element of `out`.
    fn strings(_this: &Arc<Self>, _set: StringSet, _out: &mut [[u8; STRING_LEN]]) {}
    /// The `ethtool -S` counters, in the order of their strings.
    fn stat_values(_this: &Arc<Self>, _out: &mut [u64]) {}
    /// Whether the interface takes [`NetDevice::tx_timeout`]: only then
    /// does the stack arm its TX watchdog.
    const HAS_TX_TIMEOUT: bool = false;
    /// The stack's TX watchdog: TX queue `queue` has been stopped, with
    /// carrier, longer than the timeout ([`Placement::watchdog_ms`]).
    /// Called in softirq context with every TX queue frozen: record it
    /// and act elsewhere.
    fn tx_timeout(_this: &Arc<Self>, _dev: &Netdev<'_>, _queue: u32) {}
}

/// What ethtool reads and changes (see [`NetDevice::params`]): ring
/// sizes (`-g`/`-G`), queue pairs (`-l`/`-L`), RX coalescing (`-c`/`-C`)
/// and private flags.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Params {
    pub(crate) rx_ring: u32,
    pub(crate) tx_ring: u32,
    pub(crate) rx_ring_max: u32,
    pub(crate) tx_ring_max: u32,
    pub(crate) channels: u32,
    pub(crate) channels_max: u32,
    pub(crate) rx_usecs: u32,
    pub(crate) rx_frames: u32,
    pub(crate) priv_flags: u32,
}

/// The part of [`Params`] an ethtool command changes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Change {
    Rings,
    Channels,
    Coalesce,
    PrivFlags,
}

/// An ethtool string set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum StringSet {
    Stats,
    PrivFlags,
}

/// Bytes of an ethtool string (`ETH_GSTRING_LEN`).
pub(crate) const STRING_LEN: usize = bindings::ETH_GSTRING_LEN as usize;

/// Writes `parts` one after another into `out` as an ethtool string,
/// cut at `STRING_LEN - 1` bytes, NUL-padded.
pub(crate) fn ethtool_string(out: &mut [u8; STRING_LEN], parts: &[&[u8]]) {
    *out = [0; STRING_LEN];
    let bytes = parts.iter().flat_map(|p| p.iter()).take(STRING_LEN - 1);
    for (o, b) in out.iter_mut().zip(bytes) {
        *o = *b;
    }
}

impl StringSet {
    fn from_raw(set: u32) -> Option<StringSet> {
        match set {
            bindings::ethtool_stringset_ETH_SS_STATS => Some(StringSet::Stats),
            bindings::ethtool_stringset_ETH_SS_PRIV_FLAGS => Some(StringSet::PrivFlags),
            _ => None,
        }
    }
}

/// A packet the stack gave the driver; freed on drop unless sent.
///
/// # Invariants
///
/// `raw` is an `sk_buff` this value owns.
pub(crate) struct SkBuff {
    raw: *mut bindings::sk_buff,
}

// SAFETY: an owned buffer may be freed or read from any context
// (`dev_kfree_skb_any`).
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Bytes of the packet (head and fragments).
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: `raw` is owned (invariant); `len` is a plain field.
        unsafe { (*self.raw).len }
    }

    /// Copies the packet's first bytes (fragments included) into `out`,
    /// as many as both have; returns how many.
    pub(crate) fn copy_to(&self, out: &mut [u8]) -> Result<usize> {
        let len = (self.len() as usize).min(out.len());
        let n = c_int::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: `raw` is owned (invariant); `out` has room for `len`
        // bytes, and the packet has at least that many.
        to_result(unsafe { bindings::skb_copy_bits(self.raw, 0, out.as_mut_ptr().cast(), n) })?;
        Ok(len)
    }
}

impl SkBuff {
    /// Copies the whole packet to `offset` in `mem` (the device reads it
    /// after the caller publishes it); returns its length.
    pub(crate) fn copy_into(&self, mem: &(impl Coherent + ?Sized), offset: usize) -> Result<u32> {
        let len = self.len();
        let n = c_int::try_from(len).map_err(|_| EINVAL)?;
        let w = mem.window();
        let dst = w.range(offset, len as usize)?;
        // SAFETY: `raw` is owned (invariant); `dst` has room for `len`
        // bytes (checked by `range`) for the window's life; the packet
        // has `len` bytes.
        to_result(unsafe { bindings::skb_copy_bits(self.raw, 0, dst.cast(), n) })?;
        Ok(len)
    }
}

/// Whether the stack is about to hand this TX queue more packets (a
/// driver may hold its doorbell until the last).
pub(crate) fn xmit_more() -> bool {
    // SAFETY: reads the current CPU's softnet state; no preconditions.
    unsafe { helpers::cxlf_netdev_xmit_more() }
}

/// A registered interface, borrowed for a callback or from a
/// [`NetdevRef`].
///
/// # Invariants
///
/// `raw` is a registered (or registering) `net_device`, live for `'a`.
pub(crate) struct Netdev<'a> {
    raw: *mut bindings::net_device,
    _life: core::marker::PhantomData<&'a ()>,
}

impl Netdev<'_> {
    /// # Safety
    ///
    /// `raw` must be a live `net_device` for as long as the value lives.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::net_device) -> Netdev<'a> {
        // INVARIANT: the caller guarantees it.
        Netdev {
            raw,
            _life: core::marker::PhantomData,
        }
    }

    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: live (invariant): the name is NUL-terminated in it.
        unsafe { CStr::from_char_ptr(helpers::cxlf_netdev_name(self.raw)) }
    }

    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_mtu(self.raw) }
    }

    /// Carrier on or off (`ip link` shows `NO-CARRIER` while off).
    pub(crate) fn set_carrier(&self, on: bool) {
        // SAFETY: live (invariant).
        unsafe {
            if on {
                bindings::netif_carrier_on(self.raw)
            } else {
                bindings::netif_carrier_off(self.raw)
            }
        };
    }

    pub(crate) fn carrier_ok(&self) -> bool {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_carrier_ok(self.raw) }
    }

    /// Whether the interface has TX queue `q` (`netdev_get_tx_queue`
    /// does not check).
    fn has_txq(&self, q: u16) -> bool {
        // SAFETY: live (invariant); the count is fixed at allocation.
        u32::from(q) < unsafe { helpers::cxlf_netdev_num_tx_queues(self.raw) }
    }

    /// Stops TX queue `q`: the stack holds packets for it (a queue the
    /// interface does not have is ignored).
    pub(crate) fn txq_stop(&self, q: u16) {
        if self.has_txq(q) {
            // SAFETY: live (invariant); `q` is one of its queues.
            unsafe { helpers::cxlf_netdev_txq_stop(self.raw, q) };
        }
    }

    /// Lets the stack send on TX queue `q` again.
    pub(crate) fn txq_wake(&self, q: u16) {
        if self.has_txq(q) {
            // SAFETY: as in `txq_stop`.
            unsafe { helpers::cxlf_netdev_txq_wake(self.raw, q) };
        }
    }

    pub(crate) fn txq_stopped(&self, q: u16) -> bool {
        // SAFETY: as in `txq_stop`.
        self.has_txq(q) && unsafe { helpers::cxlf_netdev_txq_stopped(self.raw, q) }
    }

    /// Stops every TX queue and waits out transmits in progress.
    pub(crate) fn tx_disable(&self) {
        // SAFETY: live (invariant); takes each queue's lock, so process
        // or softirq context.
        unsafe { helpers::cxlf_netdev_tx_disable(self.raw) };
    }

    /// Lets the stack send on every TX queue, or stops them.
    pub(crate) fn tx_all(&self, start: bool) {
        // SAFETY: live (invariant).
        unsafe {
            if start {
                helpers::cxlf_netdev_tx_start_all(self.raw)
            } else {
                helpers::cxlf_netdev_tx_stop_all(self.raw)
            }
        };
    }

    /// The queue pairs the stack uses, of those allocated (from `open`,
    /// under RTNL); both or neither change.
    pub(crate) fn set_queues(&self, tx: u32, rx: u32) -> Result {
        // SAFETY: live (invariant); the callers hold RTNL, which the
        // queue counts are written under.
        unsafe {
            let old = helpers::cxlf_netdev_real_num_tx_queues(self.raw);
            to_result(bindings::netif_set_real_num_tx_queues(self.raw, tx))?;
            let err = bindings::netif_set_real_num_rx_queues(self.raw, rx);
            if err != 0 {
                // Back to the old TX count, which was valid.
                bindings::netif_set_real_num_tx_queues(self.raw, old);
            }
            to_result(err)
        }
    }

    /// A reference that keeps the interface (not its registration)
    /// alive: unregistering waits until every one is dropped.
    pub(crate) fn hold(&self) -> NetdevRef {
        // SAFETY: live (invariant); takes a reference.
        unsafe { helpers::cxlf_netdev_hold(self.raw) };
        // INVARIANT: the reference just taken.
        NetdevRef { raw: self.raw }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.raw
    }
}

/// RTNL, held until dropped.
///
/// # Invariants
///
/// This thread holds RTNL, taken when the value was made.
pub(crate) struct RtnlGuard(());

impl RtnlGuard {
    /// RTNL, waiting for it (process context, not from an ndo callback).
    pub(crate) fn lock() -> RtnlGuard {
        // SAFETY: no preconditions beyond process context.
        unsafe { bindings::rtnl_lock() };
        // INVARIANT: taken just now.
        RtnlGuard(())
    }

    /// RTNL if no one holds it now: for work that ndo callbacks (which
    /// hold RTNL) may wait on, so must not wait for RTNL itself.
    pub(crate) fn try_lock() -> Option<RtnlGuard> {
        // SAFETY: no preconditions (process context, which callers are).
        if unsafe { bindings::rtnl_trylock() } != 0 {
            // INVARIANT: taken just now; the guard is built only then
            // (`then_some` would build, and drop, one either way).
            Some(RtnlGuard(()))
        } else {
            None
        }
    }
}

impl Drop for RtnlGuard {
    fn drop(&mut self) {
        // SAFETY: taken by `lock` or `try_lock`, released once.
        unsafe { bindings::rtnl_unlock() };
    }
}

/// A counted reference on an interface, for objects that use it outside
/// its callbacks (a watchdog). Drop it before the interface's `stop`
/// returns: unregistering waits for it.
///
/// # Invariants
///
/// `raw` is a `net_device` this value holds a reference on.
pub(crate) struct NetdevRef {
    raw: *mut bindings::net_device,
}

// SAFETY: a counted reference; the calls made through `Netdev` work from
// any thread (in process or softirq context).
unsafe impl Send for NetdevRef {}
// SAFETY: as above.
unsafe impl Sync for NetdevRef {}

impl NetdevRef {
    pub(crate) fn get(&self) -> Netdev<'_> {
        // SAFETY: held (invariant), so live while `self` is.
        unsafe { Netdev::from_raw(self.raw) }
    }
}

impl Drop for NetdevRef {
    fn drop(&mut self) {
        // SAFETY: drops the reference `hold` took (invariant).
        unsafe { helpers::cxlf_netdev_put(self.raw) };
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: owned (invariant), freed once, here.
        unsafe { helpers::cxlf_skb_free(self.raw) };
    }
}

/// A registered Ethernet interface; unregistered and freed on drop.
///
/// # Invariants
///
/// `raw` is a registered `net_device` whose private area holds `data`,
/// the foreign form of an `Arc<T>` this value owns, and whose ops tables
/// are [`Ops<T>`]'s.
pub(crate) struct Registration<T: NetDevice> {
    raw: *mut bindings::net_device,
    data: *const c_void,
    _t: core::marker::PhantomData<Arc<T>>,
}

// SAFETY: the interface is reached through the net core's own locking;
// `T` is `Send + Sync`.
unsafe impl<T: NetDevice> Send for Registration<T> {}
// SAFETY: as above.
unsafe impl<T: NetDevice> Sync for Registration<T> {}

/// The net core's and the ethtool core's view of a driver's callbacks:
/// one pair of tables per [`NetDevice`] type, in read-only memory.
struct Ops<T>(core::marker::PhantomData<T>);

impl<T: NetDevice> Ops<T> {
    const NETDEV: bindings::net_device_ops = bindings::net_device_ops {
        ndo_open: Some(ndo_open::<T>),
        ndo_stop: Some(ndo_stop::<T>),
        ndo_start_xmit: Some(ndo_start_xmit::<T>),
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

    const ETHTOOL: bindings::ethtool_ops = {
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

/// Where registration places an interface: under a device the caller
/// has borrowed (a PCI device in its driver's `probe`).
///
/// # Invariants
///
/// `parent` is a live device for `'a`, or NULL.
pub(crate) struct Placement<'a> {
    parent: *mut bindings::device,
    mac: [u8; 6],
    tx_queues: u32,
    rx_queues: u32,
    min_mtu: u32,
    max_mtu: u32,
    watchdog_ms: u32,
    _life: core::marker::PhantomData<&'a ()>,
}

impl<'a> Placement<'a> {
    /// Under `dev`, with one queue pair and a standard MTU.
    #[cfg(cxlf_support = "pci")]
    pub(crate) fn under(dev: &'a super::pci::Device<'a>, mac: [u8; 6]) -> Placement<'a> {
        // INVARIANT: `dev` is borrowed, so live, for 'a.
        Self::with_parent(dev.as_raw_device(), mac)
    }

    /// With no parent device (a virtual interface, or a test's).
    pub(crate) fn detached(mac: [u8; 6]) -> Placement<'static> {
        // INVARIANT: no parent to keep alive.
        Placement::with_parent(core::ptr::null_mut(), mac)
    }

    fn with_parent(parent: *mut bindings::device, mac: [u8; 6]) -> Placement<'a> {
        Placement {
            parent,
            mac,
            tx_queues: 1,
            rx_queues: 1,
            min_mtu: 68,
            max_mtu: 1500,
            watchdog_ms: 0,
            _life: core::marker::PhantomData,
        }
    }

    /// With `tx` TX and `rx` RX queues.
    pub(crate) fn queues(self, tx: u32, rx: u32) -> Self {
        Placement {
            tx_queues: tx,
            rx_queues: rx,
            ..self
        }
    }

    /// With MTUs from `min` to `max`.
    pub(crate) fn mtu_range(self, min: u32, max: u32) -> Self {
        Placement {
            min_mtu: min,
            max_mtu: max,
            ..self
        }
    }

    /// With the stack's TX watchdog firing after `ms` (0: the net core's
    /// 5 s; only for a [`NetDevice`] with `HAS_TX_TIMEOUT`).
    pub(crate) fn watchdog_ms(self, ms: u32) -> Self {
        Placement {
            watchdog_ms: ms,
            ..self
        }
    }
}

impl<T: NetDevice> Registration<T> {
    /// Registers an interface for `this` (named `eth%d`); registering
    /// takes a reference on the parent device, so it may outlive the
    /// borrow.
    pub(crate) fn register(this: Arc<T>, at: &Placement<'_>) -> Result<Self> {
        // SAFETY: no preconditions; the private area holds one pointer.
        let raw = unsafe {
            bindings::alloc_etherdev_mqs(
                core::mem::size_of::<*const c_void>() as c_int,
                at.tx_queues,
                at.rx_queues,
            )
        };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        let data = this.into_foreign();
        // SAFETY: `raw` is a fresh, unregistered device this function
        // owns; its private area has room for `data`; the tables are
        // 'static; `parent` is live (`Placement` invariant); `mac` has 6
        // bytes; `data` is released by this value's drop, after
        // unregistering, or below on failure.
        let err = unsafe {
            helpers::cxlf_netdev_priv(raw)
                .cast::<*const c_void>()
                .write(data);
            helpers::cxlf_netdev_set_netdev_ops(raw, &Ops::<T>::NETDEV);
            helpers::cxlf_netdev_set_ethtool_ops(raw, &Ops::<T>::ETHTOOL);
            helpers::cxlf_netdev_set_parent(raw, at.parent);
            helpers::cxlf_netdev_set_mac(raw, at.mac.as_ptr());
            helpers::cxlf_netdev_set_min_mtu(raw, at.min_mtu);
            helpers::cxlf_netdev_set_max_mtu(raw, at.max_mtu);
            if at.watchdog_ms != 0 {
                helpers::cxlf_netdev_set_watchdog_ms(raw, at.watchdog_ms);
            }
            bindings::netif_carrier_off(raw);
            bindings::register_netdev(raw)
        };
        if err != 0 {
            // SAFETY: never registered: freeing is all that is left; no
            // callback ran, so `data` is ours again.
            unsafe { bindings::free_netdev(raw) };
            // SAFETY: `data` came from `into_foreign` above.
            drop(unsafe { Arc::<T>::from_foreign(data) });
            return Err(Error::from_errno(err));
        }
        // INVARIANT: registered with `data` and `Ops<T>`.
        Ok(Registration {
            raw,
            data,
            _t: core::marker::PhantomData,
        })
    }

    /// The interface, for as long as it is registered.
    pub(crate) fn netdev(&self) -> Netdev<'_> {
        // SAFETY: registered (invariant) until `self` drops.
        unsafe { Netdev::from_raw(self.raw) }
    }

    /// Carrier on or off (`ip link` shows `NO-CARRIER` while off).
    pub(crate) fn set_carrier(&self, on: bool) {
        self.netdev().set_carrier(on);
    }

    /// Lets the stack send on every TX queue, or stops it.
    pub(crate) fn set_tx(&self, start: bool) {
        self.netdev().tx_all(start);
    }

    /// The interface's name (`eth0`).
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: registered (invariant): the name is NUL-terminated and
        // lives in the device as long as `self`.
        unsafe { CStr::from_char_ptr(helpers::cxlf_netdev_name(self.raw)) }
    }

    pub(crate) fn mtu(&self) -> u32 {
        self.netdev().mtu()
    }

    /// Brings the interface up, as `ip link set up` does.
    pub(crate) fn open(&self) -> Result {
        let _rtnl = RtnlGuard::lock();
        // SAFETY: registered (invariant), under RTNL.
        to_result(unsafe { bindings::dev_open(self.raw, core::ptr::null_mut()) })
    }

    /// Takes the interface down.
    pub(crate) fn close(&self) {
        let _rtnl = RtnlGuard::lock();
        // SAFETY: registered (invariant), under RTNL.
        unsafe { bindings::dev_close(self.raw) };
    }

    /// Sets the MTU as `ip link set mtu` does (the range and the driver
    /// decide).
    pub(crate) fn set_mtu(&self, mtu: u32) -> Result {
        let mtu = c_int::try_from(mtu).map_err(|_| EINVAL)?;
        let _rtnl = RtnlGuard::lock();
        // SAFETY: registered (invariant), under RTNL.
        to_result(unsafe { bindings::dev_set_mtu(self.raw, mtu) })
    }

    pub(crate) fn carrier_ok(&self) -> bool {
        self.netdev().carrier_ok()
    }

    /// The counters as `ip -s link` reads them.
    pub(crate) fn stats(&self) -> Stats {
        let mut raw = bindings::rtnl_link_stats64::default();
        // SAFETY: registered (invariant); `raw` is ours for the call.
        unsafe { bindings::dev_get_stats(self.raw, &mut raw) };
        Stats {
            rx_packets: raw.rx_packets,
            tx_packets: raw.tx_packets,
            rx_bytes: raw.rx_bytes,
            tx_bytes: raw.tx_bytes,
            rx_errors: raw.rx_errors,
            tx_errors: raw.tx_errors,
            rx_dropped: raw.rx_dropped,
            tx_dropped: raw.tx_dropped,
        }
    }

    /// Sends a zeroed Ethernet frame of `len` bytes to the interface's
    /// own address through the stack's queueing (for tests).
    pub(crate) fn send_frame(&self, len: u32) -> Result {
        if len < bindings::ETH_HLEN {
            return Err(EINVAL);
        }
        let align = bindings::CXLF_NET_IP_ALIGN as u32;
        let size = len.checked_add(align).ok_or(EINVAL)?;
        // SAFETY: no preconditions (process context, GFP_KERNEL).
        let skb =
            unsafe { bindings::__alloc_skb(size, bindings::GFP_KERNEL, 0, bindings::NUMA_NO_NODE) };
        if skb.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `skb` is a fresh buffer of `size` bytes that this
        // function owns until `__dev_queue_xmit` takes it; `skb_put`
        // returns `len` writable bytes at its tail; the interface is
        // registered (invariant), its address 6 bytes long.
        let rc = unsafe {
            helpers::cxlf_skb_reserve(skb, align);
            let frame = bindings::skb_put(skb, len).cast::<u8>();
            core::ptr::write_bytes(frame, 0, len as usize);
            let mac = helpers::cxlf_netdev_addr(self.raw);
            core::ptr::copy_nonoverlapping(mac, frame, 6);
            core::ptr::copy_nonoverlapping(mac, frame.add(6), 6);
            let proto = (bindings::ETH_P_802_3_MIN as u16).to_be();
            frame.add(12).cast::<u16>().write_unaligned(proto);
            helpers::cxlf_skb_reset_mac_header(skb);
            (*skb)
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev = self.raw;
            helpers::cxlf_skb_set_protocol(skb, proto);
            bindings::__dev_queue_xmit(skb, core::ptr::null_mut())
        };
        match rc {
            0 => Ok(()),
            e if e < 0 => Err(Error::from_errno(e)),
            // NET_XMIT_DROP and the like: the queue dropped it.
            _ => Err(super::error::enobufs()),
        }
    }
}

impl<T: NetDevice> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: registered (invariant); unregistering stops the device
        // and waits out every callback; then it is freed, once.
        unsafe {
            bindings::unregister_netdev(self.raw);
            bindings::free_netdev(self.raw);
        }
        // SAFETY: no callback can use `data` any more; it came from
        // `into_foreign` in `register`.
        drop(unsafe { Arc::<T>::from_foreign(self.data) });
    }
}

/// The `Arc<T>` of a registered interface, borrowed for a callback.
///
/// # Safety
///
/// `dev` is an interface registered by [`Registration<T>`] whose
/// callbacks are running (so it is not yet unregistered).
unsafe fn this<'a, T: NetDevice>(dev: *mut bindings::net_device) -> ArcRef<'a, T> {
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
struct ArcRef<'a, T>(
    core::mem::ManuallyDrop<Arc<T>>,
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
unsafe extern "C" fn et_get_drvinfo<T: NetDevice>(
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
unsafe extern "C" fn et_get_ringparam<T: NetDevice>(
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
unsafe extern "C" fn et_set_ringparam<T: NetDevice>(
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
unsafe extern "C" fn et_get_channels<T: NetDevice>(
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
unsafe extern "C" fn et_set_channels<T: NetDevice>(
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
unsafe extern "C" fn et_get_coalesce<T: NetDevice>(
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
unsafe extern "C" fn et_set_coalesce<T: NetDevice>(
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
unsafe extern "C" fn et_get_priv_flags<T: NetDevice>(dev: *mut bindings::net_device) -> u32 {
    // SAFETY: function contract.
    unsafe { params::<T>(dev) }.map_or(0, |p| p.priv_flags)
}

/// # Safety
///
/// As [`et_get_drvinfo`].
unsafe extern "C" fn et_set_priv_flags<T: NetDevice>(
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
unsafe extern "C" fn et_get_sset_count<T: NetDevice>(
    dev: *mut bindings::net_device,
    sset: c_int,
) -> c_int {
    let Some(set) = u32::try_from(sset).ok().and_then(StringSet::from_raw) else {
        return super::error::eopnotsupp().to_errno();
    };
    // SAFETY: a registered interface (function contract).
    let this = unsafe { this::<T>(dev) };
    c_int::try_from(T::string_count(&this.0, set)).unwrap_or(0)
}

/// # Safety
///
/// As [`et_get_drvinfo`]; `buf` holds as many strings as
/// [`et_get_sset_count`] said, under the same RTNL hold.
unsafe extern "C" fn et_get_strings<T: NetDevice>(
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
unsafe extern "C" fn et_get_stats<T: NetDevice>(
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
