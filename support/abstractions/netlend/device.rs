// SPDX-License-Identifier: GPL-2.0

//! An interface another driver owns: a counted reference by name
//! ([`DeviceRef`]) and the borrowed interface ([`Device`]).

use crate::bindings;
use crate::helpers;
use crate::netdev::Rtnl;
use kernel::error::to_result;
use kernel::prelude::*;
use kernel::str::CStr;

/// An interface another driver registered, borrowed from a
/// [`DeviceRef`] or for the length of a callback.
///
/// # Invariants
///
/// `raw` is a `net_device` live (its memory; it may be unregistering)
/// for `'a`.
#[derive(Clone, Copy)]
pub struct Device<'a> {
    raw: *mut bindings::net_device,
    _life: core::marker::PhantomData<&'a ()>,
}

/// Who already holds an interface's receive path: a module that claims
/// it too would take frames from them, so it refuses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Claimant {
    /// A port of a bridge.
    Bridge,
    /// A port of a bond.
    Bond,
    /// The lower device of macvlan or macvtap interfaces.
    Macvlan,
    /// A port of a team.
    Team,
    /// A port of an Open vSwitch datapath.
    Openvswitch,
    /// Another rx_handler (ipvlan, failover, another module).
    RxHandler,
}

impl<'a> Device<'a> {
    /// # Safety
    ///
    /// `raw` must be a live `net_device` for `'a`.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::net_device) -> Device<'a> {
        // INVARIANT: the caller guarantees it.
        Device {
            raw,
            _life: core::marker::PhantomData,
        }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.raw
    }

    /// Whether `self` and `other` are the same interface (an index can
    /// be reused in another namespace; the structure cannot while held).
    pub fn is(&self, other: &Device<'_>) -> bool {
        core::ptr::eq(self.raw, other.raw)
    }

    /// The interface's name (`eth0`; it may change under RTNL).
    pub fn name(&self) -> &'a CStr {
        // SAFETY: live (invariant): the name is a NUL-terminated array
        // in it.
        unsafe { CStr::from_char_ptr(helpers::cxlf_netdev_name(self.raw)) }
    }

    /// The interface's index in its namespace.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_ifindex(self.raw) }
    }

    /// Whether it is an Ethernet interface (`ARPHRD_ETHER`, 6-byte
    /// addresses): the only kind whose frames [`crate::netlend`] parses.
    pub fn is_ethernet(&self) -> bool {
        // SAFETY: live (invariant).
        let (ty, len) = unsafe {
            (
                helpers::cxlf_netdev_type(self.raw),
                helpers::cxlf_netdev_addr_len(self.raw),
            )
        };
        ty == bindings::ARPHRD_ETHER && len == bindings::ETH_ALEN
    }

    /// The interface's MAC address, if its addresses are 6 bytes long.
    pub fn mac(&self) -> Option<[u8; 6]> {
        // SAFETY: live (invariant).
        if unsafe { helpers::cxlf_netdev_addr_len(self.raw) } != bindings::ETH_ALEN {
            return None;
        }
        let mut mac = [0u8; 6];
        // SAFETY: live (invariant); its address has 6 bytes (checked).
        unsafe {
            core::ptr::copy_nonoverlapping(helpers::cxlf_netdev_addr(self.raw), mac.as_mut_ptr(), 6)
        };
        Some(mac)
    }

    /// The MTU.
    pub fn mtu(&self) -> u32 {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_mtu(self.raw) }
    }

    /// The flags `ip link` shows (`IFF_UP`, `IFF_LOOPBACK`, ...).
    fn flags(&self) -> u32 {
        // SAFETY: live (invariant); a read of plain fields.
        unsafe { bindings::dev_get_flags(self.raw) }
    }

    /// Whether the interface is up (`IFF_UP`).
    pub fn is_up(&self) -> bool {
        self.flags() & bindings::net_device_flags_IFF_UP != 0
    }

    /// Whether it is a loopback interface.
    pub fn is_loopback(&self) -> bool {
        self.flags() & bindings::net_device_flags_IFF_LOOPBACK != 0
    }

    /// Whether the carrier is on.
    pub fn carrier_ok(&self) -> bool {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_carrier_ok(self.raw) }
    }

    /// Whether the device filters unicast addresses itself
    /// (`IFF_UNICAST_FLT`); without it, [`Device::uc_add`] puts it in
    /// promiscuous mode while it has entries.
    pub fn filters_unicast(&self) -> bool {
        self.priv_flags() & bindings::netdev_priv_flags_IFF_UNICAST_FLT != 0
    }

    fn priv_flags(&self) -> u32 {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_priv_flags(self.raw) }
    }

    /// Who already holds the interface's receive path, if anyone.
    pub fn claimed_by(&self, _rtnl: &Rtnl) -> Option<Claimant> {
        let p = self.priv_flags();
        let f = self.flags();
        let checks = [
            (
                bindings::netdev_priv_flags_IFF_BRIDGE_PORT,
                Claimant::Bridge,
            ),
            (
                bindings::netdev_priv_flags_IFF_MACVLAN_PORT,
                Claimant::Macvlan,
            ),
            (bindings::netdev_priv_flags_IFF_TEAM_PORT, Claimant::Team),
            (
                bindings::netdev_priv_flags_IFF_OVS_DATAPATH,
                Claimant::Openvswitch,
            ),
        ];
        if let Some((_, c)) = checks.iter().find(|(bit, _)| p & bit != 0) {
            return Some(*c);
        }
        if p & bindings::netdev_priv_flags_IFF_BONDING != 0
            && f & bindings::net_device_flags_IFF_SLAVE != 0
        {
            return Some(Claimant::Bond);
        }
        // SAFETY: live (invariant); RTNL is held (`_rtnl`), which the
        // function asserts.
        if unsafe { bindings::netdev_is_rx_handler_busy(self.raw) } {
            return Some(Claimant::RxHandler);
        }
        None
    }

    /// Whether the interface is registered (not being unregistered):
    /// stable while RTNL is held.
    pub fn is_registered(&self, _rtnl: &Rtnl) -> bool {
        // SAFETY: live (invariant); under RTNL (`_rtnl`).
        unsafe { helpers::cxlf_netdev_registered(self.raw) }
    }

    /// Adds `mac` to the interface's unicast filter, or counts another
    /// user of an entry already there (the device then delivers frames
    /// to it; one without a filter goes promiscuous). `EINVAL` unless
    /// its addresses are 6 bytes long.
    pub fn uc_add(&self, _rtnl: &Rtnl, mac: &[u8; 6]) -> Result {
        if self.mac().is_none() {
            return Err(EINVAL);
        }
        // SAFETY: live (invariant); under RTNL (`_rtnl`), which the
        // promiscuous fallback needs; `mac` is its address length.
        to_result(unsafe { bindings::dev_uc_add(self.raw, mac.as_ptr()) })
    }

    /// Drops one user of `mac`'s unicast filter entry (the last removes
    /// it); `ENOENT` if it has none.
    pub fn uc_del(&self, _rtnl: &Rtnl, mac: &[u8; 6]) -> Result {
        if self.mac().is_none() {
            return Err(EINVAL);
        }
        // SAFETY: as in `uc_add`.
        to_result(unsafe { bindings::dev_uc_del(self.raw, mac.as_ptr()) })
    }

    /// Entries in the unicast filter (the device's own address aside).
    pub fn uc_count(&self, _rtnl: &Rtnl) -> u32 {
        // SAFETY: live (invariant); the list changes under RTNL (held).
        unsafe { helpers::cxlf_netdev_uc_count(self.raw) }
    }

    /// Changes the MTU as `ip link set mtu` does (notifiers run).
    pub fn set_mtu(&self, _rtnl: &Rtnl, mtu: u32) -> Result {
        let mtu = i32::try_from(mtu).map_err(|_| EINVAL)?;
        // SAFETY: live (invariant); under RTNL (`_rtnl`).
        to_result(unsafe { bindings::dev_set_mtu(self.raw, mtu) })
    }

    /// Whether GRO is on: then the interface hands its rx_handler
    /// merged frames (up to 64 KiB), not the frames on the wire.
    pub fn gro_on(&self) -> bool {
        // SAFETY: live (invariant); a read of its features.
        unsafe { helpers::cxlf_netdev_gro_on(self.raw) }
    }

    /// Turns GRO on or off as `ethtool -K gro` does.
    pub fn set_gro(&self, _rtnl: &Rtnl, on: bool) {
        // SAFETY: live (invariant); under RTNL (`_rtnl`), which both the
        // wanted features and their update need.
        unsafe {
            helpers::cxlf_netdev_want_gro(self.raw, on);
            bindings::netdev_update_features(self.raw);
        }
    }
}

