//! `normal(mu, sigma)`.
use super::HyperPriorLaw;
use statrs::distribution::{ContinuousCDF, Normal as G};

/// The normal law with mean `μ` and standard deviation `σ`.
pub struct Normal;

impl HyperPriorLaw for Normal {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        -0.5 * ((x - p[0]) / p[1]).powi(2)
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        -(x - p[0]) / (p[1] * p[1])
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[0], p[1]).ok()?))
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(p[0])
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        Some(p[0])
    }
}
