//! `neg_binomial_2_log(eta, phi)`: Stan's negative binomial with log mean `η` and
//! overdispersion `φ` (mean `e^η`, variance `e^η + e^{2η}/φ`). It is `neg_binomial_logit` at
//! `r = φ` and logit `η − log φ`, written that way here so that the recognizers find the same
//! Pólya-Gamma augmentation (`log σ` of an affine predictor).
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::RngCore;

/// `p(y) = C(y+φ−1, y) (e^η/(e^η+φ))^y (φ/(e^η+φ))^φ`.
pub struct NegBinomial2Log;

impl Likelihood for NegBinomial2Log {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let logit = p(0) - p(1).log();
        let norm = (y() + p(1)).lgamma() - p(1).lgamma() - (y() + n(1.0)).lgamma();
        Some(norm + (y() * logit.clone().logistic().log() + p(1) * (-logit).logistic().log()))
    }
    /// Gamma-Poisson: `λ ~ Gamma(φ, scale e^η/φ)`, then `y ~ Poisson(λ)`.
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [eta, phi] if *phi > 0.0 && phi.is_finite() && eta.is_finite() => {
                super::neg_binomial_logit::gamma_poisson(*phi, eta.exp() / phi, rng)
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0].exp())
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        let m = p[0].exp();
        Some(m + m * m / p[1])
    }
}
