//! The sweep's NUTS step ([`gpm_schedule::GibbsStep::Nuts`]): one transition of
//! [`crate::nuts::transition`] on the conditional target of [`crate::nuts`] — the block's
//! values whitened by their prior at the current hyperparameters and the scales it moves on
//! their unconstrained scales, every other latent and hyperparameter held, the likelihood the
//! original log-densities of the factors that read the block (their auxiliaries integrated
//! out, then drawn again given the moved block). The transition leaves that conditional
//! invariant, so the sweep stays a Gibbs sampler of the joint posterior (a Metropolis-within-
//! Gibbs step, as NumPyro's `HMCGibbs`). The step size and mass matrix adapt in the warm-up
//! sweeps ([`crate::nuts::adapt`]) and are then held.

use super::{Sampler, State};
use crate::nuts::adapt::Adaptation;
use crate::nuts::block::NutsBlockTarget;
use crate::nuts::transition::{initial_step, transition};
use crate::RuntimeError;
use gpm_schedule::NutsBlock;
use rand_chacha::ChaCha8Rng;

/// A NUTS step's own state in one chain ([`super::moves`]' `MoveState::Nuts`): its warm-up
/// adaptation (`None` before its first transition) and its transitions after warm-up.
#[derive(Debug, Clone, Default)]
pub(crate) struct NutsState {
    /// Step size and mass matrix, adapted in warm-up, then held.
    pub(crate) adaptation: Option<Adaptation>,
    /// What its transitions did after warm-up.
    pub(crate) stats: NutsBlockStats,
}

/// What the NUTS steps of one chain did after warm-up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NutsBlockStats {
    /// Transitions.
    pub transitions: u64,
    /// Divergent transitions.
    pub divergences: u64,
    /// Transitions that reached the largest depth.
    pub max_depth_hits: u64,
    /// Leapfrog steps (each a gradient of the block's factors).
    pub leapfrogs: u64,
    /// The adapted step size (of the sweep's first NUTS step).
    pub step_size: f64,
}

impl NutsBlockStats {
    /// As NUTS on the whole model reports its transitions (the largest depth: the sweep's).
    pub fn to_nuts_stats(&self) -> crate::nuts::NutsStats {
        crate::nuts::NutsStats {
            divergences: self.divergences as usize,
            max_depth_hits: self.max_depth_hits as usize,
            max_depth: gpm_schedule::nuts_block::NUTS_BLOCK_MAX_DEPTH as u64,
            step_size: self.step_size,
            mean_steps: self.leapfrogs as f64 / self.transitions.max(1) as f64,
            augmented: false,
            in_gibbs: true,
        }
    }
}

impl Sampler<'_> {
    /// One NUTS transition on `nb`, with the step's own adaptation and counts `own`.
    pub(super) fn nuts_block(
        &self,
        nb: &NutsBlock,
        own: &mut NutsState,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let blocks: Vec<usize> = self.prep.spec_blocks[nb.block.0].clone().collect();
        let hv = self.hyper_values(state);
        let mut only = vec![false; self.schedule.factors.len()];
        for f in &nb.factors {
            only[f.0] = true;
        }
        let target = NutsBlockTarget::new(self, (&blocks, &nb.hypers), &state.latents, hv, only)?;
        let start = target.position()?;
        let mut grad = vec![0.0; start.len()];
        let lp = target.log_density(&start, &mut grad).ok_or_else(|| {
            RuntimeError::Numerical(format!(
                "the NUTS step of block {} starts where its log density is not finite",
                nb.block.0 + 1
            ))
        })?;
        let adaptation = own
            .adaptation
            .get_or_insert_with(|| Adaptation::new(start.len()));
        let mut logp = |q: &[f64], g: &mut [f64]| target.log_density(q, g);
        if !adaptation.started || adaptation.restart {
            let at = (start.as_slice(), lp, grad.as_slice());
            let step = initial_step(&mut logp, at, adaptation.step, &adaptation.metric, rng);
            adaptation.restart_dual(step);
            (adaptation.started, adaptation.restart) = (true, false);
        }
        let t = transition(
            &mut logp,
            (&start, lp, &grad),
            adaptation.step,
            &adaptation.metric,
            nb.max_depth,
            rng,
        );
        match state.warmup {
            Some((sweep, warmup)) => {
                adaptation.learn(sweep - 1, warmup, t.accept_stat, &t.position);
            }
            None => {
                let s = &mut own.stats;
                s.transitions += 1;
                s.divergences += u64::from(t.divergent);
                s.max_depth_hits += u64::from(t.max_depth);
                s.leapfrogs += t.leapfrogs as u64;
            }
        }
        let (latents, hypers) = target.point(&t.position)?;
        state.latents = latents;
        state.hypers = hypers;
        // NUTS draws no conditional mean to average.
        for &bi in &blocks {
            if let crate::prepared::Block::Dense { parts, .. } = &self.prep.blocks[bi] {
                for p in parts {
                    state.without_mean[p.0] = true;
                }
                let hv = self.hyper_values(state);
                state.dense_priors[bi] = Some(self.dense_prior(parts, &hv)?);
            }
        }
        if nb.redraw {
            let pv = self.predictors(state);
            self.sample_aux(state, &pv, rng)?;
        }
        Ok(())
    }
}
