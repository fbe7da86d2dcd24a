//! Pólya-Gamma `PG(b, c)` (Polson, Scott & Windle 2013): the law of the logistic augmentation,
//! `cosh(z/2)^(−b) = ∫ e^(−ωz²/2) PG(ω | b, 0) dω`. The exact sampler is in
//! [`crate::polya_gamma_sampler`].

use crate::{bad, LawError, MixingLaw};
use gpm_special::log_cosh;
use rand_chacha::ChaCha8Rng;

/// `PG(b, c)`: parameters `b ≥ 0` (shape) and `c` (tilt; its absolute value is used).
#[derive(Debug, Clone, Copy)]
pub struct PolyaGamma;

/// A draw of `PG(b, c)` for any `b ≥ 0` and finite `c`: Devroye's method for `b = 1`, the
/// alternate method of Windle, Polson & Scott (2014) in chunks for `1 < b < 1000`, the gamma
/// series with a moment-matched remainder for `b ≥ 1000` ([`crate::polya_gamma_large`]), and
/// the distribution function's alternating series for `b < 1` ([`crate::polya_gamma_small`]).
pub fn sample<R: rand::Rng + ?Sized>(rng: &mut R, b: f64, c: f64) -> Result<f64, LawError> {
    // PG(0, c) is the point mass at 0 (a class with no label and no count).
    if b == 0.0 && c.is_finite() {
        return Ok(0.0);
    }
    if !(b > 0.0 && b.is_finite() && c.is_finite()) {
        return Err(bad("Pólya-Gamma", &[b, c]));
    }
    // Exact below `LARGE_SHAPE`; above it the series draw, whose cost does not grow with `b`.
    Ok(if b >= crate::polya_gamma_large::LARGE_SHAPE {
        crate::polya_gamma_large::sample(rng, b, c)
    } else if b < 1.0 {
        crate::polya_gamma_small::sample(rng, b, c)
    } else {
        crate::polya_gamma_sampler::sample_exact(rng, b, c)
    })
}

impl MixingLaw for PolyaGamma {
    /// PSW 2013, eq. 5: `E[e^(−ωs)] = cosh(c/2)^b / cosh(√(s/2 + c²/4))^b`.
    fn log_laplace(&self, p: &[f64], s: f64) -> Option<f64> {
        let (b, c) = (p[0], p[1].abs());
        Some(b * (log_cosh(c / 2.0) - log_cosh((s / 2.0 + c * c / 4.0).max(0.0).sqrt())))
    }
    /// Measured on the GP classifier and the Poisson GP: min bulk ESS per draw 0.09 → 0.23 and
    /// 0.13 → 0.44 with the marginal elliptical steps.
    fn slow_blocked_mixing(&self) -> bool {
        true
    }
    fn has_tilted(&self) -> bool {
        true
    }
    /// `PG(b, c)` tilted by `e^(−ωs)` is `PG(b, √(c² + 2s))`: `E[ω] = b tanh(x)/(4x)` with
    /// `x = √(s/2 + c²/4)`, and `log φ(s) = b (log cosh(c/2) − log cosh(x))`. (CAVI tilts the
    /// prior `PG(b, 0)`.)
    fn tilted(&self, p: &[f64], s: f64) -> Option<(f64, f64)> {
        let (b, c) = (p[0], p[1].abs());
        let x = (s / 2.0 + c * c / 4.0).sqrt();
        // E[ω] = b tanh(x)/(4x), → b/4 · (1 − x²/3) as x → 0.
        let e = if x < 1e-4 {
            b / 4.0 * (1.0 - x * x / 3.0)
        } else {
            b * x.tanh() / (4.0 * x)
        };
        let at_zero = if c == 0.0 { 0.0 } else { b * log_cosh(c / 2.0) };
        Some((e, at_zero - b * log_cosh(x)))
    }
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        sample(rng, p[0], p[1])
    }
}
