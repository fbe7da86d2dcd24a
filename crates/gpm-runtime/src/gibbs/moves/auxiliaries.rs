//! Every auxiliary variable drawn from its exact conditional, observation by observation
//! ([`gpm_schedule::GibbsStep::Auxiliaries`]).

use super::traits::{Move, MoveState};
use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

#[derive(Debug)]
pub(super) struct Auxiliaries;

impl Move for Auxiliaries {
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        _own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        s.sample_aux(state, pv, rng)
    }

    fn describe(&self, s: &Schedule) -> String {
        let mut parts = Vec::new();
        for fp in &s.factors {
            if fp.categorical.is_some() {
                parts.push(format!(
                    "factor #{}: logistic-softmax λ, n, ω per observation and class",
                    fp.factor + 1
                ));
                continue;
            }
            for a in &fp.aux {
                parts.push(format!(
                    "{} ~ {} (factor #{})",
                    a.name,
                    a.kind.name(),
                    fp.factor + 1
                ));
            }
        }
        if parts.is_empty() {
            return if s.factors.iter().any(|f| f.generic.is_some()) {
                "draw the auxiliaries: none".into()
            } else {
                "draw the auxiliaries: none (every factor is Gaussian in its predictors)".into()
            };
        }
        format!("draw the auxiliaries: {}", parts.join("; "))
    }
}
