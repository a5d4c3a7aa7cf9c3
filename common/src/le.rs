//! Little-endian fields of records in shared memory, read from and
//! written to byte slices. Out of range reads give zeros and out of range
//! writes are left out: callers check their records' sizes once, and
//! nothing here can panic.
//!
//! A zip, not `copy_from_slice`, everywhere: 6.12's objtool does not know
//! the newer panic paths of `copy_from_slice` and warns about the
//! functions that call it.

/// `N` bytes of `b` at `at` (zeros past its end).
pub fn bytes_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut w = [0u8; N];
    if let Some(s) = b.get(at..at.saturating_add(N)) {
        w.iter_mut().zip(s).for_each(|(d, s)| *d = *s);
    }
    w
}

/// The little-endian `u16` of `b` at `at`.
pub fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes_at(b, at))
}

/// The little-endian `u32` of `b` at `at`.
pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes_at(b, at))
}

/// The little-endian `u64` of `b` at `at`.
pub fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes_at(b, at))
}

/// Copies `v` into `b` at `at` (what does not fit is left out).
pub fn put(b: &mut [u8], at: usize, v: &[u8]) {
    if let Some(d) = b.get_mut(at..at.saturating_add(v.len())) {
        d.iter_mut().zip(v).for_each(|(d, v)| *d = *v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_stay_in_bounds() {
        let mut b = [0u8; 16];
        put(&mut b, 2, &0xBEEFu16.to_le_bytes());
        put(&mut b, 4, &0x0102_0304u32.to_le_bytes());
        put(&mut b, 8, &u64::MAX.to_le_bytes());
        assert_eq!(le16(&b, 2), 0xBEEF);
        assert_eq!(le32(&b, 4), 0x0102_0304);
        assert_eq!(le64(&b, 8), u64::MAX);
        // Past the end: zeros, and nothing written.
        assert_eq!(le64(&b, 9), 0);
        assert_eq!(le32(&b, usize::MAX), 0);
        put(&mut b, 12, &[7; 8]);
        put(&mut b, usize::MAX, &[7]);
        assert_eq!(le32(&b, 12), u32::MAX);
    }
}
