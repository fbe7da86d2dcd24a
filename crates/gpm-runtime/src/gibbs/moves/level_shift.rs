//! The logistic-softmax factor's translation move `F → F + δ·1`
//! ([`gpm_schedule::GibbsStep::LevelShift`]; the step is `gibbs/level_shift.rs`'s).

use super::{Move, Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct LevelShift {
    pub(super) factor: usize,
    pub(super) block: BlockId,
    /// Whether the move redraws the factor's auxiliaries itself.
    pub(super) redraw: bool,
}

impl Move for LevelShift {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.level_shift(self.factor, self.block, self.redraw, state, rng)?;
        *pv = s.predictors(state);
        Ok(())
    }
}
