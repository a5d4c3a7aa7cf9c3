//! Fixed-point arithmetic for the control loop.
//!
//! - Rates are `u64` bytes per second: exact to one byte per second, up to
//!   about 18 EB/s. A CXL port moves at most a few hundred GB/s, so products
//!   of a rate with a ratio are taken in `u128` and never lose the top.
//! - Fractions in `[0, 1]` (smoothing weights, load factors, the parameters
//!   g and delta) are [`Q32`]: 32 fractional bits, an absolute error of at
//!   most 2^-32 (2.3e-10) each. `exp_neg` is within 1e-9 of the real value.
//! - Times are `u64` nanoseconds.
//!
//! Each result is rounded down, so an error never grants a thread more
//! than the exact computation would by more than one unit of the result.

/// A fraction with 32 fractional bits. Values above [`Q32::ONE`] only arise
/// as intermediate ratios (`C / F`), never as stored parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Q32(pub u64);

impl Q32 {
    /// Fractional bits: the raw value is the fraction times 2^32.
    pub const FRAC_BITS: u32 = 32;
    /// Zero.
    pub const ZERO: Q32 = Q32(0);
    /// One (raw 2^32).
    pub const ONE: Q32 = Q32(1 << 32);

    /// `num / den`, saturating at `u64::MAX` raw (a ratio of 2^32); a zero
    /// denominator gives zero (callers guard the cases where that matters).
    pub fn ratio(num: u64, den: u64) -> Q32 {
        if den == 0 {
            return Q32::ZERO;
        }
        let q = div_u128(u128::from(num) << Self::FRAC_BITS, den);
        Q32(u64::try_from(q).unwrap_or(u64::MAX))
    }

    /// A fraction from parts per million (configuration values), capped at
    /// one.
    pub fn from_ppm(ppm: u32) -> Q32 {
        Q32::ratio(u64::from(ppm.min(1_000_000)), 1_000_000)
    }

    /// Parts per million, rounded down (for reports).
    pub fn to_ppm(self) -> u64 {
        self.mul_u64(1_000_000)
    }

    /// `1 - self`, zero if `self` is above one.
    pub fn complement(self) -> Q32 {
        Q32(Self::ONE.0.saturating_sub(self.0))
    }

    /// `value * self`, rounded down, saturating.
    pub fn mul_u64(self, value: u64) -> u64 {
        let p = u128::from(value).saturating_mul(u128::from(self.0)) >> Self::FRAC_BITS;
        u64::try_from(p).unwrap_or(u64::MAX)
    }

    /// `self * other` in Q32, rounded down.
    pub fn mul_q(self, other: Q32) -> Q32 {
        Q32(other.mul_u64(self.0))
    }

    /// The smaller of `self` and `other`.
    pub fn min(self, other: Q32) -> Q32 {
        Q32(self.0.min(other.0))
    }
}

/// `value * num / den` in `u128`, rounded down and saturating; zero when
/// `den` is zero.
pub fn mul_div(value: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        return 0;
    }
    let p = div_u128(u128::from(value).saturating_mul(u128::from(num)), den);
    u64::try_from(p).unwrap_or(u64::MAX)
}

/// `n / d` rounded down for a 128-bit `n` and a 64-bit `d`; zero when `d`
/// is zero. Written out because the kernel does not provide the compiler's
/// 128-bit division (`__udivti3`); products of two `u64` stay inline. A
/// quotient that fits 64 bits of `n` takes the hardware division.
pub fn div_u128(n: u128, d: u64) -> u128 {
    if d == 0 {
        return 0;
    }
    if let Ok(small) = u64::try_from(n) {
        return u128::from(small.checked_div(d).unwrap_or(0));
    }
    // Truncations intended: the two halves of `n`.
    let (hi, lo) = ((n >> 64) as u64, n as u64);
    let q_hi = hi.checked_div(d).unwrap_or(0);
    let mut r = hi.checked_rem(d).unwrap_or(0);
    let mut q_lo = 0u64;
    // Long division of `r:lo` by `d`, one bit at a time; `r < d` always,
    // so `2r + 1` needs 65 bits: the bit shifted out is kept as `carry`.
    for bit in (0..64u32).rev() {
        let carry = r >> 63;
        r = (r << 1) | ((lo >> bit) & 1);
        q_lo <<= 1;
        if carry != 0 || r >= d {
            r = r.wrapping_sub(d);
            q_lo |= 1;
        }
    }
    (u128::from(q_hi) << 64) | u128::from(q_lo)
}

