//! The generic update: elliptical slice steps over the blocks read by factors with no
//! augmentation, jointly ([`gpm_schedule::GibbsStep::Elliptical`]; the steps are
//! `gibbs/elliptical.rs`'s).

use super::{Move, Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
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
}
