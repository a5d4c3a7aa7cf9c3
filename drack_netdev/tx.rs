// SPDX-License-Identifier: GPL-2.0

//! Transmit (`ndo_start_xmit`, bottom halves off, may not sleep): the
//! destination host is read off the destination MAC (broadcast,
//! multicast and addresses not of drack0 go to every peer with a
//! session); per destination the frame is placed into this host's pool
//! buffers (or the queue's by-value slots) by the source end: reserve
//! under `tx`, copy and write back without it, commit and publish under
//! it.
//!
//! Each peer has a TX queue of its own (queue `p` for host `p`, chosen
//! by `ndo_select_queue`), so a destination that does not consume holds
//! back only its own frames: after the post that leaves no room for a
//! maximal frame (queue slots or buffers) transmit stops that queue, and
//! the poll wakes it when the returns make room again or the session
//! goes down. Frames for every peer go on queue `me` (this host's index,
//! no peer's), which never stops: a peer without room misses the frame
//! (`tx_dropped_full_frames`, a count per peer missed).

#![deny(clippy::arithmetic_side_effects)]

use crate::link::{Link, TxSide, MAC_PREFIX};
use crate::pool::Mem;
use crate::stats::{add, bump};
use crate::support::netdev::{Netdev, SkBuff};
use core::sync::atomic::Ordering;
use drack_core::layout::{FRAME_MAX, FRAME_MIN};
use drack_core::mem::PoolMem;
use drack_core::nic::Port;
use drack_core::peer::TxError;

/// Where a frame goes.
enum Dest {
    /// One peer.
    One(u32),
    /// Every peer with a session.
    All,
}

impl Link {
    fn dest(&self, frame: &[u8]) -> Dest {
        let Some(mac) = frame.get(..6) else {
            return Dest::All;
        };
        if mac[0] & 1 != 0 || mac[..5] != MAC_PREFIX {
            return Dest::All;
        }
        Dest::One(u32::from(mac[5]))
    }

    /// The TX queue of `frame` (`ndo_select_queue`): the peer's own, or
    /// `me` for frames to every peer.
    pub(crate) fn queue_of(&self, frame: &[u8]) -> u16 {
        let q = match self.dest(frame) {
            Dest::One(p) if p != self.me && p < self.geom.hosts() => p,
            _ => self.me,
        };
        u16::try_from(q).unwrap_or(0)
    }

    /// Sends or drops `skb`. Gives it back only when its peer's queue
    /// ran out of room after all (a frame for every peer took the room
    /// since the last transmit's check): the queue is stopped by then,
    /// and the stack sends it again once the poll wakes the queue.
    pub(crate) fn xmit(&self, dev: &Netdev<'_>, skb: SkBuff) -> Result<(), SkBuff> {
        let c = &self.counters;
        // Without NETIF_F_SG the stack hands over linear frames only.
        let (Some(frame), Some(mem)) = (skb.linear(), self.mem()) else {
            bump(&c.tx_dropped);
            return Ok(());
        };
        let len = frame.len();
        if !(FRAME_MIN as usize..=FRAME_MAX as usize).contains(&len) {
            bump(&c.tx_dropped);
            return Ok(());
        }
        let by_value = self.by_value.load(Ordering::Relaxed);
        // No checksum offload is offered (no NETIF_F_HW_CSUM): frames
        // carry their checksums and no hints.
        let csum = None;
        let sent = match self.dest(frame) {
            Dest::One(p) if p == self.me || p >= self.geom.hosts() => {
                bump(&c.tx_dropped);
                return Ok(());
            }
            Dest::One(p) => {
                let r = self.send_to(&mem, p, frame, by_value, csum, Some(dev), Port::Link);
                if matches!(r, Err(TxError::RingFull | TxError::NoBuffer)) {
                    bump(&c.tx_busy);
                    return Err(skb);
                }
                self.count(r)
            }
            Dest::All => self
                .peers()
                .map(|p| {
                    let r = self.send_to(&mem, p, frame, by_value, csum, None, Port::Link);
                    self.count(r)
                })
                .fold(false, |a, b| a | b),
        };
        if sent {
            bump(&c.tx_frames);
            add(&c.tx_bytes, len as u64);
        }
        Ok(())
    }

