//! `flat()`: the improper uniform prior on the declared range (Stan's default for a parameter
//! with no stated prior). Whether the posterior is proper is the model's business, as in Stan.
use super::{HyperPriorLaw, ParamSpec};

/// The improper flat prior.
#[derive(Debug)]
pub struct Flat;

impl HyperPriorLaw for Flat {
    fn name(&self) -> &'static str {
        "flat"
    }
    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }
    fn support(&self, _p: &[f64]) -> (f64, f64) {
        (f64::NEG_INFINITY, f64::INFINITY)
    }
    fn log_density(&self, _p: &[f64], _x: f64) -> f64 {
        0.0
    }
    fn mean(&self, _p: &[f64]) -> Option<f64> {
        None
    }
    fn example(&self) -> &'static [f64] {
        &[]
    }
}
