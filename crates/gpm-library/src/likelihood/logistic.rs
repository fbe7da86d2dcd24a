//! `logistic(mu, s)`: the logistic distribution of a real response.
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::{Rng, RngCore};

/// The logistic distribution with location `μ` and scale `s`.
pub struct Logistic;

impl Likelihood for Logistic {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let z = (y() - p(0)) / p(1);
        Some(-p(1).log() - z.clone() - n(2.0) * (-z).softplus())
    }
    /// `s^(−β) B(1+β, 1+β)`.
    fn power_integral(&self, beta: f64) -> Option<Formula> {
        let b1 = 1.0 + beta;
        let log_beta_fn = 2.0 * gpm_special::lgamma(b1) - gpm_special::lgamma(2.0 * b1);
        Some((n(log_beta_fn) - n(beta) * p(1).log()).exp())
    }
    /// Inverse CDF: `μ + s log(u / (1 − u))`.
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [mu, s] if *s > 0.0 && s.is_finite() => {
                let u: f64 = rng.gen::<f64>().max(f64::MIN_POSITIVE);
                mu + s * (u / (1.0 - u)).ln()
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0])
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[1] * p[1] * std::f64::consts::PI.powi(2) / 3.0)
    }
}
