//! The source's buffers of one pair: which are free, out at the
//! destination, or still held by it from an earlier session. Pure
//! bookkeeping: a buffer leaves only through [`TxBuffers::take`] and
//! comes back only through one accepted return, one accepted refusal of
//! the entry it was placed in ([`TxBuffers::refused`]) or the
//! destination's held bitmap at a new session (also after the
//! destination died: its host may live on, its stack holding pages).

use super::counters::Fault;
use super::layout::{BUFS_MAX, LINE};

/// The low 16 bits of a position.
fn low16(pos: u32) -> u16 {
    (pos & 0xffff) as u16
}

/// A buffer's state at its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufState {
    /// Free to send.
    Free,
    /// Sent in this session, not yet returned.
    Out,
    /// Held by the destination from an earlier session of ours; comes
    /// back with that session's epoch.
    Reserved,
    /// We do not know until the destination acknowledges a new session.
    Unknown,
}

/// The source's buffers of one pair.
///
/// # Invariants
///
/// An out buffer's `placed` is the low 16 bits of the `ref_queue`
/// position it was taken for, in the current session (set by every
/// [`TxBuffers::take`]; a reset makes every out buffer unknown).
pub struct TxBuffers {
    bufs: u32,
    state: [BufState; BUFS_MAX as usize],
    /// Where each buffer was last placed: 16 bits keep the ends small
    /// (KUnit builds them on its stack). Two out buffers share them only
    /// if one has been out for 65536 positions; a refusal then matches
    /// both and frees neither.
    placed: [u16; BUFS_MAX as usize],
    cursor: u32,
}

impl TxBuffers {
    /// `bufs` buffers (at most `BUFS_MAX`), all in state `state`.
    pub fn new(bufs: u32, state: BufState) -> TxBuffers {
        TxBuffers {
            bufs: bufs.min(BUFS_MAX),
            state: [state; BUFS_MAX as usize],
            placed: [0; BUFS_MAX as usize],
            cursor: 0,
        }
    }

    fn live(&self) -> impl Iterator<Item = &BufState> {
        self.state.iter().take(self.bufs as usize)
    }

    /// Buffers in state `s`.
    pub fn count(&self, s: BufState) -> u32 {
        self.live().filter(|&&b| b == s).count() as u32
    }

    /// Whether at least `n` buffers are free (stops at the `n`th).
    pub fn has_free(&self, n: u32) -> bool {
        self.live()
            .filter(|&&b| b == BufState::Free)
            .take(n as usize)
            .count()
            == n as usize
    }

    /// A buffer's state (`None` out of range).
    pub fn state(&self, buf: u16) -> Option<BufState> {
        self.live().nth(usize::from(buf)).copied()
    }

    /// A free buffer, now out, for `ref_queue` position `pos`. Placed
    /// here, not at commit: a reserved buffer not yet committed must not
    /// keep the position of an earlier placement (of an earlier session,
    /// whose positions start again at the same place), which a refusal
    /// could match.
    pub fn take(&mut self, pos: u32) -> Option<u16> {
        let n = self.bufs;
        for k in 0..n {
            let i = self.cursor.wrapping_add(k).checked_rem(n).unwrap_or(0);
            if let (Some(s), Some(p)) = (
                self.state.get_mut(i as usize),
                self.placed.get_mut(i as usize),
            ) {
                if *s == BufState::Free {
                    *s = BufState::Out;
                    *p = low16(pos);
                    self.cursor = i.wrapping_add(1);
                    return u16::try_from(i).ok();
                }
            }
        }
        None
    }

    /// The destination refused the entry at `ref_queue` position `pos`
    /// (one it consumed in this session, which held a buffer): the out
    /// buffer placed there comes back. Exactly one must match; none (a
    /// bogus notice) or several (one out for 65536 positions) free
    /// nothing.
    pub fn refused(&mut self, pos: u32) -> Result<u16, Fault> {
        let want = low16(pos);
        let mut found = None;
        for (i, (s, p)) in self
            .state
            .iter()
            .zip(self.placed.iter())
            .take(self.bufs as usize)
            .enumerate()
        {
            if *s == BufState::Out && *p == want {
                if found.is_some() {
                    return Err(Fault::Return);
                }
                found = Some(i);
            }
        }
        let i = found.ok_or(Fault::Return)?;
        let s = self.state.get_mut(i).ok_or(Fault::Index)?;
        *s = BufState::Free;
        u16::try_from(i).map_err(|_| Fault::Index)
    }

    /// An out buffer that was never published goes back.
    pub fn untake(&mut self, buf: u16) {
        if let Some(s) = self.state.get_mut(usize::from(buf)) {
            if *s == BufState::Out {
                *s = BufState::Free;
            }
        }
    }

    /// A return of `buf` received in `epoch` while our epoch is
    /// `current`: an out buffer of this session, or a reserved one of an
    /// earlier, comes back; anything else is a bad return.
    pub fn returned(&mut self, buf: u16, epoch: u32, current: u32) -> Result<(), Fault> {
        if u32::from(buf) >= self.bufs {
            return Err(Fault::Index);
        }
        let s = self.state.get_mut(usize::from(buf)).ok_or(Fault::Index)?;
        match *s {
            BufState::Out if epoch == current => *s = BufState::Free,
            BufState::Reserved if epoch != current => *s = BufState::Free,
            BufState::Out | BufState::Reserved => return Err(Fault::Epoch),
            BufState::Free | BufState::Unknown => return Err(Fault::Return),
        }
        Ok(())
    }

    /// A new session starts, or the destination died: what was out or
    /// reserved is unknown until the destination's held bitmap says.
    /// Returns how many.
    pub fn suspect_all(&mut self) -> u32 {
        let mut n = 0u32;
        for s in self.state.iter_mut().take(self.bufs as usize) {
            if matches!(*s, BufState::Out | BufState::Reserved) {
                *s = BufState::Unknown;
                n = n.saturating_add(1);
            }
        }
        n
    }

    /// The destination acknowledged the session with its held bitmap (bit
    /// `i` of byte `i / 8`): unknown buffers it holds are reserved, the
    /// others free. Returns how many became free.
    pub fn resolve(&mut self, held: &[u8; LINE as usize]) -> u32 {
        let mut freed = 0u32;
        for (i, s) in self.state.iter_mut().take(self.bufs as usize).enumerate() {
            if *s == BufState::Unknown {
                let bit = held.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
                if bit {
                    *s = BufState::Reserved;
                } else {
                    *s = BufState::Free;
                    freed = freed.saturating_add(1);
                }
            }
        }
        freed
    }
}
