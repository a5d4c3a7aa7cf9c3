//! Little-endian fields of pool records. Callers have checked the length
//! of the record (`get(..LEN)`); a field outside `b` reads as 0 rather
//! than panic.

#![deny(clippy::arithmetic_side_effects)]

pub fn bytes_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(field) = at.checked_add(N).and_then(|end| b.get(at..end)) {
        out.copy_from_slice(field);
    }
    out
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes_at(b, at))
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes_at(b, at))
}
