//! Checks of what the receiver reads from a `ref_queue`: each entry on
//! its own ([`check_entry`]), then a frame's entries together
//! ([`check_frame`]). Whether a buffer is already lent is the lend
//! table's to say (`super::peer`). Nothing read from the pool is used
//! before it passed here; the arithmetic on it is checked.

use super::counters::Fault;
use super::layout::{
    Geometry, RefEntry, BUF_BYTES, FRAGS_MAX, FRAME_MAX, FRAME_MIN, REF_BY_VALUE, REF_CSUM_PARTIAL,
    REF_FLAGS,
};
use super::nic::Port;

/// What an entry must match: where it was read and in which session.
#[derive(Debug, Clone, Copy)]
pub struct EntryCtx {
    /// The pool's shape.
    pub geom: Geometry,
    /// The receiving host (the queue's destination).
    pub dst: u32,
    /// The queue's source.
    pub src: u32,
    /// The source epoch of the session.
    pub epoch: u32,
    /// The entry's queue position.
    pub pos: u32,
}

/// The by-value slot of queue position `pos`.
pub fn value_slot_of(geom: &Geometry, pos: u32) -> u32 {
    pos & geom.ref_slots().saturating_sub(1)
}

/// Checks one entry read at `ctx.pos`; `intact` is its CRC's verdict.
pub fn check_entry(e: &RefEntry, intact: bool, ctx: &EntryCtx) -> Result<(), Fault> {
    if !intact {
        return Err(Fault::Crc);
    }
    if e.seq != ctx.pos {
        return Err(Fault::Seq);
    }
    if e.epoch != ctx.epoch || e.epoch == 0 {
        return Err(Fault::Epoch);
    }
    if u32::from(e.dst) != ctx.dst {
        return Err(Fault::Dst);
    }
    if u32::from(e.src) != ctx.src {
        return Err(Fault::Src);
    }
    let frags = u32::from(e.frags);
    if frags == 0 || frags > FRAGS_MAX || e.frag >= e.frags || e.flags & !REF_FLAGS != 0 {
        return Err(Fault::Frag);
    }
    // A port this version does not know: the entry is intact and the
    // session's, so its buffer goes back (`DstEnd::reject`).
    if Port::decode(e.port).is_none() {
        return Err(Fault::Port);
    }
    if e.flags & REF_BY_VALUE != 0 {
        if !ctx.geom.by_value() {
            return Err(Fault::Frag);
        }
        if u32::from(e.buffer) != value_slot_of(&ctx.geom, ctx.pos) {
            return Err(Fault::Index);
        }
    } else if u32::from(e.buffer) >= ctx.geom.bufs() {
        return Err(Fault::Index);
    }
    let frame = u32::from(e.frame_len);
    if e.len == 0 || u64::from(e.len) > BUF_BYTES || !(FRAME_MIN..=FRAME_MAX).contains(&frame) {
        return Err(Fault::Len);
    }
    Ok(())
}

/// Checks a frame's entries, each already passed by [`check_entry`]:
/// places `0..n` in order, the same count, length, flags, port and hints, every
/// buffer but the last full, lengths adding up to the frame's, no buffer
/// twice, hints within the frame.
pub fn check_frame(entries: &[RefEntry]) -> Result<(), Fault> {
    let Some(first) = entries.first() else {
        return Err(Fault::Frag);
    };
    if entries.len() != usize::from(first.frags) {
        return Err(Fault::Frag);
    }
    let mut sum: u32 = 0;
    for (i, e) in entries.iter().enumerate() {
        let same = usize::from(e.frag) == i
            && e.frags == first.frags
            && e.flags == first.flags
            && e.frame_len == first.frame_len
            && e.csum_start == first.csum_start
            && e.csum_offset == first.csum_offset
            && e.port == first.port;
        if !same {
            return Err(Fault::Frag);
        }
        let last = i.saturating_add(1) == entries.len();
        if !last && u64::from(e.len) != BUF_BYTES {
            return Err(Fault::Len);
        }
        if entries.iter().take(i).any(|o| o.buffer == e.buffer) {
            return Err(Fault::Lent);
        }
        sum = sum.saturating_add(u32::from(e.len));
    }
    if sum != u32::from(first.frame_len) {
        return Err(Fault::Len);
    }
    if first.flags & REF_CSUM_PARTIAL != 0 {
        let end = u32::from(first.csum_start)
            .saturating_add(u32::from(first.csum_offset))
            .saturating_add(2);
        if end > sum {
            return Err(Fault::Len);
        }
    }
    Ok(())
}
