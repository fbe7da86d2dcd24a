//! `weibull(alpha, sigma)`: Stan's Weibull with shape `α` and scale `σ`,
//! `p(x) ∝ x^(α−1) e^(−(x/σ)^α)` on `[0, ∞)`.
use super::{on_positive, positive, HyperPriorLaw, ParamSpec};

/// The Weibull law.
#[derive(Debug)]
pub struct Weibull;

impl HyperPriorLaw for Weibull {
    fn name(&self) -> &'static str {
        "weibull"
    }
    fn params(&self) -> &'static [ParamSpec] {
        const P: &[ParamSpec] = &[positive("alpha"), positive("sigma")];
        P
    }
    fn support(&self, _p: &[f64]) -> (f64, f64) {
        (0.0, f64::INFINITY)
    }
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || (p[0] - 1.0) * x.ln() - (x / p[1]).powf(p[0]))
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
    fn example(&self) -> &'static [f64] {
        &[1.7, 2.0]
    }
}
