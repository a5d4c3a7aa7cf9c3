//! The destination's lend table for one source: which of the source's
//! buffers its stack holds (lent), which it has let go of but not yet
//! given back (released: the return ring was full or the session down,
//! or the frame was copied), and the cap on lent buffers beyond which the
//! driver copies instead. Pure bookkeeping, one byte per buffer: the
//! module keeps the pages and when it lent them, tests page refcounts and
//! calls [`LendTable::release`].
//!
//! A buffer received in an earlier session of the source is *old*: it
//! goes back tagged with epoch 0, which no session has, so the source
//! takes it back only as a buffer it reserved for an earlier session.

use super::layout::{BUFS_MAX, LINE};

/// A buffer's state at the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lend {
    /// Not ours: the source may send it.
    Idle,
    /// The stack holds it; `old` if received in an earlier session.
    Lent {
        /// Received in an earlier session of the source.
        old: bool,
    },
    /// To be given back; `old` if received in an earlier session.
    Released {
        /// Received in an earlier session of the source.
        old: bool,
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

    fn slot(&mut self, buf: u16) -> Option<&mut Lend> {
        if u32::from(buf) >= self.bufs {
            return None;
        }
        self.slots.get_mut(usize::from(buf))
    }

    /// Lends idle `buf` (of this session); false (nothing changes)
    /// unless idle.
    pub fn lend(&mut self, buf: u16) -> bool {
        self.take_idle(buf, false)
    }

    /// Takes idle `buf` as lent in an earlier session (*old*): the stack
    /// still holds its page from an earlier load of this host's module.
    /// False unless idle.
    pub fn adopt(&mut self, buf: u16) -> bool {
        self.take_idle(buf, true)
    }

    /// Idle `buf` becomes lent (`old`: of an earlier session); false
    /// (nothing changes) unless idle.
    fn take_idle(&mut self, buf: u16, old: bool) -> bool {
        match self.slot(buf) {
            Some(s @ Lend::Idle) => {
                *s = Lend::Lent { old };
                self.lent = self.lent.saturating_add(1);
                true
            }
            _ => false,
        }
    }

    /// Marks idle `buf` (a copied or rejected frame's, of this session)
    /// to be given back; false unless idle.
    pub fn hold(&mut self, buf: u16) -> bool {
        match self.slot(buf) {
            Some(s @ Lend::Idle) => {
                *s = Lend::Released { old: false };
                self.released = self.released.saturating_add(1);
                true
            }
            _ => false,
        }
    }

    /// The stack let go of lent `buf`: it is to be given back. False
    /// unless it was lent.
    pub fn release(&mut self, buf: u16) -> bool {
        match self.slot(buf) {
            Some(s) => {
                let Lend::Lent { old } = *s else {
                    return false;
                };
                *s = Lend::Released { old };
                self.lent = self.lent.saturating_sub(1);
                self.released = self.released.saturating_add(1);
                true
            }
            None => false,
        }
    }

    /// Released `buf` was given back: idle. False unless released.
    pub fn given_back(&mut self, buf: u16) -> bool {
        match self.slot(buf) {
            Some(s @ Lend::Released { .. }) => {
                *s = Lend::Idle;
                self.released = self.released.saturating_sub(1);
                true
            }
            _ => false,
        }
    }

    /// A new session of the source starts: everything held is old.
    pub fn age(&mut self) {
        for s in self.slots.iter_mut() {
            match s {
                Lend::Lent { old } | Lend::Released { old } => *old = true,
                Lend::Idle => {}
            }
        }
    }

    /// The first lent buffer from `from` on (the module's scan of page
    /// refcounts).
    pub fn next_lent(&self, from: u16) -> Option<u16> {
        (usize::from(from)..self.bufs as usize)
            .find(|&i| matches!(self.slots.get(i), Some(Lend::Lent { .. })))
            .and_then(|i| u16::try_from(i).ok())
    }

    /// The first released buffer from `from` on, and whether it is old.
    pub fn next_released(&self, from: u16) -> Option<(u16, bool)> {
        (usize::from(from)..self.bufs as usize).find_map(|i| match self.slots.get(i) {
            Some(Lend::Released { old }) => Some((u16::try_from(i).ok()?, *old)),
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
