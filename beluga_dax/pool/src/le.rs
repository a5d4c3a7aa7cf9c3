//! Little-endian fields of pool records. Callers have checked the length
//! of the record (`get(..LEN)`); a field outside `b` reads as 0 rather
//! than panic.

#![deny(clippy::arithmetic_side_effects)]

/// The `N` bytes at byte offset `at` of `b`, or zeros if they do not all
/// lie inside it.
pub fn bytes_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(field) = at.checked_add(N).and_then(|end| b.get(at..end)) {
        out.copy_from_slice(field);
    }
    out
}

/// The little-endian `u32` at byte offset `at` of `b` (0 if outside).
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes_at(b, at))
}

/// The little-endian `u64` at byte offset `at` of `b` (0 if outside).
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes_at(b, at))
}
