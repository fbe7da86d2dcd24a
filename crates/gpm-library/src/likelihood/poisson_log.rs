//! `poisson_log(eta)`: counts with log rate `η` (Stan's `poisson_log`). No augmentation makes
//! `exp(η)` conditionally conjugate; the generic update takes it. Added as the worked example
//! of docs/ARCHITECTURE.md ("Adding a likelihood"): this file and its row in `register!`.
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::RngCore;

/// Counts with rate `e^η`.
pub struct PoissonLog;

impl Likelihood for PoissonLog {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        Some(y() * p(0) - p(0).exp() - (y() + n(1.0)).lgamma())
    }
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [eta] => super::poisson::draw_at(eta.exp(), rng),
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0].exp())
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0].exp())
    }
}
