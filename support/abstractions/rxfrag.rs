// SPDX-License-Identifier: GPL-2.0

//! Receiving frames that live in memory the driver does not own (pages
//! of a shared pool), polled without interrupts. No upstream Rust
//! counterpart (the 2023 RFC's `SkBuff` had none of this); the C it
//! wraps is what drivers that receive into page fragments do
//! (`napi_alloc_skb`, `skb_add_rx_frag`, `eth_get_headlen`,
//! `napi_gro_receive`):
//!
//! - [`RxSkb`]: an skb the driver builds during its NAPI poll
//!   ([`NapiPoll::alloc_skb`]): headers copied into its linear part
//!   ([`RxSkb::put_data`], [`RxSkb::put`]), pages attached as fragments
//!   ([`RxSkb::add_frag`]) with a reference each (an `ARef<SharedPage>`)
//!   and the
//!   shared-fragment flag (the stack then copies before writing or
//!   checksumming them), the checksum hints; handed to GRO with
//!   [`NapiPoll::gro_receive`]. Never `build_skb` on such memory.
//! - [`eth_headlen`]: how many bytes of a frame are headers.
//! - [`SkBuff::linear`]: a transmitted frame's bytes, when linear.
//! - [`Placement::sw_irq_coalesce`]: the kernel's deferral
//!   (`napi_defer_hard_irqs`, `gro_flush_timeout`) on by default, the
//!   fast phase of a device polled without interrupts.

use crate::bindings;
use crate::helpers;
use crate::napi::NapiPoll;
use crate::netdev::{Netdev, Placement, SkBuff};
use crate::page::SharedPage;
use kernel::prelude::*;
use kernel::types::ARef;

/// Bytes of a page.
const PAGE_SIZE: u32 = kernel::page::PAGE_SIZE as u32;
/// An Ethernet header, which `eth_type_trans` reads from the linear part.
const ETH_HLEN: u32 = 14;

/// An skb being built in a NAPI poll; freed on drop unless received.
///
/// # Invariants
///
/// `raw` is an `sk_buff` this value owns, never handed to the stack.
pub struct RxSkb {
    raw: *mut bindings::sk_buff,
}

// SAFETY: an owned buffer may be freed from any context.
unsafe impl Send for RxSkb {}

impl RxSkb {
    /// Bytes in the buffer (linear part and fragments).
    pub fn len(&self) -> u32 {
        // SAFETY: owned (invariant); a plain field.
        unsafe { (*self.raw).len }
    }

    /// Room left at the end of the linear part.
    fn tailroom(&self) -> u32 {
        // SAFETY: owned (invariant); plain fields (`skb_tailroom`: none
        // once the buffer has fragments).
        unsafe {
            if (*self.raw).data_len != 0 {
                return 0;
            }
            (*self.raw).end.saturating_sub((*self.raw).tail)
        }
    }

    /// Appends `len` zeroed bytes to the linear part and returns them;
    /// `ENOSPC` if they do not fit (or the buffer has fragments).
    pub fn put(&mut self, len: u32) -> Result<&mut [u8]> {
        if len > self.tailroom() {
            return Err(ENOSPC);
        }
        // SAFETY: owned (invariant), linear, with `len` bytes of
        // tailroom (checked): `skb_put` returns them, valid for as long
        // as the buffer and borrowed through `&mut self`.
        unsafe {
            let at = bindings::skb_put(self.raw, len).cast::<u8>();
            at.write_bytes(0, len as usize);
            Ok(core::slice::from_raw_parts_mut(at, len as usize))
        }
    }

    /// Appends `data` to the linear part; `ENOSPC` if it does not fit.
    pub fn put_data(&mut self, data: &[u8]) -> Result {
        let len = u32::try_from(data.len()).map_err(|_| ENOSPC)?;
        self.put(len)?.copy_from_slice(data);
        Ok(())
    }

    /// Attaches `len` bytes at `off` of `page` as the next fragment, the
    /// fragment taking the reference; `truesize` is what the stack
    /// charges for it. `EINVAL` outside the page, `ENOSPC` with
    /// `MAX_SKB_FRAGS` fragments already (the reference is dropped).
    pub fn add_frag(
        &mut self,
        page: ARef<SharedPage>,
        off: u32,
        len: u32,
        truesize: u32,
    ) -> Result {
        if len == 0 || !matches!(off.checked_add(len), Some(end) if end <= PAGE_SIZE) {
            return Err(EINVAL);
        }
        // SAFETY: owned (invariant).
        let n = unsafe { helpers::cxlf_skb_nr_frags(self.raw) };
        if n >= bindings::CXLF_MAX_SKB_FRAGS {
            return Err(ENOSPC);
        }
        let page = core::mem::ManuallyDrop::new(page).as_ptr();
        // SAFETY: owned (invariant), with room for fragment `n`
        // (checked); `page` carries the reference `ARef` held, which the
        // fragment now owns (`skb_add_rx_frag` takes none; the
        // `ManuallyDrop` never drops it), and `[off, off + len)` lies in
        // it; the buffer's length and truesize grow with it.
        unsafe {
            helpers::cxlf_skb_add_rx_frag(self.raw, n, page, off, len, truesize);
        }
        Ok(())
    }

