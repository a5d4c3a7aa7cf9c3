// SPDX-License-Identifier: GPL-2.0

//! The host table's memory: one DMA-coherent allocation the driver
//! writes (the ring core's `HostTable` decides what) and the device
//! reads, each store a seqlock write (`ring::kvs::seq`).

use super::area::Area;
use crate::io::NicIo;
use crate::ring::kvs::{HostSlots, HostTable, Record, HOST_BUCKETS_MAX, RECORD_BYTES, WAYS};
use crate::support::coherent::Coherent;
use crate::support::dma::CoherentAllocation;
use crate::support::time;
use core::cell::Cell;
use core::sync::atomic::{fence, Ordering};
use kernel::prelude::*;

/// The host table: its memory and geometry.
///
/// # Invariants
///
/// `mem` holds `table.slots()` records (`table.buckets() * WAYS`), and
/// lies below the host memory the device reaches.
pub(crate) struct HostMem {
    pub(crate) mem: CoherentAllocation,
    pub(crate) table: HostTable,
    /// The driver line's `moves` word as last stored (odd while a pair
    /// moves between its buckets).
    moves: Cell<u32>,
}

impl HostMem {
    /// A zeroed table of `buckets` (a power of two up to
    /// `HOST_BUCKETS_MAX`, logged if not) with a fresh random seed.
    pub(crate) fn alloc(io: &NicIo, name: &CStr, buckets: u32) -> Result<HostMem> {
        let Some(table) = HostTable::new(buckets, seed()) else {
            crate::support::pr_info_ratelimited!(
                "{}: kvs_buckets={} is not a power of two up to {}\n",
                name,
                buckets,
                HOST_BUCKETS_MAX
            );
            return Err(EINVAL);
        };
        let len = (table.slots() as usize).saturating_mul(RECORD_BYTES);
        let mem = CoherentAllocation::alloc_coherent(&io.dma, len)?;
        let fits = mem
            .dma_handle()
            .checked_add(len as u64)
            .is_some_and(|end| end <= io.host_bytes);
        if !fits {
            crate::support::pr_info_ratelimited!(
                "{}: the KVS host table at {:#x} is beyond the {:#x} bytes the device reaches\n",
                name,
                mem.dma_handle(),
                io.host_bytes
            );
            return Err(ENOMEM);
        }
        // INVARIANT: `len` bytes, one record per slot, reachable.
        Ok(HostMem {
            mem,
            table,
            moves: Cell::new(0),
        })
    }

    /// The table's slots, for the ring core's `HostTable`; a move
    /// between buckets is announced in `area`'s driver line.
    pub(crate) fn slots<'a>(&'a self, area: &'a Area) -> Slots<'a> {
        Slots {
            mem: &self.mem,
            count: self.table.slots(),
            moves: &self.moves,
            area,
        }
    }

    /// The driver line's `moves` word as last stored.
    pub(crate) fn moves(&self) -> u32 {
        self.moves.get()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.mem.len()
    }
}

/// A fresh hash seed from the kernel's random source: a client that
/// does not know it cannot aim keys at one bucket.
fn seed() -> u64 {
    let mut b = [0u8; 8];
    time::random_bytes(&mut b);
    u64::from_le_bytes(b)
}

/// The table's slots as the ring core reaches them.
pub(crate) struct Slots<'a> {
    mem: &'a CoherentAllocation,
    count: u32,
    moves: &'a Cell<u32>,
    area: &'a Area,
}

impl Slots<'_> {
    fn offset(&self, i: u32) -> Option<usize> {
        (i < self.count).then(|| (i as usize).saturating_mul(RECORD_BYTES))
    }
}

impl HostSlots for Slots<'_> {
    fn read(&self, i: u32) -> Option<Record> {
        let at = self.offset(i)?;
        let mut raw = [0u8; RECORD_BYTES];
        self.mem.read(at, &mut raw).ok()?;
        Some(Record::decode(&raw))
    }

    fn write(&mut self, i: u32, odd: u32, r: &Record) {
        let Some(at) = self.offset(i) else {
            return;
        };
        let raw = r.encode();
        // Inside the allocation (`offset`): these cannot fail. The seqlock
        // write: odd version, barrier, body, barrier, even version (the
        // stores are release too), as the NIC rings order theirs.
        let _ = self.mem.store32(at, odd);
        fence(Ordering::Release);
        let _ = self.mem.write(at.saturating_add(4), &raw[4..]);
        fence(Ordering::Release);
        let _ = self.mem.store32(at, r.word);
    }

    fn moves(&self) -> u32 {
        self.moves.get()
    }

    fn set_moves(&mut self, moves: u32) {
        self.moves.set(moves);
        // Inside BAR2 (checked at binding): cannot fail.
        let _ = self.area.set_moves(moves);
    }
}

const _: () = assert!(HOST_BUCKETS_MAX as usize * WAYS as usize * RECORD_BYTES <= 4 << 20);
