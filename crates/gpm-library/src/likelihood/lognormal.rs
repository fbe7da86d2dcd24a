//! `lognormal(mu, sigma)`: a positive response whose logarithm is `normal(μ, σ)` (Stan's
//! `lognormal`). Gaussian in `μ` (the density is `normal(log y | μ, σ) / y`), so a linear
//! predictor or a GP as `μ` is conjugate: no augmentation. Added as the worked example of a
//! likelihood with a positive support in docs/ARCHITECTURE.md ("Adding a likelihood"): this
//! file and its row in `register!` (the data checks read the support from the row).
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};

/// The log-normal distribution: `log y ~ normal(μ, σ)`.
pub struct Lognormal;

impl Likelihood for Lognormal {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let z = (y().log() - p(0)) / p(1);
        let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        Some(-y().log() - p(1).log() - n(half_log_2pi) - z.pow(n(2.0)) / n(2.0))
    }
    /// `∫ p(y)^(1+β) dy = (σ√(2π))^(−β) (1+β)^(−1/2) exp(β²σ²/(2(1+β)) − βμ)`: in `t = log y`
    /// the integrand is a Gaussian's power times `e^(−βt)`, a completed square.
    fn power_integral(&self, beta: f64) -> Option<Formula> {
        let c = 0.5 * beta * (2.0 * std::f64::consts::PI).ln() + 0.5 * (1.0 + beta).ln();
        let quadratic = n(beta * beta / (2.0 * (1.0 + beta))) * p(1).pow(n(2.0));
        Some((-(n(beta) * p(1).log()) - n(c) + quadratic - n(beta) * p(0)).exp())
    }
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [mu, sigma] if *sigma > 0.0 && sigma.is_finite() => {
                let z: f64 = StandardNormal.sample(rng);
                (mu + sigma * z).exp()
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some((p[0] + 0.5 * p[1] * p[1]).exp())
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        let s2 = p[1] * p[1];
        Some(s2.exp_m1() * (2.0 * p[0] + s2).exp())
    }
}
