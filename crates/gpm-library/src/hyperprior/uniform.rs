//! `uniform(lo, hi)`: constant on `[lo, hi]`.
use super::HyperPriorLaw;

/// The uniform law on `[lo, hi]`.
pub struct Uniform;

impl HyperPriorLaw for Uniform {
    fn check(&self, p: &[f64]) -> Result<(), String> {
        if p[0] < p[1] {
            Ok(())
        } else {
            Err(format!("`lo` ({}) must be below `hi` ({})", p[0], p[1]))
        }
    }
    fn support(&self, p: &[f64]) -> (f64, f64) {
        (p[0], p[1])
    }
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        if (p[0]..=p[1]).contains(&x) {
            0.0
        } else {
            f64::NEG_INFINITY
        }
    }
    fn d_log_density(&self, _p: &[f64], _x: f64) -> f64 {
        0.0
    }
    fn cdf(&self, p: &[f64], x: f64) -> Option<f64> {
        Some(((x - p[0]) / (p[1] - p[0])).clamp(0.0, 1.0))
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        p[0] + u * (p[1] - p[0])
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(0.5 * (p[0] + p[1]))
    }
}
