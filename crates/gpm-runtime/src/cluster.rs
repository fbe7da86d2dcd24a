//! The global side of a distributed sparse-GP fit (issue 33): the state the driver broadcasts
//! to every shard each step — the inducing inputs, chosen once, and `q(v)` of every sparse
//! block — and the step that reduces the shards' statistics ([`crate::shard`]) into the next
//! state. The shards' side is [`crate::svi::shard_stats`]; the engine that moves them between
//! machines (Dask) is the Python package's.

use crate::adam::Adam;
use crate::kernels::HyperValues;
use crate::shard::{InducingStats, ShardStats};
use crate::sparse::QInducing;
use crate::RuntimeError;
use gpm_schedule::HyperId;
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The state every shard reads in a distributed fit: the sparse blocks' inducing inputs (one
/// matrix per sparse GP latent, chosen once) and `q(v)` per block by its natural parameters.
/// Flat `f64` vectors, so that it crosses to Python and over the wire as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalState {
    /// Per sparse GP latent: rows, columns and the row-major inducing inputs.
    pub inducing: Vec<(usize, usize, Vec<f64>)>,
    /// Per block: `M`, the precision `Λ` (row-major) and `h = Λ m`.
    pub q: Vec<(usize, Vec<f64>, Vec<f64>)>,
    /// The hyperparameters learned over the shards, if any.
    #[serde(default)]
    pub learning: Option<Learning>,
}

/// Hyperparameters learned over shards as SVI learns them on one machine: Adam on their
/// logarithms along the summed gradient of the local ELBO terms
/// ([`crate::svi::shard_gradient`]), one step after each step of `q(v)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learning {
    /// The learned hyperparameters ([`HyperId`] indices).
    pub ids: Vec<usize>,
    /// Their logarithms.
    pub log_theta: Vec<f64>,
    /// Adam's state.
    pub adam: Adam,
}

impl GlobalState {
    /// The prior `q(v) = N(0, I)` for every block, at these inducing inputs and block sizes.
    pub fn prior(inducing: &[DMatrix<f64>], block_sizes: &[usize]) -> Self {
        let q = block_sizes
            .iter()
            .map(|&m| {
                (
                    m,
                    DMatrix::<f64>::identity(m, m).as_slice().to_vec(),
                    vec![0.0; m],
                )
            })
            .collect();
        GlobalState {
            inducing: inducing
                .iter()
                .map(|z| (z.nrows(), z.ncols(), z.transpose().as_slice().to_vec()))
                .collect(),
            q,
            learning: None,
        }
    }

