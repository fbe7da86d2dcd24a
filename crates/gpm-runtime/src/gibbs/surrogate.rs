//! The surrogate transition of a full GP's marginal kernel move
//! ([`gpm_schedule::SurrogateTransition`]): slice moves on the FITC marginal propose, one
//! Metropolis-Hastings step on the exact marginal corrects (Liu 2001, §9.4.3).
//!
//! Why it is exact: with `T` a Markov kernel reversible with respect to `π̃` (here `steps`
//! applications of one elliptical slice step about the move's fixed warm-up reference, each
//! reversible, so their power is too), proposing `θ' ~ T(θ, ·)` and accepting with probability
//! `min(1, π(θ')π̃(θ) / (π(θ)π̃(θ')))` satisfies detailed balance with respect to `π`:
//! `π(θ)T(θ,θ')α(θ,θ') = min(π(θ)T(θ,θ'), π(θ')T(θ,θ')π̃(θ)/π̃(θ'))` and
//! `T(θ,θ')π̃(θ) = T(θ',θ)π̃(θ')`, which makes the expression symmetric in `θ, θ'`. Only while
//! warm-up has not yet fitted the reference does the plain slice move run (its draws are not
//! kept).

use super::{Sampler, SlicedKernel, State};
use crate::gaussian::GpBlock;
use crate::kernels::HyperValues;
use crate::RuntimeError;
use gpm_schedule::SurrogateTransition;
use nalgebra::{Cholesky, DMatrix, Dyn};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A kernel move's surrogate: the schedule's rule and the inducing inputs chosen for it.
#[derive(Debug, Clone)]
pub(super) struct Surrogate {
    pub(super) rule: SurrogateTransition,
    /// `M` inducing inputs among the block's inputs (k-means++, fixed seed: the same points in
    /// every chain and run).
    pub(super) inducing: DMatrix<f64>,
}

impl Surrogate {
    /// The surrogate of a block with these inputs, when the schedule's rule applies to it.
    pub(super) fn bind(
        rule: Option<SurrogateTransition>,
        inputs: &DMatrix<f64>,
    ) -> Result<Option<Surrogate>, RuntimeError> {
        let Some(rule) = rule.filter(|r| r.applies(inputs.nrows())) else {
            return Ok(None);
        };
        let inducing =
            crate::sparse::kmeans_pp(inputs, rule.inducing, crate::prepared::INDUCING_SEED)?;
        Ok(Some(Surrogate { rule, inducing }))
    }
}

/// The exact marginal at one point, with what the block's draw reuses.
struct Exact {
    at: HyperValues,
    log_gp: f64,
    k: DMatrix<f64>,
    factor: Cholesky<f64, Dyn>,
}

impl Sampler<'_> {
    /// The surrogate transition of `sk`'s hyperparameters given the curvature `a` and linear
    /// term `b` of its block's conditional; leaves the chain's GP prior factored at the values
    /// it ends at. `Ok(false)`: no reference fitted yet, or a density that cannot be evaluated
    /// at the current point; nothing done (the caller runs the plain move).
    pub(super) fn surrogate_kernel(
        &self,
        sk: &SlicedKernel,
        surrogate: &Surrogate,
        state: &mut State,
        a: &[f64],
        b: &[f64],
        rng: &mut ChaCha8Rng,
    ) -> Result<bool, RuntimeError> {
        if state.adaptations[sk.joint.slot]
            .reference
            .as_ref()
            .is_none_or(|r| r.dim() != sk.hypers.len())
        {
            return Ok(false);
        }
        let exact = |hv: &HyperValues| -> Result<Exact, RuntimeError> {
            let k = sk.training(&sk.kernel, hv)?;
            let (log_gp, factor) =
                crate::gaussian::gp_log_marginal_factored(&k, hv.eval(&sk.mean)?, a, b)?;
            Ok(Exact {
                at: hv.clone(),
                log_gp,
                k,
                factor,
            })
        };
        let approx = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let sp = crate::sparse::SparseGp::new(
                &sk.kernel,
                hv,
                surrogate.inducing.clone(),
                hv.eval(&sk.mean)?,
            )?;
            let (phi, kt) = sp.features(&sk.inputs)?;
            sp.log_marginal(&phi, &kt, a, b)
        };
        let before = self.hyper_values(state);
        let saved: Vec<f64> = sk.hypers.iter().map(|h| h.get(state)).collect();
        // Where either density cannot be evaluated at the current point (a kernel that cannot
        // be factored there), the plain move, which treats such points as having no mass.
        let (current, s0) = match (exact(&before), approx(&before)) {
            (Ok(e), Ok(s0)) if e.log_gp.is_finite() && s0.is_finite() => (e, s0),
            _ => return Ok(false),
        };
        state.hyper_evaluations += 1;
        // The proposal: `steps` slice moves on the surrogate, counted apart from the exact
        // evaluations (what the sweep's cost is judged by).
        let counted = state.hyper_evaluations;
        for _ in 0..surrogate.rule.steps {
            self.slice_update(&sk.hypers, sk.joint, state, &approx, rng)?;
        }
        state.surrogate_evaluations += state.hyper_evaluations - counted + 2;
        state.hyper_evaluations = counted;
        let proposed = self.hyper_values(state);
        let chosen = if proposed == before {
            current
        } else {
            state.hyper_evaluations += 1;
            // A kernel that cannot be factored (or a surrogate that fails) there has no mass.
            let accepted = match (exact(&proposed), approx(&proposed)) {
                (Ok(e), Ok(s1)) if e.log_gp.is_finite() && s1.is_finite() => {
                    let log_ratio = (e.log_gp - current.log_gp) - (s1 - s0);
                    (rng.gen::<f64>().ln() < log_ratio).then_some(e)
                }
                _ => None,
            };
            match accepted {
                Some(e) => {
                    state.surrogate_accepted += 1;
                    e
                }
                None => {
                    for (h, &v) in sk.hypers.iter().zip(&saved) {
                        h.set(state, v);
                    }
                    current
                }
            }
        };
        state.surrogate_moves += 1;
        let mean = chosen.at.eval(&sk.mean)?;
        let gp = GpBlock::new(chosen.k, mean)?.with_b_factor(a, chosen.factor);
        state.gp_priors[sk.block] = Some(std::sync::Arc::new(gp));
        Ok(true)
    }
}
