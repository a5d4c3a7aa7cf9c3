//! Ring index arithmetic.
//!
//! Both sides count with free-running `u32` indices that wrap; a ring of
//! `size` entries (a power of two) keeps entry `i` in slot `i % size`. The
//! distance between two indices is their wrapping difference, so a ring
//! never holds more than `size` entries in flight and wrap-around needs no
//! special case.

/// The fewest entries a ring may have.
pub const RING_MIN: u32 = 8;
/// The most entries a ring may have.
pub const RING_MAX: u32 = 4096;

/// A ring's number of entries.
///
/// # Invariants
///
/// A power of two in `RING_MIN..=RING_MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSize(u32);

impl RingSize {
    /// `None` unless `entries` is a power of two in range.
    pub const fn new(entries: u32) -> Option<RingSize> {
        if entries.is_power_of_two() && entries >= RING_MIN && entries <= RING_MAX {
            // INVARIANT: checked just above.
            Some(RingSize(entries))
        } else {
            None
        }
    }

    /// The number of entries.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The slot of entry `index`.
    pub const fn slot(self, index: u32) -> usize {
        // The mask is below `RING_MAX`, so the result fits any usize.
        (index & self.0.saturating_sub(1)) as usize
    }
}

/// Entries from `from` up to (not including) `to`.
pub const fn distance(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from)
}

/// Whether `to` lies in `from..=limit`, counting forward with wrap-around:
/// how a side checks a peer's progress (`to`) between what it already saw
/// (`from`) and what the peer may have reached (`limit`).
pub const fn within(from: u32, to: u32, limit: u32) -> bool {
    distance(from, to) <= distance(from, limit)
}

/// The ready tag of entry `index`: a producer writes it into the entry
/// once the entry is complete; the consumer expecting `index` takes the
/// entry only if it carries exactly this tag. An entry left from an
/// earlier lap carries the tag of `index - size`, and a zeroed ring the
/// tag 0, which no index expects until `u32::MAX` (a ring starts at 0 and
/// is reset long before).
pub const fn ready_tag(index: u32) -> u32 {
    index.wrapping_add(1)
}
