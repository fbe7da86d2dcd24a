//! `flat()`: the improper uniform prior on the declared range (Stan's default for a parameter
//! with no stated prior). Whether the posterior is proper is the model's business, as in Stan.
use super::HyperPriorLaw;

/// The improper flat prior.
pub struct Flat;

impl HyperPriorLaw for Flat {
    fn log_density(&self, _p: &[f64], _x: f64) -> f64 {
        0.0
    }
    fn d_log_density(&self, _p: &[f64], _x: f64) -> f64 {
        0.0
    }
    fn mean(&self, _p: &[f64]) -> Option<f64> {
        None
    }
}
