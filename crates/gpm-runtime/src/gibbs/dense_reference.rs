//! A Gaussian fitted to a dense block's warm-up draws, for its generic update
//! ([`gpm_schedule::GibbsStep::Elliptical`] `fitted`). Elliptical slice sampling moves along the
//! ellipses of the block's Gaussian given the augmented factors — for weights under a
//! heteroscedastic likelihood, a prior far wider than their posterior, so that every step
//! shrinks its bracket to almost nothing. Generalised elliptical slice sampling (Nishihara,
//! Murray & Adams 2014) moves along the ellipses of any reference `N(m, R)` and slices
//! `N(θ | μ, Σ) L(θ) / N(θ | m, R)` instead: exact for any fixed reference. The reference is the
//! mean and (doubled) covariance of the block's draws from the second quarter of warm-up on,
//! refitted every 50 sweeps and frozen when warm-up ends, so the sampling phase is a fixed,
//! exact kernel.

use super::*;
use crate::reference_ess::Reference;
use gpm_schedule::BlockId;
use nalgebra::DMatrix;

/// Largest block fitted: the fit and its factor hold two `d × d` matrices per chain beside the
/// block's own precision (2 000: 64 MB per chain); a larger block keeps its conditional's
/// ellipses.
const MAX_FITTED_DIM: usize = 2000;
/// Sweeps between refits during warm-up.
const REFIT_EVERY: usize = 50;
/// How much wider than the draws the reference is (variance factor): a reference narrower than
/// the target in some direction costs more than one a little wider.
const INFLATION: f64 = 2.0;

/// Running mean and sum of squared deviations of a block's draws (Welford).
#[derive(Debug, Clone)]
pub struct DenseFit {
    n: usize,
    mean: DVector<f64>,
    m2: DMatrix<f64>,
}

impl DenseFit {
    fn new(dim: usize) -> Self {
        DenseFit {
            n: 0,
            mean: DVector::zeros(dim),
            m2: DMatrix::zeros(dim, dim),
        }
    }
    fn push(&mut self, x: &DVector<f64>) {
        self.n += 1;
        let d = x - &self.mean;
        self.mean += &d / self.n as f64;
        let d2 = x - &self.mean;
        self.m2 += &d * d2.transpose();
    }
    /// The reference `N(m, R)`, once there are at least twice as many draws as coordinates.
    fn reference(&self) -> Option<Reference> {
        let dim = self.mean.len();
        if self.n < (2 * dim).max(20) {
            return None;
        }
        let mut r = &self.m2 * (INFLATION / (self.n - 1) as f64);
        let scale = r
            .diagonal()
            .iter()
            .fold(0.0f64, |a, v| a.max(v.abs()))
            .max(1e-300);
        for j in 0..dim {
            r[(j, j)] += 1e-9 * scale;
        }
        Reference::from_mean_cov(self.mean.clone(), r)
    }
}

impl<'a> Sampler<'a> {
    /// After warm-up sweep `sweep` (from 1) of `warmup`, for a generic update over `blocks`
    /// that follows a fitted reference: from the second quarter on, each dense block's draw
    /// joins its fit; every 50 sweeps and at the last warm-up sweep the reference is refitted
    /// (and then kept for the sampling phase).
    pub(super) fn fit_dense_references(
        &self,
        state: &mut State,
        blocks: &[BlockId],
        (sweep, warmup): (usize, usize),
    ) {
        if sweep <= warmup / 4 {
            return;
        }
        for bi in blocks
            .iter()
            .flat_map(|b| self.prep.spec_blocks[b.0].clone())
        {
            let Block::Dense {
                parts, prior_mean, ..
            } = &self.prep.blocks[bi]
            else {
                continue;
            };
            let dim = prior_mean.len();
            if dim > MAX_FITTED_DIM {
                continue;
            }
            let theta = gather_dense(parts, dim, &state.latents);
            let fit = state.dense_fits[bi].get_or_insert_with(|| DenseFit::new(dim));
            fit.push(&theta);
            if sweep.is_multiple_of(REFIT_EVERY) || sweep == warmup {
                if let Some(r) = fit.reference() {
                    state.dense_references[bi] = Some(std::sync::Arc::new(r));
                }
            }
        }
    }
}
