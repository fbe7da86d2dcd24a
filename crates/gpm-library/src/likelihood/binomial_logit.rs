//! `binomial_logit(n, eta)`: successes out of `n` trials with the logistic link.
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::RngCore;
use rand_distr::Distribution;

/// `y ~ Binomial(n, σ(η))`.
pub struct BinomialLogit;

impl Likelihood for BinomialLogit {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let choose = (p(0) + n(1.0)).lgamma()
            - (y() + n(1.0)).lgamma()
            - (p(0) - y() + n(1.0)).lgamma();
        Some(choose + (y() * p(1).logistic().log() + (p(0) - y()) * (-p(1)).logistic().log()))
    }
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [trials, eta] if *trials >= 0.0 && !eta.is_nan() => {
                match rand_distr::Binomial::new(trials.round() as u64, gpm_special::logistic(*eta)) {
                    Ok(b) => b.sample(rng) as f64,
                    Err(_) => f64::NAN,
                }
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0] * gpm_special::logistic(p[1]))
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0] * gpm_special::logistic(p[1]) * gpm_special::logistic(-p[1]))
    }
    fn trials(&self) -> Option<usize> {
        Some(0)
    }
}
