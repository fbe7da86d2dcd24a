//! The conjugate Gamma updates of the hyperparameters that allow them
//! ([`gpm_schedule::GibbsStep::ConjugateHypers`]).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct ConjugateHypers;

impl Move for ConjugateHypers {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.sample_hypers(state, pv, rng)
    }

    fn describe(&self, s: &Schedule) -> String {
        format!(
            "draw {} from their conjugate Gamma conditionals",
            s.hypers
                .iter()
                .map(|h| h.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
