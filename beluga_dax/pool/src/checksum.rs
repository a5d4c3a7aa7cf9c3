//! CRC32C (Castagnoli), the checksum of every metadata record in the pool.
//! Bitwise: metadata records are small and this needs no table.

#![deny(clippy::arithmetic_side_effects)]

const POLY: u32 = 0x82F6_3B78;

/// CRC32C of `data`, continuing from `crc` (start with 0).
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    let mut crc = !crc;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (POLY & mask);
        }
    }
    !crc
}

pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_check_value() {
        // The CRC catalogue's check value for CRC-32C.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn appending_equals_one_pass() {
        assert_eq!(
            crc32c_append(crc32c(b"1234"), b"56789"),
            crc32c(b"123456789")
        );
    }
}
