// SPDX-License-Identifier: GPL-2.0

//! A netdevice notifier ([`NotifierRegistration`]): every interface's
//! events, under RTNL, to a [`NetdevNotifier`].

use super::Device;
use crate::bindings;
use crate::helpers;
use crate::netdev::Rtnl;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::{ForeignOwnable, Opaque};

/// An interface's event (`enum netdev_cmd`), those a lender acts on by
/// name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NetdevEvent {
    /// Registered (and replayed for every existing interface when the
    /// notifier registers).
    Register,
    /// Being unregistered: drop every reference and claim on it, or its
    /// unregister waits (replayed for every interface when the notifier
    /// unregisters).
    Unregister,
    /// Up (replayed for interfaces up when the notifier registers).
    Up,
    /// Going down (replayed as the notifier unregisters).
    GoingDown,
    /// Down (replayed as the notifier unregisters).
    Down,
    /// Carrier or other state changed.
    Change,
    /// The MTU changed.
    ChangeMtu,
    /// The address changed.
    ChangeAddr,
    /// Renamed.
    ChangeName,
    /// The features (GRO, offloads) changed.
    FeatChange,
    /// Any other `NETDEV_*` event, by number.
    Other(u32),
}

impl NetdevEvent {
    fn from_raw(event: c_ulong) -> NetdevEvent {
        let Ok(e) = u32::try_from(event) else {
            return NetdevEvent::Other(u32::MAX);
        };
        match e {
            bindings::netdev_cmd_NETDEV_REGISTER => NetdevEvent::Register,
            bindings::netdev_cmd_NETDEV_UNREGISTER => NetdevEvent::Unregister,
            bindings::netdev_cmd_NETDEV_UP => NetdevEvent::Up,
            bindings::netdev_cmd_NETDEV_GOING_DOWN => NetdevEvent::GoingDown,
            bindings::netdev_cmd_NETDEV_DOWN => NetdevEvent::Down,
            bindings::netdev_cmd_NETDEV_CHANGE => NetdevEvent::Change,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => NetdevEvent::ChangeMtu,
            bindings::netdev_cmd_NETDEV_CHANGEADDR => NetdevEvent::ChangeAddr,
            bindings::netdev_cmd_NETDEV_CHANGENAME => NetdevEvent::ChangeName,
            bindings::netdev_cmd_NETDEV_FEAT_CHANGE => NetdevEvent::FeatChange,
            other => NetdevEvent::Other(other),
        }
    }
}

/// What a netdevice notifier does with an event.
pub trait NetdevNotifier: Send + Sync + 'static {
    /// `event` happened to `dev` (in any network namespace). Process
    /// context under RTNL (`rtnl`): may sleep, must not take RTNL (nor
    /// drop an [`super::RxHandlerRegistration`] or a
    /// [`NotifierRegistration`], which do).
    fn event(&self, rtnl: &Rtnl, event: NetdevEvent, dev: &Device<'_>);
}

/// A notifier and its data, at a fixed address (the chain links it).
struct Block {
    nb: Opaque<bindings::notifier_block>,
    data: *const c_void,
}

/// A registered [`NetdevNotifier`]; unregistered on drop, which takes
/// RTNL (never drop it under RTNL).
///
/// # Invariants
///
/// `block.nb` is on the netdevice chain with
/// `notifier_callback::<T>`; `block.data` is the foreign form of an
/// `Arc<T>` this value owns.
pub struct NotifierRegistration<T: NetdevNotifier> {
    block: KBox<Block>,
    _t: core::marker::PhantomData<Arc<T>>,
}

// SAFETY: `T` is `Send + Sync`; registering and unregistering work from
// any thread in process context.
unsafe impl<T: NetdevNotifier> Send for NotifierRegistration<T> {}
// SAFETY: as above; `&self` gives nothing.
unsafe impl<T: NetdevNotifier> Sync for NotifierRegistration<T> {}

impl<T: NetdevNotifier> NotifierRegistration<T> {
    /// Registers `data`'s notifier (process context, RTNL not held: the
    /// registration takes it). Before this returns, `data` sees
    /// [`NetdevEvent::Register`] and, if up, [`NetdevEvent::Up`] for
    /// every existing interface.
    pub fn register(data: Arc<T>) -> Result<Self> {
        let mut block = KBox::new(
            Block {
                nb: Opaque::uninit(),
                data: core::ptr::null(),
            },
            GFP_KERNEL,
        )?;
        block.data = data.into_foreign();
        // SAFETY: the block is ours, zeroed with its callback set here,
        // and stays at this address with `data` until drop unregisters
        // it.
        let rc = unsafe {
            let nb = block.nb.get();
            nb.write_bytes(0, 1);
            (*nb).notifier_call = Some(notifier_callback::<T>);
            bindings::register_netdevice_notifier(nb)
        };
        if let Err(e) = to_result(rc) {
            // SAFETY: not registered (the chain does not keep a block
            // that failed): `data` is ours again.
            drop(unsafe { Arc::<T>::from_foreign(block.data) });
            return Err(e);
        }
        // INVARIANT: registered with `data`.
        Ok(NotifierRegistration {
            block,
            _t: core::marker::PhantomData,
        })
    }
}

impl<T: NetdevNotifier> Drop for NotifierRegistration<T> {
    fn drop(&mut self) {
        // SAFETY: registered (invariant). The function takes RTNL, so
        // waits for a running callback, replays the going-down and
        // unregister events, and leaves the chain without the block.
        unsafe { bindings::unregister_netdevice_notifier(self.block.nb.get()) };
        // SAFETY: no callback runs or will run: `data` came from
        // `into_foreign` in `register`, released once, here.
        drop(unsafe { Arc::<T>::from_foreign(self.block.data) });
    }
}

/// # Safety
///
/// Called by the netdevice chain, under RTNL, for a block registered by
/// [`NotifierRegistration::<T>::register`], with a
/// `netdev_notifier_info` as `ptr`.
unsafe extern "C" fn notifier_callback<T: NetdevNotifier>(
    nb: *mut bindings::notifier_block,
    event: c_ulong,
    ptr: *mut c_void,
) -> c_int {
    // SAFETY: `nb` is the `nb` field of a live `Block` (function
    // contract); `Opaque` has its inner layout.
    let block = unsafe {
        &*nb.cast::<u8>()
            .sub(core::mem::offset_of!(Block, nb))
            .cast::<Block>()
    };
    // SAFETY: the block's `data` is a live `Arc<T>` while registered.
    let this = unsafe { Arc::<T>::borrow(block.data) };
    // SAFETY: every netdevice event carries a `netdev_notifier_info`
    // naming a live interface (function contract).
    let dev = unsafe { Device::from_raw(helpers::cxlf_netdev_notifier_dev(ptr)) };
    // SAFETY: the chain runs under RTNL (function contract), for the
    // length of this call.
    let rtnl = unsafe { Rtnl::assume_held() };
    this.event(&rtnl, NetdevEvent::from_raw(event), &dev);
    bindings::NOTIFY_DONE as c_int
}
