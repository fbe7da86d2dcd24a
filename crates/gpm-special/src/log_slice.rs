//! `ln x` and `ln(1 + x)` without branches but for the final selection, so that a slice of them
//! vectorises: the likelihoods a sweep evaluates (the elliptical slice steps' `log σ(f)`, a
//! Poisson's `y log λ`) are a logarithm per observation per step, and libm's scalar `log` and
//! `exp` (about 4 ns a call) were a sixth of the Poisson GP's `gpmc infer` run (`perf`). Same method as fdlibm's
//! `__ieee754_log` (the argument split as `2^k · m`, `m ∈ [√2/2, √2)`, then
//! `ln(1 + f) = 2 atanh(f / (2 + f))` by its minimax polynomial), the special cases selected at
//! the end.

/// `ln 2` split in two (Cody & Waite): `k·LN2_HI` is exact for `|k| ≤ 2¹¹`.
#[allow(clippy::excessive_precision)] // the constants as fdlibm prints them
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-1;
#[allow(clippy::excessive_precision)]
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
/// fdlibm's minimax coefficients of `(ln(1 + f) − 2s)/s − …` in `z = s²`, `s = f/(2 + f)`.
#[allow(clippy::excessive_precision)]
const LG: [f64; 7] = [
    6.666_666_666_666_735_130e-01,
    3.999_999_999_940_941_908e-01,
    2.857_142_874_366_239_149e-01,
    2.222_219_843_214_978_396e-01,
    1.818_357_216_161_805_012e-01,
    1.531_383_769_920_937_332e-01,
    1.479_819_860_511_658_591e-01,
];
/// `2⁵⁴`: a subnormal argument is scaled by it into the normal range first.
const TWO54: f64 = 18_014_398_509_481_984.0;
/// `2⁵²`.
const TWO52: f64 = 4_503_599_627_370_496.0;
const MANTISSA: u64 = (1 << 52) - 1;

/// `ln x` for one value: within 1 ulp of libm's `log` for every positive `x` (subnormals
/// included; tested over 10⁻³⁰⁰ … 10³⁰⁰ and near 1), `−∞` at `±0`, `NaN` below 0 and for
/// `NaN`, `+∞` at `+∞`.
#[inline(always)]
pub fn ln(x: f64) -> f64 {
    let tiny = x < f64::MIN_POSITIVE;
    let y = if tiny { x * TWO54 } else { x };
    let bits = y.to_bits();
    // The biased exponent as a float through the bits of 2⁵² + e (exact): an integer-to-float
    // conversion of 64-bit lanes has no AVX2 instruction and would run a lane at a time.
    let biased = f64::from_bits(0x4330_0000_0000_0000 | ((bits >> 52) & 0x7ff)) - TWO52;
    // m ∈ [1, 2) from the mantissa bits; halved above √2 so that f = m − 1 is small.
    let m = f64::from_bits((bits & MANTISSA) | 0x3ff0_0000_0000_0000);
    let big = m > std::f64::consts::SQRT_2;
    let m = if big { m * 0.5 } else { m };
    let f = m - 1.0;
    // k = e − 1023 (− 54 for a scaled subnormal, + 1 where m was halved): small integers, exact.
    let dk = biased - 1023.0 - if tiny { 54.0 } else { 0.0 } + if big { 1.0 } else { 0.0 };
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let r = t2 + t1;
    let v = dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f);
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if !(x >= 0.0) {
        f64::NAN
    } else if x == f64::INFINITY {
        x
    } else {
        v
    }
}

/// `ln(1 + x)` for one value, within 2 ulp of libm's `log1p` for every `x > −1` (tiny `x`: the
/// rounding of `1 + x` is corrected, `ln(w) − ((w − 1) − x)/w` with `w = 1 + x`), `−∞` at
/// `−1`, `NaN` below it and for `NaN`, `+∞` at `+∞`.
#[inline(always)]
pub fn ln_1p(x: f64) -> f64 {
    let w = 1.0 + x;
    let v = ln(w) - ((w - 1.0) - x) / w;
    if x == f64::INFINITY || x == 0.0 {
        x
    } else if x == -1.0 {
        f64::NEG_INFINITY
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite doubles of the same sign.
    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    /// Within 1 ulp of libm over twenty decades either side of 1, near 1, at the ends of the
    /// normal range and among the subnormals; the special values exactly.
    #[test]
    fn ln_is_libm_to_an_ulp() {
        let mut x = 1e-300;
        let mut worst = 0;
        while x < 1e300 {
            for t in [x, x * 1.000_000_1, x * std::f64::consts::SQRT_2, x * 0.707] {
                worst = worst.max(ulps(ln(t), t.ln()));
            }
            x *= 1.37;
        }
        for i in 0..20_000 {
            let t = 1.0 + (i as f64 - 10_000.0) * 1e-5;
            worst = worst.max(ulps(ln(t), t.ln()));
        }
        for t in [f64::MIN_POSITIVE, 4e-320, 5e-324, 1e-310, f64::MAX] {
            worst = worst.max(ulps(ln(t), t.ln()));
        }
        assert!(worst <= 1, "{worst} ulp");
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(-0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f64::NAN).is_nan() && ln(f64::NEG_INFINITY).is_nan());
    }

    /// `ln(1 + x)` within 2 ulp of libm from −1 + 10⁻¹⁶ through tiny values of both signs to
    /// 10³⁰⁰, and its ends.
    #[test]
    fn ln_1p_is_libm_to_two_ulp() {
        let mut worst = 0;
        let mut x = 1e-300;
        while x < 1e300 {
            worst = worst.max(ulps(ln_1p(x), x.ln_1p()));
            if x < 1.0 - 1e-16 {
                worst = worst.max(ulps(ln_1p(-x), (-x).ln_1p()));
            }
            x *= 1.11;
        }
        for i in 1..10_000 {
            let t = -1.0 + i as f64 * 1e-4;
            worst = worst.max(ulps(ln_1p(t), t.ln_1p()));
        }
        assert!(worst <= 2, "{worst} ulp");
        assert_eq!(ln_1p(0.0), 0.0);
        assert_eq!(ln_1p(-1.0), f64::NEG_INFINITY);
        assert_eq!(ln_1p(f64::INFINITY), f64::INFINITY);
        assert!(ln_1p(-2.0).is_nan() && ln_1p(f64::NAN).is_nan());
    }

    /// The slices' values (at the widest instruction set) are the scalar ones to the bit.
    #[test]
    fn slices_are_the_scalar_functions() {
        let v: Vec<f64> = (0..29).map(|i| 0.013 + i as f64 * 0.77).collect();
        let (mut a, mut b) = (v.clone(), v.clone());
        crate::ln_slice(&mut a);
        crate::ln_1p_slice(&mut b);
        for i in 0..v.len() {
            assert_eq!(a[i].to_bits(), ln(v[i]).to_bits());
            assert_eq!(b[i].to_bits(), ln_1p(v[i]).to_bits());
        }
    }
}
