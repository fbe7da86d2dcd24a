//! Elliptical slice steps on a full GP block's marginal posterior, the auxiliaries integrated
//! out ([`gpm_schedule::GibbsStep::MarginalElliptical`]; the steps are
//! `gibbs/marginal_elliptical.rs`'s).

use super::{Move, Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct MarginalElliptical {
    pub(super) block: BlockId,
    /// The factors whose log-densities are the ellipse's likelihood.
    pub(super) factors: Vec<usize>,
    pub(super) steps: usize,
    /// Whether the move redraws the auxiliaries itself.
    pub(super) redraw: bool,
}

impl Move for MarginalElliptical {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let how = super::super::marginal_elliptical::Steps {
            factors: &self.factors,
            steps: self.steps,
            redraw: self.redraw,
        };
        s.marginal_elliptical(self.block, how, state, rng)?;
        *pv = s.predictors(state);
        Ok(())
    }
}
