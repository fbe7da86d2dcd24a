//! `exponential(rate)`: `p(x) ∝ e^(−λx)` on `[0, ∞)`.
use super::{on_positive, positive, HyperPriorLaw, ParamSpec};

/// The exponential law with rate `λ`.
#[derive(Debug)]
pub struct Exponential;

impl HyperPriorLaw for Exponential {
    fn name(&self) -> &'static str {
        "exponential"
    }
    fn params(&self) -> &'static [ParamSpec] {
        const P: &[ParamSpec] = &[positive("rate")];
        P
    }
    fn support(&self, _p: &[f64]) -> (f64, f64) {
        (0.0, f64::INFINITY)
    }
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, true, || -p[0] * x)
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
    fn example(&self) -> &'static [f64] {
        &[0.7]
    }
}
