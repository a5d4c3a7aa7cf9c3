//! What both ends exchange: a frame's place in the pool, and why a send
//! is refused.

use crate::layout::FRAGS_MAX;
use crate::mem::OutOfBounds;
use crate::nic::Port;

/// Why a send is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxError {
    /// No session with the destination.
    NotUp,
    /// Not a frame length, or not what was reserved.
    Len,
    /// The `ref_queue` has no room for the frame's entries.
    RingFull,
    /// Not enough free buffers.
    NoBuffer,
    /// The pool has no by-value slots.
    NoValueSlots,
    /// The reservation is not the next frame of the queue.
    Stale,
    /// The pool refused an access.
    Access,
}

impl From<OutOfBounds> for TxError {
    fn from(_: OutOfBounds) -> TxError {
        TxError::Access
    }
}

/// A frame's place in the pool: up to [`FRAGS_MAX`] buffers (or by-value
/// slots), each with its offset and the frame's bytes in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Buffers (or slots) used.
    pub n: u8,
    /// Their indices.
    pub bufs: [u16; FRAGS_MAX as usize],
    /// Their offsets in the region.
    pub offs: [u64; FRAGS_MAX as usize],
    /// The frame's bytes in each.
    pub lens: [u16; FRAGS_MAX as usize],
    /// Bytes of the frame.
    pub len: u32,
    /// By value (slots) rather than by reference (buffers).
    pub by_value: bool,
    /// Checksum hints (`csum_start`, `csum_offset`), if partial.
    pub csum: Option<(u16, u16)>,
    /// The queue position of its first entry.
    pub pos: u32,
    /// The source epoch of its session.
    pub epoch: u32,
    /// The source's session generation it was reserved in (see
    /// `SrcEnd::commit`); 0 in a received frame.
    pub generation: u32,
    /// Where it goes besides the host: drack0 unless the sender sets
    /// another port before `SrcEnd::commit`.
    pub port: Port,
}

impl Frame {
    /// The used (buffer, offset, length) triples.
    pub fn parts(&self) -> impl Iterator<Item = (u16, u64, u16)> + '_ {
        self.bufs
            .iter()
            .zip(self.offs.iter())
            .zip(self.lens.iter())
            .take(usize::from(self.n))
            .map(|((b, o), l)| (*b, *o, *l))
    }
}
