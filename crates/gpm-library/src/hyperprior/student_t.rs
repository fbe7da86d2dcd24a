//! `student_t(nu, mu, sigma)`: Stan's location-scale Student-t.
use super::HyperPriorLaw;
use statrs::distribution::{ContinuousCDF, StudentsT as G};

/// The Student-t law with `ν` degrees of freedom, location `μ`, scale `σ`.
pub struct StudentT;

impl HyperPriorLaw for StudentT {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        let z = (x - p[1]) / p[2];
        -0.5 * (p[0] + 1.0) * (z * z / p[0]).ln_1p()
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        let z = (x - p[1]) / p[2];
        -(p[0] + 1.0) * z / (p[2] * (p[0] + z * z))
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[1], p[2], p[0]).ok()?))
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        (p[0] > 1.0).then_some(p[1])
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        Some(p[1])
    }
}
