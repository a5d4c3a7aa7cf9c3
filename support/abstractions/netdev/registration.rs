// SPDX-License-Identifier: GPL-2.0

//! Registering an interface ([`Registration`], [`Placement`]) and RTNL.

use super::ops::Ops;
use super::{NetDevice, Netdev};
use crate::bindings;
use crate::helpers;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

/// Proof that this thread holds RTNL (C's `ASSERT_RTNL()` as a type):
/// what functions that need RTNL take, as `&Rtnl`. Only a borrow exists,
/// of an [`RtnlGuard`] (which derefs to it) or for the length of a
/// callback the stack runs under RTNL (a netdevice notifier).
///
/// # Invariants
///
/// This thread holds RTNL for as long as the value is borrowed.
pub struct Rtnl {
    // Not `Send` or `Sync`: RTNL belongs to the thread that took it.
    _thread: core::marker::PhantomData<*mut ()>,
}

impl Rtnl {
    /// # Safety
    ///
    /// The calling thread holds RTNL until the value is dropped.
    #[cfg(cxlf_support = "netlend")]
    pub(crate) unsafe fn assume_held() -> Rtnl {
        // INVARIANT: the caller guarantees it.
        Rtnl {
            _thread: core::marker::PhantomData,
        }
    }
}

/// RTNL, held until dropped.
///
/// # Invariants
///
/// This thread holds RTNL, taken when the value was made.
pub struct RtnlGuard(Rtnl);

impl core::ops::Deref for RtnlGuard {
    type Target = Rtnl;

    fn deref(&self) -> &Rtnl {
        &self.0
    }
}

impl RtnlGuard {
    /// The guard for RTNL just taken.
    fn taken() -> RtnlGuard {
        // INVARIANT: the callers have just taken RTNL.
        RtnlGuard(Rtnl {
            _thread: core::marker::PhantomData,
        })
    }

    /// RTNL, waiting for it (process context, not from an ndo callback).
    pub fn lock() -> RtnlGuard {
        // SAFETY: no preconditions beyond process context.
        unsafe { bindings::rtnl_lock() };
        RtnlGuard::taken()
    }

    /// RTNL if no one holds it now: for work that ndo callbacks (which
    /// hold RTNL) may wait on, so must not wait for RTNL itself.
    pub fn try_lock() -> Option<RtnlGuard> {
        // SAFETY: no preconditions (process context, which callers are).
        if unsafe { bindings::rtnl_trylock() } != 0 {
            // The guard is built only when taken (`then_some` would
            // build, and drop, one either way).
            Some(RtnlGuard::taken())
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

/// A registered Ethernet interface; unregistered and freed on drop.
///
/// # Invariants
///
/// `raw` is a registered `net_device` whose private area holds `data`,
/// the foreign form of an `Arc<T>` this value owns, and whose ops tables
/// are [`Ops<T>`]'s.
pub struct Registration<T: NetDevice> {
    pub(super) raw: *mut bindings::net_device,
    data: *const c_void,
    _t: core::marker::PhantomData<Arc<T>>,
}

// SAFETY: the interface is reached through the net core's own locking;
// `T` is `Send + Sync`.
unsafe impl<T: NetDevice> Send for Registration<T> {}
// SAFETY: as above.
unsafe impl<T: NetDevice> Sync for Registration<T> {}

/// Where registration places an interface: under a device the caller
/// has borrowed (a PCI device in its driver's `probe`).
///
/// # Invariants
///
/// `parent` is a live device for `'a`, or NULL.
pub struct Placement<'a> {
    parent: *mut bindings::device,
    name: &'a CStr,
    #[cfg(cxlf_support = "rxfrag")]
    pub(crate) sw_irq_coalesce: bool,
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
    pub fn under(dev: &'a crate::pci::Device<'a>, mac: [u8; 6]) -> Placement<'a> {
        // INVARIANT: `dev` is borrowed, so live, for 'a.
        Self::with_parent(dev.as_raw_device(), mac)
    }

    /// With no parent device (a virtual interface, or a test's).
    pub fn detached(mac: [u8; 6]) -> Placement<'static> {
        // INVARIANT: no parent to keep alive.
        Placement::with_parent(core::ptr::null_mut(), mac)
    }

