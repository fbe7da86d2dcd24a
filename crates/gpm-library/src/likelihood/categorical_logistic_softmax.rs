//! `categorical_logistic_softmax(F)`: class labels `1..C` with `P(y = k) ∝ σ(F_k)` (thesis
//! §7.4). Structural: the lowering assembles it from the latent matrix's columns, so it has no
//! formula of its own here; its draw takes the class weights `σ(F_ik)`.
use super::{Formula, Labels, Likelihood};
use rand::{Rng, RngCore};

/// The logistic-softmax likelihood.
pub struct CategoricalLogisticSoftmax;

impl Likelihood for CategoricalLogisticSoftmax {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        None
    }
    /// A class `1..=w.len()` with probabilities `w / Σ w`.
    fn draw(&self, w: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        let total: f64 = w.iter().sum();
        if w.is_empty() || !(total > 0.0 && total.is_finite()) {
            return f64::NAN;
        }
        let u = rng.gen::<f64>() * total;
        let (mut k, mut acc) = (0, w[0]);
        while acc < u && k + 1 < w.len() {
            k += 1;
            acc += w[k];
        }
        (k + 1) as f64
    }
    /// The mean label `Σ_k k w_k / Σ w`.
    fn mean(&self, w: &[f64], _labels: Labels) -> Option<f64> {
        let total: f64 = w.iter().sum();
        Some(w.iter().enumerate().map(|(k, x)| (k + 1) as f64 * x).sum::<f64>() / total)
    }
    fn variance(&self, w: &[f64], labels: Labels) -> Option<f64> {
        let total: f64 = w.iter().sum();
        let m = self.mean(w, labels)?;
        Some(
            w.iter()
                .enumerate()
                .map(|(k, x)| ((k + 1) as f64 - m).powi(2) * x)
                .sum::<f64>()
                / total,
        )
    }
}
