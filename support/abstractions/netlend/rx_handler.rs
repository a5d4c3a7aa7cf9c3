// SPDX-License-Identifier: GPL-2.0

//! An rx_handler on a lent interface ([`RxHandlerRegistration`]): what
//! the interface receives goes first to an [`RxHandler`], which passes
//! each frame on to the stack or consumes it.

use super::{Device, DeviceRef};
use crate::bindings;
use crate::helpers;
use crate::netdev::{Rtnl, RtnlGuard};
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::ForeignOwnable;

/// An Ethernet header's bytes.
const ETH_HLEN: usize = bindings::ETH_HLEN as usize;

/// What an [`RxHandler`] did with a frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RxHandlerResult {
    /// Not ours: the stack delivers it as if there were no handler
    /// (`RX_HANDLER_PASS`).
    Pass,
    /// Taken (copied elsewhere): freed as delivered (`consume_skb`),
    /// the stack sees it no more (`RX_HANDLER_CONSUMED`).
    Consumed,
    /// Refused: freed as a drop (`kfree_skb`, which drop monitors
    /// count), the stack sees it no more (`RX_HANDLER_CONSUMED`).
    Dropped,
}

/// What a lent interface's received frames go to first.
pub trait RxHandler: Send + Sync + 'static {
    /// Decides on `frame`. Softirq context, under RCU: must not sleep.
    fn handle(&self, frame: &RxFrame<'_>) -> RxHandlerResult;
}

/// How a frame was addressed, as `eth_type_trans` found it
/// (`skb->pkt_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PacketType {
    /// To this interface's own address.
    Host,
    /// To the broadcast address.
    Broadcast,
    /// To a multicast address.
    Multicast,
    /// To another unicast address (a unicast filter entry, or seen in
    /// promiscuous mode).
    OtherHost,
    /// Sent by this host (`PACKET_OUTGOING`, `PACKET_LOOPBACK`, ...).
    Other(u8),
}

/// A frame a lent interface received, lent to [`RxHandler::handle`].
///
/// # Invariants
///
/// `raw` is an `sk_buff` the stack lends for `'a`, in an rx_handler,
/// with its data just past the Ethernet header.
pub struct RxFrame<'a> {
    raw: *mut bindings::sk_buff,
    _life: core::marker::PhantomData<&'a ()>,
}

impl<'a> RxFrame<'a> {
    /// Bytes after the Ethernet header (linear part and fragments).
    pub fn len(&self) -> u32 {
        // SAFETY: lent (invariant); a plain field.
        unsafe { (*self.raw).len }
    }

    /// Bytes of the MAC header (14 for Ethernet) if it lies in the
    /// linear part right before the data, as `eth_type_trans` leaves it.
    fn mac_len(&self) -> Option<usize> {
        // SAFETY: lent (invariant).
        let off = unsafe { helpers::cxlf_skb_mac_offset(self.raw) };
        let back = usize::try_from(off.checked_neg()?).ok()?;
        (back >= ETH_HLEN).then_some(back)
    }

    /// The whole frame's bytes: MAC header plus [`RxFrame::len`];
    /// `None` without a header.
    pub fn frame_len(&self) -> Option<usize> {
        self.mac_len()?.checked_add(self.len() as usize)
    }

    /// The Ethernet header (destination, source, EtherType), if there is
    /// one.
    pub fn eth_header(&self) -> Option<[u8; 14]> {
        let back = self.mac_len()?;
        let mut h = [0u8; 14];
        // SAFETY: lent (invariant); the MAC header is `back >= 14` bytes
        // before `data` in the linear part (checked by `mac_len`).
        unsafe { core::ptr::copy_nonoverlapping((*self.raw).data.sub(back), h.as_mut_ptr(), 14) };
        Some(h)
    }

    /// The destination address.
    pub fn dest(&self) -> Option<[u8; 6]> {
        let h = self.eth_header()?;
        let mut d = [0u8; 6];
        d.copy_from_slice(&h[..6]);
        Some(d)
    }

    /// The source address.
    pub fn source(&self) -> Option<[u8; 6]> {
        let h = self.eth_header()?;
        let mut s = [0u8; 6];
        s.copy_from_slice(&h[6..12]);
        Some(s)
    }

