//! The `ref_queue` of a pair (src, dst): a single-producer,
//! single-consumer ring of [`RefEntry`] in the pool, written by the source
//! and read by the destination, and the index arithmetic both rings use.
//!
//! Positions are free-running `u32`s that wrap; entry `p` lives in slot
//! `p % slots` (a power of two). The producer writes and writes back
//! entries, then publishes its tail in its line; the consumer invalidates
//! and reads that line, then each entry below the tail, and publishes its
//! head in its own line, which frees the slots.

use super::counters::Fault;
use super::layout::{Geometry, RefEntry, REF_ENTRY_BYTES};
use super::mem::{fetch, publish, OutOfBounds, PoolMem};

/// Entries from `from` to `to` (wrapping).
pub fn distance(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from)
}

/// Whether `pos` lies in `lo..=hi` (wrapping).
pub fn within(pos: u32, lo: u32, hi: u32) -> bool {
    distance(lo, pos) <= distance(lo, hi)
}

/// The producer's positions of a ring of `slots` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Producer {
    /// Slots of the ring.
    pub slots: u32,
    /// Next position to write.
    pub tail: u32,
    /// The consumer's head as last accepted: slots below are free.
    pub head: u32,
}

impl Producer {
    /// An empty ring starting at `start`.
    pub fn new(slots: u32, start: u32) -> Producer {
        Producer {
            slots,
            tail: start,
            head: start,
        }
    }
    /// Free slots.
    pub fn space(&self) -> u32 {
        self.slots.saturating_sub(distance(self.head, self.tail))
    }
    /// Takes a head read from the consumer's line: it must lie between
    /// the last one accepted and the tail, or it changes nothing.
    pub fn consumed(&mut self, head: u32) -> Result<(), Fault> {
        if !within(head, self.head, self.tail) {
            return Err(Fault::Head);
        }
        self.head = head;
        Ok(())
    }
}

/// The consumer's position of a ring of `slots` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consumer {
    /// Slots of the ring.
    pub slots: u32,
    /// Next position to read.
    pub head: u32,
}

impl Consumer {
    /// Entries ready below `tail` (read from the producer's line), or a
    /// fault if it is more than a ring ahead (or behind).
    pub fn ready(&self, tail: u32) -> Result<u32, Fault> {
        let n = distance(self.head, tail);
        if n > self.slots {
            return Err(Fault::Tail);
        }
        Ok(n)
    }
}

/// A pair's `ref_queue` in the pool.
#[derive(Debug, Clone, Copy)]
pub struct RefQueue {
    geom: Geometry,
    pair: u32,
}

impl RefQueue {
    /// The queue of pair `pair`.
    pub fn new(geom: Geometry, pair: u32) -> RefQueue {
        RefQueue { geom, pair }
    }
    /// Offset of position `pos`'s entry.
    pub fn at(&self, pos: u32) -> Result<u64, OutOfBounds> {
        let slot = pos & self.geom.ref_slots().saturating_sub(1);
        self.geom.ref_entry(self.pair, slot).ok_or(OutOfBounds)
    }
    /// Writes `e` at its position `e.seq` and writes it back.
    pub fn put<M: PoolMem + ?Sized>(&self, m: &M, e: &RefEntry) -> Result<(), OutOfBounds> {
        publish(m, self.at(e.seq)?, &e.encode())
    }
    /// Reads a fresh copy of position `pos`'s entry and whether it is
    /// intact.
    pub fn get<M: PoolMem + ?Sized>(
        &self,
        m: &M,
        pos: u32,
    ) -> Result<(RefEntry, bool), OutOfBounds> {
        let b: [u8; REF_ENTRY_BYTES as usize] = fetch(m, self.at(pos)?)?;
        Ok(RefEntry::decode(&b))
    }
}
