//! Slice steps on the likelihood's non-conjugate hyperparameters given the latents, the
//! auxiliaries integrated out ([`gpm_schedule::GibbsStep::LikelihoodHypers`]).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct LikelihoodHypers;

impl Move for LikelihoodHypers {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.slice_hypers(state, pv, rng)
    }

    fn describe(&self, s: &Schedule) -> String {
        format!(
            "slice sample {} given the latents (auxiliaries integrated out)",
            s.hyper_names(&s.likelihood_hypers)
        )
    }
}
