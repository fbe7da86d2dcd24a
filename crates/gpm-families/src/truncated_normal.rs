//! The unit-variance normal truncated to `ω > 0`, `TN(μ) ∝ e^(−(ω−μ)²/2) 1[ω > 0]`: the
//! auxiliary of the probit (Albert & Chib 1993). `TN(0)` is the half-normal prior of
//! `Φ(z) = ½ E_{TN(0)}[e^(ωz − z²/2)]`; tilted by `e^(−ωs)` it is `TN(μ − s)`, so the complete
//! conditional of `ω` given `z` is `TN(z)`.

use crate::{bad, LawError, MixingLaw};
use gpm_special::{inverse_mills, log_normal_cdf, log_normal_pdf};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, StandardNormal};

/// `N(μ, 1)` truncated to `(0, ∞)`.
#[derive(Debug, Clone, Copy)]
pub struct TruncatedNormal;

/// An exact draw of `N(μ, 1)` truncated to `(0, ∞)`: plain rejection from `N(μ, 1)` when
/// `μ ≥ −0.5` (acceptance `Φ(μ) ≥ 0.31`), else Robert's (1995) exponential rejection sampler
/// for the tail beyond `a = −μ` with the optimal rate `(a + √(a² + 4))/2` (acceptance above
/// 0.75 for every `a > 0.5`).
pub fn sample<R: Rng + ?Sized>(rng: &mut R, mu: f64) -> Result<f64, LawError> {
    if !mu.is_finite() {
        return Err(bad("truncated normal", &[mu]));
    }
    if mu >= -0.5 {
        for _ in 0..10_000 {
            let z: f64 = StandardNormal.sample(rng);
            if mu + z > 0.0 {
                return Ok(mu + z);
            }
        }
    } else {
        let a = -mu;
        let rate = 0.5 * (a + (a * a + 4.0).sqrt());
        let exp = Exp::new(rate).map_err(|_| bad("truncated normal", &[mu]))?;
        for _ in 0..10_000 {
            let z = a + exp.sample(rng);
            if rng.gen::<f64>().ln() <= -0.5 * (z - rate) * (z - rate) {
                return Ok(z - a);
            }
        }
    }
    Err(LawError(format!(
        "the truncated-normal sampler did not accept in 10000 proposals (mean {mu})"
    )))
}

impl MixingLaw for TruncatedNormal {
    fn log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        (w >= 0.0).then(|| log_normal_pdf(w - p[0]) - log_normal_cdf(p[0]))
    }
    fn d_log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        (w >= 0.0).then(|| -(w - p[0]))
    }
    /// `E[e^(−ωs)] = e^(−μs + s²/2) Φ(μ − s)/Φ(μ)`.
    fn log_laplace(&self, p: &[f64], s: f64) -> Option<f64> {
        let mu = p[0];
        Some(-mu * s + 0.5 * s * s + log_normal_cdf(mu - s) - log_normal_cdf(mu))
    }
    fn any_real_tilt(&self) -> bool {
        true
    }
    fn has_tilted(&self) -> bool {
        true
    }
    /// Tilted, `TN(μ − s)`: mean `m + φ(m)/Φ(m)` with `m = μ − s`.
    fn tilted(&self, p: &[f64], s: f64) -> Option<(f64, f64)> {
        let m = p[0] - s;
        Some((m + inverse_mills(m), self.log_laplace(p, s)?))
    }
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        sample(rng, p[0])
    }
}
