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
    pub const FRAC_BITS: u32 = 32;
    pub const ZERO: Q32 = Q32(0);
    pub const ONE: Q32 = Q32(1 << 32);

    /// `num / den`, saturating at `u64::MAX` raw (a ratio of 2^32); a zero
    /// denominator gives zero (callers guard the cases where that matters).
    pub fn ratio(num: u64, den: u64) -> Q32 {
        if den == 0 {
            return Q32::ZERO;
        }
        let q = (u128::from(num) << Self::FRAC_BITS)
            .checked_div(u128::from(den))
            .unwrap_or(0);
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
    let p = u128::from(value)
        .saturating_mul(u128::from(num))
        .checked_div(u128::from(den))
        .unwrap_or(0);
    u64::try_from(p).unwrap_or(u64::MAX)
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
    let mut x: u128 = (u128::from(num) << F)
        .checked_div(u128::from(den))
        .unwrap_or(0);
    while x > one >> 6 {
        x >>= 1;
        k = k.saturating_add(1);
    }
    let x2 = x.saturating_mul(x) >> F;
    let x3 = x2.saturating_mul(x) >> F;
    let x4 = x3.saturating_mul(x) >> F;
    let mut e = one
        .saturating_sub(x)
        .saturating_add(x2 / 2)
        .saturating_sub(x3 / 6)
        .saturating_add(x4 / 24);
    for _ in 0..k {
        e = e.saturating_mul(e) >> F;
    }
    Q32(u64::try_from(e >> (F - Q32::FRAC_BITS)).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    fn to_f64(q: Q32) -> f64 {
        q.0 as f64 / Q32::ONE.0 as f64
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

    #[test]
    fn ratios_saturate_instead_of_overflowing() {
        assert_eq!(Q32::ratio(u64::MAX, 1).0, u64::MAX);
        assert_eq!(Q32::ratio(1, 0), Q32::ZERO);
        assert_eq!(Q32::ONE.mul_u64(u64::MAX), u64::MAX);
        assert_eq!(Q32(u64::MAX).mul_u64(u64::MAX), u64::MAX);
        assert_eq!(mul_div(u64::MAX, u64::MAX, 1), u64::MAX);
        assert_eq!(mul_div(7, 3, 0), 0);
        assert_eq!(Q32::from_ppm(2_000_000), Q32::ONE);
        assert_eq!(Q32::from_ppm(250_000).to_ppm(), 250_000);
    }
}
