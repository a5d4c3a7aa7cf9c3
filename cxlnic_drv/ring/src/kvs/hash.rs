//! The keyed hash of a key and the buckets it picks.
//!
//! FNV-1a (64-bit) over the config's seed and then the key, finished with
//! a multiply-xorshift so that both halves spread. It is not a
//! cryptographic hash: a client that learns the seed can aim keys at one
//! bucket, which costs it hits (LRU evictions in that bucket) and the
//! host inserts (`ENOSPC` once both candidates are full), never
//! correctness. The driver picks a fresh seed for each host table.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The hash of `key` under `seed`.
pub fn key_hash(seed: u64, key: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for b in seed.to_le_bytes().iter().chain(key) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A key's two candidate buckets in a table of `n` (a power of two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets {
    /// The first: the only one in the cache.
    pub first: u32,
    /// The second (the host table's other choice): differs from `first`
    /// whenever `n > 1`.
    pub second: u32,
}

/// The buckets of `hash` in a table of `n` buckets (a power of two;
/// anything else is taken as 1).
pub fn buckets(hash: u64, n: u32) -> Buckets {
    let mask = if n.is_power_of_two() {
        n.wrapping_sub(1)
    } else {
        0
    };
    // Truncation intended: the low and high halves pick the two buckets.
    let first = (hash as u32) & mask;
    let mut second = ((hash >> 32) as u32) & mask;
    if second == first {
        second = first ^ (1 & mask);
    }
    Buckets { first, second }
}
