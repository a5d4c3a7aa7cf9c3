//! The destination's lend table for one source: which of the source's
//! buffers its stack holds (lent, with since when), which it has let go of
//! but not yet given back (released: the return ring was full or the
//! session down, or the frame was copied), and the cap on lent buffers
//! beyond which the driver copies instead. Pure bookkeeping: the module
//! tests page refcounts and calls [`LendTable::release`].

use super::layout::{BUFS_MAX, LINE};

/// A buffer's state at the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lend {
    /// Not ours: the source may send it.
    Idle,
    /// The stack holds it: received in source epoch `epoch` at `since`.
    Lent {
        /// The source epoch of the session it came in.
        epoch: u32,
        /// When it was lent (the module's clock).
        since: u64,
    },
    /// To be given back, tagged with the source epoch it came in.
    Released {
        /// The source epoch of the session it came in.
        epoch: u32,
    },
}

/// The lend table of one source.
pub struct LendTable {
    bufs: u32,
    cap: u32,
    lent: u32,
    released: u32,
    slots: [Lend; BUFS_MAX as usize],
}

impl LendTable {
    /// A table of `bufs` buffers (at most `BUFS_MAX`) lending at most
    /// `cap` at once.
    pub fn new(bufs: u32, cap: u32) -> LendTable {
        LendTable {
            bufs: bufs.min(BUFS_MAX),
            cap,
            lent: 0,
            released: 0,
            slots: [Lend::Idle; BUFS_MAX as usize],
        }
    }

    /// The cap.
    pub fn cap(&self) -> u32 {
        self.cap
    }
    /// Buffers lent now.
    pub fn lent(&self) -> u32 {
        self.lent
    }
    /// Buffers released and not yet given back.
    pub fn released(&self) -> u32 {
        self.released
    }
    /// A buffer's state (`None` out of range).
    pub fn get(&self, buf: u16) -> Option<Lend> {
        if u32::from(buf) >= self.bufs {
            return None;
        }
        self.slots.get(usize::from(buf)).copied()
    }
    /// Whether `buf` is in range and idle.
    pub fn is_idle(&self, buf: u16) -> bool {
        self.get(buf) == Some(Lend::Idle)
    }
    /// Whether `n` more buffers may be lent.
    pub fn room(&self, n: u32) -> bool {
        self.lent.saturating_add(n) <= self.cap
    }

    /// Lends idle `buf`; false (nothing changes) unless idle.
    pub fn lend(&mut self, buf: u16, epoch: u32, since: u64) -> bool {
        if !self.is_idle(buf) {
            return false;
        }
        if let Some(s) = self.slots.get_mut(usize::from(buf)) {
            *s = Lend::Lent { epoch, since };
            self.lent = self.lent.saturating_add(1);
            return true;
        }
        false
    }

    /// Marks idle `buf` (a copied or rejected frame's) to be given back.
    pub fn hold(&mut self, buf: u16, epoch: u32) -> bool {
        if !self.is_idle(buf) {
            return false;
        }
        if let Some(s) = self.slots.get_mut(usize::from(buf)) {
            *s = Lend::Released { epoch };
            self.released = self.released.saturating_add(1);
            return true;
        }
        false
    }

    /// The stack let go of lent `buf`: it is to be given back. False
    /// unless it was lent.
    pub fn release(&mut self, buf: u16) -> bool {
        if u32::from(buf) >= self.bufs {
            return false;
        }
        match self.slots.get_mut(usize::from(buf)) {
            Some(s @ Lend::Lent { .. }) => {
                let Lend::Lent { epoch, .. } = *s else {
                    return false;
                };
                *s = Lend::Released { epoch };
                self.lent = self.lent.saturating_sub(1);
                self.released = self.released.saturating_add(1);
                true
            }
            _ => false,
        }
    }

    /// Released `buf` was given back: idle. False unless released.
    pub fn given_back(&mut self, buf: u16) -> bool {
        match self.slots.get_mut(usize::from(buf)) {
            Some(s @ Lend::Released { .. }) => {
                *s = Lend::Idle;
                self.released = self.released.saturating_sub(1);
                true
            }
            _ => false,
        }
    }

    /// The first lent buffer from `from` on, with when it was lent (the
    /// module's scan of page refcounts).
    pub fn next_lent(&self, from: u16) -> Option<(u16, u64)> {
        (usize::from(from)..self.bufs as usize).find_map(|i| match self.slots.get(i) {
            Some(Lend::Lent { since, .. }) => Some((u16::try_from(i).ok()?, *since)),
            _ => None,
        })
    }

    /// The first released buffer from `from` on, with its epoch.
    pub fn next_released(&self, from: u16) -> Option<(u16, u32)> {
        (usize::from(from)..self.bufs as usize).find_map(|i| match self.slots.get(i) {
            Some(Lend::Released { epoch }) => Some((u16::try_from(i).ok()?, *epoch)),
            _ => None,
        })
    }

    /// The held bitmap: bit `i` of byte `i / 8` for each lent or released
    /// buffer.
    pub fn held(&self) -> [u8; LINE as usize] {
        let mut b = [0u8; LINE as usize];
        for (i, s) in self.slots.iter().take(self.bufs as usize).enumerate() {
            if *s != Lend::Idle {
                if let Some(byte) = b.get_mut(i / 8) {
                    *byte |= 1 << (i % 8);
                }
            }
        }
        b
    }
}
