//! `lognormal(mu, sigma)`: `log x ~ N(μ, σ²)`.
use super::{on_positive, HyperPriorLaw};
use statrs::distribution::{ContinuousCDF, LogNormal as G};

/// The log-normal law.
pub struct LogNormal;

impl HyperPriorLaw for LogNormal {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || {
            -x.ln() - 0.5 * ((x.ln() - p[0]) / p[1]).powi(2)
        })
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        -(1.0 + (x.ln() - p[0]) / (p[1] * p[1])) / x
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[0], p[1]).ok()?))
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some((p[0] + p[1] * p[1] / 2.0).exp())
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        Some((p[0] - p[1] * p[1]).exp())
    }
}
