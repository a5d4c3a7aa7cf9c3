// SPDX-License-Identifier: GPL-2.0

//! What 6.12's `KVec` lacks: an extension trait. `pop` and `clear` are
//! upstream's `Vec::pop` (6.14) and `Vec::clear` (6.15), deleted with a
//! newer kernel; `swap_remove` has no
//! upstream counterpart (6.15's `Vec::remove` shifts the tail instead).

use kernel::alloc::{Allocator, Vec};

/// `pop` and `swap_remove` for the kernel's vectors.
pub trait VecExt<T> {
    /// Removes and returns the last element.
    fn pop(&mut self) -> Option<T>;
    /// Removes the element at `index`, replacing it with the last one.
    fn swap_remove(&mut self, index: usize) -> Option<T>;
    /// Drops every element, keeping the allocation.
    fn clear(&mut self) {
        while self.pop().is_some() {}
    }
}

impl<T, A: Allocator> VecExt<T> for Vec<T, A> {
    fn pop(&mut self) -> Option<T> {
        let last = self.len().checked_sub(1)?;
        // SAFETY: `last < len`, so the element is initialised and inside the
        // allocation (the `Vec` invariant); the length shrinks first, so it
        // is read (moved out) exactly once.
        unsafe {
            self.set_len(last);
            Some(self.as_ptr().add(last).read())
        }
    }

    fn swap_remove(&mut self, index: usize) -> Option<T> {
        let last = self.len().checked_sub(1)?;
        if index > last {
            return None;
        }
        self.as_mut_slice().swap(index, last);
        self.pop()
    }
}
