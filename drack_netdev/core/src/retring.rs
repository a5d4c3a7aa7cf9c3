//! The return ring of a pair (src, dst): the destination gives the
//! source's buffers back, one [`ReturnEntry`] each, once its stack let go
//! of them (or it copied the frame). One slot per buffer of the pair, so
//! an honest destination never finds it full; the positions are those of
//! `super::refq`. Whether a returned buffer was out is the source's
//! allocator's to say (`super::alloc`).

use super::layout::{Geometry, ReturnEntry, RET_ENTRY_BYTES};
use super::mem::{fetch, publish, OutOfBounds, PoolMem};

/// A pair's return ring in the pool.
#[derive(Debug, Clone, Copy)]
pub struct ReturnRing {
    geom: Geometry,
    pair: u32,
}

/// The sequence a return entry at `pos` carries.
pub fn seq_of(pos: u32) -> u16 {
    (pos & 0xffff) as u16
}

impl ReturnRing {
    /// The ring of pair `pair`.
    pub fn new(geom: Geometry, pair: u32) -> ReturnRing {
        ReturnRing { geom, pair }
    }
    /// Slots of the ring: one per buffer.
    pub fn slots(&self) -> u32 {
        self.geom.bufs()
    }
    /// Offset of position `pos`'s entry.
    pub fn at(&self, pos: u32) -> Result<u64, OutOfBounds> {
        let slot = pos & self.geom.bufs().saturating_sub(1);
        self.geom.ret_entry(self.pair, slot).ok_or(OutOfBounds)
    }
    /// Writes buffer `buffer` of epoch `epoch` at `pos` and writes it back.
    pub fn put<M: PoolMem + ?Sized>(
        &self,
        m: &M,
        pos: u32,
        buffer: u16,
        epoch: u32,
    ) -> Result<(), OutOfBounds> {
        let e = ReturnEntry {
            epoch,
            buffer,
            seq: seq_of(pos),
        };
        publish(m, self.at(pos)?, &e.encode())
    }
    /// A fresh copy of position `pos`'s entry.
    pub fn get<M: PoolMem + ?Sized>(&self, m: &M, pos: u32) -> Result<ReturnEntry, OutOfBounds> {
        let b: [u8; RET_ENTRY_BYTES as usize] = fetch(m, self.at(pos)?)?;
        Ok(ReturnEntry::decode(&b))
    }
}
