//! The generic update: elliptical slice steps over the blocks read by factors with no
//! augmentation, jointly ([`gpm_schedule::GibbsStep::Elliptical`]; the steps are
//! `gibbs/elliptical.rs`'s).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct Elliptical {
    pub(super) blocks: Vec<BlockId>,
    /// The factors with no augmentation that read them.
    pub(super) factors: Vec<usize>,
    pub(super) steps: usize,
    /// Whether the ellipses follow a fitted Gaussian reference.
    pub(super) fitted: bool,
}

impl Move for Elliptical {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.sample_elliptical(
            &self.blocks,
            &self.factors,
            self.steps,
            self.fitted,
            state,
            pv,
            rng,
        )?;
        *pv = s.predictors(state);
        Ok(())
    }

    fn adapt(&self, s: &Sampler<'_>, state: &mut State, sweep: usize, warmup: usize) {
        if self.fitted {
            s.fit_dense_references(state, &self.blocks, (sweep, warmup));
        }
    }

    fn describe(&self, s: &Schedule) -> String {
        let blocks = &self.blocks;
        format!(
            "generic update of {} (factor{} {} with no augmentation): {} elliptical slice sampling steps{} on the log-density as written, the ellipse's Gaussian being the prior{}{}{}",
            s.block_names(blocks),
            if self.factors.len() > 1 { "s" } else { "" },
            self.factors
                .iter()
                .map(|f| format!("#{}", s.factors[*f].factor + 1))
                .collect::<Vec<_>>()
                .join(", "),
            self.steps,
            if blocks.len() > 1 { " over the blocks jointly" } else { "" },
            if s.factors.iter().any(|fp| !fp.curvature.is_empty()) {
                " times the augmented factors' Gaussian terms"
            } else {
                ""
            },
            blocks
                .iter()
                .map(|b| super::hyper_text::block_hyper_text(s, *b))
                .collect::<String>(),
            if self.fitted {
                "; from the second quarter of warm-up the ellipses are those of a Gaussian fitted to the block's draws (covariance doubled, refitted every 50 sweeps, frozen after warm-up; blocks of up to 2 000 coordinates), and every other step slices the target over that Gaussian (generalised elliptical slice sampling: exact for any fixed reference), the others following the block's own conditional"
            } else {
                ""
            }
        )
    }
}
