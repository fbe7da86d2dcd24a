//! Gamma(shape α, rate β): the scale mixture of the Student-t (and of the negative-binomial
//! count's Gamma-Poisson form); tilted by `e^(−ωs)` it is Gamma(α, β + s).

use crate::{bad, LawError, MixingLaw};
use rand_chacha::ChaCha8Rng;
use rand_distr::Distribution;

/// Gamma with shape and rate.
#[derive(Debug, Clone, Copy)]
pub struct Gamma;

/// A draw of Gamma(shape, rate).
pub fn sample<R: rand::Rng + ?Sized>(rng: &mut R, shape: f64, rate: f64) -> Result<f64, LawError> {
    if !(shape > 0.0 && rate > 0.0 && shape.is_finite() && rate.is_finite()) {
        return Err(bad("Gamma", &[shape, rate]));
    }
    let g = rand_distr::Gamma::new(shape, 1.0 / rate).map_err(|_| bad("Gamma", &[shape, rate]))?;
    Ok(g.sample(rng))
}

impl MixingLaw for Gamma {
    /// Measured on the Student-t GP (diabetes, 442 × 10; seeds 2, 3): min bulk ESS 745 / 795 →
    /// 1 403 / 1 397 for 1.3× the time, min-ESS per second 414 / 449 → 605 / 597 (under the
    /// prior's ellipses: 795 → 803 for 2.3× the time).
    fn gains_from_fitted_steps(&self) -> bool {
        true
    }
    fn log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        let (a, b) = (p[0], p[1]);
        Some(a * b.ln() - gpm_special::lgamma(a) + (a - 1.0) * w.ln() - b * w)
    }
    fn d_log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        Some((p[0] - 1.0) / w - p[1])
    }
    fn log_densities(&self, p: &[f64], ws: &[f64], out: &mut Vec<f64>) -> bool {
        let (a, b) = (p[0], p[1]);
        let c = a * b.ln() - gpm_special::lgamma(a);
        out.clear();
        out.extend(ws.iter().map(|&w| c + (a - 1.0) * w.ln() - b * w));
        true
    }
    fn log_laplace(&self, p: &[f64], s: f64) -> Option<f64> {
        Some(-p[0] * (s / p[1]).ln_1p())
    }
    fn has_tilted(&self) -> bool {
        true
    }
    /// `φ(s) = (1 + s/β)^(−α)`, `E[ω] = α/(β + s)`.
    fn tilted(&self, p: &[f64], s: f64) -> Option<(f64, f64)> {
        let (a, r) = (p[0], p[1]);
        Some((a / (r + s), -a * (s / r).ln_1p()))
    }
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        sample(rng, p[0], p[1])
    }
}
