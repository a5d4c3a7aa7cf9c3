// SPDX-License-Identifier: GPL-2.0

//! The interface a callback gets ([`Netdev`], [`NetdevRef`]) and the
//! packets the stack hands the driver ([`SkBuff`]).

use crate::bindings;
use crate::coherent::Coherent;
use crate::helpers;
use kernel::error::to_result;
use kernel::ffi::c_int;
use kernel::prelude::*;
use kernel::str::CStr;

/// A packet the stack gave the driver; freed on drop unless sent.
///
/// # Invariants
///
/// `raw` is an `sk_buff` this value owns, or, only behind a shared
/// reference for the length of a callback (`ndo_select_queue`), one the
/// stack lends it to read.
pub struct SkBuff {
    pub(crate) raw: *mut bindings::sk_buff,
}

// SAFETY: an owned buffer may be freed or read from any context
// (`dev_kfree_skb_any`).
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Bytes of the packet (head and fragments).
    pub fn len(&self) -> u32 {
        // SAFETY: `raw` is owned (invariant); `len` is a plain field.
        unsafe { (*self.raw).len }
    }

    /// Copies the packet's first bytes (fragments included) into `out`,
    /// as many as both have; returns how many.
    pub fn copy_to(&self, out: &mut [u8]) -> Result<usize> {
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
    pub fn copy_into(&self, mem: &(impl Coherent + ?Sized), offset: usize) -> Result<u32> {
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
pub fn xmit_more() -> bool {
    // SAFETY: reads the current CPU's softnet state; no preconditions.
    unsafe { helpers::cxlf_netdev_xmit_more() }
}

/// A registered interface, borrowed for a callback or from a
/// [`NetdevRef`].
///
/// # Invariants
///
/// `raw` is a registered (or registering) `net_device`, live for `'a`.
pub struct Netdev<'a> {
    raw: *mut bindings::net_device,
    _life: core::marker::PhantomData<&'a ()>,
}

impl Netdev<'_> {
    /// # Safety
    ///
    /// `raw` must be a live `net_device` for as long as the value lives.
    pub unsafe fn from_raw<'a>(raw: *mut bindings::net_device) -> Netdev<'a> {
        // INVARIANT: the caller guarantees it.
        Netdev {
            raw,
            _life: core::marker::PhantomData,
        }
    }

    /// The interface's name (`eth0`).
    pub fn name(&self) -> &CStr {
        // SAFETY: live (invariant): the name is NUL-terminated in it.
        unsafe { CStr::from_char_ptr(helpers::cxlf_netdev_name(self.raw)) }
    }

    /// The interface's ifindex if it is in the calling task's network
    /// namespace (where an ifindex from that task names it), else `None`.
    pub fn ifindex_here(&self) -> Option<u32> {
        // SAFETY: live (invariant); the helper reads fields of it and of
        // the current task.
        let i = unsafe { helpers::cxlf_netdev_ifindex_here(self.raw) };
        u32::try_from(i).ok().filter(|&i| i != 0)
    }

    /// The interface's MTU.
    pub fn mtu(&self) -> u32 {
        // SAFETY: live (invariant).
        unsafe { helpers::cxlf_netdev_mtu(self.raw) }
    }

    /// Carrier on or off (`ip link` shows `NO-CARRIER` while off).
    pub fn set_carrier(&self, on: bool) {
        // SAFETY: live (invariant).
        unsafe {
            if on {
                bindings::netif_carrier_on(self.raw)
            } else {
                bindings::netif_carrier_off(self.raw)
            }
        };
    }

    /// Whether the carrier is on.
    pub fn carrier_ok(&self) -> bool {
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
    pub fn txq_stop(&self, q: u16) {
        if self.has_txq(q) {
            // SAFETY: live (invariant); `q` is one of its queues.
            unsafe { helpers::cxlf_netdev_txq_stop(self.raw, q) };
        }
    }

    /// Lets the stack send on TX queue `q` again.
    pub fn txq_wake(&self, q: u16) {
        if self.has_txq(q) {
            // SAFETY: as in `txq_stop`.
            unsafe { helpers::cxlf_netdev_txq_wake(self.raw, q) };
        }
    }

    /// Stops every TX queue and waits out transmits in progress.
    pub fn tx_disable(&self) {
        // SAFETY: live (invariant); takes each queue's lock, so process
        // or softirq context.
        unsafe { helpers::cxlf_netdev_tx_disable(self.raw) };
    }

    /// Lets the stack send on every TX queue, or stops them.
    pub fn tx_all(&self, start: bool) {
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
    pub fn set_queues(&self, tx: u32, rx: u32) -> Result {
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
    pub fn hold(&self) -> NetdevRef {
        // SAFETY: live (invariant); takes a reference.
        unsafe { helpers::cxlf_netdev_hold(self.raw) };
        // INVARIANT: the reference just taken.
        NetdevRef { raw: self.raw }
    }

    /// The raw `struct net_device`.
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.raw
    }
}

/// A counted reference on an interface, for objects that use it outside
/// its callbacks (a watchdog). Drop it before the interface's `stop`
/// returns: unregistering waits for it.
///
/// # Invariants
///
/// `raw` is a `net_device` this value holds a reference on.
pub struct NetdevRef {
    raw: *mut bindings::net_device,
}

// SAFETY: a counted reference; the calls made through `Netdev` work from
// any thread (in process or softirq context).
unsafe impl Send for NetdevRef {}
// SAFETY: as above.
unsafe impl Sync for NetdevRef {}

impl NetdevRef {
    /// The interface, for as long as this reference is held.
    pub fn get(&self) -> Netdev<'_> {
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