/// A counted reference to an interface, found by name: the interface
/// (not its registration) lives while it is held, and its unregister
/// waits for it (drop it on [`NetdevEvent::Unregister`]).
///
/// [`NetdevEvent::Unregister`]: super::NetdevEvent::Unregister
///
/// # Invariants
///
/// `raw` is a `net_device` this value holds a reference on, recorded in
/// `tracker`.
pub struct DeviceRef {
    raw: *mut bindings::net_device,
    tracker: bindings::netdevice_tracker,
}

// SAFETY: a counted reference; what `Device` does works from any thread
// (the calls that need more say so: RTNL).
unsafe impl Send for DeviceRef {}
// SAFETY: as above.
unsafe impl Sync for DeviceRef {}

impl DeviceRef {
    /// The interface named `name` in the initial network namespace;
    /// `ENODEV` if there is none (process context).
    pub fn by_name(name: &CStr) -> Result<DeviceRef> {
        let mut tracker = no_tracker();
        // SAFETY: `init_net` lives forever; `name` is NUL-terminated;
        // `tracker` receives the reference's record (process context,
        // GFP_KERNEL).
        let raw = unsafe {
            bindings::netdev_get_by_name(
                core::ptr::addr_of_mut!(bindings::init_net),
                name.as_char_ptr(),
                &mut tracker,
                bindings::GFP_KERNEL,
            )
        };
        if raw.is_null() {
            return Err(ENODEV);
        }
        // INVARIANT: the reference just taken, recorded in `tracker`.
        Ok(DeviceRef { raw, tracker })
    }

    /// The interface, for as long as this reference is held.
    pub fn get(&self) -> Device<'_> {
        // SAFETY: held (invariant), so live while `self` is.
        unsafe { Device::from_raw(self.raw) }
    }

    /// Another reference to the same interface (process context).
    pub fn hold(&self) -> DeviceRef {
        let mut tracker = no_tracker();
        // SAFETY: held (invariant), so live; takes another reference,
        // recorded in `tracker`.
        unsafe { helpers::cxlf_netdev_hold_tracked(self.raw, &mut tracker) };
        // INVARIANT: the reference just taken.
        DeviceRef {
            raw: self.raw,
            tracker,
        }
    }
}

/// An empty reference record: a null pointer with
/// `CONFIG_NET_DEV_REFCNT_TRACKER`, an empty structure without.
fn no_tracker() -> bindings::netdevice_tracker {
    // SAFETY: all zeroes is valid for both forms.
    unsafe { core::mem::zeroed() }
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        // SAFETY: drops the reference taken with `tracker` (invariant),
        // once.
        unsafe { helpers::cxlf_netdev_put_tracked(self.raw, &mut self.tracker) };
    }
}
