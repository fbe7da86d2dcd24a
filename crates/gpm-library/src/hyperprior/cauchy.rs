//! `cauchy(mu, sigma)`; on a range `0..` it is the half-Cauchy.
use super::HyperPriorLaw;

/// The Cauchy law with location `μ` and scale `σ`.
pub struct Cauchy;

impl HyperPriorLaw for Cauchy {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        let z = (x - p[0]) / p[1];
        -(z * z).ln_1p()
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        let z = (x - p[0]) / p[1];
        -2.0 * z / (p[1] * (1.0 + z * z))
    }
    fn cdf(&self, p: &[f64], x: f64) -> Option<f64> {
        Some(0.5 + ((x - p[0]) / p[1]).atan() / std::f64::consts::PI)
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        p[0] + p[1] * (std::f64::consts::PI * (u - 0.5)).tan()
    }
    fn mean(&self, _p: &[f64]) -> Option<f64> {
        None
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        Some(p[0])
    }
}
