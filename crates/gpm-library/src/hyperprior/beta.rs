//! `beta(alpha, beta)`: `p(x) ∝ x^(α−1) (1−x)^(β−1)` on `[0, 1]`.
use super::HyperPriorLaw;
use statrs::distribution::{Beta as G, ContinuousCDF};

/// The Beta law.
pub struct Beta;

impl HyperPriorLaw for Beta {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        if !(0.0..=1.0).contains(&x) {
            return f64::NEG_INFINITY;
        }
        // ln_1p keeps (1 − x) accurate near x = 0; at an end with exponent 0 the term is 0.
        let term = |e: f64, l: f64| if e == 0.0 { 0.0 } else { e * l };
        term(p[0] - 1.0, x.ln()) + term(p[1] - 1.0, (-x).ln_1p())
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        (p[0] - 1.0) / x - (p[1] - 1.0) / (1.0 - x)
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[0], p[1]).ok()?))
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(p[0] / (p[0] + p[1]))
    }
}
