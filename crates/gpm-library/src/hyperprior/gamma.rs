//! `gamma(shape, rate)`: `p(x) ∝ x^(α−1) e^(−βx)` on `(0, ∞)`.
use super::{on_positive, HyperPriorLaw};
use statrs::distribution::{ContinuousCDF, Gamma as G};

/// The Gamma law with shape `α` and rate `β`.
pub struct Gamma;

impl HyperPriorLaw for Gamma {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || (p[0] - 1.0) * x.ln() - p[1] * x)
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        (p[0] - 1.0) / x - p[1]
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[0], p[1]).ok()?))
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(p[0] / p[1])
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        (p[0] > 1.0).then(|| (p[0] - 1.0) / p[1])
    }
    fn conjugate_gamma(&self, p: &[f64]) -> Option<(f64, f64)> {
        Some((p[0], p[1]))
    }
}
