// SPDX-License-Identifier: GPL-2.0

//! Receive, from the NAPI poll: per source, the destination end reads
//! the queue; a by-reference frame is lent to the stack (headers copied
//! into the skb's linear part, the pool pages attached as fragments with
//! a reference each) if the lend cap allows and no page is still
//! referenced, else copied; a by-value frame is copied out of its slot.
//! Then the lent buffers whose pages are idle again (reference count 1)
//! go back to their owner.
//!
//! Nothing is handed to the stack with `rx` held (GRO may transmit).

#![deny(clippy::arithmetic_side_effects)]

use crate::link::Link;
use crate::pool::Mem;
use crate::stats::{add, bump};
use crate::support::napi::NapiPoll;
use crate::support::netdev::NetdevRef;
use crate::support::rxfrag::{eth_headlen, RxSkb};
use crate::vnic::Vnic;
use core::sync::atomic::Ordering;
use drack_core::mem::PoolMem;
use drack_core::nic::Port;
use drack_core::peer::Frame;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Most header bytes copied into a lent frame's linear part.
const HEADER_MAX: usize = 128;
/// An Ethernet header: what `eth_type_trans` needs in the linear part.
const ETH_HLEN: usize = 14;
/// Bytes of a pool buffer (a page).
const PAGE: u32 = drack_core::layout::BUF_BYTES as u32;

/// Whose frame it is.
enum To {
    /// drack0's.
    Link,
    /// A vNIC's (held for the delivery).
    Vnic(NetdevRef, Arc<Vnic>),
}

impl Link {
    /// Polls the destination end of peer `p` (its session, its queue's
    /// tail), before any receive.
    pub(crate) fn rx_prepare(&self, mem: &Mem<'_>, p: u32) {
        let mut rx = self.rx.lock();
        if let Some(end) = rx.end(p) {
            end.poll(mem);
        }
    }

    /// Receives from peer `p` until its queue is empty or `budget`
    /// frames are in; returns how many.
    pub(crate) fn receive_from(
        &self,
        mem: &Mem<'_>,
        napi: &NapiPoll<'_>,
        p: u32,
        budget: u32,
    ) -> u32 {
        let mut work = 0u32;
        while work < budget {
            let f = {
                let mut rx = self.rx.lock();
                let Some(end) = rx.end(p) else {
                    break;
                };
                end.recv(mem)
            };
            let Some(f) = f else {
                break;
            };
            work = work.saturating_add(1);
            self.deliver(mem, napi, p, &f);
        }
        work
    }

    /// Gives back peer `p`'s idle lent buffers and publishes, after the
    /// receives (`received`: any frame came in this poll).
    pub(crate) fn rx_settle(&self, mem: &Mem<'_>, p: u32, received: bool) {
        let mut rx = self.rx.lock();
        if let Some(end) = rx.end(p) {
            let released = self.give_back(mem, end);
            // By-value frames are copied out (their slots may go), and
            // the return tail moves.
            if received || released > 0 {
                let _ = end.publish(mem);
            }
        }
    }

    /// Hands frame `f` of peer `p` to the stack (or drops it), and
    /// settles its buffers with the destination end: drack0's frames to
    /// drack0, a lent NIC's to our vNIC of it, a vNIC's for our lent NIC
    /// to that NIC (`lend.rs`).
    fn deliver(&self, mem: &Mem<'_>, napi: &NapiPoll<'_>, p: u32, f: &Frame) {
        let c = &self.counters;
        // The frame's lines, fresh: whether lent or copied, the stack or
        // the copy reads what the sender wrote back.
        let fresh = f
            .parts()
            .try_for_each(|(_, off, l)| mem.invalidate(off, u64::from(l)));
        let to = match f.port {
            _ if fresh.is_err() => None,
            Port::Link => self.up.load(Ordering::Relaxed).then_some(To::Link),
            Port::FromNic(n) => self.vnic_for(p, n),
            Port::ToNic(n) => {
                self.to_nic(mem, p, n, f);
                self.settle_copied(mem, p, f);
                return;
            }
        };
        let Some(to) = to else {
            bump(&c.rx_dropped);
            self.settle_copied(mem, p, f);
            return;
        };
        let lent = !f.by_value && self.try_lend(mem, p, f);
        let skb = if lent {
            self.build_lent(mem, napi, f)
        } else {
            let skb = self.build_copy(mem, napi, f);
            self.settle_copied(mem, p, f);
            skb
        };
        // Our transmit sets no hints, and CHECKSUM_PARTIAL from a peer
        // would make the stack skip verifying the L4 checksum of a frame
        // it forged or scribbled: the skb stays CHECKSUM_NONE.
        if f.csum.is_some() {
            bump(&c.rx_csum_hint_ignored);
        }
        // A lent frame whose skb failed: its page references (if any)
        // went with the skb, and the next scan gives the buffers back.
        let handed = skb.ok_or(EINVAL).and_then(|skb| match &to {
            To::Link => napi.gro_receive(skb),
            To::Vnic(dev, _) => napi.gro_receive_as(skb, &dev.get()),
        });
        let (frames, bytes, dropped) = match &to {
            To::Link => (&c.rx_frames, &c.rx_bytes, &c.rx_dropped),
            To::Vnic(_, v) => (
                &v.counters.rx_frames,
                &v.counters.rx_bytes,
                &v.counters.rx_dropped,
            ),
        };
        if handed.is_err() {
            bump(dropped);
            return;
        }
        bump(frames);
        add(bytes, u64::from(f.len));
    }

