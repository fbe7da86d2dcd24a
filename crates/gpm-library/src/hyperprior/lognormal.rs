//! `lognormal(mu, sigma)`: `log x ~ N(μ, σ²)`.
use super::{on_positive, positive, real, HyperPriorLaw, ParamSpec};
use statrs::distribution::{ContinuousCDF, LogNormal as G};

/// The log-normal law.
#[derive(Debug)]
pub struct LogNormal;

impl HyperPriorLaw for LogNormal {
    fn name(&self) -> &'static str {
        "lognormal"
    }
    fn params(&self) -> &'static [ParamSpec] {
        const P: &[ParamSpec] = &[real("mu"), positive("sigma")];
        P
    }
    fn support(&self, _p: &[f64]) -> (f64, f64) {
        (0.0, f64::INFINITY)
    }
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || {
            -x.ln() - 0.5 * ((x.ln() - p[0]) / p[1]).powi(2)
        })
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[0], p[1]).ok()?))
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some((p[0] + p[1] * p[1] / 2.0).exp())
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        Some((p[0] - p[1] * p[1]).exp())
    }
    fn example(&self) -> &'static [f64] {
        &[0.3, 0.6]
    }
}
