//! A Gaussian block drawn given everything else, each column of a matrix latent in turn
//! ([`gpm_schedule::GibbsStep::Block`]; the conditional is `conditional.rs`'s).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::BlockId;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct Block {
    pub(super) block: BlockId,
    /// Drawn in the collapsed phase (its factors' auxiliaries integrated out).
    pub(super) collapsed: bool,
}

impl Move for Block {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        for bi in s.prep.spec_blocks[self.block.0].clone() {
            s.sample_block(bi, &s.prep.blocks[bi], self.collapsed, state, pv, rng)?;
            *pv = s.predictors(state);
        }
        Ok(())
    }

    fn describe(&self, s: &Schedule) -> String {
        let pathwise = s.blocks[self.block.0]
            .pathwise
            .map_or(String::new(), |p| format!("; {}", p.describe()));
        format!(
            "draw {}{}{pathwise}{}",
            s.block_name(self.block),
            if self.collapsed {
                " from its collapsed conditional (the collapsed factors' counts and Pólya-Gamma variables integrated out)"
            } else {
                " from its Gaussian conditional"
            },
            super::hyper_text::block_hyper_text(s, self.block)
        )
    }
}