    /// Our vNIC of peer `p`'s NIC `n` if it is up, held for a delivery.
    /// Else the frame is dropped and counted (`rx_no_vnic_frames`): one
    /// in flight while the vNIC went or is down, or a hostile peer's for
    /// a NIC it does not lend.
    fn vnic_for(&self, p: u32, n: u8) -> Option<To> {
        let v = self.vnics.lock().get(p, n);
        match v {
            Some((dev, v)) if v.is_up() => return Some(To::Vnic(dev, v)),
            Some(_) => {}
            None => crate::support::pr_info_ratelimited!(
                "host {}'s frame from its NIC {} dropped: this host has no vNIC of it\n",
                p,
                n
            ),
        }
        bump(&self.counters.rx_no_vnic);
        None
    }

    /// Lends `f`'s buffers if every page is idle and the cap allows.
    fn try_lend(&self, mem: &Mem<'_>, p: u32, f: &Frame) -> bool {
        if !f.parts().all(|(_, off, _)| mem.page_idle(off)) {
            bump(&self.counters.rx_page_busy);
            return false;
        }
        let mut rx = self.rx.lock();
        rx.end(p).is_some_and(|end| end.lend(f))
    }

    /// A copied (or dropped) frame's buffers go back now.
    fn settle_copied(&self, mem: &Mem<'_>, p: u32, f: &Frame) {
        let mut rx = self.rx.lock();
        if let Some(end) = rx.end(p) {
            end.copied(mem, f);
        }
    }

    /// An skb with `f`'s headers copied and its pages attached.
    fn build_lent(&self, mem: &Mem<'_>, napi: &NapiPoll<'_>, f: &Frame) -> Option<RxSkb> {
        let c = &self.counters;
        let (_, first, first_len) = f.parts().next()?;
        let mut hdr = [0u8; HEADER_MAX];
        let n = usize::from(first_len).min(HEADER_MAX);
        // The core refuses shorter first buffers, but a panic here would
        // be in softirq: drop (counted in `rx_dropped_frames`) instead.
        if n < ETH_HLEN {
            return None;
        }
        let hdr = hdr.get_mut(..n)?;
        mem.read(first, hdr).ok()?;
        let head = (eth_headlen(&napi.netdev(), hdr) as usize).clamp(ETH_HLEN, n);
        let mut skb = napi.alloc_skb(head as u32).ok()?;
        skb.put_data(hdr.get(..head)?).ok()?;
        add(&c.rx_header_bytes, head as u64);
        skb.set_shared_frag();
        let mut skip = head as u32;
        for (_, off, l) in f.parts() {
            let len = u32::from(l).saturating_sub(skip);
            if len > 0 {
                skb.add_frag(mem.page(off)?, skip, len, PAGE).ok()?;
            }
            skip = 0;
        }
        bump(&c.rx_lent_frames);
        Some(skb)
    }

    /// An skb with a copy of `f` (a by-value frame, or a by-reference one
    /// that could not be lent).
    fn build_copy(&self, mem: &Mem<'_>, napi: &NapiPoll<'_>, f: &Frame) -> Option<RxSkb> {
        let c = &self.counters;
        let mut skb = napi.alloc_skb(f.len).ok()?;
        let buf = skb.put(f.len).ok()?;
        let mut at = 0usize;
        for (_, off, l) in f.parts() {
            let end = at.checked_add(usize::from(l))?;
            mem.read(off, buf.get_mut(at..end)?).ok()?;
            at = end;
        }
        let (frames, bytes) = if f.by_value {
            (&c.rx_by_value_frames, &c.rx_by_value_bytes)
        } else {
            (&c.rx_fallback_copy_frames, &c.rx_fallback_copy_bytes)
        };
        bump(frames);
        add(bytes, u64::from(f.len));
        Some(skb)
    }

    /// Gives back the lent buffers whose pages the stack let go of;
    /// returns how many.
    fn give_back(&self, mem: &Mem<'_>, end: &mut drack_core::peer::DstEnd) -> u32 {
        let pair = end.pair();
        let mut released = 0u32;
        let mut from = 0u16;
        while let Some(b) = end.lends().next_lent(from) {
            let idle = self
                .geom
                .buffer(pair, u32::from(b))
                .is_some_and(|off| mem.page_idle(off));
            if idle && end.release(mem, b) {
                released = released.saturating_add(1);
            }
            let Some(next) = b.checked_add(1) else {
                break;
            };
            from = next;
        }
        released
    }
}

impl crate::link::RxSide {
    /// The destination end for frames from `p`.
    pub(crate) fn end(&mut self, p: u32) -> Option<&mut drack_core::peer::DstEnd> {
        self.ends.get_mut(p as usize)?.as_deref_mut()
    }
}
