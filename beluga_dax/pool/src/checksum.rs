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

/// CRC32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}