    /// Marks the fragments shared (`SKBFL_SHARED_FRAG`): memory others
    /// can write, which the stack copies before it writes or checksums
    /// it in place.
    pub fn set_shared_frag(&mut self) {
        // SAFETY: owned (invariant).
        unsafe { helpers::cxlf_skb_set_shared_frag(self.raw) };
    }

    /// `CHECKSUM_PARTIAL` with the sender's hints: the checksum from
    /// `start` (bytes into the frame) is to be stored at `start + off`.
    /// False (nothing changes) unless that field lies in the linear
    /// part.
    pub fn set_csum_partial(&mut self, start: u16, off: u16) -> bool {
        // SAFETY: owned (invariant); the function checks the offsets
        // against the linear part.
        unsafe { bindings::skb_partial_csum_set(self.raw, start, off) }
    }
}

impl Drop for RxSkb {
    fn drop(&mut self) {
        // SAFETY: owned (invariant), freed once, here (with its
        // fragments' references).
        unsafe { helpers::cxlf_skb_free(self.raw) };
    }
}

impl NapiPoll<'_> {
    /// A buffer for a received frame with room for `len` bytes in its
    /// linear part. `ENOMEM` if none.
    pub fn alloc_skb(&self, len: u32) -> Result<RxSkb> {
        // SAFETY: the context is being polled (`NapiPoll` invariant), in
        // softirq context.
        let raw = unsafe { bindings::napi_alloc_skb(self.as_raw(), len) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: a fresh buffer, ours.
        Ok(RxSkb { raw })
    }

    /// Hands `skb`, a received Ethernet frame, to the stack through GRO.
    /// `EINVAL` (the frame is dropped) unless its Ethernet header is in
    /// the linear part.
    pub fn gro_receive(&self, skb: RxSkb) -> Result {
        self.gro_receive_as(skb, &self.netdev())
    }

    /// As [`NapiPoll::gro_receive`], for a frame of another interface
    /// this poll receives for (a virtual one's): `dev` becomes its
    /// device.
    pub fn gro_receive_as(&self, skb: RxSkb, dev: &Netdev<'_>) -> Result {
        // SAFETY: owned (invariant of `RxSkb`).
        let head = unsafe { (*skb.raw).len.saturating_sub((*skb.raw).data_len) };
        if head < ETH_HLEN {
            return Err(EINVAL);
        }
        let raw = skb.raw;
        core::mem::forget(skb);
        // SAFETY: `raw` is ours until GRO takes it, with an Ethernet
        // header in its linear part (checked); the context is being
        // polled (`NapiPoll` invariant); `dev` is live while borrowed.
        unsafe {
            let dev = dev.as_raw();
            helpers::cxlf_skb_record_rx_queue(raw, 0);
            helpers::cxlf_skb_set_protocol(raw, bindings::eth_type_trans(raw, dev));
            bindings::napi_gro_receive(self.as_raw(), raw);
        }
        Ok(())
    }
}

/// How many of `frame`'s first bytes are headers (Ethernet, IP and
/// transport, as the flow dissector finds them): what a driver copies
/// into the linear part. At most `frame.len()`.
pub fn eth_headlen(dev: &Netdev<'_>, frame: &[u8]) -> u32 {
    let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
    // SAFETY: `dev` is live (its invariant); `frame` is readable for
    // `len` bytes, all the function reads.
    let n = unsafe { bindings::eth_get_headlen(dev.as_raw(), frame.as_ptr().cast(), len) };
    n.min(len)
}

impl Placement<'_> {
    /// With the kernel's deferral on (`netdev_sw_irq_coalesce_default_on`:
    /// `napi_defer_hard_irqs` 1, `gro_flush_timeout` 20 us): after a poll
    /// with work, the net core polls again itself for a while before the
    /// driver's own timer takes over.
    pub fn sw_irq_coalesce(mut self) -> Self {
        self.sw_irq_coalesce = true;
        self
    }
}

impl SkBuff {
    /// The frame's bytes, if all in the linear part (always so for a
    /// device without `NETIF_F_SG`).
    pub fn linear(&self) -> Option<&[u8]> {
        // SAFETY: owned (invariant of `SkBuff`); plain fields; a linear
        // buffer's `len` bytes start at `data` and live as long as it.
        unsafe {
            let s = &*self.raw;
            if s.data_len != 0 || s.data.is_null() {
                return None;
            }
            Some(core::slice::from_raw_parts(s.data, s.len as usize))
        }
    }
}
