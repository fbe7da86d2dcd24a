//! `inv_gamma(shape, scale)`: `p(x) ∝ x^(−α−1) e^(−β/x)` on `(0, ∞)`.
use super::{on_positive, HyperPriorLaw};
use statrs::distribution::{ContinuousCDF, InverseGamma as G};

/// The inverse Gamma law with shape `α` and scale `β`.
pub struct InvGamma;

impl HyperPriorLaw for InvGamma {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || -(p[0] + 1.0) * x.ln() - p[1] / x)
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        -(p[0] + 1.0) / x + p[1] / (x * x)
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        // statrs calls the scale β its "rate": the density is β^α/Γ(α) x^(−α−1) e^(−β/x).
        Some(Box::new(G::new(p[0], p[1]).ok()?))
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        // X = β / Y with Y ~ Gamma(α, 1): Q_X(u) = β / Q_Y(1 − u) (statrs's own inverse of
        // the inverse Gamma bisects to a loose tolerance).
        p[1] / super::gamma::unit_quantile(p[0], 1.0 - u)
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        // E[θ] = β/(α−1) exists only for α > 1.
        (p[0] > 1.0).then(|| p[1] / (p[0] - 1.0))
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        Some(p[1] / (p[0] + 1.0))
    }
}
