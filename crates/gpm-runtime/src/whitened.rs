//! A model's latents in coordinates whitened by their priors — `f = μ + L v` for a GP block
//! (`LLᵀ = K`), `θ = μ + σ ⊙ v` for a dense one — where the prior's part of `−log p` is `½|v|²`,
//! and the log-likelihood with its gradient in the latents (the CAS's `∂ℓ/∂η` of every
//! factor): what the gradient-based methods move, the particle flow ([`crate::gpf`]) and NUTS
//! ([`crate::nuts`]), one implementation for both.

use crate::prepared::{Block, Coords, Prepared};
use crate::RuntimeError;
use gpm_schedule::{Schedule, Tape};
use nalgebra::{DMatrix, DVector};

/// A block's prior, the map from whitened coordinates to its values.
pub(crate) enum Whitening {
    /// `f = μ + L v`.
    Gp {
        mean: f64,
        l: DMatrix<f64>,
        lt: DMatrix<f64>,
    },
    /// `θ = μ + σ ⊙ v`.
    Dense {
        mean: DVector<f64>,
        sd: DVector<f64>,
    },
}

/// One block: where its values live and its whitening.
pub(crate) struct WhitenedBlock<'a> {
    pub(crate) coords: Coords<'a>,
    pub(crate) whitening: Whitening,
}

impl<'a> WhitenedBlock<'a> {
    /// A block of the prepared model, whitened by its prior.
    pub(crate) fn new(b: &'a Block) -> Result<Self, RuntimeError> {
        Ok(match b {
            Block::Gp { latent, column, gp } => {
                let l = gp.chol.l();
                WhitenedBlock {
                    coords: Coords::Column {
                        latent: *latent,
                        column: *column,
                        rows: gp.len(),
                    },
                    whitening: Whitening::Gp {
                        mean: gp.mean,
                        lt: l.transpose(),
                        l,
                    },
                }
            }
            Block::Dense {
                parts,
                prior_mean,
                prior_sd,
            } => WhitenedBlock {
                coords: Coords::Dense(parts),
                whitening: Whitening::Dense {
                    mean: prior_mean.clone(),
                    sd: prior_sd.clone(),
                },
            },
            Block::Sparse { .. } => {
                return Err(RuntimeError::Inconsistent(
                    "a sparse GP block reached the particle flow".into(),
                ))
            }
        })
    }

    pub(crate) fn dim(&self) -> usize {
        match &self.whitening {
            Whitening::Gp { l, .. } => l.nrows(),
            Whitening::Dense { mean, .. } => mean.len(),
        }
    }

    /// Every particle's values from its whitened coordinates (columns).
    pub(crate) fn values(&self, v: &DMatrix<f64>) -> DMatrix<f64> {
        self.whitening.values(v)
    }

    /// `∇_v` of a function from its gradient in the values: `Lᵀ g`, `σ ⊙ g`.
    pub(crate) fn pullback(&self, g: &DMatrix<f64>) -> DMatrix<f64> {
        self.whitening.pullback(g)
    }
}

impl Whitening {
    /// Every particle's values from its whitened coordinates (columns).
    pub(crate) fn values(&self, v: &DMatrix<f64>) -> DMatrix<f64> {
        match self {
            Whitening::Gp { mean, l, .. } => crate::linalg::lower_times(l, v).add_scalar(*mean),
            Whitening::Dense { mean, sd } => {
                DMatrix::from_fn(v.nrows(), v.ncols(), |i, j| mean[i] + sd[i] * v[(i, j)])
            }
        }
    }

    /// `∇_v` of a function from its gradient in the values: `Lᵀ g`, `σ ⊙ g`.
    pub(crate) fn pullback(&self, g: &DMatrix<f64>) -> DMatrix<f64> {
        match self {
            Whitening::Gp { lt, .. } => crate::linalg::matmul(lt, g),
            Whitening::Dense { sd, .. } => {
                DMatrix::from_fn(g.nrows(), g.ncols(), |i, j| sd[i] * g[(i, j)])
            }
        }
    }
}

