//! `bernoulli_logit(eta)`: binary labels with the logistic link.
use super::formula::{n, p, y};
use super::{binary_labels, Formula, Labels, Likelihood};
use rand::{Rng, RngCore};

/// `P(y = 1) = σ(η)`, labels `{0, 1}` or `{−1, 1}`.
pub struct BernoulliLogit;

fn pm_one(labels: Labels) -> bool {
    binary_labels(labels).1 == -1.0
}

impl Likelihood for BernoulliLogit {
    fn log_density(&self, labels: Labels) -> Option<Formula> {
        Some(if pm_one(labels) {
            // Labels ±1: p(y | η) = σ(y η).
            (y() * p(0)).logistic().log()
        } else {
            y() * p(0).logistic().log() + (n(1.0) - y()) * (-p(0)).logistic().log()
        })
    }
    /// `σ(η)^(1+β) + σ(−η)^(1+β)`, whichever labels code the two classes.
    fn power_integral(&self, beta: f64) -> Option<Formula> {
        let b1 = n(1.0 + beta);
        Some(p(0).logistic().pow(b1.clone()) + (-p(0)).logistic().pow(b1))
    }
    fn draw(&self, p: &[f64], labels: Labels, rng: &mut dyn RngCore) -> f64 {
        let (one, zero) = binary_labels(labels);
        match p {
            [eta] if !eta.is_nan() => {
                if rng.gen::<f64>() < gpm_special::logistic(*eta) {
                    one
                } else {
                    zero
                }
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], labels: Labels) -> Option<f64> {
        let (one, zero) = binary_labels(labels);
        let s = gpm_special::logistic(p[0]);
        Some(one * s + zero * (1.0 - s))
    }
    fn variance(&self, p: &[f64], labels: Labels) -> Option<f64> {
        let (one, zero) = binary_labels(labels);
        let s = gpm_special::logistic(p[0]);
        Some((one - zero).powi(2) * s * (1.0 - s))
    }
}
