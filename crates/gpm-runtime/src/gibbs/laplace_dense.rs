//! The Laplace-standardised move of a dense block's prior hyperparameters after its generic
//! update ([`gpm_schedule::DenseScaleUpdate::laplace`]).
//!
//! The non-centred move holds `z = (θ − m_h)/s_h`: right for weights the data barely inform,
//! wrong for those they pin down (`θ = m_h + s_h z` then moves a well-determined weight with
//! the scale, and the likelihood holds the scale where it is); the centred move is the other
//! way round. Where a block has both kinds, neither mixes its scale. This move standardises by
//! the block's Laplace approximation at the hyperparameters `h` instead: `θ = θ̂_h + L_h⁻ᵀ ε`,
//! `θ̂_h` the mode of `N(θ | m_h, s_h²) Π p(y | θ)` (the factors' original log-densities, the
//! auxiliaries integrated out) and `L_h L_hᵀ` its negative Hessian, and slice samples `h` from
//! `p(h) N(θ | m_h, s_h²) Π p(y | θ) |det L_h|⁻¹` with `ε` held — an exact Gibbs update of `h`
//! in the coordinates `(h, ε)`, whatever the approximation's quality (the map is a fixed,
//! invertible function of `h` for each `ε`: the mode is found from the prior mean by a fixed
//! Newton iteration, never from the current `θ`). Where the approximation is good `ε` is
//! nearly independent of `h`, and `h` given `ε` moves almost as from its marginal
//! (Christensen, Roberts & Sköld 2006, "Robust MCMC methods for spatial GLMMs", §3). The
//! auxiliaries are drawn again after, as for the non-centred move.

use super::*;
use nalgebra::Cholesky;

/// Newton iterations at most, and the relative step that ends them.
const MAX_NEWTON: usize = 50;
const NEWTON_TOL: f64 = 1e-6;
/// Halvings of a Newton step that does not raise the objective, at most.
const MAX_HALVINGS: usize = 30;

/// One predictor of a factor that reads the block, and its design (`η = Φ θ +` the other
/// latents' part).
#[derive(Debug, Clone)]
pub(super) struct Reading {
    factor: usize,
    pred: usize,
    design: DMatrix<f64>,
}

/// The largest `n d²` (observations reading the block times its coordinates squared) the move
/// runs on: each of its evaluations forms the `d × d` Hessian `Φᵀ W Φ` a few times (Newton),
/// and a slice update makes several evaluations, so at 10⁷ a sweep spends up to a few tenths
/// of a second here; a larger block keeps its centred and non-centred moves only. (The designs
/// then hold at most `10⁷/d` numbers, estimated before any is allocated.)
const MAX_HESSIAN_WORK: usize = 10_000_000;

/// The readings of a block by `factors`, bound once (`None`: more work per Hessian than
/// [`MAX_HESSIAN_WORK`]).
pub(super) fn readings(
    schedule: &Schedule,
    prep: &Prepared,
    parts: &[(usize, usize, usize)],
    factors: &[usize],
) -> Option<Vec<Reading>> {
    let dim: usize = parts.iter().map(|p| p.2).sum();
    let work: usize = factors
        .iter()
        .map(|&f| prep.factors[f].n.saturating_mul(dim).saturating_mul(dim))
        .fold(0usize, usize::saturating_add);
    if work > MAX_HESSIAN_WORK {
        return None;
    }
    let mut out = Vec::new();
    for &f in factors {
        let mut preds: Vec<usize> = Vec::new();
        for slot in &schedule.factors[f].slots {
            if let gpm_schedule::Source::Predictor(p) = slot {
                if !preds.contains(&p.0) {
                    preds.push(p.0);
                }
            }
        }
        for p in preds {
            let Some(design) = prep.dense_design(p, parts, dim) else {
                continue;
            };
            out.push(Reading {
                factor: f,
                pred: p,
                design,
            });
        }
    }
    Some(out)
}

/// The Laplace approximation of a block at fixed hyperparameters: mode and the Cholesky factor
/// of the negative Hessian there.
struct Laplace {
    mode: DVector<f64>,
    chol: Cholesky<f64, nalgebra::Dyn>,
}

impl Laplace {
    /// `θ̂ + L⁻ᵀ ε` (`None` where the triangular solve fails: no mass there).
    fn point(&self, eps: &DVector<f64>) -> Option<DVector<f64>> {
        let t = &self.mode + self.chol.l_dirty().tr_solve_lower_triangular(eps)?;
        t.iter().all(|v| v.is_finite()).then_some(t)
    }
    /// `ε = Lᵀ (θ − θ̂)`.
    fn standardise(&self, theta: &DVector<f64>) -> DVector<f64> {
        self.chol.l().transpose() * (theta - &self.mode)
    }
    /// `log |det ∂θ/∂ε| = −Σ log L_jj`.
    fn log_jacobian(&self) -> f64 {
        -self
            .chol
            .l_dirty()
            .diagonal()
            .iter()
            .map(|d| d.ln())
            .sum::<f64>()
    }
}

