//! The source's buffers of one pair: which are free, out at the
//! destination, or still held by it from an earlier session. Pure
//! bookkeeping: a buffer leaves only through [`TxBuffers::take`] and
//! comes back only through one accepted return, one accepted refusal of
//! the entry it was placed in ([`TxBuffers::refused`]) or the
//! destination's held bitmap at a new session (also after the
//! destination died: its host may live on, its stack holding pages).

use super::counters::Fault;
use super::layout::{BUFS_MAX, FRAGS_MAX, LINE, REF_SLOTS_MAX};

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

/// Bits of a position a buffer keeps (with its state, in 16 bits: the
/// ends stay small, KUnit builds them on its stack).
const POS_BITS: u32 = 13;
const POS_MASK: u32 = (1 << POS_BITS) - 1;
/// A refusal names an entry at most this far behind the tail (the
/// `ref_queue` holds no more); a placement further behind is forgotten.
const REACH: u32 = REF_SLOTS_MAX;
/// Placements are aged each time the tail crosses a multiple of this.
pub const AGE_EVERY: u32 = 2048;
// An unforgotten placement is less than `REACH + AGE_EVERY` (and a
// frame) behind the tail: its 13 bits name it alone.
const _: () = assert!(REACH + AGE_EVERY + FRAGS_MAX <= POS_MASK);

const STATE: u16 = 0b11;
const PLACED: u16 = 0b100;
const POS_SHIFT: u32 = 3;

/// One buffer: its state (bits 0-1), whether it has a placement (bit 2)
/// and the low [`POS_BITS`] of that `ref_queue` position (bits 3-15).
#[derive(Clone, Copy)]
struct Slot(u16);

impl Slot {
    fn of(s: BufState) -> Slot {
        Slot(match s {
            BufState::Free => 0,
            BufState::Out => 1,
            BufState::Reserved => 2,
            BufState::Unknown => 3,
        })
    }
    fn state(self) -> BufState {
        match self.0 & STATE {
            0 => BufState::Free,
            1 => BufState::Out,
            2 => BufState::Reserved,
            _ => BufState::Unknown,
        }
    }
    /// Only the state: a buffer that leaves `Out` forgets where it was.
    fn set(&mut self, s: BufState) {
        *self = Slot::of(s);
    }
    fn placed(self) -> Option<u32> {
        (self.0 & PLACED != 0).then_some(u32::from(self.0 >> POS_SHIFT))
    }
    fn place(&mut self, pos: u32) {
        let bits = ((pos & POS_MASK) as u16) << POS_SHIFT;
        self.0 = (self.0 & STATE) | PLACED | bits;
    }
    fn forget(&mut self) {
        self.0 &= STATE;
    }
}

/// The source's buffers of one pair.
///
/// # Invariants
///
/// An out buffer with a placement was taken for the `ref_queue`
/// position of the current session less than `REACH + AGE_EVERY +
/// FRAGS_MAX` behind the tail whose low [`POS_BITS`] it keeps (set by
/// [`TxBuffers::take`], aged by [`TxBuffers::age`]; a reset makes every
/// out buffer unknown).
pub struct TxBuffers {
    bufs: u32,
    slots: [Slot; BUFS_MAX as usize],
    cursor: u32,
}

impl TxBuffers {
    /// `bufs` buffers (at most `BUFS_MAX`), all in state `state`.
    pub fn new(bufs: u32, state: BufState) -> TxBuffers {
        TxBuffers {
            bufs: bufs.min(BUFS_MAX),
            slots: [Slot::of(state); BUFS_MAX as usize],
            cursor: 0,
        }
    }

    fn live(&self) -> impl Iterator<Item = BufState> + '_ {
        self.slots
            .iter()
            .take(self.bufs as usize)
            .map(|s| s.state())
    }

    fn live_mut(&mut self) -> impl Iterator<Item = &mut Slot> {
        self.slots.iter_mut().take(self.bufs as usize)
    }

    /// Buffers in state `s`.
    pub fn count(&self, s: BufState) -> u32 {
        self.live().filter(|&b| b == s).count() as u32
    }

    /// Buffers not free: out, reserved or unknown.
    pub fn not_free(&self) -> u32 {
        self.live().filter(|&b| b != BufState::Free).count() as u32
    }

    /// Whether at least `n` buffers are free (stops at the `n`th).
    pub fn has_free(&self, n: u32) -> bool {
        self.live()
            .filter(|&b| b == BufState::Free)
            .take(n as usize)
            .count()
            == n as usize
    }

    /// A buffer's state (`None` out of range).
    pub fn state(&self, buf: u16) -> Option<BufState> {
        self.live().nth(usize::from(buf))
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
            if let Some(s) = self.slots.get_mut(i as usize) {
                if s.state() == BufState::Free {
                    s.set(BufState::Out);
                    s.place(pos);
                    self.cursor = i.wrapping_add(1);
                    return u16::try_from(i).ok();
                }
            }
        }
        None
    }

    /// The tail is now `tail` (call each time it crosses a multiple of
    /// [`AGE_EVERY`]): placements more than `REACH` behind it are
    /// forgotten, so that no two out buffers share the bits kept.
    pub fn age(&mut self, tail: u32) {
        for s in self.live_mut() {
            if let Some(p) = s.placed() {
                if (tail.wrapping_sub(p) & POS_MASK) > REACH {
                    s.forget();
                }
            }
        }
    }

    /// The destination refused the entry at `ref_queue` position `pos`
    /// (one it consumed in this session, so at most `REACH` behind the
    /// tail): the out buffer placed there comes back. None placed there
    /// (a by-value entry, or a bogus notice) is a bad return.
    pub fn refused(&mut self, pos: u32) -> Result<u16, Fault> {
        let want = pos & POS_MASK;
        let (i, s) = self
            .live_mut()
            .enumerate()
            .find(|(_, s)| s.state() == BufState::Out && s.placed() == Some(want))
            .ok_or(Fault::Return)?;
        s.set(BufState::Free);
        u16::try_from(i).map_err(|_| Fault::Index)
    }

    /// An out buffer that was never published goes back.
    pub fn untake(&mut self, buf: u16) {
        if let Some(s) = self.slots.get_mut(usize::from(buf)) {
            if s.state() == BufState::Out {
                s.set(BufState::Free);
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
        let s = self.slots.get_mut(usize::from(buf)).ok_or(Fault::Index)?;
        match s.state() {
            BufState::Out if epoch == current => s.set(BufState::Free),
            BufState::Reserved if epoch != current => s.set(BufState::Free),
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
        for s in self.live_mut() {
            if matches!(s.state(), BufState::Out | BufState::Reserved) {
                s.set(BufState::Unknown);
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
        for (i, s) in self.live_mut().enumerate() {
            if s.state() == BufState::Unknown {
                let bit = held.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
                if bit {
                    s.set(BufState::Reserved);
                } else {
                    s.set(BufState::Free);
                    freed = freed.saturating_add(1);
                }
            }
        }
        freed
    }
}
