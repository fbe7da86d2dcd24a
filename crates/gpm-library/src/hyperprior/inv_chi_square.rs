//! `inv_chi_square(nu)`: Stan's inverse chi-square, `Inv-Gamma(ν/2, 1/2)`.
use super::{on_positive, HyperPriorLaw};
use statrs::distribution::{ContinuousCDF, InverseGamma as G};

/// The inverse chi-square law with `ν` degrees of freedom.
pub struct InvChiSquare;

impl HyperPriorLaw for InvChiSquare {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || -(p[0] / 2.0 + 1.0) * x.ln() - 0.5 / x)
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        -(p[0] / 2.0 + 1.0) / x + 0.5 / (x * x)
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[0] / 2.0, 0.5).ok()?))
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        // X = β / Y with Y ~ Gamma(α, 1): Q_X(u) = β / Q_Y(1 − u) (statrs's own inverse of
        // the inverse Gamma bisects to a loose tolerance).
        0.5 / super::gamma::unit_quantile(p[0] / 2.0, 1.0 - u)
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        (p[0] > 2.0).then(|| 1.0 / (p[0] - 2.0))
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        Some(1.0 / (p[0] + 2.0))
    }
}
