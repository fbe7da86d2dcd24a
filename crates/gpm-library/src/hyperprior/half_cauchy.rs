//! `half_cauchy(sigma)`: `|z|` with `z ~ Cauchy(0, σ)`, on `[0, ∞)` — PyMC's `HalfCauchy`, the
//! same law as `cauchy(0, sigma)` on `in 0..` (Gelman 2006's prior for a group scale).
use super::{on_positive, HyperPriorLaw};

/// The half-Cauchy law.
pub struct HalfCauchy;

impl HyperPriorLaw for HalfCauchy {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, true, || -(x / p[0]).powi(2).ln_1p())
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        let z = x / p[0];
        -2.0 * z / (p[0] * (1.0 + z * z))
    }
    fn cdf(&self, p: &[f64], x: f64) -> Option<f64> {
        Some(if x <= 0.0 {
            0.0
        } else {
            2.0 * (x / p[0]).atan() / std::f64::consts::PI
        })
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        p[0] * (0.5 * std::f64::consts::PI * u).tan()
    }
    fn mean(&self, _p: &[f64]) -> Option<f64> {
        None
    }
}
