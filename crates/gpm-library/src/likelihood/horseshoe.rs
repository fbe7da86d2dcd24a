//! `horseshoe(mu, tau)`: the horseshoe of Carvalho, Polson & Scott (2010) with its local scale
//! integrated out — `y ~ N(μ, λ²τ²)`, `λ ~ C⁺(0, 1)` — as a latent prior `horseshoe(tau)`.
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::{Rng, RngCore};
use rand_distr::StandardNormal;

/// The horseshoe with location `μ` and global scale `τ`.
pub struct Horseshoe;

impl Likelihood for Horseshoe {
    /// CPS 2010 Theorem 1: `p(y) = e^x E₁(x) / (π τ √(2π))` — infinite at `y = μ`, with
    /// Cauchy-like tails `~ 2τ / (π √(2π) (y − μ)²)`.
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let x = ((y() - p(0)) / p(1)).pow(n(2.0)) / n(2.0);
        let pi = std::f64::consts::PI;
        Some(x.log_e1_scaled() - p(1).log() - n(pi.ln() + 0.5 * (2.0 * pi).ln()))
    }
    /// `μ + τ λ z` with `λ = |tan(π(u − ½))|` half-Cauchy.
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [mu, tau] if *tau > 0.0 && tau.is_finite() && mu.is_finite() => {
                let lambda = (std::f64::consts::PI * (rng.gen::<f64>() - 0.5)).tan().abs();
                let z: f64 = rng.sample(StandardNormal);
                mu + tau * lambda * z
            }
            _ => f64::NAN,
        }
    }
    /// None: the tails are Cauchy's.
    fn mean(&self, _p: &[f64], _labels: Labels) -> Option<f64> {
        None
    }
    fn variance(&self, _p: &[f64], _labels: Labels) -> Option<f64> {
        None
    }
}
