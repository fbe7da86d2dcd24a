//! Where a chain starts. By default every chain starts from its own draw of the latents from
//! their prior (a GP column `μ + L z`, independent-normal coefficients `μ + σ ⊙ z`; a sparse
//! GP's inducing values at their prior mean 0), so that chains begin far apart and R̂ compares
//! chains that had to find the posterior from different places. Values given by the user
//! (`--init FILE`) replace the draw for the latents they name, in every chain.

use super::{Sampler, State};
use crate::prepared::{scatter_dense, Block};
use crate::RuntimeError;
use gpm_schedule::LatentId;
use nalgebra::DVector;
use rand::Rng;
use rand_distr::StandardNormal;

/// Initial values of some latents, each in the latent's storage order (a matrix column-major).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Init {
    /// Latent and its values.
    pub latents: Vec<(LatentId, Vec<f64>)>,
}

impl<'a> Sampler<'a> {
    /// Start every chain with these latents at these values (the others drawn from their
    /// prior); a wrong number of values or a value that is not finite is refused here.
    pub fn with_init(mut self, init: Init) -> Result<Self, RuntimeError> {
        for (id, values) in &init.latents {
            let (name, len, _) = self
                .prep
                .latents
                .get(id.0)
                .ok_or_else(|| RuntimeError::Inconsistent(format!("no latent #{}", id.0)))?;
            if values.len() != *len {
                return Err(RuntimeError::BadData(format!(
                    "the initial value of `{name}` has {} entries, the latent {len}",
                    values.len()
                )));
            }
            if let Some(v) = values.iter().find(|v| !v.is_finite()) {
                return Err(RuntimeError::BadData(format!(
                    "the initial value of `{name}` holds {v}: initial values must be finite"
                )));
            }
        }
        self.init = init;
        Ok(self)
    }

    /// A chain's first state: latents drawn from their prior with `rng` (then the user's
    /// values), auxiliaries and hyperparameters as [`Sampler::init`] sets them.
    pub fn start(&self, rng: &mut impl Rng) -> State {
        let mut state = self.init();
        let mut z = |n: usize| -> DVector<f64> {
            DVector::from_iterator(n, (0..n).map(|_| rng.sample::<f64, _>(StandardNormal)))
        };
        for b in &self.prep.blocks {
            match b {
                Block::Gp { latent, column, gp } => {
                    let rows = gp.len();
                    let draw = gp.chol.l() * z(rows);
                    for i in 0..rows {
                        state.latents[*latent][column * rows + i] = gp.mean + draw[i];
                    }
                }
                Block::Dense {
                    parts,
                    prior_mean,
                    prior_sd,
                } => {
                    // A flat coordinate has no prior to draw from: it starts from N(0, 1), about
                    // Stan's uniform(−2, 2) on the unconstrained scale.
                    let sd = prior_sd.map(|s| if s.is_finite() { s } else { 1.0 });
                    let theta = prior_mean + sd.component_mul(&z(prior_mean.len()));
                    scatter_dense(parts, &theta, &mut state.latents);
                }
                Block::Sparse { .. } => {}
            }
        }
        for (id, values) in &self.init.latents {
            state.latents[id.0] = DVector::from_column_slice(values);
        }
        state
    }
}