/// What the Newton iteration reads beside the hyperparameters: the model, the other latents,
/// the auxiliaries and the hyperparameters the factors read, all held by the move.
struct Fixed<'s, 'a> {
    sampler: &'s Sampler<'a>,
    parts: &'s [(usize, usize, usize)],
    readings: &'s [Reading],
    factors: &'s [usize],
    latents: &'s [DVector<f64>],
    aux: &'s [Vec<Vec<f64>>],
    hypers: &'s [f64],
    /// Every predictor at the current latents: those that do not read the block stay so.
    pv: Vec<Vec<f64>>,
}

impl Fixed<'_, '_> {
    /// The predictors with the block at `theta` (only those that read it evaluated again).
    fn predictors_at(&self, theta: &DVector<f64>) -> Vec<Vec<f64>> {
        let mut at = self.latents.to_vec();
        scatter_dense(self.parts, theta, &mut at);
        let mut pv = self.pv.clone();
        for r in self.readings {
            pv[r.pred] = self.sampler.prep.preds[r.pred].eval(&at);
        }
        pv
    }

    /// The block's conditional at the prior `N(m, s²)` (one value of the hyperparameters).
    fn at<'f>(&'f self, m: &'f DVector<f64>, s: &'f DVector<f64>) -> Conditional<'f> {
        Conditional { fx: self, m, s }
    }
}

/// `N(θ | m, s²) Π p(y | θ)`: the block's conditional at one value of the hyperparameters.
struct Conditional<'f> {
    fx: &'f Fixed<'f, 'f>,
    m: &'f DVector<f64>,
    s: &'f DVector<f64>,
}

impl Conditional<'_> {
    /// `log N(θ | m, s²) + Σ log p(y | θ)` (the factors' original log-densities).
    fn log_density(&self, theta: &DVector<f64>) -> Result<f64, RuntimeError> {
        let fx = self.fx;
        let pv = fx.predictors_at(theta);
        let mut stack = Vec::with_capacity(64);
        let mut total = super::conditional::centred_log_prior(theta, self.m, self.s);
        for &f in fx.factors {
            let tape = fx.sampler.schedule.factors[f].log_density.as_ref();
            let tape = tape.ok_or_else(|| {
                RuntimeError::Inconsistent("a Laplace move's factor without a log-density".into())
            })?;
            let factor = &fx.sampler.prep.factors[f];
            total += factor.tape_sum(tape, &pv, &fx.aux[f], fx.hypers, &mut stack);
        }
        Ok(total)
    }

    /// The gradient and the (clamped, positive semi-definite) negative Hessian of the log
    /// density at `theta`: the factors' derivatives along each predictor by central
    /// differences (a chunk of observations at a time), the prior's exactly.
    fn derivatives(&self, theta: &DVector<f64>) -> (DVector<f64>, DMatrix<f64>) {
        let (fx, dim) = (self.fx, theta.len());
        let mut grad = DVector::zeros(dim);
        let mut hess = DMatrix::zeros(dim, dim);
        for j in (0..dim).filter(|&j| self.s[j].is_finite()) {
            let p = 1.0 / (self.s[j] * self.s[j]);
            grad[j] -= p * (theta[j] - self.m[j]);
            hess[(j, j)] += p;
        }
        let mut pv = fx.predictors_at(theta);
        for r in fx.readings {
            let Some(tape) = fx.sampler.schedule.factors[r.factor].log_density.as_ref() else {
                continue;
            };
            let (g, w) = along_predictor(fx, r, tape, &mut pv);
            grad += r.design.transpose() * g;
            let scaled = DMatrix::from_fn(w.len(), dim, |i, j| r.design[(i, j)] * w[i]);
            hess += r.design.transpose() * scaled;
        }
        (grad, hess)
    }

    /// The Laplace approximation: Newton from the prior mean (flat coordinates from 0), each
    /// step halved until it does not lower the log density — a fixed function of the
    /// hyperparameters.
    fn laplace(&self) -> Result<Laplace, RuntimeError> {
        let dim = self.m.len();
        let start = |j: usize, _| {
            if self.s[j].is_finite() {
                self.m[j]
            } else {
                0.0
            }
        };
        let mut theta = DVector::from_fn(dim, start);
        let mut obj = self.log_density(&theta)?;
        for _ in 0..MAX_NEWTON {
            let (grad, hess) = self.derivatives(&theta);
            let step = factor(hess)?.solve(&grad);
            let mut t = 1.0;
            let mut moved = false;
            for _ in 0..MAX_HALVINGS {
                let trial = &theta + &step * t;
                let o = self.log_density(&trial)?;
                if o.is_finite() && o >= obj {
                    (theta, obj, moved) = (trial, o, true);
                    break;
                }
                t *= 0.5;
            }
            if !moved || (&step * t).amax() <= NEWTON_TOL * (1.0 + theta.amax()) {
                break;
            }
        }
        let (_, hess) = self.derivatives(&theta);
        Ok(Laplace {
            mode: theta,
            chol: factor(hess)?,
        })
    }
}

