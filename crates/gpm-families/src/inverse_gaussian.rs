//! Inverse Gaussian(mean μ, shape λ): the conditional of a Lévy (Laplace-likelihood) scale
//! mixture, the Lévy law tilted by `e^(−ωs)`.

use crate::{bad, LawError, MixingLaw};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Inverse Gaussian with mean and shape.
#[derive(Debug, Clone, Copy)]
pub struct InverseGaussian;

/// Inverse Gaussian(mean μ, shape λ) by Michael, Schucany & Haas (1976).
pub fn sample<R: Rng + ?Sized>(rng: &mut R, mean: f64, shape: f64) -> Result<f64, LawError> {
    if !(shape > 0.0 && shape.is_finite() && mean > 0.0) {
        return Err(bad("inverse Gaussian", &[mean, shape]));
    }
    if mean.is_infinite() {
        // The tilt vanished (c = 0): the untilted Lévy law, λ/N(0,1)².
        let z: f64 = rng.sample(StandardNormal);
        return Ok(shape / (z * z));
    }
    let nu: f64 = rng.sample(StandardNormal);
    let y = nu * nu;
    let x = mean + mean * mean * y / (2.0 * shape)
        - mean / (2.0 * shape) * (4.0 * mean * shape * y + mean * mean * y * y).sqrt();
    let u: f64 = rng.gen();
    Ok(if u <= mean / (mean + x) {
        x
    } else {
        mean * mean / x
    })
}

impl MixingLaw for InverseGaussian {
    fn log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        let (m, l) = (p[0], p[1]);
        Some(
            0.5 * (l / (2.0 * std::f64::consts::PI)).ln()
                - 1.5 * w.ln()
                - l * (w - m) * (w - m) / (2.0 * m * m * w),
        )
    }
    fn d_log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        // d/dω of −λ(ω − μ)²/(2μ²ω) = −λ(ω² − μ²)/(2μ²ω²).
        let (m, l) = (p[0], p[1]);
        Some(-1.5 / w - l * (w * w - m * m) / (2.0 * m * m * w * w))
    }
    /// `E[e^(−ωs)] = exp((λ/μ)(1 − √(1 + 2μ²s/λ)))`.
    fn log_laplace(&self, p: &[f64], s: f64) -> Option<f64> {
        let (m, l) = (p[0], p[1]);
        Some(l / m * (1.0 - (1.0 + 2.0 * m * m * s / l).sqrt()))
    }
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        sample(rng, p[0], p[1])
    }
}
