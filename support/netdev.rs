// SPDX-License-Identifier: GPL-2.0

//! Ethernet network devices. Upstream has no `net_device` abstraction
//! (6.12-6.17; the 2023 RFC series proposed `kernel::net::Device`, a
//! `Registration` and a `DeviceOperations` trait, which this follows):
//! a [`NetDevice`] implementation is the driver's per-interface object,
//! shared ([`Arc`]) with the callbacks; a [`Registration`] allocates and
//! registers the interface and unregisters and frees it on drop, after
//! which no callback runs.
//!
//! `struct net_device` is opaque to 6.12's bindings: the ops tables and
//! the static inlines are in `helpers.c`.

use super::coherent::Coherent;
use super::helpers;
use kernel::bindings;
use kernel::error::{from_result, to_result};
use kernel::ffi::{c_int, c_uint, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

// Exported by the net core; `netdevice.h` is not in 6.12's bindings.
extern "C" {
    fn unregister_netdev(dev: *mut bindings::net_device);
    fn free_netdev(dev: *mut bindings::net_device);
}

/// The interface counters `ip -s link` shows.
pub(crate) use helpers::CxlfNetdevStats as Stats;

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

/// What ethtool reads and changes (see [`NetDevice::params`]).
pub(crate) use helpers::CxlfEthtoolParams as Params;

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
pub(crate) const STRING_LEN: usize = 32;

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
            0 => Some(StringSet::Stats),
            1 => Some(StringSet::PrivFlags),
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
        unsafe { helpers::cxlf_netdev_set_carrier(self.raw, on) };
    }

    pub(crate) fn carrier_ok(&self) -> bool {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_carrier_ok(self.raw) }
    }

    /// Stops TX queue `q`: the stack holds packets for it (a queue the
    /// interface does not have is ignored).
    pub(crate) fn txq_stop(&self, q: u16) {
        // SAFETY: live (invariant); the helper checks `q`.
        unsafe { helpers::cxlf_netdev_txq_stop(self.raw, q) };
    }

    /// Lets the stack send on TX queue `q` again.
    pub(crate) fn txq_wake(&self, q: u16) {
        // SAFETY: as in `txq_stop`.
        unsafe { helpers::cxlf_netdev_txq_wake(self.raw, q) };
    }

    pub(crate) fn txq_stopped(&self, q: u16) -> bool {
        // SAFETY: as in `txq_stop`.
        unsafe { helpers::cxlf_netdev_txq_stopped(self.raw, q) }
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
        unsafe { helpers::cxlf_netdev_tx_all(self.raw, start) };
    }

    /// The queue pairs the stack uses, of those allocated (from `open`,
    /// under RTNL).
    pub(crate) fn set_queues(&self, tx: u32, rx: u32) -> Result {
        // SAFETY: live (invariant); the callers hold RTNL.
        to_result(unsafe { helpers::cxlf_netdev_set_queues(self.raw, tx, rx) })
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
    /// RTNL if no one holds it now: for work that ndo callbacks (which
    /// hold RTNL) may wait on, so must not wait for RTNL itself.
    pub(crate) fn try_lock() -> Option<RtnlGuard> {
        // SAFETY: no preconditions (process context, which callers are).
        if unsafe { helpers::cxlf_rtnl_trylock() } {
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
        // SAFETY: taken by `try_lock`, released once.
        unsafe { helpers::cxlf_rtnl_unlock() };
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
/// `raw` is a registered `net_device` from `cxlf_netdev_alloc` whose
/// callbacks get `data`, the foreign form of an `Arc<T>` this value owns.
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

/// The net core's view of a driver's callbacks.
struct Ops<T>(core::marker::PhantomData<T>);

impl<T: NetDevice> Ops<T> {
    const TABLE: helpers::CxlfNetdevOps = helpers::CxlfNetdevOps {
        open: Some(open_callback::<T>),
        stop: Some(stop_callback::<T>),
        xmit: Some(xmit_callback::<T>),
        stats: Some(stats_callback::<T>),
        change_mtu: Some(change_mtu_callback::<T>),
        drvinfo: Some(drvinfo_callback::<T>),
        get_params: Some(get_params_callback::<T>),
        set_params: Some(set_params_callback::<T>),
        string_count: Some(string_count_callback::<T>),
        strings: Some(strings_callback::<T>),
        stat_values: Some(stat_values_callback::<T>),
        tx_timeout: if T::HAS_TX_TIMEOUT {
            Some(tx_timeout_callback::<T>)
        } else {
            None
        },
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
        let data = this.into_foreign();
        // SAFETY: the ops table is 'static; `data` is released by this
        // value's drop, after unregistering, or below on failure.
        let raw = unsafe {
            helpers::cxlf_netdev_alloc(
                at.tx_queues,
                at.rx_queues,
                &Ops::<T>::TABLE,
                data.cast_mut(),
            )
        };
        if raw.is_null() {
            // SAFETY: `data` came from `into_foreign` just above.
            drop(unsafe { Arc::<T>::from_foreign(data) });
            return Err(ENOMEM);
        }
        // SAFETY: `raw` is a fresh device; `parent` is live (`Placement`
        // invariant); `mac` has 6 bytes.
        let err = unsafe {
            helpers::cxlf_netdev_register(
                raw,
                at.parent,
                at.mac.as_ptr(),
                at.min_mtu,
                at.max_mtu,
                at.watchdog_ms,
            )
        };
        if err != 0 {
            // SAFETY: never registered: freeing is all that is left; no
            // callback ran, so `data` is ours again.
            unsafe { free_netdev(raw) };
            // SAFETY: `data` came from `into_foreign` above.
            drop(unsafe { Arc::<T>::from_foreign(data) });
            return Err(Error::from_errno(err));
        }
        // INVARIANT: registered, its callbacks get `data`.
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
        // SAFETY: registered (invariant); takes RTNL, so process context.
        to_result(unsafe { helpers::cxlf_netdev_open(self.raw) })
    }

    /// Takes the interface down.
    pub(crate) fn close(&self) {
        // SAFETY: registered (invariant); takes RTNL.
        unsafe { helpers::cxlf_netdev_close(self.raw) };
    }

    /// Sets the MTU as `ip link set mtu` does (the range and the driver
    /// decide).
    pub(crate) fn set_mtu(&self, mtu: u32) -> Result {
        let mtu = c_int::try_from(mtu).map_err(|_| EINVAL)?;
        // SAFETY: registered (invariant); takes RTNL.
        to_result(unsafe { helpers::cxlf_netdev_set_mtu(self.raw, mtu) })
    }

    pub(crate) fn carrier_ok(&self) -> bool {
        self.netdev().carrier_ok()
    }

    /// The counters as `ip -s link` reads them.
    pub(crate) fn stats(&self) -> Stats {
        let mut s = Stats::default();
        // SAFETY: registered (invariant); `s` is ours for the call.
        unsafe { helpers::cxlf_netdev_get_stats(self.raw, &mut s) };
        s
    }

    /// Sends a zeroed Ethernet frame of `len` bytes to the interface's
    /// own address through the stack's queueing (for tests).
    pub(crate) fn send_frame(&self, len: u32) -> Result {
        // SAFETY: registered (invariant); process context.
        let rc = unsafe { helpers::cxlf_netdev_send_frame(self.raw, len) };
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
            unregister_netdev(self.raw);
            free_netdev(self.raw);
        }
        // SAFETY: no callback can use `data` any more; it came from
        // `into_foreign` in `register`.
        drop(unsafe { Arc::<T>::from_foreign(self.data) });
    }
}

/// # Safety
///
/// `data` is the foreign form of a live `Arc<T>` (a registered
/// interface's), borrowed for the call.
unsafe fn borrow<'a, T: NetDevice>(data: *mut c_void) -> ArcRef<'a, T> {
    // SAFETY: the caller guarantees `data` is a live `Arc<T>`'s foreign
    // form; `ManuallyDrop` keeps this borrow from releasing it.
    ArcRef(
        core::mem::ManuallyDrop::new(unsafe { Arc::<T>::from_foreign(data) }),
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
/// Called by the net core (through `helpers.c`) for a registered
/// interface, whose data pointer is a live `Arc<T>`.
unsafe extern "C" fn open_callback<T: NetDevice>(
    data: *mut c_void,
    dev: *mut bindings::net_device,
) -> c_int {
    // SAFETY: the net core calls this for a registered interface, whose
    // data is a live `Arc<T>`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    from_result(|| T::open(&this.0, &dev).map(|()| 0))
}

/// # Safety
///
/// Called by the net core (through `helpers.c`) for a registered
/// interface, whose data pointer is a live `Arc<T>`.
unsafe extern "C" fn stop_callback<T: NetDevice>(
    data: *mut c_void,
    dev: *mut bindings::net_device,
) -> c_int {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    from_result(|| T::stop(&this.0, &dev).map(|()| 0))
}

/// # Safety
///
/// Called by the net core (through `helpers.c`) for a registered
/// interface, whose data pointer is a live `Arc<T>`.
unsafe extern "C" fn xmit_callback<T: NetDevice>(
    data: *mut c_void,
    dev: *mut bindings::net_device,
    skb: *mut bindings::sk_buff,
    queue: u16,
) -> c_int {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    // INVARIANT: the stack hands the driver `skb` to send or free.
    let skb = SkBuff { raw: skb };
    match T::start_xmit(&this.0, &dev, skb, queue) {
        Ok(()) => 0,
        Err(back) => {
            // NETDEV_TX_BUSY: the stack keeps the buffer and retries.
            core::mem::forget(back);
            1
        }
    }
}

/// # Safety
///
/// Called by the net core (through `helpers.c`) for a registered
/// interface, whose data pointer is a live `Arc<T>`.
unsafe extern "C" fn stats_callback<T: NetDevice>(data: *mut c_void, out: *mut Stats) {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the C trampoline passes its own zeroed stack struct.
    T::stats(&this.0, unsafe { &mut *out });
}

/// # Safety
///
/// Called by the net core (through `helpers.c`) for a registered
/// interface, whose data pointer is a live `Arc<T>`.
unsafe extern "C" fn change_mtu_callback<T: NetDevice>(
    data: *mut c_void,
    dev: *mut bindings::net_device,
    mtu: c_int,
) -> c_int {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    from_result(|| {
        let mtu = u32::try_from(mtu).map_err(|_| EINVAL)?;
        T::change_mtu(&this.0, &dev, mtu).map(|()| 0)
    })
}

/// # Safety
///
/// Called by the net core (through `helpers.c`) for a registered
/// interface, whose data pointer is a live `Arc<T>`.
unsafe extern "C" fn drvinfo_callback<T: NetDevice>(
    data: *mut c_void,
    info: *mut bindings::ethtool_drvinfo,
) {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the ethtool core passes its own struct for the call.
    T::drvinfo(&this.0, unsafe { &mut *info });
}

/// # Safety
///
/// Called by the ethtool core (through `helpers.c`) for a registered
/// interface, whose data pointer is a live `Arc<T>`; `out` is the
/// trampoline's own struct.
unsafe extern "C" fn get_params_callback<T: NetDevice>(
    data: *mut c_void,
    out: *mut Params,
) -> c_int {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    from_result(|| {
        let p = T::params(&this.0)?;
        // SAFETY: `out` is valid for a write (function contract).
        unsafe { out.write(p) };
        Ok(0)
    })
}

/// # Safety
///
/// As [`get_params_callback`]; `dev` is the interface, `p` the
/// trampoline's struct.
unsafe extern "C" fn set_params_callback<T: NetDevice>(
    data: *mut c_void,
    dev: *mut bindings::net_device,
    p: *const Params,
    what: u32,
) -> c_int {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    // SAFETY: valid for reads for the call (function contract).
    let p = unsafe { &*p };
    let what = match what {
        1 => Change::Rings,
        2 => Change::Channels,
        3 => Change::Coalesce,
        4 => Change::PrivFlags,
        _ => return EINVAL.to_errno(),
    };
    from_result(|| T::set_params(&this.0, &dev, p, what).map(|()| 0))
}

/// # Safety
///
/// As [`get_params_callback`].
unsafe extern "C" fn string_count_callback<T: NetDevice>(data: *mut c_void, set: u32) -> c_int {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    match StringSet::from_raw(set) {
        Some(set) => c_int::try_from(T::string_count(&this.0, set)).unwrap_or(0),
        None => super::error::eopnotsupp().to_errno(),
    }
}

/// # Safety
///
/// As [`get_params_callback`]; `buf` holds `n` strings of `STRING_LEN`
/// bytes.
unsafe extern "C" fn strings_callback<T: NetDevice>(
    data: *mut c_void,
    set: u32,
    buf: *mut u8,
    n: u32,
) {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    let Some(set) = StringSet::from_raw(set) else {
        return;
    };
    // SAFETY: `buf` holds `n` strings (function contract); arrays of u8
    // have no alignment needs.
    let out =
        unsafe { core::slice::from_raw_parts_mut(buf.cast::<[u8; STRING_LEN]>(), n as usize) };
    T::strings(&this.0, set, out);
}

/// # Safety
///
/// Called by the net core's TX watchdog (through `helpers.c`) for a
/// registered interface, whose data pointer is a live `Arc<T>`.
unsafe extern "C" fn tx_timeout_callback<T: NetDevice>(
    data: *mut c_void,
    dev: *mut bindings::net_device,
    queue: c_uint,
) {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: the interface lives for the call.
    let dev = unsafe { Netdev::from_raw(dev) };
    T::tx_timeout(&this.0, &dev, queue);
}

/// # Safety
///
/// As [`get_params_callback`]; `out` holds `n` counters.
unsafe extern "C" fn stat_values_callback<T: NetDevice>(data: *mut c_void, out: *mut u64, n: u32) {
    // SAFETY: as in `open_callback`.
    let this = unsafe { borrow::<T>(data) };
    // SAFETY: `out` holds `n` u64s (function contract).
    let out = unsafe { core::slice::from_raw_parts_mut(out, n as usize) };
    T::stat_values(&this.0, out);
}
