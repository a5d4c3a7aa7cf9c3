//! Where an end is with its peer, and where each pair's session lines
//! (the source's, the destination's and the held bitmap) are.

use crate::layout::{Geometry, DST_LINE_AT, HELD_AT, SRC_LINE_AT};
use crate::mem::OutOfBounds;

/// Where an end is with its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    /// The peer is dead (lease expired): nothing until it rejoins.
    Down,
    /// Waiting for the peer's side of a new session.
    Syncing,
    /// Frames flow.
    Up,
}

pub(super) fn src_line_at(geom: &Geometry, pair: u32) -> Result<u64, OutOfBounds> {
    geom.ctl(pair)
        .map(|c| c.saturating_add(SRC_LINE_AT))
        .ok_or(OutOfBounds)
}
pub(super) fn dst_line_at(geom: &Geometry, pair: u32) -> Result<u64, OutOfBounds> {
    geom.ctl(pair)
        .map(|c| c.saturating_add(DST_LINE_AT))
        .ok_or(OutOfBounds)
}
pub(super) fn held_at(geom: &Geometry, pair: u32) -> Result<u64, OutOfBounds> {
    geom.ctl(pair)
        .map(|c| c.saturating_add(HELD_AT))
        .ok_or(OutOfBounds)
}
