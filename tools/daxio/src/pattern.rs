//! A seeded byte pattern, so that one host can fill a range and another can
//! check it without the data travelling any other way.

/// xorshift64*: cheap, and every seed gives a different stream.
pub struct Pattern(u64);

impl Pattern {
    pub fn new(seed: u64) -> Pattern {
        Pattern(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    pub fn next_byte(&mut self) -> u8 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
    }

    pub fn fill(seed: u64, out: &mut [u8]) {
        let mut p = Pattern::new(seed);
        out.iter_mut().for_each(|b| *b = p.next_byte());
    }

    /// Offset of the first byte that differs from the pattern.
    pub fn first_mismatch(seed: u64, data: &[u8]) -> Option<usize> {
        let mut p = Pattern::new(seed);
        data.iter().position(|&b| b != p.next_byte())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_then_verify() {
        let mut buf = vec![0u8; 4096];
        Pattern::fill(7, &mut buf);
        assert_eq!(Pattern::first_mismatch(7, &buf), None);
        buf[1234] ^= 1;
        assert_eq!(Pattern::first_mismatch(7, &buf), Some(1234));
    }

    #[test]
    fn seeds_differ() {
        let (mut a, mut b) = (vec![0u8; 64], vec![0u8; 64]);
        Pattern::fill(1, &mut a);
        Pattern::fill(2, &mut b);
        assert_ne!(a, b);
        assert!(a.iter().any(|&x| x != a[0]), "pattern is not constant");
    }
}