    fn with_parent(parent: *mut bindings::device, mac: [u8; 6]) -> Placement<'a> {
        Placement {
            parent,
            name: kernel::c_str!("eth%d"),
            #[cfg(cxlf_support = "rxfrag")]
            sw_irq_coalesce: false,
            mac,
            tx_queues: 1,
            rx_queues: 1,
            min_mtu: 68,
            max_mtu: 1500,
            watchdog_ms: 0,
            _life: core::marker::PhantomData,
        }
    }

    /// Named after `pattern` (`drack%d`: the first free number; a name
    /// without `%d` is taken as it is, and registering fails with
    /// `EEXIST` if an interface has it) rather than `eth%d`. The name is
    /// copied when registering.
    pub fn named(self, pattern: &'a CStr) -> Self {
        Placement {
            name: pattern,
            ..self
        }
    }

    /// With `tx` TX and `rx` RX queues.
    pub fn queues(self, tx: u32, rx: u32) -> Self {
        Placement {
            tx_queues: tx,
            rx_queues: rx,
            ..self
        }
    }

    /// With MTUs from `min` to `max`.
    pub fn mtu_range(self, min: u32, max: u32) -> Self {
        Placement {
            min_mtu: min,
            max_mtu: max,
            ..self
        }
    }

    /// With the stack's TX watchdog firing after `ms` (0: the net core's
    /// 5 s; only for a [`NetDevice`] with `HAS_TX_TIMEOUT`).
    pub fn watchdog_ms(self, ms: u32) -> Self {
        Placement {
            watchdog_ms: ms,
            ..self
        }
    }
}

impl<T: NetDevice> Registration<T> {
    /// The interface's directory (`/sys/class/net/<name>/`), a parent
    /// for directories of the driver's own; they must be removed before
    /// the registration goes.
    #[cfg(cxlf_support = "sysfs")]
    pub fn as_parent(&self) -> crate::sysfs::Parent<'_> {
        // SAFETY: the interface is registered while `self` lives (type
        // invariant), so its device's kobject is live and registered for
        // the borrow.
        unsafe { crate::sysfs::Parent::from_raw(crate::helpers::cxlf_netdev_kobj(self.raw)) }
    }

    /// Registers an interface for `this` (named as `at` says); registering
    /// takes a reference on the parent device, so it may outlive the
    /// borrow.
    pub fn register(this: Arc<T>, at: &Placement<'_>) -> Result<Self> {
        // SAFETY: the name is a NUL-terminated pattern (copied) and
        // `ether_setup` the setup `alloc_etherdev_mqs` passes (this is
        // it with the caller's name); the private area holds one pointer.
        let raw = unsafe {
            bindings::alloc_netdev_mqs(
                core::mem::size_of::<*const c_void>() as c_int,
                at.name.as_char_ptr(),
                bindings::NET_NAME_ENUM as _,
                Some(bindings::ether_setup),
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
            #[cfg(cxlf_support = "rxfrag")]
            if at.sw_irq_coalesce {
                bindings::netdev_sw_irq_coalesce_default_on(raw);
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
    pub fn netdev(&self) -> Netdev<'_> {
        // SAFETY: registered (invariant) until `self` drops.
        unsafe { Netdev::from_raw(self.raw) }
    }

    /// Carrier on or off (`ip link` shows `NO-CARRIER` while off).
    pub fn set_carrier(&self, on: bool) {
        self.netdev().set_carrier(on);
    }

    /// The interface's name (`eth0`).
    pub fn name(&self) -> &CStr {
        // SAFETY: registered (invariant): the name is NUL-terminated and
        // lives in the device as long as `self`.
        unsafe { CStr::from_char_ptr(helpers::cxlf_netdev_name(self.raw)) }
    }

    /// The interface's MTU.
    pub fn mtu(&self) -> u32 {
        self.netdev().mtu()
    }

    /// Brings the interface up, as `ip link set up` does.
    pub fn open(&self) -> Result {
        let _rtnl = RtnlGuard::lock();
        // SAFETY: registered (invariant), under RTNL.
        to_result(unsafe { bindings::dev_open(self.raw, core::ptr::null_mut()) })
    }

    /// Takes the interface down.
    pub fn close(&self) {
        let _rtnl = RtnlGuard::lock();
        // SAFETY: registered (invariant), under RTNL.
        unsafe { bindings::dev_close(self.raw) };
    }

    /// Sets the MTU as `ip link set mtu` does (the range and the driver
    /// decide).
    pub fn set_mtu(&self, mtu: u32) -> Result {
        let mtu = c_int::try_from(mtu).map_err(|_| EINVAL)?;
        let _rtnl = RtnlGuard::lock();
        // SAFETY: registered (invariant), under RTNL.
        to_result(unsafe { bindings::dev_set_mtu(self.raw, mtu) })
    }

    /// Whether the carrier is on.
    pub fn carrier_ok(&self) -> bool {
        self.netdev().carrier_ok()
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
