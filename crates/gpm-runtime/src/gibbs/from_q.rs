//! Draws from a variational posterior `q` (CAVI, particle flow) in the layout of Gibbs draws,
//! with the same `lp__`, `log_lik` and `y_rep` columns, so that every method's output loads in
//! ArviZ and feeds LOO and posterior predictive checks alike. Each block is drawn exactly from
//! its `q`: a GP column from `N(Σ(K⁻¹μ₀ + b), Σ)`, `Σ = (K⁻¹ + diag a)⁻¹` (factored once,
//! `O(N²)` per draw), particles' Gaussian `m + S z`, a dense block `m + L z` with `LLᵀ` its
//! covariance; `q` is independent across blocks.

use super::{Chain, Sampler};
use crate::cavi::BlockPosterior;
use crate::prepared::{scatter_dense, Block};
use crate::RuntimeError;
use nalgebra::DVector;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

impl<'a> Sampler<'a> {
    /// `draws` rows drawn from `q` (one entry per block of the prepared model), seeded by
    /// `seed`; refused for sparse GP blocks, whose values at every training input are not
    /// formed.
    pub fn draws_from_q(
        &self,
        q: &[BlockPosterior],
        draws: usize,
        seed: u64,
    ) -> Result<Chain, RuntimeError> {
        if q.len() != self.prep.blocks.len() {
            return Err(RuntimeError::Inconsistent(
                "the variational posterior does not match the model's blocks".into(),
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut replicate_rng = ChaCha8Rng::seed_from_u64(seed ^ super::REPLICATE_SEED);
        let z = |n: usize, rng: &mut ChaCha8Rng| -> DVector<f64> {
            DVector::from_iterator(n, (0..n).map(|_| rng.sample::<f64, _>(StandardNormal)))
        };
        // Factor every block's q once.
        enum Factored<'g> {
            Gp(crate::gaussian::GpEllipse<'g>),
            Particles(DVector<f64>, nalgebra::DMatrix<f64>),
            Dense(DVector<f64>, nalgebra::DMatrix<f64>),
        }
        let mut factored = Vec::with_capacity(q.len());
        for (b, post) in self.prep.blocks.iter().zip(q) {
            factored.push(match (b, post) {
                (Block::Gp { gp, .. }, BlockPosterior::Gp { a, b }) => Factored::Gp(gp.ellipse(a, b)?),
                (Block::Gp { .. }, BlockPosterior::Particles { mean, spread }) => {
                    Factored::Particles(mean.clone(), spread.clone())
                }
                (Block::Dense { .. }, BlockPosterior::Dense { mean, cov }) => {
                    let l = crate::gaussian::cholesky_jitter(cov, "the variational covariance")?
                        .0
                        .l();
                    Factored::Dense(mean.clone(), l)
                }
                (Block::Sparse { .. }, _) => {
                    return Err(RuntimeError::Unsupported(
                        "draws from q are not written for sparse GPs (their values at every training input are never formed); use the marginals of posterior.csv".into(),
                    ))
                }
                _ => {
                    return Err(RuntimeError::Inconsistent(
                        "a variational posterior of the wrong kind for its block".into(),
                    ))
                }
            });
        }
        let mut rows = Vec::with_capacity(draws);
        for _ in 0..draws {
            let mut state = self.init();
            for (b, f) in self.prep.blocks.iter().zip(&factored) {
                match (b, f) {
                    (Block::Gp { latent, column, gp }, Factored::Gp(e)) => {
                        let draw = &e.mean + e.centred_draw(&mut rng);
                        let rows = gp.len();
                        for i in 0..rows {
                            state.latents[*latent][column * rows + i] = draw[i];
                        }
                    }
                    (Block::Gp { latent, column, gp }, Factored::Particles(m, s)) => {
                        let draw = m + s * z(s.ncols(), &mut rng);
                        let rows = gp.len();
                        for i in 0..rows {
                            state.latents[*latent][column * rows + i] = draw[i];
                        }
                    }
                    (Block::Dense { parts, .. }, Factored::Dense(m, l)) => {
                        let theta = m + l * z(m.len(), &mut rng);
                        scatter_dense(parts, &theta, &mut state.latents);
                    }
                    _ => {}
                }
            }
            rows.push(self.row(&state, &mut replicate_rng));
        }
        Ok(Chain {
            layout: self.layout(),
            rows,
            warmup_seconds: 0.0,
            sampling_seconds: 0.0,
        })
    }
}
