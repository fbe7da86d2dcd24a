//! Every auxiliary variable drawn from its exact conditional, observation by observation
//! ([`gpm_schedule::GibbsStep::Auxiliaries`]).

use super::{Move, Sampler, State};
use crate::RuntimeError;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct Auxiliaries;

impl Move for Auxiliaries {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.sample_aux(state, pv, rng)
    }
}