/// The factor's first derivative and clamped negative second derivative in predictor `r.pred`
/// at each observation (central differences; 0 where not finite). `pv` is restored.
fn along_predictor(
    fx: &Fixed,
    r: &Reading,
    tape: &gpm_schedule::Tape,
    pv: &mut [Vec<f64>],
) -> (DVector<f64>, DVector<f64>) {
    let factor = &fx.sampler.prep.factors[r.factor];
    let n = factor.n;
    let eta = pv[r.pred].clone();
    let step: Vec<f64> = eta.iter().map(|&e| crate::along::step_at(e)).collect();
    let mut side = [vec![0.0; n], vec![0.0; n], vec![0.0; n]];
    let mut stack = Vec::with_capacity(64);
    for (k, sign) in [-1.0, 0.0, 1.0].into_iter().enumerate() {
        for i in 0..n {
            pv[r.pred][i] = eta[i] + sign * step[i];
        }
        let at = crate::prepared::TapeInputs {
            preds: pv,
            aux: &fx.aux[r.factor],
            hypers: fx.hypers,
        };
        let out = &mut side[k];
        factor.tape_chunks(tape, at, &mut stack, |start, chunk| {
            out[start..start + chunk.len()].copy_from_slice(chunk)
        });
    }
    pv[r.pred].copy_from_slice(&eta);
    let (mut g, mut w) = (DVector::zeros(n), DVector::zeros(n));
    for i in 0..n {
        let (d1, d2) = crate::along::differences(side[0][i], side[1][i], side[2][i], step[i]);
        if d1.is_finite() && d2.is_finite() {
            g[i] = d1;
            w[i] = (-d2).max(0.0);
        }
    }
    (g, w)
}

/// The Cholesky factor of a negative Hessian, each diagonal entry raised by its own small
/// fraction: prior precisions of weights whose scale is tiny (a lengthscale's spectral density
/// far in its tail) reach 1e20 beside O(1) ones, and a jitter relative to the largest swamped
/// the rest (the chain stuck near `l2 ≈ 1.25` on the heteroscedastic model).
fn factor(mut h: DMatrix<f64>) -> Result<Cholesky<f64, nalgebra::Dyn>, RuntimeError> {
    for j in 0..h.nrows() {
        h[(j, j)] *= 1.0 + 1e-12;
    }
    h.cholesky().ok_or_else(|| {
        RuntimeError::Numerical(
            "the Laplace approximation's Hessian is not positive definite".into(),
        )
    })
}

impl<'a> Sampler<'a> {
    /// The move (module docs) of `d`'s hyperparameters, its block's values moved with them.
    pub(super) fn laplace_dense(
        &self,
        d: &SlicedDense,
        readings: &[Reading],
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let Block::Dense {
            parts, prior_mean, ..
        } = &self.prep.blocks[d.block]
        else {
            return Err(RuntimeError::Inconsistent(
                "a Laplace scale move of a block that is not dense".into(),
            ));
        };
        let dim = prior_mean.len();
        let (aux, hypers, latents) = (
            state.aux.clone(),
            state.hypers.clone(),
            state.latents.clone(),
        );
        let fx = Fixed {
            sampler: self,
            parts,
            readings,
            factors: &d.interweave,
            latents: &latents,
            aux: &aux,
            hypers: &hypers,
            pv: self.predictors(state),
        };
        let theta = gather_dense(parts, dim, &latents);
        let current = self.hyper_values(state);
        let (m0, s0) = self.dense_prior(parts, &current)?;
        // Where the block has no Laplace approximation at the current values (a Hessian that
        // cannot be factored), the move stays: it never moves there either (the target is
        // `−∞` at such values), so the chain's law is kept.
        let Ok(here) = fx.at(&m0, &s0).laplace() else {
            return Ok(());
        };
        let eps = here.standardise(&theta);
        if eps.iter().any(|v| !v.is_finite()) {
            return Ok(());
        }
        // The block's values at `hv` with `ε` held, and the target's log-density there.
        let moved = |hv: &HyperValues| -> Result<(DVector<f64>, f64), RuntimeError> {
            let (m, s) = self.dense_prior(parts, hv)?;
            let conditional = fx.at(&m, &s);
            let approx = conditional.laplace()?;
            let t = approx.point(&eps).ok_or_else(|| {
                RuntimeError::Numerical("the Laplace map has no finite point here".into())
            })?;
            let target = conditional.log_density(&t)? + approx.log_jacobian();
            Ok((t, target))
        };
        self.slice_update(&d.hypers, d.joint, state, &|hv| Ok(moved(hv)?.1), rng)?;
        let hv = self.hyper_values(state);
        if hv == current {
            // Not moved: the values, their prior and the auxiliaries stand as they are.
            return Ok(());
        }
        scatter_dense(parts, &moved(&hv)?.0, &mut state.latents);
        state.dense_priors[d.block] = Some(self.dense_prior(parts, &hv)?);
        let pv = self.predictors(state);
        self.sample_aux(state, &pv, rng)
    }
}
