//! The generic update of a block read by factors with no augmentation: elliptical slice
//! sampling (Murray, Adams & MacKay 2010). Its Gaussian is the block's prior times the Gaussian
//! terms of the factors that *are* augmented (given their auxiliaries), `N(m, Σ) ∝ p(z)
//! exp(bᵀz − ½ zᵀAz)`, and its likelihood the un-augmented factors' log-density as written — so
//! a mixed model keeps its augmentations, and the step leaves the block's conditional exactly
//! invariant with no step size to tune. `sample_elliptical` is the sweep's step: the blocks'
//! conditionals (each after its own hyperparameters), the steps (about fitted references for
//! dense blocks, `dense_reference.rs`), then the schedule's non-centred moves.

use super::State;
use crate::block::GaussianBlock;
use crate::natural::NaturalParams;
use crate::prepared::Coords;
use crate::RuntimeError;
use nalgebra::DVector;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A block's Gaussian conditional given the augmented factors' terms: `N(m, Σ) ∝ block(z)
/// exp(npᵀ…)`, and where its values live.
pub(super) struct BlockGaussian<'a> {
    pub block: Box<dyn GaussianBlock + 'a>,
    pub np: NaturalParams,
    pub coords: Coords<'a>,
}

/// Most shrinks of the angle bracket before the step gives up and keeps the current value
/// (only reached when the log-likelihood is not finite at the current value).
const MAX_SHRINKS: usize = 200;

/// One elliptical slice step's search over the angle (Murray, Adams & MacKay 2010, Fig. 2):
/// `at(cos θ, sin θ)` moves to the ellipse's point at `θ` and returns its log-likelihood and
/// whatever the caller keeps of it; the first point above the slice level is returned, `None`
/// when the bracket shrank to nothing (the caller then restores the current point, angle 0).
pub(super) fn ellipse_step<T>(
    rng: &mut ChaCha8Rng,
    log_lik: f64,
    at: &mut dyn FnMut(f64, f64) -> (f64, T),
) -> Option<(f64, T)> {
    let log_y = log_lik + rng.gen::<f64>().ln();
    let mut theta: f64 = rng.gen_range(0.0..std::f64::consts::TAU);
    let (mut lo, mut hi) = (theta - std::f64::consts::TAU, theta);
    for _ in 0..MAX_SHRINKS {
        let (ll, kept) = at(theta.cos(), theta.sin());
        if ll > log_y {
            return Some((ll, kept));
        }
        if theta < 0.0 {
            lo = theta;
        } else {
            hi = theta;
        }
        if hi - lo < 1e-12 {
            return None;
        }
        theta = rng.gen_range(lo..hi);
    }
    None
}

