//! An integrated shared-kernel group: θ with every block integrated out, then every block
//! given θ ([`gpm_schedule::GibbsStep::KernelGroup`]; the step is `gibbs/hypers.rs`'s).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct KernelGroup {
    /// Index into the schedule's kernel groups.
    pub(super) group: usize,
}

impl Move for KernelGroup {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.sample_shared_group(&s.shared[self.group], state, pv, rng)?;
        *pv = s.predictors(state);
        Ok(())
    }

    fn describe(&self, s: &Schedule) -> String {
        let g = &s.kernel_groups[self.group];
        format!(
            "slice sample {} {} with {} integrated out, then draw them",
            s.hyper_names(&g.hypers),
            g.slice.describe(),
            s.block_names(&g.blocks)
        )
    }
}
