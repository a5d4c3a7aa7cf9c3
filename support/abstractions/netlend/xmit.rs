// SPDX-License-Identifier: GPL-2.0

//! Frames built by copy: sent on a lent interface ([`TxFrame`]), or
//! handed to an interface's stack as received ([`Netdev::receive_copy`]).

use super::Device;
use crate::bindings;
use crate::helpers;
use crate::netdev::Netdev;
use kernel::prelude::*;

/// An Ethernet header's bytes.
const ETH_HLEN: u32 = bindings::ETH_HLEN;
/// An Ethernet header with one VLAN tag, beyond the MTU.
const VLAN_ETH_HLEN: u32 = 18;

/// An Ethernet frame being built to send on an interface; freed on drop
/// unless sent.
///
/// # Invariants
///
/// `raw` is a linear `sk_buff` this value owns, never handed to the
/// stack.
pub struct TxFrame {
    raw: *mut bindings::sk_buff,
}

// SAFETY: an owned buffer may be filled, sent or freed from any thread.
unsafe impl Send for TxFrame {}

impl TxFrame {
    /// An empty frame with room for `len` bytes, and the headroom `dev`
    /// asks for (`LL_RESERVED_SPACE`). Any context but hard IRQ
    /// (GFP_ATOMIC); `ENOMEM` if no buffer.
    pub fn alloc(dev: &Device<'_>, len: u32) -> Result<TxFrame> {
        // SAFETY: `dev` is live (its invariant).
        let reserve = unsafe { helpers::cxlf_netdev_ll_reserved(dev.as_raw()) };
        let size = len.checked_add(reserve).ok_or(EINVAL)?;
        // SAFETY: no preconditions (GFP_ATOMIC).
        let raw =
            unsafe { bindings::__alloc_skb(size, bindings::GFP_ATOMIC, 0, bindings::NUMA_NO_NODE) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: a fresh buffer of `size >= reserve` bytes, ours.
        unsafe { helpers::cxlf_skb_reserve(raw, reserve) };
        // INVARIANT: a fresh linear buffer, ours.
        Ok(TxFrame { raw })
    }

    /// Bytes in the frame.
    pub fn len(&self) -> u32 {
        // SAFETY: owned (invariant); a plain field.
        unsafe { (*self.raw).len }
    }

    /// Appends `len` zeroed bytes and returns them; `ENOSPC` if they do
    /// not fit.
    pub fn put(&mut self, len: u32) -> Result<&mut [u8]> {
        // SAFETY: owned and linear (invariant); plain fields.
        let room = unsafe { (*self.raw).end.saturating_sub((*self.raw).tail) };
        if len > room {
            return Err(ENOSPC);
        }
        // SAFETY: owned, linear, with `len` bytes of tailroom (checked):
        // `skb_put` returns them, valid as long as the buffer and
        // borrowed through `&mut self`.
        unsafe {
            let at = bindings::skb_put(self.raw, len).cast::<u8>();
            at.write_bytes(0, len as usize);
            Ok(core::slice::from_raw_parts_mut(at, len as usize))
        }
    }

    /// Appends `data`; `ENOSPC` if it does not fit.
    pub fn put_data(&mut self, data: &[u8]) -> Result {
        let len = u32::try_from(data.len()).map_err(|_| ENOSPC)?;
        self.put(len)?.copy_from_slice(data);
        Ok(())
    }

    /// Sends the frame on `dev` (`dev_queue_xmit`, which takes it
    /// whatever happens), its protocol taken from its Ethernet header.
    /// `EINVAL` (dropped) if shorter than a header, `EMSGSIZE` if longer
    /// than the MTU allows; `ENOBUFS` if the queue dropped it; `ENETDOWN`
    /// and the like from the stack. Process or softirq context.
    pub fn xmit(self, dev: &Device<'_>) -> Result {
        let len = self.len();
        if len < ETH_HLEN {
            return Err(EINVAL);
        }
        if len > dev.mtu().saturating_add(VLAN_ETH_HLEN) {
            return Err(crate::error::emsgsize());
        }
        let raw = self.raw;
        core::mem::forget(self);
        // SAFETY: `raw` is ours (invariant of `TxFrame`) until
        // `__dev_queue_xmit` takes it, linear with `len >= 14` bytes
        // from `data` (checked); `dev` is live (its invariant), and the
        // stack takes its own reference for the queued frame.
        let rc = unsafe {
            let frame = (*raw).data;
            let ty = u16::from_be_bytes([*frame.add(12), *frame.add(13)]);
            // As `eth_type_trans` reads it: below 0x600 a length (802.3).
            let proto = if u32::from(ty) >= bindings::ETH_P_802_3_MIN {
                ty
            } else {
                bindings::ETH_P_802_3 as u16
            };
            helpers::cxlf_skb_reset_mac_header(raw);
            (*raw)
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev = dev.as_raw();
            helpers::cxlf_skb_set_protocol(raw, proto.to_be());
            bindings::__dev_queue_xmit(raw, core::ptr::null_mut())
        };
        match u32::try_from(rc) {
            // Queued; NET_XMIT_CN: queued, and the queue is congested.
            Ok(0 | bindings::NET_XMIT_CN) => Ok(()),
            Err(_) => Err(Error::from_errno(rc)),
            // NET_XMIT_DROP and the like: the queue dropped it.
            Ok(_) => Err(crate::error::enobufs()),
        }
    }
}

impl Drop for TxFrame {
    fn drop(&mut self) {
        // SAFETY: owned (invariant), freed once, here.
        unsafe { helpers::cxlf_skb_free(self.raw) };
    }
}

impl Netdev<'_> {
    /// Hands a copy of `frame`, an Ethernet frame, to the interface's
    /// stack as received (`netif_rx`: the backlog, no NAPI context
    /// needed). Any context but hard IRQ. `EINVAL` if shorter than a
    /// header, `ENOMEM` if no buffer, `ENOBUFS` if the backlog dropped
    /// it (full, or the interface is down).
    pub fn receive_copy(&self, frame: &[u8]) -> Result {
        let len = u32::try_from(frame.len()).map_err(|_| EINVAL)?;
        if len < ETH_HLEN {
            return Err(EINVAL);
        }
        let align = bindings::CXLF_NET_IP_ALIGN as u32;
        let size = len.checked_add(align).ok_or(EINVAL)?;
        let dev = self.as_raw();
        // SAFETY: the interface is live (invariant of `Netdev`);
        // GFP_ATOMIC has no context preconditions.
        let skb = unsafe { bindings::__netdev_alloc_skb(dev, size, bindings::GFP_ATOMIC) };
        if skb.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `skb` is a fresh buffer of `size` bytes, ours until
        // `netif_rx` takes it; `skb_put` returns `len` writable bytes
        // after `align` reserved; the frame has an Ethernet header
        // (checked), which `eth_type_trans` pulls.
        let rc = unsafe {
            helpers::cxlf_skb_reserve(skb, align);
            let at = bindings::skb_put(skb, len).cast::<u8>();
            core::ptr::copy_nonoverlapping(frame.as_ptr(), at, frame.len());
            helpers::cxlf_skb_set_protocol(skb, bindings::eth_type_trans(skb, dev));
            bindings::netif_rx(skb)
        };
        if u32::try_from(rc) == Ok(bindings::NET_RX_SUCCESS) {
            Ok(())
        } else {
            Err(crate::error::enobufs())
        }
    }
}
