//! `neg_binomial_logit(r, eta)`: counts, `r` failures' worth, success odds `e^η`.
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::RngCore;
use rand_distr::{Distribution, Gamma};

/// `p(y) = C(y+r−1, y) σ(η)^y σ(−η)^r`.
pub struct NegBinomialLogit;

/// A negative-binomial draw as a Gamma-Poisson mixture: `λ ~ Gamma(shape, scale)`, then
/// `y ~ Poisson(λ)` (NaN where the Gamma cannot be formed); shared with `neg_binomial_2_log`.
pub(super) fn gamma_poisson(shape: f64, scale: f64, rng: &mut dyn RngCore) -> f64 {
    match Gamma::new(shape, scale) {
        Ok(g) => {
            let rate: f64 = g.sample(rng);
            super::poisson::draw_at(rate, rng)
        }
        Err(_) => f64::NAN,
    }
}

impl Likelihood for NegBinomialLogit {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let norm = (y() + p(0)).lgamma() - p(0).lgamma() - (y() + n(1.0)).lgamma();
        Some(norm + (y() * p(1).logistic().log() + p(0) * (-p(1)).logistic().log()))
    }
    /// Gamma-Poisson: `λ ~ Gamma(r, scale e^η)`, then `y ~ Poisson(λ)`.
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [r, eta] if *r > 0.0 && r.is_finite() && eta.is_finite() => {
                gamma_poisson(*r, eta.exp(), rng)
            }
            _ => f64::NAN,
        }
    }
    /// `r e^η`.
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0] * p[1].exp())
    }
    /// The mean times `1 + e^η`.
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0] * p[1].exp() * (1.0 + p[1].exp()))
    }
}