    /// Counts a send's outcome; whether it was sent.
    fn count(&self, r: Result<(), TxError>) -> bool {
        let c = &self.counters;
        match r {
            Ok(()) => true,
            Err(TxError::NotUp) => {
                bump(&c.tx_no_session);
                false
            }
            Err(TxError::RingFull | TxError::NoBuffer) => {
                // Poll fast so the returns come back soon.
                self.poll_fast();
                bump(&c.tx_dropped_full);
                false
            }
            Err(_) => {
                bump(&c.tx_dropped);
                false
            }
        }
    }

    /// Places `frame` for peer `p` and queues its reference on `port`.
    /// On `p`'s own queue (`own`: the interface) the queue is stopped
    /// when this frame, or the next maximal one, finds no room.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_to(
        &self,
        mem: &Mem<'_>,
        p: u32,
        frame: &[u8],
        by_value: bool,
        csum: Option<(u16, u16)>,
        own: Option<&Netdev<'_>>,
        port: Port,
    ) -> Result<(), TxError> {
        let len = u32::try_from(frame.len()).map_err(|_| TxError::Len)?;
        // One sender per pair from here to the publication: another's
        // reservation in between would make this one stale.
        let _place = self.place.get(p as usize).ok_or(TxError::NotUp)?.lock();
        let mut f = {
            let mut tx = self.tx.lock();
            let end = tx.end(p).ok_or(TxError::NotUp)?;
            match end.reserve(len, by_value) {
                Ok(f) => f,
                Err(e) => {
                    if let (TxError::RingFull | TxError::NoBuffer, Some(dev)) = (e, own) {
                        self.stop_queue(&mut tx, dev, p);
                    }
                    return Err(e);
                }
            }
        };
        f.port = port;
        // The counted placement, outside `tx` (`place` keeps other
        // senders to `p` out).
        let mut at = 0usize;
        let mut placed = Ok(());
        for (_, off, l) in f.parts() {
            let end = at.saturating_add(usize::from(l));
            let part = frame.get(at..end).unwrap_or(&[]);
            placed = placed
                .and_then(|()| mem.write(off, part))
                .and_then(|()| mem.write_back(off, u64::from(l)));
            at = end;
        }
        let mut tx = self.tx.lock();
        let end = tx.end(p).ok_or(TxError::NotUp)?;
        if placed.is_err() {
            end.abort(&f);
            return Err(TxError::Access);
        }
        match end.commit(mem, &f, csum) {
            Ok(()) => {}
            // A new session began since the reservation: `commit` gave
            // the buffers back.
            Err(TxError::Stale) => return Err(TxError::Stale),
            Err(e) => {
                end.abort(&f);
                return Err(e);
            }
        }
        end.publish(mem)?;
        let full = !end.fits(FRAME_MAX, by_value);
        if let (true, Some(dev)) = (full, own) {
            // Under `tx`, as the poll's wake: no wake is lost between.
            self.stop_queue(&mut tx, dev, p);
        }
        drop(tx);
        let copied = if by_value {
            &self.counters.tx_by_value_bytes
        } else {
            &self.counters.tx_placed_bytes
        };
        add(copied, u64::from(len));
        Ok(())
    }
}

impl Link {
    /// Stops peer `p`'s TX queue until the poll finds room (`tx` held).
    fn stop_queue(&self, tx: &mut TxSide, dev: &Netdev<'_>, p: u32) {
        let bit = 1u32.checked_shl(p).unwrap_or(0);
        if tx.stopped & bit == 0 {
            tx.stopped |= bit;
            dev.txq_stop(u16::try_from(p).unwrap_or(u16::MAX));
            bump(&self.counters.tx_queue_stops);
        }
    }
}

impl TxSide {
    /// The source end towards `p`.
    pub(crate) fn end(&mut self, p: u32) -> Option<&mut drack_core::peer::SrcEnd> {
        self.ends.get_mut(p as usize)?.as_deref_mut()
    }
}
