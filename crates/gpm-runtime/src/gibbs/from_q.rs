//! Draws from a variational posterior `q` (CAVI, particle flow) in the layout of Gibbs draws,
//! with the same `lp__`, `log_lik` and `y_rep` columns, so that every method's output loads in
//! ArviZ and feeds LOO and posterior predictive checks alike. Each block is drawn exactly from
//! its `q`: a GP column from `N(Σ(K⁻¹μ₀ + b), Σ)`, `Σ = (K⁻¹ + diag a)⁻¹` (factored once,
//! `O(N²)` per draw), particles' Gaussian `m + S z`, a dense block `m + L z` with `LLᵀ` its
//! covariance; a sparse GP column's whitened inducing values `v ~ q(v) = N(m, Λ⁻¹)` and its
//! values at the training inputs `f_i = μ₀ + φ_iᵀv + ε_i`, `ε_i ~ N(0, k̃_i)` independent (the
//! FITC form of `p(f | v)` that Gibbs samples: each `f_i` has the marginal of SVGP's `q(f_i)`);
//! `q` is independent across blocks.

use super::{Chain, RowSink, Sampler};
use crate::posterior::BlockPosterior;
use crate::prepared::{scatter_dense, Block};
use crate::RuntimeError;
use nalgebra::DVector;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

impl<'a> Sampler<'a> {
    /// `draws` rows drawn from `q` (one entry per block of the prepared model), seeded by
    /// `seed`.
    pub fn draws_from_q(
        &self,
        q: &[BlockPosterior],
        draws: usize,
        seed: u64,
    ) -> Result<Chain, RuntimeError> {
        let mut rows = Vec::with_capacity(draws);
        self.draws_from_q_into(q, draws, seed, &mut rows)?;
        Ok(Chain {
            layout: self.layout(),
            rows,
            warmup_seconds: 0.0,
            sampling_seconds: 0.0,
        })
    }

    /// [`Sampler::draws_from_q`], each row handed to `sink` as it is made.
    pub fn draws_from_q_into(
        &self,
        q: &[BlockPosterior],
        draws: usize,
        seed: u64,
        sink: &mut impl RowSink,
    ) -> Result<(), RuntimeError> {
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
            Sparse(&'g crate::sparse::QInducing, f64),
        }
        let mut factored = Vec::with_capacity(q.len());
        for (b, post) in self.prep.blocks.iter().zip(q) {
            factored.push(match (b, post) {
                (Block::Gp { gp, .. }, BlockPosterior::Gp { a, b }) => {
                    Factored::Gp(gp.ellipse(a, b)?)
                }
                (Block::Gp { .. }, BlockPosterior::Particles { mean, spread }) => {
                    Factored::Particles(mean.clone(), spread.clone())
                }
                (Block::Dense { .. }, BlockPosterior::Dense { mean, cov }) => {
                    let l = crate::gaussian::cholesky_jitter(cov, "the variational covariance")?
                        .0
                        .l();
                    Factored::Dense(mean.clone(), l)
                }
                (Block::Sparse { sp, .. }, BlockPosterior::Sparse(q)) => {
                    Factored::Sparse(q, sp.mean)
                }
                _ => {
                    return Err(RuntimeError::Inconsistent(
                        "a variational posterior of the wrong kind for its block".into(),
                    ))
                }
            });
        }
        for _ in 0..draws {
            let mut state = self.init();
            for (bi, (b, f)) in self.prep.blocks.iter().zip(&factored).enumerate() {
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
                    (Block::Sparse { latent, column, .. }, Factored::Sparse(q, mean0)) => {
                        let (phi, kt) = self.sparse_feats[bi].as_ref().ok_or_else(|| {
                            RuntimeError::Inconsistent("a sparse block without features".into())
                        })?;
                        let v = q.draw(&mut rng)?;
                        let fv = phi.tr_mul(&v);
                        let rows = kt.len();
                        for i in 0..rows {
                            let eps: f64 = rng.sample(StandardNormal);
                            state.latents[*latent][column * rows + i] =
                                mean0 + fv[i] + kt[i].max(0.0).sqrt() * eps;
                        }
                        state.sparse_v[bi] = Some(v);
                    }
                    _ => {}
                }
            }
            sink.push(self.row(&state, &mut replicate_rng))?;
        }
        Ok(())
    }
}
