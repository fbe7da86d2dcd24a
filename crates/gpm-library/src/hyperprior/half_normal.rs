//! `half_normal(sigma)`: `|z|` with `z ~ N(0, σ²)`, on `[0, ∞)` (the same as `normal(0, sigma)`
//! on `0..`).
use super::{on_positive, HyperPriorLaw};
use statrs::distribution::{ContinuousCDF, Normal as G};

/// The half-normal law.
pub struct HalfNormal;

impl HyperPriorLaw for HalfNormal {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, true, || -0.5 * (x / p[0]).powi(2))
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        -x / (p[0] * p[0])
    }
    fn cdf(&self, p: &[f64], x: f64) -> Option<f64> {
        let z = G::new(0.0, p[0]).ok()?;
        Some(if x <= 0.0 { 0.0 } else { 2.0 * z.cdf(x) - 1.0 })
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        G::new(0.0, p[0]).map_or(f64::NAN, |z| z.inverse_cdf(0.5 + 0.5 * u))
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(p[0] * (2.0 / std::f64::consts::PI).sqrt())
    }
}
