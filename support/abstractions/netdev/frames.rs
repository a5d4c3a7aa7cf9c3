// SPDX-License-Identifier: GPL-2.0

//! What a registered interface counts, and frames sent to it (for tests).

use super::{NetDevice, Registration, Stats};
use crate::bindings;
use crate::helpers;
use kernel::prelude::*;

impl<T: NetDevice> Registration<T> {
    /// The counters as `ip -s link` reads them.
    pub fn stats(&self) -> Stats {
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
    pub fn send_frame(&self, len: u32) -> Result {
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
            _ => Err(crate::error::enobufs()),
        }
    }
}
