//! `categorical_logistic_softmax(F)`: class labels `1..C` with `P(y = k) ∝ σ(F_k)` (thesis
//! §7.4). Structural: the lowering assembles it from the latent matrix's columns, so it has no
//! formula of its own here; its draw takes the class weights `σ(F_ik)`.
use super::{Formula, Labels, Likelihood};
use rand::{Rng, RngCore};

/// The logistic-softmax likelihood.
pub struct CategoricalLogisticSoftmax;

/// The weight `D = σ(0)` of the last class under the bijective link, which has no latent
/// column (thesis §7.4.2, eq. 7.11 with `f_K = 0`).
pub const FIXED_CLASS_WEIGHT: f64 = 0.5;

/// The class weights of the logistic-softmax's variants, one implementation for every method
/// (thesis §7.4): `p(y = k | f, θ) = w_k / Σ_j w_j` with `w_k = θ_k σ(f_k)` for the latent
/// columns and, under the bijective link, `w_K = θ_K D` for the last class.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClassWeights<'a> {
    /// Whether the last class is the fixed one (§7.4.2).
    pub bijective: bool,
    /// The class scales θ (§7.4.3), one per class; empty: all 1.
    pub theta: &'a [f64],
}

impl ClassWeights<'_> {
    /// The number of classes of a latent matrix with `columns` columns.
    pub fn classes(&self, columns: usize) -> usize {
        columns + usize::from(self.bijective)
    }

    /// `θ_k` (1 when unscaled).
    pub fn scale(&self, k: usize) -> f64 {
        self.theta.get(k).copied().unwrap_or(1.0)
    }

    /// The fixed class's weight `θ_K D` (0 when over-parametrised).
    pub fn fixed_weight(&self, columns: usize) -> f64 {
        if self.bijective {
            self.scale(columns) * FIXED_CLASS_WEIGHT
        } else {
            0.0
        }
    }

    /// The weights of one observation whose latent values are `f(0..columns)`, into `w`.
    pub fn weights(&self, f: impl Fn(usize) -> f64, columns: usize, w: &mut Vec<f64>) {
        w.clear();
        w.extend((0..columns).map(|k| self.scale(k) * gpm_special::logistic(f(k))));
        if self.bijective {
            w.push(self.fixed_weight(columns));
        }
    }

    /// `log p(y = label | f, θ) = log w_label − log Σ_j w_j` (0-based label), in log space
    /// where `σ(f_label)` underflows.
    pub fn log_prob(&self, f: impl Fn(usize) -> f64, columns: usize, label: usize) -> f64 {
        self.log_prob_with(|k| gpm_special::logistic(f(k)), &f, columns, label)
    }

    /// [`ClassWeights::log_prob`] with the logistics `σ(f_k)` given (`sigma`, computed for
    /// many observations at once by the caller) beside the latent values (`f`, read only where
    /// `σ(f_label)` underflows).
    pub fn log_prob_with(
        &self,
        sigma: impl Fn(usize) -> f64,
        f: impl Fn(usize) -> f64,
        columns: usize,
        label: usize,
    ) -> f64 {
        let mut norm = self.fixed_weight(columns);
        let mut own = if label == columns { norm } else { 0.0 };
        for k in 0..columns {
            let s = self.scale(k) * sigma(k);
            norm += s;
            if k == label {
                own = s;
            }
        }
        if own > 1e-300 || label == columns {
            // One logarithm, of a ratio in (0, 1]: half the logs of `ln own − ln norm`.
            (own / norm).ln()
        } else {
            self.scale(label).ln() + gpm_special::log_logistic(f(label)) - norm.ln()
        }
    }
}

impl ClassWeights<'_> {
    /// `∂ log p(y = label | f, θ) / ∂f_k` for each latent column `k`, into `out`:
    /// `[k = label](1 − σ(f_k)) − w_k (1 − σ(f_k)) / Σ_j w_j`, since `dw_k/df_k = w_k σ(−f_k)`
    /// (particle flow and NUTS follow it; no formula of the CAS's covers a class sum).
    pub fn grad_log_prob(
        &self,
        f: impl Fn(usize) -> f64,
        columns: usize,
        label: usize,
        out: &mut [f64],
    ) {
        let mut norm = self.fixed_weight(columns);
        for (k, o) in out.iter_mut().enumerate().take(columns) {
            let w = self.scale(k) * gpm_special::logistic(f(k));
            norm += w;
            *o = w;
        }
        for (k, o) in out.iter_mut().enumerate().take(columns) {
            let rest = gpm_special::logistic(-f(k));
            let own = if k == label { rest } else { 0.0 };
            *o = own - *o * rest / norm;
        }
    }
}

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