    /// The protocol (`skb->protocol`, host order): the EtherType, or
    /// `ETH_P_802_3`/`ETH_P_802_2` for 802.3 frames.
    pub fn protocol(&self) -> u16 {
        // SAFETY: lent (invariant).
        u16::from_be(unsafe { helpers::cxlf_skb_protocol(self.raw) })
    }

    /// How the frame was addressed.
    pub fn pkt_type(&self) -> PacketType {
        // SAFETY: lent (invariant).
        let t = unsafe { helpers::cxlf_skb_pkt_type(self.raw) };
        match t {
            bindings::PACKET_HOST => PacketType::Host,
            bindings::PACKET_BROADCAST => PacketType::Broadcast,
            bindings::PACKET_MULTICAST => PacketType::Multicast,
            bindings::PACKET_OTHERHOST => PacketType::OtherHost,
            other => PacketType::Other(other as u8),
        }
    }

    /// Copies `out.len()` bytes from `offset` after the Ethernet header
    /// (linear part and fragments) into `out`; `EINVAL` past the end.
    pub fn copy_bits(&self, offset: u32, out: &mut [u8]) -> Result {
        let n = c_int::try_from(out.len()).map_err(|_| EINVAL)?;
        let off = c_int::try_from(offset).map_err(|_| EINVAL)?;
        // SAFETY: lent (invariant); `out` has room for `n` bytes; the
        // function checks `[off, off + n)` against the frame.
        to_result(unsafe { bindings::skb_copy_bits(self.raw, off, out.as_mut_ptr().cast(), n) })
    }

    /// Copies the whole frame, MAC header first, to the start of `out`;
    /// returns its length. `EMSGSIZE` if it does not fit, `EINVAL`
    /// without a MAC header.
    pub fn copy_frame(&self, out: &mut [u8]) -> Result<usize> {
        let back = self.mac_len().ok_or(EINVAL)?;
        let total = back.checked_add(self.len() as usize).ok_or(EINVAL)?;
        let out = out.get_mut(..total).ok_or_else(crate::error::emsgsize)?;
        let (head, rest) = out.split_at_mut(back);
        // SAFETY: lent (invariant); the MAC header's `back` bytes lie in
        // the linear part before `data` (`mac_len`); `head` has `back`.
        unsafe {
            core::ptr::copy_nonoverlapping((*self.raw).data.sub(back), head.as_mut_ptr(), back)
        };
        self.copy_bits(0, rest)?;
        Ok(total)
    }

    /// The interface the frame arrived on.
    pub fn dev(&self) -> Device<'a> {
        // SAFETY: lent (invariant): `skb->dev` is the receiving
        // interface, live while the stack runs its rx_handler.
        unsafe {
            Device::from_raw(
                (*self.raw)
                    .__bindgen_anon_1
                    .__bindgen_anon_1
                    .__bindgen_anon_1
                    .dev,
            )
        }
    }
}

/// An [`RxHandler`] on an interface, which it holds a reference to;
/// unregistered on drop (which takes RTNL: drop it where RTNL is not
/// held, or call [`RxHandlerRegistration::unregister`]).
///
/// # Invariants
///
/// `rx_handler_callback::<T>` is `dev`'s rx_handler with `data`, the
/// foreign form of an `Arc<T>` this value owns, as its data; `live` is
/// false once it no longer is (after `unregister`).
pub struct RxHandlerRegistration<T: RxHandler> {
    dev: DeviceRef,
    data: *const c_void,
    live: bool,
    _t: core::marker::PhantomData<Arc<T>>,
}

// SAFETY: the handler is `Send + Sync`; the registration's calls work
// from any thread in process context under RTNL.
unsafe impl<T: RxHandler> Send for RxHandlerRegistration<T> {}
// SAFETY: as above; `&self` gives only the interface.
unsafe impl<T: RxHandler> Sync for RxHandlerRegistration<T> {}

