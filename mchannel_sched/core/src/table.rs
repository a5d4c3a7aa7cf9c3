//! A fixed open-addressing table that readers search without a lock: the
//! bookkeeping of `mchannel_sched`'s attached threads (keyed by task
//! address), generic over the key and over what each slot holds.
//!
//! A slot's key word says which key it is for, or that it is empty
//! ([`EMPTY`]) or a tombstone left by a removal ([`TOMBSTONE`]). Readers
//! ([`Table::find`]) load the words only, so a slot found may be reused
//! before the reader looks at its value: the value must say for which key
//! it is (the module keeps the word in the slot's locked state and checks
//! it). Slots live as long as the table, so a stale word never leads to
//! freed memory. Inserting and removing take the table's [`Book`] (the
//! caller's lock around it, [`Exclusive`]), each in constant time but for
//! the probe chain; tombstones are reused by inserts, and [`Table::sweep`]
//! empties those no probe chain needs, and all of them once the table is
//! empty. The book also counts what unprivileged users hold
//! ([`Quota`]).

use super::quota::{Quota, Refused};
use core::marker::PhantomData;
use core::ops::Deref;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The word of a slot that never held a key since the last sweep.
pub const EMPTY: usize = 0;
/// The word of a slot whose key was removed.
pub const TOMBSTONE: usize = 1;

/// Slots [`Table::sweep`] looks at per hold of the book.
pub const SWEEP_CHUNK: usize = 64;

/// A slot's user when a privileged caller inserted it.
const NO_USER: u64 = u64::MAX;

/// How a table tells its keys apart.
pub trait Identity {
    /// What the table is keyed by.
    type Key: ?Sized;
    /// `key`'s word: the same while the key is in the table, unique among
    /// the keys in it, and never [`EMPTY`] or [`TOMBSTONE`] (an address).
    fn word(key: &Self::Key) -> usize;
}

/// Keys that are their own words.
pub struct Words;

impl Identity for Words {
    type Key = usize;
    fn word(key: &usize) -> usize {
        *key
    }
}

/// Exclusive access to a `T`: the caller's lock around it.
pub trait Exclusive<T> {
    /// Runs `f` on the `T`, excluding every other caller meanwhile. `f`
    /// never calls back into the same lock.
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

/// What changes with the keys, under the caller's lock.
///
/// # Invariants
///
/// `tombstones` is the number of slots whose word is [`TOMBSTONE`].
#[derive(Debug)]
pub struct Book {
    quota: Quota,
    /// Most keys at once.
    max: usize,
    tombstones: usize,
    /// A tombstone was left since the last sweep.
    dirty: bool,
}

impl Book {
    /// The book of a table for up to `max_entries` keys, of which one
    /// unprivileged user inserts at most `per_user`.
    pub fn new(max_entries: usize, per_user: usize) -> Book {
        // INVARIANT: no tombstone yet (the table starts empty).
        Book {
            quota: Quota::new(max_entries, per_user),
            max: max_entries,
            tombstones: 0,
            dirty: false,
        }
    }
}

/// One slot: its key word, the user its key counts against, and what it
/// holds (for whichever key it has).
pub struct Slot<V> {
    word: AtomicUsize,
    /// Changes under the book only.
    user: AtomicU64,
    value: V,
}

impl<V> Slot<V> {
    /// An empty slot holding `value`.
    pub fn new(value: V) -> Slot<V> {
        Slot {
            word: AtomicUsize::new(EMPTY),
            user: AtomicU64::new(NO_USER),
            value,
        }
    }

    /// What it holds.
    pub fn value(&self) -> &V {
        &self.value
    }