    /// The same state with the hyperparameters `learn` learned from their values in `hv`, by
    /// Adam steps of size `rate` on their logarithms.
    pub fn learning(
        mut self,
        learn: &[HyperId],
        hv: &HyperValues,
        rate: f64,
    ) -> Result<Self, RuntimeError> {
        let mut log_theta = Vec::with_capacity(learn.len());
        for &h in learn {
            match hv.scalar(h) {
                Some(v) if v > 0.0 && v.is_finite() => log_theta.push(v.ln()),
                _ => {
                    return Err(RuntimeError::Unsupported(format!(
                        "hyperparameter #{} is not a positive scalar: only those are learned \
                         over shards",
                        h.0 + 1
                    )))
                }
            }
        }
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(RuntimeError::Settings(format!(
                "the hyperparameters' step size must be positive, not {rate}"
            )));
        }
        self.learning = (!learn.is_empty()).then(|| Learning {
            ids: learn.iter().map(|h| h.0).collect(),
            log_theta,
            adam: Adam::new(learn.len(), rate),
        });
        Ok(self)
    }

    /// The hyperparameters learned over the shards (none without [`GlobalState::learning`]).
    pub fn learned(&self) -> Vec<HyperId> {
        self.learning
            .iter()
            .flat_map(|l| l.ids.iter().map(|&i| HyperId(i)))
            .collect()
    }

    /// `base` with the learned hyperparameters at their current values.
    pub fn hypers(&self, base: &HyperValues) -> HyperValues {
        let mut hv = base.clone();
        if let Some(l) = &self.learning {
            for (&i, x) in l.ids.iter().zip(&l.log_theta) {
                hv.set_scalar(HyperId(i), x.exp());
            }
        }
        hv
    }

    /// One Adam step of the learned hyperparameters along the shards' gradients of their local
    /// ELBO terms (summed in the order given), each observation counted `scale` (`N/|B|`)
    /// times: the step single-process SVI takes after each step of `q(v)`.
    pub fn hyper_step(&self, shards: &[Vec<f64>], scale: f64) -> Result<GlobalState, RuntimeError> {
        let mut next = self.clone();
        let Some(l) = &mut next.learning else {
            return Err(RuntimeError::Settings(
                "this fit learns no hyperparameters".into(),
            ));
        };
        let mut grad = vec![0.0; l.ids.len()];
        for g in shards {
            if g.len() != grad.len() {
                return Err(bad_state("hyperparameter gradients"));
            }
            for (t, x) in grad.iter_mut().zip(g) {
                *t += scale * x;
            }
        }
        if let Some(k) = grad.iter().position(|g| !g.is_finite()) {
            return Err(RuntimeError::Numerical(format!(
                "the gradient of the ELBO in hyperparameter #{} is {}",
                l.ids[k] + 1,
                grad[k]
            )));
        }
        l.adam.step(&mut l.log_theta, &grad);
        Ok(next)
    }

    /// The inducing inputs as matrices.
    pub fn inducing_inputs(&self) -> Result<Vec<DMatrix<f64>>, RuntimeError> {
        self.inducing
            .iter()
            .map(|(r, c, v)| {
                (v.len() == r * c)
                    .then(|| DMatrix::from_row_slice(*r, *c, v))
                    .ok_or_else(|| bad_state("inducing inputs"))
            })
            .collect()
    }

    /// `q(v)` per block.
    pub fn q(&self) -> Result<Vec<QInducing>, RuntimeError> {
        self.q
            .iter()
            .map(|(m, prec, h)| {
                if prec.len() != m * m || h.len() != *m {
                    return Err(bad_state("q(v)"));
                }
                QInducing::from_natural(
                    DMatrix::from_row_slice(*m, *m, prec),
                    DVector::from_column_slice(h),
                )
            })
            .collect()
    }

    /// `draws` draws of every block's `v` from `q(v)` (seeded): per draw, per block.
    pub fn draws_of_q(
        &self,
        draws: usize,
        seed: u64,
    ) -> Result<Vec<Vec<DVector<f64>>>, RuntimeError> {
        let q = self.q()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..draws)
            .map(|_| q.iter().map(|b| b.draw(&mut rng)).collect())
            .collect()
    }

    /// One CAVI step from the shards' statistics, summed in the order given: every block's
    /// `q(v)` moved to its optimum given the local factors (thesis ch. 5, Algorithm 3 with the
    /// whole data as the batch). Returns the new state and the ELBO at the state before the
    /// step (the local terms were computed there): `Σ local − Σ KL(q(v) ‖ N(0, I))`.
    pub fn step(&self, shards: &[ShardStats]) -> Result<(GlobalState, f64), RuntimeError> {
        self.natural_step(shards, 1.0, 1.0)
    }

    /// A natural-gradient step from the shards' statistics on a minibatch (SVI, thesis ch. 5,
    /// Algorithm 3; Hoffman et al. 2013): each observation counted `scale` (`N/|B|`) times,
    /// `q(v)`'s natural parameters moved a fraction `rho` of the way to the batch's optimum,
    /// `θ ← (1 − ρ) θ + ρ θ̂`. Returns the new state and the ELBO estimate at the state before
    /// the step, `scale · Σ local − Σ KL`. With `scale = rho = 1` (the whole data as the
    /// batch) it is [`GlobalState::step`], bit for bit.
    pub fn natural_step(
        &self,
        shards: &[ShardStats],
        scale: f64,
        rho: f64,
    ) -> Result<(GlobalState, f64), RuntimeError> {
        if !(scale > 0.0 && scale.is_finite() && rho > 0.0 && rho <= 1.0) {
            return Err(RuntimeError::Settings(format!(
                "a natural-gradient step needs a positive scale and a step in (0, 1], not \
                 {scale} and {rho}"
            )));
        }
        let q = self.q()?;
        let mut total: Vec<InducingStats> =
            q.iter().map(|b| InducingStats::zeros(b.h.len())).collect();
        let mut local = 0.0;
        for s in shards {
            if s.blocks.len() != total.len() {
                return Err(bad_state("shard statistics"));
            }
            for (t, b) in total.iter_mut().zip(&s.blocks) {
                if b.linear.len() != t.linear.len() {
                    return Err(bad_state("shard statistics"));
                }
                t.add(b);
            }
            local += s.local;
        }
        let mut kl = 0.0;
        for b in &q {
            kl += b.kl()?;
        }
        let mut next = self.clone();
        for ((slot, t), old) in next.q.iter_mut().zip(&total).zip(&q) {
            let new = old.toward(t.natural(scale), rho)?;
            *slot = (
                new.h.len(),
                new.prec.transpose().as_slice().to_vec(),
                new.h.as_slice().to_vec(),
            );
        }
        Ok((next, scale * local - kl))
    }
}

/// The random stream keyed by `words` (a distributed Gibbs run's: the driver's draw of a
/// block's `v` by (seed, chain, sweep, round), a row's draws by those and its global position
/// and purpose). A pure function of the key, so a round recomputed on another worker (one
/// lost) draws the same numbers, and the draws do not depend on which worker, or which
/// partition, holds a row.
pub fn stream(words: &[u64]) -> ChaCha8Rng {
    // splitmix64 (Steele, Lea & Flood 2014) folded over the key's words, its length first:
    // distinct keys give unrelated ChaCha8 keys.
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let key = std::iter::once(words.len() as u64)
        .chain(words.iter().copied())
        .fold(0x6770_6d63_5f67_6962_u64, |h, w| {
            mix(h.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ w)
        });
    ChaCha8Rng::seed_from_u64(key)
}

fn bad_state(what: &str) -> RuntimeError {
    RuntimeError::Inconsistent(format!(
        "a distributed fit's {what} do not match the model (another model's state?)"
    ))
}
