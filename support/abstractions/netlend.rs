// SPDX-License-Identifier: GPL-2.0

//! Interfaces another driver owns, lent to a module: what macvlan and
//! the bridge do to a lower device, for drack's pooled NICs. No upstream
//! Rust counterpart (6.12-6.17 have no `net_device` abstraction; the
//! 2023 RFC had none of this). Shaped like upstream registrations: each
//! claim is a value that undoes itself.
//!
//! - [`DeviceRef`]: a counted (tracked) reference to an interface found
//!   by name in the initial namespace (`netdev_get_by_name`), dropped
//!   with `netdev_put`; [`Device`] is the interface borrowed from it or
//!   for a callback: name, index, address, MTU, flags, carrier, who
//!   already claims it ([`Claimant`]), unicast filter entries
//!   (`dev_uc_add`/`dev_uc_del`), MTU and GRO changes (under RTNL).
//! - [`RxHandlerRegistration`]: an [`RxHandler`] on an interface
//!   (`netdev_rx_handler_register`), which sees every frame the
//!   interface receives ([`RxFrame`], softirq context) and passes it on
//!   or consumes it; unregistered on drop (or with
//!   [`RxHandlerRegistration::unregister`] under RTNL held already).
//! - [`NotifierRegistration`]: a [`NetdevNotifier`] on every
//!   interface's events (`register_netdevice_notifier`), run under RTNL
//!   with an [`Rtnl`] proof, so that a lent interface's own unregister
//!   can drop every claim on it.
//! - [`TxFrame`]: a frame built by copy and sent on an interface
//!   (`dev_queue_xmit`); [`Netdev::receive_copy`] hands a copied frame
//!   to an interface's stack without NAPI (`netif_rx`).
//!
//! Functions that need RTNL take `&Rtnl` ([`RtnlGuard`] derefs to it).
//! Files by concern: `device`, `rx_handler`, `notifier`, `xmit`.
//!
//! [`Rtnl`]: crate::netdev::Rtnl
//! [`RtnlGuard`]: crate::netdev::RtnlGuard
//! [`Netdev::receive_copy`]: crate::netdev::Netdev::receive_copy

mod device;
mod notifier;
mod rx_handler;
mod xmit;

pub use device::{Claimant, Device, DeviceRef};
pub use notifier::{NetdevEvent, NetdevNotifier, NotifierRegistration};
pub use rx_handler::{PacketType, RxFrame, RxHandler, RxHandlerRegistration, RxHandlerResult};
pub use xmit::TxFrame;
