// SPDX-License-Identifier: GPL-2.0

//! Reading and writing a queue pair's parts, bounds-checked against each
//! part's size, and the ring steps made of them: posting a TX frame or an
//! RX buffer, taking the device's TX head, ringing the doorbell.

use super::rings::{slot_of, Place, Rings, LINE_TX_HEAD, LINE_TX_TAIL};
use crate::ring::device::{Part, VECTOR_QUEUE0};
use crate::ring::index::RingSize;
use crate::ring::layout::{RxDesc, TxDesc, DESC_BYTES};
use crate::ring::queue::Producer;
use crate::support::coherent::Coherent;
use crate::support::netdev::SkBuff;
use kernel::prelude::*;

impl Rings {
    /// Part `p`'s memory and the offset of byte `off..off + n` of it, if
    /// inside the part.
    pub(super) fn at(&self, p: Part, off: usize, n: usize) -> Result<(&dyn Coherent, usize)> {
        let placed = self.parts.get(slot_of(p)).ok_or(EINVAL)?;
        if !off.checked_add(n).is_some_and(|end| end <= placed.len) {
            return Err(EINVAL);
        }
        Ok(match &placed.place {
            Place::Host(m) => (&**m as &dyn Coherent, off),
            Place::Device(base) => (
                &self.io.mem as &dyn Coherent,
                base.checked_add(off).ok_or(EINVAL)?,
            ),
        })
    }

    pub(super) fn load(&self, p: Part, off: usize) -> Result<u32> {
        let (m, at) = self.at(p, off, 4)?;
        m.load32(at)
    }

    pub(super) fn store(&self, p: Part, off: usize, v: u32) -> Result {
        let (m, at) = self.at(p, off, 4)?;
        m.store32(at, v)
    }

    fn write(&self, p: Part, off: usize, data: &[u8]) -> Result {
        let (m, at) = self.at(p, off, data.len())?;
        m.write(at, data)
    }

    pub(super) fn read(&self, p: Part, off: usize, out: &mut [u8]) -> Result {
        let (m, at) = self.at(p, off, out.len())?;
        m.read(at, out)
    }

    /// The offset of entry `index`'s buffer in an area of `size` entries.
    pub(super) fn buffer_offset(&self, size: RingSize, index: u32) -> usize {
        // Inside the area (invariant), so a usize.
        self.shape.sizes.slot_offset(size, index) as usize
    }

    /// Posts the RX ring's next entry, an empty buffer (none if full).
    pub(super) fn post_rx(&self, ring: &mut Producer) -> Result {
        let Some(e) = ring.next() else {
            return Ok(());
        };
        let buf = self.buffer_offset(self.shape.sizes.rx, e.index);
        let desc = RxDesc {
            buf: buf as u64,
            cap: self.shape.sizes.slot,
            tag: e.tag,
        }
        .encode();
        let off = e.slot.checked_mul(DESC_BYTES).ok_or(EINVAL)?;
        // The tag, which makes the entry valid, last.
        self.write(Part::RxRing, off, &desc[..12])?;
        self.store(Part::RxRing, off + 12, e.tag)?;
        ring.commit();
        Ok(())
    }

    /// Takes the device's TX head: the entries it read are free again;
    /// false if the head was not one the driver can have reached.
    pub(super) fn reclaim(&self, ring: &mut Producer) -> bool {
        // A head the driver never posted up to is ignored (a later, sane
        // one frees the entries).
        self.load(Part::DeviceLine, LINE_TX_HEAD)
            .is_ok_and(|head| ring.consumed(head).is_ok())
    }

    /// Rings the doorbell for the `unrung` entries posted since the last
    /// one; whether it rang.
    pub(super) fn doorbell(&self, unrung: &mut u32) -> bool {
        if *unrung == 0 {
            return false;
        }
        self.io.ring(VECTOR_QUEUE0 + u32::from(self.index));
        *unrung = 0;
        true
    }

    /// Copies `skb` into TX entry `index` (ring slot `slot`, ready tag
    /// `tag`) and posts it (the tail too, without inline tags).
    pub(super) fn post_tx(
        &self,
        ring: &mut Producer,
        skb: &SkBuff,
        index: u32,
        slot: usize,
        tag: u32,
    ) -> Result {
        let buf = self.buffer_offset(self.shape.sizes.tx, index);
        let (m, at) = self.at(Part::TxArea, buf, skb.len() as usize)?;
        let len = skb.copy_into(m, at)?;
        let desc = TxDesc {
            buf: buf as u64,
            len,
            tag,
        }
        .encode();
        let off = slot.checked_mul(DESC_BYTES).ok_or(EINVAL)?;
        self.write(Part::TxRing, off, &desc[..12])?;
        self.store(Part::TxRing, off + 12, tag)?;
        ring.commit();
        if !self.shape.inline {
            self.store(Part::DriverLine, LINE_TX_TAIL, ring.tail())?;
        }
        Ok(())
    }
}
