//! `weibull(alpha, sigma)`: Stan's Weibull with shape `α` and scale `σ`,
//! `p(x) ∝ x^(α−1) e^(−(x/σ)^α)` on `[0, ∞)`.
use super::{on_positive, HyperPriorLaw};

/// The Weibull law.
pub struct Weibull;

impl HyperPriorLaw for Weibull {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || (p[0] - 1.0) * x.ln() - (x / p[1]).powf(p[0]))
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        (p[0] - 1.0) / x - p[0] / p[1] * (x / p[1]).powf(p[0] - 1.0)
    }
    fn cdf(&self, p: &[f64], x: f64) -> Option<f64> {
        Some(if x <= 0.0 {
            0.0
        } else {
            -(-(x / p[1]).powf(p[0])).exp_m1()
        })
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        p[1] * (-(-u).ln_1p()).powf(1.0 / p[0])
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(p[1] * statrs::function::gamma::gamma(1.0 + 1.0 / p[0]))
    }
}