impl super::Sampler<'_> {
    /// `steps` elliptical slice steps over the blocks jointly: the ellipse's Gaussian is the
    /// product of the blocks' Gaussian parts (independent given the auxiliaries: the schedule
    /// groups only blocks no augmented factor couples), its likelihood the generic `factors`.
    ///
    /// With `references` (one per block: [`super::dense_reference`]) the ellipses are those of
    /// the references `N(m, R)` and the sliced density is `L(z) N(z | μ, Σ) / N(z | m, R)`
    /// (generalised elliptical slice sampling), the same target.
    pub(super) fn elliptical(
        &self,
        parts: &[BlockGaussian],
        references: Option<&[std::sync::Arc<crate::reference_ess::Reference>]>,
        factors: &[usize],
        steps: usize,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        // Each block's conditional factored once for all the steps.
        let ellipses = parts
            .iter()
            .map(|g| g.block.ellipse(&g.np))
            .collect::<Result<Vec<_>, _>>()?;
        let own_means: Vec<&DVector<f64>> = ellipses.iter().map(|e| e.mean()).collect();
        let reference_means: Option<Vec<&DVector<f64>>> =
            references.map(|r| r.iter().map(|r| r.mean()).collect());
        // log N(z | μ, Σ) − log N(z | m, R) over the blocks: the generalised step's factor.
        let correction = |z: &[DVector<f64>]| -> f64 {
            let Some(r) = references else { return 0.0 };
            (0..z.len())
                .map(|k| match ellipses[k].log_density(&z[k]) {
                    Some(own) => own - r[k].log_density(z[k].as_slice(), 1.0),
                    None => f64::NEG_INFINITY,
                })
                .sum()
        };
        let mut z: Vec<DVector<f64>> = parts.iter().map(|g| g.coords.get(&state.latents)).collect();
        // The factors' log-likelihood at `z` (the correction is added per step).
        let mut base = self.marginal_log_lik(factors, state);
        let set = |state: &mut State, values: &[DVector<f64>]| {
            for (g, v) in parts.iter().zip(values) {
                g.coords.set(&mut state.latents, v);
            }
        };
        for step in 0..steps {
            // With references, every other step follows the blocks' own conditional instead:
            // both steps are exact, and the conditional's ellipses keep their full width where
            // a reference fitted to a chain that crawled along a ridge during warm-up is
            // narrow (the heteroscedastic approximate GP's intercepts: chains frozen at sd
            // 0.01 of a posterior of sd 0.8).
            let fitted_step = reference_means.is_some() && step % 2 == 0;
            let means = match (&reference_means, fitted_step) {
                (Some(m), true) => m,
                _ => &own_means,
            };
            let with = |z: &[DVector<f64>]| if fitted_step { correction(z) } else { 0.0 };
            // ν ~ N(0, Σ) (or N(0, R)): a draw of each block's Gaussian part, centred.
            let nu: Vec<DVector<f64>> = match (references, fitted_step) {
                (Some(r), true) => r.iter().map(|r| r.centred_draw(rng, 1.0)).collect(),
                _ => ellipses.iter().map(|e| e.centred_draw(rng)).collect(),
            };
            let level = base + with(&z);
            let moved = ellipse_step(rng, level, &mut |c, s| {
                let proposal: Vec<DVector<f64>> = (0..parts.len())
                    .map(|k| means[k] + (&z[k] - means[k]) * c + &nu[k] * s)
                    .collect();
                set(state, &proposal);
                let ll = self.marginal_log_lik(factors, state);
                (ll + with(&proposal), (ll, proposal))
            });
            match moved {
                Some((_, (ll, proposal))) => {
                    z = proposal;
                    base = ll;
                }
                None => {
                    set(state, &z);
                    if !base.is_finite() {
                        return Err(RuntimeError::Numerical(
                            "the generic update found no point of finite likelihood on the ellipse: the log-density of a factor without augmentation is not finite at the current latents".into(),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The generic update: the blocks' Gaussian conditionals given the augmented factors (each
    /// after its own hyperparameters), then elliptical slice steps over all of them jointly.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sample_elliptical(
        &self,
        blocks: &[gpm_schedule::BlockId],
        factors: &[usize],
        steps: usize,
        fitted: bool,
        state: &mut State,
        pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let mut parts = Vec::new();
        let mut references = Vec::new();
        for spec in blocks {
            for bi in self.prep.spec_blocks[spec.0].clone() {
                let b = &self.prep.blocks[bi];
                if let Some(g) = self.block_gaussian(bi, b, false, state, pv, rng)? {
                    parts.push(g);
                    references.push(state.dense_references[bi].clone().filter(|_| fitted));
                }
            }
        }
        // Every block of the group follows its fitted reference, or none does.
        let references: Option<Vec<_>> = references.into_iter().collect();
        // Elliptical slice sampling has no conditional mean to average.
        for g in &parts {
            for l in g.coords.latents() {
                state.without_mean[l] = true;
            }
        }
        self.elliptical(&parts, references.as_deref(), factors, steps, state, rng)?;
        drop(parts);
        // The schedule's non-centred moves (`interweave`) of the blocks' scale and kernel
        // hyperparameters, now that the values have moved: the hyperparameters given the
        // standardised values, the values moved with them.
        for spec in blocks {
            for bi in self.prep.spec_blocks[spec.0].clone() {
                let dense = self.dense_scales.iter().find(|d| d.block == bi);
                if let Some(d) = dense.filter(|d| !d.interweave.is_empty()) {
                    for _ in 0..d.interweave_moves {
                        self.interweave_dense(d, state, rng)?;
                    }
                    if let Some(readings) = &d.laplace {
                        self.laplace_dense(d, readings, state, rng)?;
                    }
                }
                let kernel = self.kernels.iter().find(|k| k.block == bi);
                if let Some(k) = kernel.filter(|k| !k.interweave.is_empty()) {
                    self.interweave_kernel(k, state, rng)?;
                }
            }
        }
        Ok(())
    }
}
