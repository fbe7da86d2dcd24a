//! `laplace(mu, b)` (Stan's `double_exponential`).
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::{Rng, RngCore};

/// The Laplace distribution with location `μ` and scale `b`.
pub struct Laplace;

impl Likelihood for Laplace {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        Some(-(n(2.0) * p(1)).log() - (y() - p(0)).abs() / p(1))
    }
    /// `(2b)^(−β) / (1+β)`.
    fn power_integral(&self, beta: f64) -> Option<Formula> {
        Some((-(n(beta) * (n(2.0) * p(1)).log())).exp() / n(1.0 + beta))
    }
    /// The difference of two unit exponentials is a standard Laplace variate.
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [mu, b] if *b > 0.0 && b.is_finite() => {
                let mut e = || -(1.0 - rng.gen::<f64>()).ln();
                let (e1, e2) = (e(), e());
                mu + b * (e1 - e2)
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0])
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(2.0 * p[1] * p[1])
    }
}