impl<T: RxHandler> RxHandlerRegistration<T> {
    /// Makes `handler` `dev`'s rx_handler. `EBUSY` if the interface has
    /// one (a bridge, bond, macvlan, ... holds it: see
    /// [`Device::claimed_by`]), `EINVAL` if it takes none, `ENODEV` if
    /// it is being unregistered.
    pub fn register(dev: &DeviceRef, rtnl: &Rtnl, handler: Arc<T>) -> Result<Self> {
        if !dev.get().is_registered(rtnl) {
            return Err(ENODEV);
        }
        let dev = dev.hold();
        let data = handler.into_foreign();
        // SAFETY: the interface is held (`dev`), under RTNL (`rtnl`);
        // `data` stays valid until unregistered (drop or `unregister`),
        // and `rx_handler_callback::<T>` reads it as an `Arc<T>`.
        let rc = unsafe {
            bindings::netdev_rx_handler_register(
                dev.get().as_raw(),
                Some(rx_handler_callback::<T>),
                data.cast_mut(),
            )
        };
        if rc != 0 {
            // SAFETY: not registered: `data` is ours again.
            drop(unsafe { Arc::<T>::from_foreign(data) });
            return Err(Error::from_errno(rc));
        }
        // INVARIANT: registered with `data`.
        Ok(RxHandlerRegistration {
            dev,
            data,
            live: true,
            _t: core::marker::PhantomData,
        })
    }

    /// The interface.
    pub fn dev(&self) -> Device<'_> {
        self.dev.get()
    }

    /// Unregisters with RTNL held already (in a notifier); returns the
    /// handler, which no frame reaches any more.
    pub fn unregister(mut self, rtnl: &Rtnl) -> Arc<T> {
        self.release(rtnl);
        // SAFETY: unregistered (`release`), with every handler run done:
        // `data` is ours again, taken once (`live` is now false).
        unsafe { Arc::<T>::from_foreign(self.data) }
    }

    fn release(&mut self, _rtnl: &Rtnl) {
        if core::mem::replace(&mut self.live, false) {
            // SAFETY: registered (invariant, `live`), under RTNL;
            // the function waits (`synchronize_net`) for handlers
            // running on other CPUs, so none uses `data` afterwards.
            unsafe { bindings::netdev_rx_handler_unregister(self.dev.get().as_raw()) };
        }
    }
}

impl<T: RxHandler> Drop for RxHandlerRegistration<T> {
    fn drop(&mut self) {
        if self.live {
            let rtnl = RtnlGuard::lock();
            self.release(&rtnl);
            // SAFETY: unregistered, every handler run done: `data` came
            // from `into_foreign` in `register`, released once, here.
            drop(unsafe { Arc::<T>::from_foreign(self.data) });
        }
    }
}

/// # Safety
///
/// Called by the stack, in softirq context under RCU, with a frame whose
/// `dev` has this function as its rx_handler.
unsafe extern "C" fn rx_handler_callback<T: RxHandler>(
    pskb: *mut *mut bindings::sk_buff,
) -> bindings::rx_handler_result_t {
    // SAFETY: the stack passes its frame (function contract).
    let skb = unsafe { *pskb };
    // SAFETY: `skb->dev` is the interface whose handler this is; its
    // handler data is read under RCU (function contract).
    let data = unsafe {
        helpers::cxlf_netdev_rx_handler_data(
            (*skb)
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev,
        )
    };
    if data.is_null() {
        return bindings::rx_handler_result_RX_HANDLER_PASS;
    }
    // SAFETY: the data registered with this function is an `Arc<T>`,
    // live until unregistering has waited for this call.
    let this = unsafe { Arc::<T>::borrow(data) };
    // INVARIANT: lent by the stack for this call.
    let frame = RxFrame {
        raw: skb,
        _life: core::marker::PhantomData,
    };
    match this.handle(&frame) {
        RxHandlerResult::Pass => bindings::rx_handler_result_RX_HANDLER_PASS,
        RxHandlerResult::Consumed => {
            // SAFETY: the stack's reference, given up with CONSUMED.
            unsafe { bindings::consume_skb(skb) };
            bindings::rx_handler_result_RX_HANDLER_CONSUMED
        }
        RxHandlerResult::Dropped => {
            // SAFETY: as above.
            unsafe {
                bindings::sk_skb_reason_drop(
                    core::ptr::null_mut(),
                    skb,
                    bindings::skb_drop_reason_SKB_DROP_REASON_NOT_SPECIFIED,
                )
            };
            bindings::rx_handler_result_RX_HANDLER_CONSUMED
        }
    }
}
