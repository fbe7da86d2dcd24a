//! `exponential(rate)`: `p(x) ∝ e^(−λx)` on `[0, ∞)`.
use super::{on_positive, HyperPriorLaw};

/// The exponential law with rate `λ`.
pub struct Exponential;

impl HyperPriorLaw for Exponential {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, true, || -p[0] * x)
    }
    fn d_log_density(&self, p: &[f64], _x: f64) -> f64 {
        -p[0]
    }
    fn cdf(&self, p: &[f64], x: f64) -> Option<f64> {
        Some(if x <= 0.0 { 0.0 } else { -(-p[0] * x).exp_m1() })
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        -(-u).ln_1p() / p[0]
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(1.0 / p[0])
    }
}
