//! The driver's side: the host table, every pair the store has.
//!
//! Buckets of [`WAYS`] slots; a key may live in either of its two
//! buckets ([`buckets`]), so a lookup probes at most `2 * WAYS` slots and
//! an insert fails (`ENOSPC`) only when both are full. The driver is the
//! table's one writer (each store a seqlock write, [`HostSlots::write`]);
//! the device only reads it.
//!
//! Which writes go where (the driver holds one lock across each):
//! - **Insert** (the key is absent): written here directly. No log entry
//!   can name an absent key, and the cache cannot hold one.
//! - **Update and delete** of a present key while the device serves:
//!   a command, which the device carries out in order with the network's
//!   PUTs; the driver then applies the device's log ([`HostTable::apply`]).
//!   While the device does not serve, directly here.
//! - Before each, the driver applies the whole log, so a direct write
//!   never lands under a log entry that predates it.

use super::hash::{buckets, key_hash};
use super::map::{OP_PUT, WAYS};
use super::record::{Op, Record};
use super::seq::write_versions;

/// The host table's memory, as the driver reaches it.
pub trait HostSlots {
    /// Slot `i`'s record (`None` past the table). The driver's own
    /// memory: it trusts what it wrote.
    fn read(&self, i: u32) -> Option<Record>;

    /// Stores `r` into slot `i` as a seqlock writer: the version `odd`
    /// (release), the record's other bytes, then `r.word` (release).
    fn write(&mut self, i: u32, odd: u32, r: &Record);
}

/// Why a table operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableError {
    /// Both of the key's buckets are full.
    Full,
    /// The key is empty or too long, or the value too long.
    TooLong,
    /// The key is not in the table.
    NotFound,
    /// A log entry that does not fit the table (malformed, a slot out of
    /// range or not holding its key): a faulty device. Nothing changed.
    BadRecord,
}

/// What applying a log entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The slot's value was written.
    Written,
    /// The slot was freed.
    Deleted,
}

/// The host table's geometry and hash.
///
/// # Invariants
///
/// `buckets` is a power of two, so `buckets * WAYS` fits a `u32` for
/// every count the config allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostTable {
    buckets: u32,
    seed: u64,
}

impl HostTable {
    /// A table of `buckets` (a power of two up to
    /// [`HOST_BUCKETS_MAX`](super::HOST_BUCKETS_MAX)) hashing with `seed`.
    pub fn new(buckets: u32, seed: u64) -> Option<HostTable> {
        if buckets.is_power_of_two() && buckets <= super::HOST_BUCKETS_MAX {
            // INVARIANT: checked just above.
            Some(HostTable { buckets, seed })
        } else {
            None
        }
    }

    /// Buckets.
    pub fn buckets(&self) -> u32 {
        self.buckets
    }

    /// The hash's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Slots in all.
    pub fn slots(&self) -> u32 {
        self.buckets.saturating_mul(WAYS)
    }

    /// The slots `key` may live in, first bucket first.
    fn candidates(&self, key: &[u8]) -> impl Iterator<Item = u32> {
        let b = buckets(key_hash(self.seed, key), self.buckets);
        let two = if b.second == b.first { 1 } else { 2 };
        [b.first, b.second]
            .into_iter()
            .take(two)
            .flat_map(|bucket| {
                (0..WAYS).map(move |w| bucket.saturating_mul(WAYS).saturating_add(w))
            })
    }

    /// The slot holding `key`, and its record.
    pub fn find(&self, mem: &impl HostSlots, key: &[u8]) -> Option<(u32, Record)> {
        self.candidates(key)
            .find_map(|i| mem.read(i).filter(|r| r.holds(key)).map(|r| (i, r)))
    }

    /// Writes `key` (absent from the table) and `value` into a free slot.
    pub fn insert(
        &self,
        mem: &mut impl HostSlots,
        key: &[u8],
        value: &[u8],
    ) -> Result<u32, TableError> {
        let rec = Record::pair(key, value).ok_or(TableError::TooLong)?;
        let free = self
            .candidates(key)
            .find_map(|i| mem.read(i).filter(|r| r.op != OP_PUT).map(|r| (i, r)));
        let (i, old) = free.ok_or(TableError::Full)?;
        self.store(mem, i, old.word, rec, key);
        Ok(i)
    }

    /// Writes `value` into slot `i`, which holds `key`.
    pub fn update(
        &self,
        mem: &mut impl HostSlots,
        i: u32,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), TableError> {
        let rec = Record::pair(key, value).ok_or(TableError::TooLong)?;
        let old = mem
            .read(i)
            .filter(|r| r.holds(key))
            .ok_or(TableError::NotFound)?;
        self.store(mem, i, old.word, rec, key);
        Ok(())
    }

    /// Frees slot `i`, which holds `key`.
    pub fn remove(&self, mem: &mut impl HostSlots, i: u32, key: &[u8]) -> Result<(), TableError> {
        let old = mem
            .read(i)
            .filter(|r| r.holds(key))
            .ok_or(TableError::NotFound)?;
        let (odd, even) = write_versions(old.word);
        // A free slot is all zeros but its version.
        let free = Record {
            word: even,
            ..Record::default()
        };
        mem.write(i, odd, &free);
        Ok(())
    }

    /// Stores `rec` (a pair of `key`) into slot `i`, now at `version`.
    fn store(&self, mem: &mut impl HostSlots, i: u32, version: u32, mut rec: Record, key: &[u8]) {
        let (odd, even) = write_versions(version);
        rec.word = even;
        rec.op = OP_PUT;
        rec.hash = key_hash(self.seed, key);
        mem.write(i, odd, &rec);
    }

    /// Applies one entry of the device's log. The entry is checked
    /// against the table, never trusted: well formed, a known op, and a
    /// slot that is one of its key's and holds that key.
    pub fn apply(&self, mem: &mut impl HostSlots, log: &Record) -> Result<Applied, TableError> {
        let op = Op::from_u8(log.op).ok_or(TableError::BadRecord)?;
        if !log.well_formed() || (op == Op::Del && log.val_len != 0) {
            return Err(TableError::BadRecord);
        }
        let key = log.key();
        if !self.candidates(key).any(|i| i == log.slot) {
            return Err(TableError::BadRecord);
        }
        let r = match op {
            Op::Put => self
                .update(mem, log.slot, key, log.value())
                .map(|()| Applied::Written),
            Op::Del => self.remove(mem, log.slot, key).map(|()| Applied::Deleted),
        };
        r.map_err(|_| TableError::BadRecord)
    }
}
