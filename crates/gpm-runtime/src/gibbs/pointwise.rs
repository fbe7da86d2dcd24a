//! The pointwise columns of a draw: every observation's log-likelihood under the original
//! (un-augmented) model, `log_lik` (what LOO and WAIC read), and a response replicated from
//! `p(y | θ)` at the draw, `y_rep` (posterior predictive checks).
//!
//! The observations are those of every likelihood factor, factor by factor in the model's order
//! (a density formula's `log_lik` is its term as written). A robust statement's `log_lik` is its
//! distribution's density, not its loss.

use super::{Sampler, State};
use crate::RuntimeError;
use gpm_library::likelihood::{CategoricalLogisticSoftmax, Likelihood};
use rand::Rng;

/// Which pointwise columns a draw row carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pointwise {
    /// `log_lik.1 … log_lik.N`.
    pub log_lik: bool,
    /// `y_rep.1 … y_rep.N`.
    pub ppc: bool,
}

impl<'a> Sampler<'a> {
    /// Carry these pointwise columns in every draw row. `y_rep` needs each observed factor's
    /// distribution: a density written as a formula (`target += …`) has none, and is refused
    /// here, before any sampling.
    pub fn with_pointwise(mut self, pointwise: Pointwise) -> Result<Self, RuntimeError> {
        if pointwise.ppc {
            for &(f, _) in &self.observed() {
                let fp = &self.schedule.factors[f];
                if fp.replicate.is_none() && fp.categorical.is_none() {
                    return Err(RuntimeError::Unsupported(format!(
                        "factor #{} is a density formula: posterior predictive draws (`y_rep`) need its distribution, written `y ~ dist(...)`",
                        fp.factor + 1
                    )));
                }
            }
        }
        self.pointwise = pointwise;
        Ok(self)
    }

    /// Which pointwise columns the rows carry.
    pub fn pointwise(&self) -> Pointwise {
        self.pointwise
    }

    /// Every factor that observes data (not a latent's prior factor) with its number of
    /// observations.
    pub(super) fn observed(&self) -> Vec<(usize, usize)> {
        (0..self.schedule.factors.len())
            .filter(|&f| !self.schedule.factors[f].is_prior)
            .map(|f| match &self.labels[f] {
                Some(b) => (f, b.labels.len()),
                None => (f, self.prep.factors[f].n),
            })
            .collect()
    }

    /// Append the state's `log_lik` and `y_rep` values (as [`Sampler::pointwise`] asks) to
    /// `row`: all log-likelihoods, then all replicated responses.
    pub(super) fn push_pointwise(
        &self,
        state: &State,
        pv: &[Vec<f64>],
        rng: &mut impl Rng,
        row: &mut Vec<f64>,
    ) {
        let Pointwise { log_lik, ppc } = self.pointwise;
        if !log_lik && !ppc {
            return;
        }
        let mut y_rep = Vec::new();
        let mut stack = Vec::new();
        for (f, n) in self.observed() {
            let fp = &self.schedule.factors[f];
            if let Some(bound) = &self.labels[f] {
                // p(y = k) = w_k / Σ_c w_c: the logistic-softmax (thesis §7.4).
                let cat = fp.categorical.as_ref().expect("categorical");
                let z = &state.latents[cat.latent_id.0];
                let weights = bound.weights(crate::categorical::scales(cat, &state.vectors));
                let mut w = Vec::new();
                for (i, &label) in bound.labels.iter().enumerate() {
                    let at = |k: usize| z[k * n + i];
                    weights.weights(at, bound.columns, &mut w);
                    if log_lik {
                        row.push(weights.log_prob(at, bound.columns, label));
                    }
                    if ppc {
                        y_rep.push(CategoricalLogisticSoftmax.draw(&w, None, rng));
                    }
                }
                continue;
            }
            let density = fp.observation.as_ref().or(fp.log_density.as_ref());
            let mut vals = vec![0.0; fp.slots.len()];
            let mut params = Vec::new();
            for i in 0..n {
                self.fill(f, i, pv, state, &mut vals);
                if log_lik {
                    row.push(density.map_or(f64::NAN, |t| t.eval(&vals, &mut stack)));
                }
                if let (true, Some(r)) = (ppc, &fp.replicate) {
                    params.clear();
                    params.extend(r.params.iter().map(|t| t.eval(&vals, &mut stack)));
                    y_rep.push(r.likelihood.draw(&params, r.labels.as_deref(), rng));
                }
            }
        }
        row.extend(y_rep);
    }
}