/// `e^(-num/den)` in Q32, for the smoothing weight `e^(-T_W/K)` of Eq. 3.
/// Zero when `den` is zero or the exponent is beyond 64 (the true value is
/// then below 2^-92, under one unit of Q32).
pub fn exp_neg(num: u64, den: u64) -> Q32 {
    if num.checked_div(den).map_or(true, |x| x >= 64) {
        return Q32::ZERO;
    }
    // e^-x = (e^(-x / 2^k))^(2^k): reduce x below 1/64, where four terms of
    // the series are exact to 2^-33, then square k times. In 64 fractional
    // bits so that k squarings lose under 2^-40.
    const F: u32 = 64;
    let one: u128 = 1 << F;
    let mut k = 0u32;
    // x in 64-bit fixed point: num / den < 64 fits in 70 bits.
    let mut x: u128 = div_u128(u128::from(num) << F, den);
    while x > one >> 6 {
        x >>= 1;
        k = k.saturating_add(1);
    }
    let x2 = x.saturating_mul(x) >> F;
    let x3 = x2.saturating_mul(x) >> F;
    let x4 = x3.saturating_mul(x) >> F;
    let mut e = one
        .saturating_sub(x)
        .saturating_add(x2 >> 1)
        .saturating_sub(div_u128(x3, 6))
        .saturating_add(div_u128(x4, 24));
    for _ in 0..k {
        e = e.saturating_mul(e) >> F;
    }
    Q32(u64::try_from(e >> (F - Q32::FRAC_BITS)).unwrap_or(u64::MAX))
}

// Against f64 (host only: the kernel has no floating point); the integer
// cases are in `cases.rs`.
#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    fn to_f64(q: Q32) -> f64 {
        q.0 as f64 / Q32::ONE.0 as f64
    }

    #[test]
    fn long_division_matches_the_native_one() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..100_000 {
            // xorshift: spread values over every width.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (u128::from(x) << (x % 64)) | u128::from(x.rotate_left(17));
            let d = (x >> (x % 63)).max(1);
            assert_eq!(div_u128(n, d), n / u128::from(d), "{n} / {d}");
        }
        assert_eq!(div_u128(u128::MAX, 1), u128::MAX);
        assert_eq!(
            div_u128(u128::MAX, u64::MAX),
            u128::MAX / u128::from(u64::MAX)
        );
        assert_eq!(div_u128(5, 0), 0);
    }

    #[test]
    fn exp_neg_tracks_the_real_function() {
        for (num, den) in [
            (0, 1),
            (1, 1),
            (100, 1000),
            (1, 3),
            (5, 2),
            (63, 1),
            (100_000, 10_000_000),
        ] {
            let got = to_f64(exp_neg(num, den));
            let want = (-(num as f64) / den as f64).exp();
            assert!((got - want).abs() < 1e-9, "e^-{num}/{den}: {got} vs {want}");
        }
        assert_eq!(exp_neg(64, 1), Q32::ZERO);
        assert_eq!(exp_neg(1, 0), Q32::ZERO);
        assert_eq!(exp_neg(u64::MAX, 1), Q32::ZERO);
        assert_eq!(exp_neg(1, u64::MAX).0, Q32::ONE.0 - 1);
    }
}
