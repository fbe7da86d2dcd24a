//! A model's latents in coordinates whitened by their priors — `f = μ + L v` for a GP block
//! (`LLᵀ = K`), `θ = μ + σ ⊙ v` for a dense one, `f = μ + Φᵀ u + √k̃ ⊙ ε` for a sparse GP under
//! its FITC prior — where the prior's part of `−log p` is `½|v|²`,
//! and the log-likelihood with its gradient in the latents (the CAS's `∂ℓ/∂η` of every
//! factor): what the gradient-based methods move, the particle flow ([`crate::gpf`]) and NUTS
//! ([`crate::nuts`]), one implementation for both.

use crate::kernels::HyperValues;
use crate::prepared::{Block, Coords, Prepared};
use crate::RuntimeError;
use gpm_library::likelihood::ClassWeights;
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
    /// A sparse GP column under its FITC prior, `f = μ + Φᵀ u + √k̃ ⊙ ε` with `u` the whitened
    /// inducing values (the first `M` coordinates) and `ε` the residuals (the last `N`), both
    /// standard normal: exactly the FITC prior `N(μ, ΦᵀΦ + diag k̃)`, at `O(NM)` a product.
    Sparse {
        mean: f64,
        /// `Φ = L_mm⁻¹ K_mn` (`M × N`).
        phi: DMatrix<f64>,
        /// `√k̃`, the residuals' standard deviations.
        sqrt_kt: DVector<f64>,
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
            Block::Sparse {
                latent,
                column,
                sp,
                inputs,
            } => {
                let (phi, kt) = sp.features(inputs)?;
                WhitenedBlock {
                    coords: Coords::Column {
                        latent: *latent,
                        column: *column,
                        rows: kt.len(),
                    },
                    whitening: Whitening::Sparse {
                        mean: sp.mean,
                        phi,
                        sqrt_kt: DVector::from_iterator(kt.len(), kt.iter().map(|k| k.sqrt())),
                    },
                }
            }
        })
    }

    pub(crate) fn dim(&self) -> usize {
        match &self.whitening {
            Whitening::Gp { l, .. } => l.nrows(),
            Whitening::Dense { mean, .. } => mean.len(),
            Whitening::Sparse { phi, sqrt_kt, .. } => phi.nrows() + sqrt_kt.len(),
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
            // One vector (NUTS): a dense product, zeros included, beats the triangular one,
            // which copies the triangle at each call (1.2× the gradient on a 442-point GP).
            Whitening::Gp { mean, l, .. } if v.ncols() == 1 => {
                crate::linalg::matmul(l, v).add_scalar(*mean)
            }
            Whitening::Gp { mean, l, .. } => crate::linalg::lower_times(l, v).add_scalar(*mean),
            Whitening::Dense { mean, sd } => {
                DMatrix::from_fn(v.nrows(), v.ncols(), |i, j| mean[i] + sd[i] * v[(i, j)])
            }
            Whitening::Sparse { mean, phi, sqrt_kt } => {
                let m = phi.nrows();
                let mut f = phi.tr_mul(&v.rows(0, m));
                for j in 0..v.ncols() {
                    for i in 0..sqrt_kt.len() {
                        f[(i, j)] += mean + sqrt_kt[i] * v[(m + i, j)];
                    }
                }
                f
            }
        }
    }

    /// The whitened coordinates of one vector of values, `L⁻¹(f − μ)` or `(θ − μ)/σ` (a
    /// sparse GP's coordinates are not a function of its values: `None`).
    pub(crate) fn coordinates(&self, x: &DVector<f64>) -> Option<DVector<f64>> {
        match self {
            Whitening::Gp { mean, l, .. } => {
                Some(crate::linalg::solve_lower_vec(l, &x.add_scalar(-*mean)))
            }
            Whitening::Dense { mean, sd } => {
                Some(DVector::from_fn(x.len(), |i, _| (x[i] - mean[i]) / sd[i]))
            }
            Whitening::Sparse { .. } => None,
        }
    }

    /// `∇_v` of a function from its gradient in the values: `Lᵀ g`, `σ ⊙ g`.
    pub(crate) fn pullback(&self, g: &DMatrix<f64>) -> DMatrix<f64> {
        match self {
            Whitening::Gp { lt, .. } => crate::linalg::matmul(lt, g),
            Whitening::Dense { sd, .. } => {
                DMatrix::from_fn(g.nrows(), g.ncols(), |i, j| sd[i] * g[(i, j)])
            }
            Whitening::Sparse { phi, sqrt_kt, .. } => {
                let m = phi.nrows();
                let mut out = DMatrix::zeros(m + sqrt_kt.len(), g.ncols());
                out.rows_mut(0, m).copy_from(&crate::linalg::matmul(phi, g));
                for j in 0..g.ncols() {
                    for i in 0..sqrt_kt.len() {
                        out[(m + i, j)] = sqrt_kt[i] * g[(i, j)];
                    }
                }
                out
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
    hv: &HyperValues,
) -> Result<(f64, Vec<DVector<f64>>), RuntimeError> {
    let pv: Vec<Vec<f64>> = prep.preds.iter().map(|p| p.eval(latents)).collect();
    log_lik_grads(prep, schedule, (latents, &pv), hv, None, None)
}

/// [`log_lik_grad`] at latents with their predictors' values `pv`, and with `hyper_grad` (indexed by hyperparameter id) also
/// `Σ_i ∂ℓ_i/∂h` added for every sampled hyperparameter `h` a factor reads (the CAS's
/// [`gpm_schedule::FactorProgram::hyper_gradient`]); with `only`, the factors it marks alone.
/// A logistic-softmax factor's class sum is no formula of the CAS's: its log-probability and
/// gradient in the latent matrix's columns are the library's ([`ClassWeights::grad_log_prob`]).
pub(crate) fn log_lik_grads(
    prep: &Prepared,
    schedule: &Schedule,
    (latents, pv): (&[DVector<f64>], &[Vec<f64>]),
    hv: &HyperValues,
    mut hyper_grad: Option<&mut [f64]>,
    only: Option<&[bool]>,
) -> Result<(f64, Vec<DVector<f64>>), RuntimeError> {
    let hypers = hv.scalars.as_slice();
    let mut grads: Vec<DVector<f64>> = latents.iter().map(|z| DVector::zeros(z.len())).collect();
    let mut stack = Vec::with_capacity(64);
    let mut total = 0.0;
    for (f, (fp, pf)) in schedule.factors.iter().zip(&prep.factors).enumerate() {
        if only.is_some_and(|o| !o[f]) {
            continue;
        }
        if let (Some(cat), Some((li, labels, _))) = (&fp.categorical, &pf.categorical) {
            let weights = ClassWeights {
                bijective: cat.bijective,
                theta: crate::categorical::scales(cat, &hv.vectors),
            };
            total += softmax_grad(weights, &latents[*li], labels, &mut grads[*li]);
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
        // Each tape a chunk of observations at a time (`Tape::eval_chunk`: the interpretation
        // paid once per 64 observations — it was a quarter of NUTS's time observation by
        // observation); the original log-density reads no auxiliary (zeros stand in).
        let aux = vec![vec![0.0; pf.n]; fp.aux.len()];
        let at = || crate::prepared::TapeInputs {
            preds: pv,
            aux: &aux,
            hypers,
        };
        total += pf.tape_sum(ld, pv, &aux, hypers, &mut stack);
        let mut w = vec![vec![0.0; pf.n]; parts.len()];
        for (g, wk) in parts.iter().zip(w.iter_mut()) {
            pf.tape_chunks(&g.d1, at(), &mut stack, |start, out| {
                wk[start..start + out.len()].copy_from_slice(out);
            });
        }
        // Where a derivative is not finite (not simplified into a safe form, far in a tail),
        // a central difference of the log-density stands in.
        let mut vals = vec![0.0; pf.slots.len()];
        for (g, wk) in parts.iter().zip(w.iter_mut()) {
            for i in 0..pf.n {
                if !wk[i].is_finite() {
                    pf.fill(i, |p| pv[p][i], |_| 0.0, hypers, &mut vals);
                    wk[i] = central_difference(ld, &g.slots, &mut vals, &mut stack);
                }
            }
        }
        if let Some(hg) = hyper_grad.as_deref_mut() {
            for g in by_hyper {
                hg[g.hyper.0] += pf.tape_sum(&g.d1, pv, &aux, hypers, &mut stack);
            }
        }
        for (g, wk) in parts.iter().zip(&w) {
            prep.preds[g.pred.0].add_adjoint(wk, &mut grads);
        }
    }
    Ok((total, grads))
}

/// `Σ_i log p(y_i | F_i)` of a logistic-softmax factor over the latent matrix `z` (column-major,
/// one column a class), its gradient added into `grad`.
fn softmax_grad(
    weights: ClassWeights,
    z: &DVector<f64>,
    labels: &[usize],
    grad: &mut DVector<f64>,
) -> f64 {
    let n = labels.len();
    let columns = z.len() / n.max(1);
    let mut g = vec![0.0; columns];
    let mut total = 0.0;
    for (i, &label) in labels.iter().enumerate() {
        let at = |k: usize| z[k * n + i];
        total += weights.log_prob(at, columns, label);
        weights.grad_log_prob(at, columns, label, &mut g);
        for (k, gk) in g.iter().enumerate() {
            grad[k * n + i] += gk;
        }
    }
    total
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
