//! Slice steps on the likelihood's non-conjugate hyperparameters given the latents, the
//! auxiliaries integrated out ([`gpm_schedule::GibbsStep::LikelihoodHypers`]).

use super::{Move, Sampler, State};
use crate::RuntimeError;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct LikelihoodHypers;

impl Move for LikelihoodHypers {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.slice_hypers(state, pv, rng)
    }
}
