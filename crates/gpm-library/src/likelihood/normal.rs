//! `normal(mu, sigma)`.
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};

/// The normal distribution with mean `μ` and standard deviation `σ`.
pub struct Normal;

impl Likelihood for Normal {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let z = (y() - p(0)) / p(1);
        let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        Some(-p(1).log() - n(half_log_2pi) - z.pow(n(2.0)) / n(2.0))
    }
    /// `(2πσ²)^(−β/2) (1+β)^(−1/2)`.
    fn power_integral(&self, beta: f64) -> Option<Formula> {
        let c = 0.5 * beta * (2.0 * std::f64::consts::PI).ln() + 0.5 * (1.0 + beta).ln();
        Some((-(n(beta) * p(1).log()) - n(c)).exp())
    }
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [mu, sigma] if *sigma > 0.0 && sigma.is_finite() => {
                let z: f64 = StandardNormal.sample(rng);
                mu + sigma * z
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0])
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[1] * p[1])
    }
}
