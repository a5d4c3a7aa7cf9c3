// SPDX-License-Identifier: GPL-2.0

//! Transmit (`ndo_start_xmit`, bottom halves off, may not sleep): the
//! destination host is read off the destination MAC (broadcast,
//! multicast and addresses not of drack0 go to every peer with a
//! session); per destination the frame is placed into this host's pool
//! buffers (or the queue's by-value slots) by the source end: reserve
//! under `tx`, copy and write back without it, commit and publish under
//! it. A frame for a destination without room (ring or buffers full) is
//! dropped and counted (`tx_dropped_full_frames`): the one queue is
//! shared by all peers, so stopping it for one that does not consume
//! would stall traffic to every other.

#![deny(clippy::arithmetic_side_effects)]

use crate::link::{Link, MAC_PREFIX};
use crate::pool::Mem;
use crate::stats::{add, bump};
use crate::support::netdev::{Netdev, SkBuff};
use core::sync::atomic::Ordering;
use drack_core::layout::{FRAME_MAX, FRAME_MIN};
use drack_core::mem::PoolMem;
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

    /// Sends or drops `skb`; never gives it back (the queue never stops).
    pub(crate) fn xmit(&self, _dev: &Netdev<'_>, skb: SkBuff) -> Result<(), SkBuff> {
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
                let r = self.send_to(&mem, p, frame, by_value, csum);
                self.count(r)
            }
            Dest::All => self
                .peers()
                .map(|p| {
                    let r = self.send_to(&mem, p, frame, by_value, csum);
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

    /// Places `frame` for peer `p` and queues its reference.
    fn send_to(
        &self,
        mem: &Mem<'_>,
        p: u32,
        frame: &[u8],
        by_value: bool,
        csum: Option<(u16, u16)>,
    ) -> Result<(), TxError> {
        let len = u32::try_from(frame.len()).map_err(|_| TxError::Len)?;
        let f = {
            let mut tx = self.tx.lock();
            let end = tx.end(p).ok_or(TxError::NotUp)?;
            end.reserve(len, by_value)?
        };
        // The counted placement, outside the lock: only transmit (one
        // queue, serialised by the stack) reserves and commits.
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

impl crate::link::TxSide {
    /// The source end towards `p`.
    pub(crate) fn end(&mut self, p: u32) -> Option<&mut drack_core::peer::SrcEnd> {
        self.ends.get_mut(p as usize)?.as_deref_mut()
    }
}
