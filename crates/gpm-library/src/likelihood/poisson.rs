//! `poisson(rate)`.
use super::formula::{n, p, y};
use super::{Formula, Func, Labels, Likelihood};
use rand::RngCore;
use rand_distr::Distribution;

/// Counts with rate `λ`.
pub struct Poisson;

/// A Poisson draw at `rate` (0 at rate 0; NaN outside the domain): shared with `poisson_log`.
pub(super) fn draw_at(rate: f64, rng: &mut dyn RngCore) -> f64 {
    if rate == 0.0 {
        return 0.0;
    }
    if !(rate > 0.0 && rate.is_finite()) {
        return f64::NAN;
    }
    rand_distr::Poisson::new(rate).map_or(f64::NAN, |d| d.sample(rng))
}

impl Likelihood for Poisson {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        Some(y() * p(0).log() - p(0) - (y() + n(1.0)).lgamma())
    }
    /// `Σ_k p_k(λ)^(1+β)`, summed to a certified tail at evaluation.
    fn power_integral(&self, beta: f64) -> Option<Formula> {
        Some(Formula::Call(
            Func::PoissonPowerMoment,
            vec![n(0.0), p(0), n(1.0 + beta)],
        ))
    }
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [rate] => draw_at(*rate, rng),
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0])
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        Some(p[0])
    }
}
