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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_little_endian_and_never_past_the_end() {
        let b = [1, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(u32_at(&b, 0), 0x0403_0201);
        assert_eq!(u64_at(&b, 1), 0x0908_0706_0504_0302);
        assert_eq!(u32_at(&b, 6), 0);
        assert_eq!(u64_at(&b, usize::MAX), 0);
    }
}
