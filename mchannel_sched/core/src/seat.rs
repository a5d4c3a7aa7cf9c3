//! What a [`Table`](super::table::Table) slot of `mchannel_sched` holds:
//! the key word it is for, the thing stored for that key, and an item the
//! slot keeps for whichever thing it holds.
//!
//! The module's item is a thread's park item: allocated in process
//! context ahead of time, so that neither the fork probe (which inserts a
//! thread) allocates nor the exit probe (which removes one) frees. A thing
//! seated takes the seat's item if it has none; a thing leaving leaves its
//! item with the seat.

use super::table::EMPTY;

/// What sits in a [`Seat`]: something with room for one item.
pub trait Holder<I> {
    /// Its item, if it has one.
    fn item(&mut self) -> &mut Option<I>;
}

/// A slot's state: for which key word, what is stored for it, and the
/// slot's item while nothing holds it.
///
/// # Invariants
///
/// `spare` is `None` while `held` is `Some` (the thing holds the item).
pub struct Seat<T, I> {
    word: usize,
    held: Option<T>,
    spare: Option<I>,
}

impl<T, I> Default for Seat<T, I> {
    fn default() -> Self {
        Seat::new()
    }
}

impl<T, I> Seat<T, I> {
    /// An empty seat without an item.
    pub const fn new() -> Seat<T, I> {
        // INVARIANT: holds nothing.
        Seat {
            word: EMPTY,
            held: None,
            spare: None,
        }
    }

    /// What it holds, if it is for `word` (a lock-free reader may have
    /// found the slot for a key that left since).
    pub fn of(&mut self, word: usize) -> Option<&mut T> {
        if self.word != word {
            return None;
        }
        self.held.as_mut()
    }

    /// What it holds, whatever the key.
    pub fn held(&mut self) -> Option<&mut T> {
        self.held.as_mut()
    }

    /// It has an item and holds nothing.
    pub fn has_spare(&self) -> bool {
        self.spare.is_some()
    }
}

impl<T: Holder<I>, I> Seat<T, I> {
    /// Holds `thing` for `word`; `thing` takes the seat's item if it has
    /// none. Returns the seat's item if `thing` had its own (for the
    /// caller to drop outside any lock).
    pub fn sit(&mut self, word: usize, mut thing: T) -> Option<I> {
        let place = thing.item();
        if place.is_none() {
            *place = self.spare.take();
        }
        // INVARIANT: the item is the thing's now (or given back).
        self.word = word;
        self.held = Some(thing);
        self.spare.take()
    }

    /// Holds nothing any more: returns what it held, without its item,
    /// which stays with the seat.
    pub fn leave(&mut self) -> Option<T> {
        let mut thing = self.held.take();
        if let Some(t) = thing.as_mut() {
            // INVARIANT: nothing held now.
            self.spare = t.item().take();
        }
        self.word = EMPTY;
        thing
    }

    /// Takes `item` as the seat's if it holds nothing and has none.
    pub fn fill(&mut self, item: &mut Option<I>) {
        if self.held.is_none() && self.spare.is_none() {
            self.spare = item.take();
        }
    }

    /// Takes every item out, the seat's and its holder's (to free them
    /// outside any lock).
    pub fn drain(&mut self) -> (Option<I>, Option<I>) {
        let held = self.held.as_mut().and_then(|t| t.item().take());
        (self.spare.take(), held)
    }
}
