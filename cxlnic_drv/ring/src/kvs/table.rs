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

    /// The driver line's `moves` word as last stored.
    fn moves(&self) -> u32;

    /// Stores the driver line's `moves` word (release: a pair's move is
    /// bracketed by an odd and an even value).
    fn set_moves(&mut self, moves: u32);
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

    /// Writes `key` (absent from the table) and `value` into a free slot
    /// of the emptier of its two buckets (first fit fills the first
    /// choices and refuses far below the table's size). With both full,
    /// one of their pairs that has room in its other bucket moves there
    /// (a cuckoo step of depth one) to make room.
    pub fn insert(
        &self,
        mem: &mut impl HostSlots,
        key: &[u8],
        value: &[u8],
    ) -> Result<u32, TableError> {
        let rec = Record::pair(key, value).ok_or(TableError::TooLong)?;
        let b = buckets(key_hash(self.seed, key), self.buckets);
        let (first, second) = (free_slots(mem, b.first), free_slots(mem, b.second));
        let bucket = if second.len() > first.len() {
            b.second
        } else {
            b.first
        };
        let slot = match free_slots(mem, bucket).first() {
            Some(&free) => Some(free),
            None => [b.first, b.second]
                .into_iter()
                .find_map(|bk| self.make_room(mem, bk)),
        };
        let i = slot.ok_or(TableError::Full)?;
        let old = mem.read(i).ok_or(TableError::Full)?;
        self.store(mem, i, old.word, rec, key);
        Ok(i)
    }

    /// Moves one pair of `bucket` to its other bucket, if that has room;
    /// returns the slot it freed. The copy is written before the original
    /// is cleared, and `moves` is odd meanwhile, so the device never
    /// takes the pair for absent.
    fn make_room(&self, mem: &mut impl HostSlots, bucket: u32) -> Option<u32> {
        let (from, pair, to) = (0..WAYS).find_map(|w| {
            let i = bucket.saturating_mul(WAYS).saturating_add(w);
            let r = mem.read(i).filter(|r| r.op == OP_PUT)?;
            let alt = buckets(key_hash(self.seed, r.key()), self.buckets);
            let other = if alt.first == bucket {
                alt.second
            } else {
                alt.first
            };
            let to = *free_slots(mem, other).first()?;
            Some((i, r, to))
        })?;
        let moves = mem.moves() | 1;
        mem.set_moves(moves);
        let target = mem.read(to)?;
        self.store(mem, to, target.word, pair, pair.key());
        let cleared = self.remove(mem, from, pair.key());
        mem.set_moves(moves.wrapping_add(1));
        cleared.ok().map(|()| from)
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
        // The device names the slot it knew; the pair may have moved to
        // its other bucket since (a cuckoo step), so its key decides.
        let slot = match mem.read(log.slot) {
            Some(r) if r.holds(key) => log.slot,
            _ => self.find(mem, key).ok_or(TableError::BadRecord)?.0,
        };
        let r = match op {
            Op::Put => self
                .update(mem, slot, key, log.value())
                .map(|()| Applied::Written),
            Op::Del => self.remove(mem, slot, key).map(|()| Applied::Deleted),
        };
        r.map_err(|_| TableError::BadRecord)
    }
}

/// The free slots of a bucket, in order: up to [`WAYS`], no allocation.
#[derive(Default)]
struct FreeSlots {
    n: usize,
    v: [u32; WAYS as usize],
}

impl FreeSlots {
    fn len(&self) -> usize {
        self.n
    }

    fn first(&self) -> Option<&u32> {
        self.v.get(..self.n).and_then(|s| s.first())
    }
}

/// The free slots of `bucket`.
fn free_slots(mem: &impl HostSlots, bucket: u32) -> FreeSlots {
    let mut out = FreeSlots::default();
    for w in 0..WAYS {
        let i = bucket.saturating_mul(WAYS).saturating_add(w);
        if mem.read(i).is_some_and(|r| r.op != OP_PUT) {
            if let Some(s) = out.v.get_mut(out.n) {
                *s = i;
                out.n = out.n.saturating_add(1);
            }
        }
    }
    out
}
