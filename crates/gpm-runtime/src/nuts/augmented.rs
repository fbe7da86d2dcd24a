//! NUTS on the augmented model (thesis §7.3: is augmented Gibbs fast because of the
//! augmentation or because of Gibbs?): each auxiliary `ω` of a factor with a closed-form
//! augmented joint ([`gpm_schedule::AugmentedJoint`]) becomes a coordinate `log ω` of the
//! target, which adds `log C + ℓ_aug(η, ω) + log p(ω) + log ω` per observation (the last the
//! Jacobian of `ω = e^u`) in place of the factor's original log-density. The other factors
//! (no auxiliaries) keep their original log-densities.

use crate::prepared::Prepared;
use crate::RuntimeError;
use gpm_schedule::{AugmentedJoint, Schedule};
use nalgebra::DVector;
use rand::SeedableRng;

/// Why NUTS cannot run on this model's augmented form (`None`: it can).
pub fn refusal(schedule: &Schedule) -> Option<String> {
    if let Some(h) = schedule.sampled_hypers().first() {
        return Some(format!(
            "NUTS on the augmented model with sampled hyperparameters (`{}`) is not built yet: fix them or declare them `learn(...)`, or run NUTS on the original model",
            schedule.hyper_decls[h.0].name
        ));
    }
    let mut any = false;
    for fp in &schedule.factors {
        match &fp.augmented_joint {
            Ok(Some(_)) => any = true,
            Ok(None) => {}
            Err(why) => {
                return Some(format!(
                    "factor #{} has no closed-form augmented joint for NUTS: {why}; run NUTS on the original model",
                    fp.factor + 1
                ))
            }
        }
    }
    (!any).then(|| "no factor has auxiliaries: the augmented model is the original one".into())
}

/// The augmented factors of a model, each with its observations' `log ω` coordinates.
pub(super) struct Augmented<'a> {
    /// `(factor, its joint, observations, first coordinate)`.
    factors: Vec<(usize, &'a AugmentedJoint, usize, usize)>,
    /// Whether each factor keeps its original log-density.
    pub(super) original: Vec<bool>,
    pub(super) dim: usize,
}

impl<'a> Augmented<'a> {
    pub(super) fn new(schedule: &'a Schedule, prep: &Prepared) -> Result<Self, RuntimeError> {
        if let Some(why) = refusal(schedule) {
            return Err(RuntimeError::Unsupported(why));
        }
        let mut factors = Vec::new();
        let mut original = Vec::new();
        let mut dim = 0;
        for (f, (fp, pf)) in schedule.factors.iter().zip(&prep.factors).enumerate() {
            match &fp.augmented_joint {
                Ok(Some(j)) => {
                    factors.push((f, j, pf.n, dim));
                    dim += pf.n * j.aux.len();
                    original.push(false);
                }
                _ => original.push(true),
            }
        }
        Ok(Augmented {
            factors,
            original,
            dim,
        })
    }

    /// Start values: each `log ω` drawn from its prior.
    pub(super) fn start(
        &self,
        prep: &Prepared,
        hypers: &[f64],
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> Result<Vec<f64>, RuntimeError> {
        let mut out = vec![0.0; self.dim];
        let mut stack = Vec::new();
        for &(f, joint, n, at) in &self.factors {
            let pf = &prep.factors[f];
            let mut vals = vec![0.0; pf.slots.len()];
            for i in 0..n {
                pf.fill(i, |_| 0.0, |_| 1.0, hypers, &mut vals);
                for (a, ja) in joint.aux.iter().enumerate() {
                    let p: Vec<f64> = ja
                        .params
                        .iter()
                        .map(|t| t.eval(&vals, &mut stack))
                        .collect();
                    let w = ja.law.sample(rng, &p).map_err(|e| {
                        RuntimeError::Numerical(format!("NUTS could not start: {e}"))
                    })?;
                    out[at + a * n + i] = w.max(1e-300).ln();
                }
            }
        }
        Ok(out)
    }

    /// `Σ` over the augmented factors' observations of `log C + ℓ_aug + log p(ω) + log ω` at
    /// predictor values `pv`, adding `∂/∂η` (as `w_i` per predictor, carried to the latents)
    /// into `grads` and `∂/∂ log ω` into `grad_u`.
    pub(super) fn log_density(
        &self,
        prep: &Prepared,
        pv: &[Vec<f64>],
        hypers: &[f64],
        u: &[f64],
        grads: &mut [DVector<f64>],
        grad_u: &mut [f64],
    ) -> Result<f64, RuntimeError> {
        let mut stack = Vec::with_capacity(64);
        let mut total = 0.0;
        for &(f, joint, n, at) in &self.factors {
            let pf = &prep.factors[f];
            let mut vals = vec![0.0; pf.slots.len()];
            let mut w = vec![vec![0.0; n]; joint.d_predictors.len()];
            let mut omega = vec![0.0; joint.aux.len()];
            let mut p = Vec::new();
            for i in 0..n {
                for (a, o) in omega.iter_mut().enumerate() {
                    *o = u[at + a * n + i].exp();
                }
                pf.fill(i, |q| pv[q][i], |j| omega[j], hypers, &mut vals);
                total += joint.log_density.eval(&vals, &mut stack);
                for (k, g) in joint.d_predictors.iter().enumerate() {
                    w[k][i] = g.d1.eval(&vals, &mut stack);
                }
                for (a, ja) in joint.aux.iter().enumerate() {
                    p.clear();
                    p.extend(ja.params.iter().map(|t| t.eval(&vals, &mut stack)));
                    let (lp, dlp) = (
                        ja.law.log_density(&p, omega[a]),
                        ja.law.d_log_density(&p, omega[a]),
                    );
                    let (Some(lp), Some(dlp)) = (lp, dlp) else {
                        return Err(RuntimeError::Inconsistent(
                            "an auxiliary's law has no density".into(),
                        ));
                    };
                    let k = at + a * n + i;
                    // ω = e^u: log-Jacobian u, dω/du = ω.
                    total += lp + u[k];
                    grad_u[k] = omega[a] * (ja.d_log_density.eval(&vals, &mut stack) + dlp) + 1.0;
                }
            }
            for (g, wk) in joint.d_predictors.iter().zip(&w) {
                prep.preds[g.pred.0].add_adjoint(wk, grads);
            }
        }
        Ok(total)
    }
}

/// The random stream a chain's auxiliaries start from.
pub(crate) fn start_rng(seed: u64, stream: u64) -> rand_chacha::ChaCha8Rng {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6175_6773);
    rng.set_stream(stream);
    rng
}
