//! A coupled shared-kernel group's lead block: θ with its first column integrated out, then
//! that column, then its other columns as [`super::block`] draws them
//! ([`gpm_schedule::GibbsStep::KernelGroupLead`]).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct KernelGroupLead {
    pub(super) group: usize,
    pub(super) block: BlockId,
    pub(super) collapsed: bool,
}

impl Move for KernelGroupLead {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let mut columns = s.prep.spec_blocks[self.block.0].clone();
        let Some(lead) = columns.next() else {
            return Err(RuntimeError::Inconsistent(format!(
                "kernel group {}: its lead block has no column",
                self.group
            )));
        };
        let sh = &s.shared[self.group];
        s.sample_shared_lead(sh, lead, self.collapsed, state, pv, rng)?;
        *pv = s.predictors(state);
        for bi in columns {
            s.sample_block(bi, &s.prep.blocks[bi], self.collapsed, state, pv, rng)?;
            *pv = s.predictors(state);
        }
        Ok(())
    }

    fn describe(&self, s: &Schedule) -> String {
        let g = &s.kernel_groups[self.group];
        format!(
            "slice sample {} {} with {} integrated out and the other blocks sharing them given, then draw it{}",
            s.hyper_names(&g.hypers),
            g.slice.describe(),
            s.block_name(self.block),
            if self.collapsed { " (collapsed phase)" } else { "" }
        )
    }
}
