//! The non-centred move of a dense block's prior hyperparameters (its scales and means) after
//! the block's generic update ([`gpm_schedule::DenseScaleUpdate::interweave`]).
//!
//! The centred move samples a scale `s` given the weights `θ` (`log N(θ | m, s²)`): where the
//! data inform `θ` weakly, `s` and `θ` form a funnel and the chain crawls. This move holds the
//! standardised weights `z = (θ − m)/s` instead and slice samples the hyperparameters from
//! `p(h) Π p(y | θ = m_h + s_h z)` — the factors' original log-densities, the auxiliaries
//! integrated out — moving `θ` with them, then draws every auxiliary again given the new `θ`:
//! an exact update of `(h, ω)` given `z`. Alternating the two is the ancillarity-sufficiency
//! interweaving of Yu & Meng (2011), which mixes where either form alone is slow.

use super::*;

impl<'a> Sampler<'a> {
    pub(super) fn interweave_dense(
        &self,
        d: &SlicedDense,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let Block::Dense {
            parts,
            prior_mean,
            prior_sd,
        } = &self.prep.blocks[d.block]
        else {
            return Err(RuntimeError::Inconsistent(
                "a non-centred scale move of a block that is not dense".into(),
            ));
        };
        let dim = prior_mean.len();
        let (m0, s0) = match &state.dense_priors[d.block] {
            Some((m, s)) => (m.clone(), s.clone()),
            None => (prior_mean.clone(), prior_sd.clone()),
        };
        let theta = gather_dense(parts, dim, &state.latents);
        // A flat coordinate has no scale to standardise by: it stays where it is.
        let z = DVector::from_fn(dim, |j, _| {
            if s0[j].is_finite() {
                (theta[j] - m0[j]) / s0[j]
            } else {
                theta[j]
            }
        });
        let moved = |hv: &HyperValues| -> Result<DVector<f64>, RuntimeError> {
            let (m, s) = self.dense_prior(parts, hv)?;
            Ok(DVector::from_fn(dim, |j, _| {
                if s0[j].is_finite() {
                    m[j] + s[j] * z[j]
                } else {
                    z[j]
                }
            }))
        };
        let (aux, hypers, latents) = (
            &state.aux.clone(),
            &state.hypers.clone(),
            state.latents.clone(),
        );
        let log_lik = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let mut at = latents.clone();
            scatter_dense(parts, &moved(hv)?, &mut at);
            self.interwoven_log_lik(&d.interweave, &at, aux, hypers)
        };
        let current = self.hyper_values(state);
        self.slice_update(&d.hypers, d.joint, state, &log_lik, rng);
        let hv = self.hyper_values(state);
        if hv == current {
            // Not moved: the weights, their prior and the auxiliaries stand as they are.
            return Ok(());
        }
        scatter_dense(parts, &moved(&hv)?, &mut state.latents);
        state.dense_priors[d.block] = Some(self.dense_prior(parts, &hv)?);
        let pv = self.predictors(state);
        self.sample_aux(state, &pv, rng)
    }
}