    fn is_used(&self) -> bool {
        self.word.load(Ordering::Acquire) > TOMBSTONE
    }
}

/// The number of slots a table for `max_entries` keys has: twice as many,
/// rounded up to a power of two; `None` on overflow.
pub fn slots_for(max_entries: usize) -> Option<usize> {
    max_entries
        .checked_mul(2)
        .and_then(usize::checked_next_power_of_two)
}

/// The table: slots `S` (a slice of [`Slot`]s), keys told apart by `K`,
/// its [`Book`] behind the caller's lock `L`.
///
/// # Invariants
///
/// `slots.len()` is a power of two above the book's `max`; a slot's word
/// is its key's, or `EMPTY`/`TOMBSTONE` when it has none, and changes only
/// under the book; every slot from a word's start ([`Table::start`]) up to
/// the slot holding it is non-`EMPTY`; `live` counts slots with a key; the
/// quota counts, per user, the slots whose key has that user.
pub struct Table<K, S, L> {
    slots: S,
    book: L,
    live: AtomicUsize,
    keys: PhantomData<fn(&K)>,
}

impl<K, V, S, L> Table<K, S, L>
where
    K: Identity,
    S: Deref<Target = [Slot<V>]>,
    L: Exclusive<Book>,
{
    /// A table of `slots` (all empty), with `book` (of a new [`Book`]).
    /// `None` unless the slots are a power of two and more than the book's
    /// keys (see [`slots_for`]).
    pub fn new(slots: S, book: L) -> Option<Self> {
        let n = slots.len();
        let max = book.with(|b| b.max);
        if !n.is_power_of_two() || n <= max {
            return None;
        }
        // INVARIANT: checked above; the caller gives new slots and book.
        Some(Table {
            slots,
            book,
            live: AtomicUsize::new(0),
            keys: PhantomData,
        })
    }

    /// Its slots: twice its keys at most, or more.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Keys in the table now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    fn mask(&self) -> usize {
        self.slots.len().saturating_sub(1)
    }

