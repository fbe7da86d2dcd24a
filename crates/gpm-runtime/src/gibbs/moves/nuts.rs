//! One NUTS transition on a block and the scales its prior reads, the others held
//! ([`gpm_schedule::GibbsStep::Nuts`]; the transition is `gibbs/nuts_block.rs`'s).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct Nuts {
    /// Index into the schedule's NUTS blocks.
    pub(super) index: usize,
}

impl Move for Nuts {
    fn init(&self) -> MoveState {
        MoveState::Nuts(Box::default())
    }

    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let nb = &s.schedule.nuts_blocks[self.index];
        let MoveState::Nuts(own) = own else {
            return Err(RuntimeError::Inconsistent(format!(
                "the NUTS step of block {} was handed another move's state",
                nb.block.0 + 1
            )));
        };
        s.nuts_block(nb, own, state, rng)?;
        *pv = s.predictors(state);
        Ok(())
    }

    fn describe(&self, s: &Schedule) -> String {
        let nb = &s.nuts_blocks[self.index];
        format!(
            "one NUTS transition (step size and mass matrix — dense up to 100 coordinates, else diagonal — adapted in warm-up as Stan does; tree depth at most {}) on {} whitened by its prior{}, the other latents and hyperparameters held, with the log-density of factor{} {} as written{} — NUTS because {}",
            nb.max_depth,
            s.block_name(nb.block),
            if nb.hypers.is_empty() {
                String::new()
            } else {
                format!(" jointly with {} on their unconstrained scales", s.hyper_names(&nb.hypers))
            },
            if nb.factors.len() > 1 { "s" } else { "" },
            nb.factors
                .iter()
                .map(|f| format!("#{}", s.factors[f.0].factor + 1))
                .collect::<Vec<_>>()
                .join(", "),
            if nb.redraw {
                " (auxiliaries integrated out), then every auxiliary drawn again given it"
            } else {
                ""
            },
            nb.why
        )
    }
}
