//! The logistic-softmax factor's translation move `F → F + δ·1`
//! ([`gpm_schedule::GibbsStep::LevelShift`]; the step is `gibbs/level_shift.rs`'s).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
use gpm_schedule::Schedule;
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
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.level_shift(self.factor, self.block, self.redraw, state, rng)?;
        *pv = s.predictors(state);
        Ok(())
    }

    fn describe(&self, s: &Schedule) -> String {
        format!(
            "move the common level of {}: F + δ with δ slice-sampled from the posterior (factor #{}'s auxiliaries integrated out), then {}",
            s.block_name(self.block),
            self.factor + 1,
            if self.redraw {
                "redraw its λ, n, ω"
            } else {
                "leave its λ, n, ω to the next sweep's first step, which draws them afresh"
            }
        )
    }
}