    /// Where `word`'s probe chain starts.
    fn start(&self, word: usize) -> usize {
        // Fibonacci hashing of the word above its low bits (addresses of
        // aligned objects share them).
        let h = (word.wrapping_shr(6) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h.rotate_left(32) as usize & self.mask()
    }

    /// The slot whose word is `word`.
    fn slot_of(&self, word: usize) -> Option<&Slot<V>> {
        let mut i = self.start(word);
        for _ in 0..self.slots.len() {
            let slot = self.slots.get(i)?;
            match slot.word.load(Ordering::Acquire) {
                w if w == word => return Some(slot),
                EMPTY => return None,
                _ => i = i.wrapping_add(1) & self.mask(),
            }
        }
        None
    }

    /// What the slot whose word is `key`'s holds. Without a lock: the
    /// slot may be reused meanwhile, so the value must say for which key
    /// it is.
    pub fn find(&self, key: &K::Key) -> Option<&V> {
        let word = K::word(key);
        if word <= TOMBSTONE {
            return None;
        }
        self.slot_of(word).map(Slot::value)
    }

    /// Entries `uid` holds.
    pub fn user_entries(&self, uid: u32) -> usize {
        self.book.with(|b| b.quota.of(uid))
    }

    /// Tombstones now.
    pub fn tombstones(&self) -> usize {
        self.book.with(|b| b.tombstones)
    }

    /// Inserts `key`, for `user`'s quota (`None`: a privileged caller);
    /// `put` stores what the slot holds for it before readers can find
    /// it. [`Refused::Exists`] if the key is in already,
    /// [`Refused::Full`] if the table is (or the part of it unprivileged
    /// users may take, for a user), [`Refused::Quota`] if `user` has its
    /// quota, [`Refused::Invalid`] for a reserved word.
    pub fn insert(
        &self,
        key: &K::Key,
        user: Option<u32>,
        put: impl FnOnce(&V),
    ) -> Result<(), Refused> {
        let word = K::word(key);
        if word <= TOMBSTONE {
            return Err(Refused::Invalid);
        }
        self.book.with(|book| {
            if self.slot_of(word).is_some() {
                return Err(Refused::Exists);
            }
            if self.live() >= book.max {
                return Err(Refused::Full);
            }
            if let Some(uid) = user {
                book.quota.charge(uid)?;
            }
            let Some(slot) = self.free_slot(word) else {
                // Unreachable (more slots than keys): undo.
                if let Some(uid) = user {
                    book.quota.release(uid);
                }
                return Err(Refused::Full);
            };
            put(&slot.value);
            slot.user
                .store(user.map_or(NO_USER, u64::from), Ordering::Relaxed);
            if slot.word.load(Ordering::Relaxed) == TOMBSTONE {
                // INVARIANT: one tombstone fewer.
                book.tombstones = book.tombstones.saturating_sub(1);
            }
            // INVARIANT: the value is stored before readers can find the
            // word; the first free slot of its chain, so every one before
            // it is in use or a tombstone.
            slot.word.store(word, Ordering::Release);
            self.live.fetch_add(1, Ordering::AcqRel);
            Ok(())
        })
    }

    /// The first empty slot or tombstone of `word`'s chain.
    fn free_slot(&self, word: usize) -> Option<&Slot<V>> {
        let mut i = self.start(word);
        for _ in 0..self.slots.len() {
            let slot = self.slots.get(i)?;
            if matches!(slot.word.load(Ordering::Relaxed), EMPTY | TOMBSTONE) {
                return Some(slot);
            }
            i = i.wrapping_add(1) & self.mask();
        }
        None
    }

    /// Removes `key`: `take` takes what its slot holds for it (before the
    /// slot is a tombstone) and its result is returned; its user's quota
    /// counts it no more. The slot is left a tombstone ([`Table::sweep`]
    /// empties it later): constant time.
    pub fn remove<R>(&self, key: &K::Key, take: impl FnOnce(&V) -> R) -> Option<R> {
        let word = K::word(key);
        if word <= TOMBSTONE {
            return None;
        }
        self.book.with(|book| {
            let slot = self.slot_of(word)?;
            let out = take(&slot.value);
            let user = slot.user.swap(NO_USER, Ordering::Relaxed);
            if let Ok(uid) = u32::try_from(user) {
                book.quota.release(uid);
            }
            // INVARIANT: the slot holds no key any more; one tombstone more.
            slot.word.store(TOMBSTONE, Ordering::Release);
            book.tombstones = book.tombstones.saturating_add(1);
            book.dirty = true;
            self.live.fetch_sub(1, Ordering::AcqRel);
            Some(out)
        })
    }

    /// Turns tombstones back into empty slots: every one when the table
    /// is empty, otherwise those followed by an empty slot (no probe chain
    /// passes an empty slot, so none needs them), backwards so that a run
    /// of them goes at once. It holds the book for [`SWEEP_CHUNK`] slots
    /// at a time, and does nothing unless a removal left a tombstone since
    /// the last sweep or the table is empty and has some. Returns the
    /// tombstones left.
    pub fn sweep(&self) -> usize {
        let idle = self
            .book
            .with(|b| (!b.dirty && (b.tombstones == 0 || self.live() > 0)).then_some(b.tombstones));
        if let Some(left) = idle {
            return left;
        }
        let mut i = self.slots.len();
        while i > 0 {
            let stop = i.saturating_sub(SWEEP_CHUNK);
            self.book.with(|book| {
                book.dirty = false;
                self.sweep_chunk(book, stop, i);
            });
            i = stop;
        }
        self.tombstones()
    }

    /// Sweeps slots `from..to`, backwards.
    fn sweep_chunk(&self, book: &mut Book, from: usize, to: usize) {
        // No word can appear meanwhile: inserts take the book too.
        let all = self.live() == 0;
        for i in (from..to).rev() {
            let next = i.wrapping_add(1) & self.mask();
            let (Some(slot), Some(next)) = (self.slots.get(i), self.slots.get(next)) else {
                continue;
            };
            if slot.word.load(Ordering::Relaxed) != TOMBSTONE {
                continue;
            }
            if all || next.word.load(Ordering::Relaxed) == EMPTY {
                // INVARIANT: no word's chain passes this slot (there is
                // none, or the next slot is empty, so every chain that
                // reaches it ends at the next one); one tombstone fewer.
                slot.word.store(EMPTY, Ordering::Release);
                book.tombstones = book.tombstones.saturating_sub(1);
            }
        }
    }

    /// What every slot holds, used or not.
    pub fn values<'a>(&'a self) -> impl Iterator<Item = &'a V>
    where
        V: 'a,
    {
        self.slots.iter().map(Slot::value)
    }

    /// What the slots with a key hold (a key may come or go meanwhile).
    pub fn used<'a>(&'a self) -> impl Iterator<Item = &'a V>
    where
        V: 'a,
    {
        self.slots.iter().filter(|s| s.is_used()).map(Slot::value)
    }
}
