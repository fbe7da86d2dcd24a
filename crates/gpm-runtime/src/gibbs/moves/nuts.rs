//! One NUTS transition on a block and the scales its prior reads, the others held
//! ([`gpm_schedule::GibbsStep::Nuts`]; the transition is `gibbs/nuts_block.rs`'s).

use super::{Move, Sampler, State};
use crate::RuntimeError;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct Nuts {
    /// Index into the schedule's NUTS blocks.
    pub(super) index: usize,
}

impl Move for Nuts {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let nb = &s.schedule.nuts_blocks[self.index];
        s.nuts_block(self.index, nb, state, rng)?;
        *pv = s.predictors(state);
        Ok(())
    }
}