/// `log p(y | x)` and its gradient in the latents at one particle's latent values. Each
/// factor's `∂ℓ/∂η` is the CAS's; where it is not finite (a derivative not simplified into
/// a safe form, far in a tail), a central difference of the log-density (log space) stands in.
pub(crate) fn log_lik_grad(
    prep: &Prepared,
    schedule: &Schedule,
    latents: &[DVector<f64>],
    hypers: &[f64],
) -> Result<(f64, Vec<DVector<f64>>), RuntimeError> {
    log_lik_grads(prep, schedule, latents, hypers, None, None)
}

/// [`log_lik_grad`], and with `hyper_grad` (indexed by hyperparameter id) also
/// `Σ_i ∂ℓ_i/∂h` added for every sampled hyperparameter `h` a factor reads (the CAS's
/// [`gpm_schedule::FactorProgram::hyper_gradient`]); with `only`, the factors it marks alone.
pub(crate) fn log_lik_grads(
    prep: &Prepared,
    schedule: &Schedule,
    latents: &[DVector<f64>],
    hypers: &[f64],
    mut hyper_grad: Option<&mut [f64]>,
    only: Option<&[bool]>,
) -> Result<(f64, Vec<DVector<f64>>), RuntimeError> {
    let pv: Vec<Vec<f64>> = prep.preds.iter().map(|p| p.eval(latents)).collect();
    let mut grads: Vec<DVector<f64>> = latents.iter().map(|z| DVector::zeros(z.len())).collect();
    let mut stack = Vec::with_capacity(64);
    let mut total = 0.0;
    for (f, (fp, pf)) in schedule.factors.iter().zip(&prep.factors).enumerate() {
        if only.is_some_and(|o| !o[f]) {
            continue;
        }
        let (Some(ld), Ok(parts)) = (&fp.log_density, &fp.gradient) else {
            return Err(RuntimeError::Inconsistent(format!(
                "factor #{} has no gradient program",
                fp.factor + 1
            )));
        };
        let by_hyper: &[gpm_schedule::HyperGradient] = match (&hyper_grad, &fp.hyper_gradient) {
            (None, _) => &[],
            (Some(_), Ok(h)) => h,
            (Some(_), Err(why)) => {
                return Err(RuntimeError::Inconsistent(format!(
                    "factor #{} has no gradient in its hyperparameters: {why}",
                    fp.factor + 1
                )))
            }
        };
        let mut vals = vec![0.0; pf.slots.len()];
        let mut w = vec![vec![0.0; pf.n]; parts.len()];
        for i in 0..pf.n {
            pf.fill(i, |p| pv[p][i], |_| 0.0, hypers, &mut vals);
            total += ld.eval(&vals, &mut stack);
            for (k, g) in parts.iter().enumerate() {
                let d = g.d1.eval(&vals, &mut stack);
                w[k][i] = if d.is_finite() {
                    d
                } else {
                    central_difference(ld, &g.slots, &mut vals, &mut stack)
                };
            }
            if let Some(hg) = hyper_grad.as_deref_mut() {
                for g in by_hyper {
                    hg[g.hyper.0] += g.d1.eval(&vals, &mut stack);
                }
            }
        }
        for (g, wk) in parts.iter().zip(&w) {
            prep.preds[g.pred.0].add_adjoint(wk, &mut grads);
        }
    }
    Ok((total, grads))
}

/// `∂ℓ/∂η` by a central difference of the log-density at the predictor's current value (0
/// where even that is not finite).
fn central_difference(ld: &Tape, slots: &[usize], vals: &mut [f64], stack: &mut Vec<f64>) -> f64 {
    let Some(&first) = slots.first() else {
        return 0.0;
    };
    let eta = vals[first];
    let (d, _) =
        crate::along::central_differences(ld, slots, eta, 1e-5 * eta.abs().max(1.0), vals, stack);
    if d.is_finite() {
        d
    } else {
        0.0
    }
}
