//! The Gaussian reference of the adapted marginal elliptical steps
//! ([`gpm_schedule::EllipseReference::Adapted`]): fitted to a GP column's posterior during
//! warm-up, frozen after it.
//!
//! Elliptical slice sampling of `p(f) ∝ N(f | μ₀, K) L(f)` may take its ellipse from any fixed
//! Gaussian `N(m, R)` if the likelihood it slices is `N(f | μ₀, K) L(f) / N(f | m, R)` (Nishihara,
//! Murray & Adams 2014, "generalised elliptical slice sampling"). Under the GP prior the ellipse
//! is as wide as the prior and a step moves little where the data pin `f` down; about a Gaussian
//! close to the posterior, a step's first angle is accepted most of the time and lands far
//! from the start.
//!
//! The fit is what the blocked sweep already computes: the conditional `f | ω` is
//! `N(E[f | ω], (K⁻¹ + diag a(ω))⁻¹)`, so over a window of warm-up sweeps the mean of the
//! conditional means estimates the posterior mean, and the conditional covariance at the
//! averaged curvature `ā` the posterior covariance less `Cov(E[f | ω])` — the part the sweep
//! moves slowly, which the inflation `c` (sds times `c`) covers. Windows double as the joint
//! hyperparameter moves' do ([`gpm_schedule::SliceScheme::window_ends`]); the reference is
//! frozen when warm-up ends, so every kept draw comes from one fixed, exact kernel.

use super::State;
use crate::gaussian::GpBlock;
use crate::RuntimeError;
use gpm_schedule::BlockId;
use nalgebra::{DMatrix, DVector};

/// One column's running sums over the current adaptation window.
#[derive(Debug, Clone)]
pub(super) struct Window {
    sum_a: Vec<f64>,
    sum_mean: DVector<f64>,
    count: usize,
}

impl Window {
    pub(super) fn new(rows: usize) -> Self {
        Window {
            sum_a: vec![0.0; rows],
            sum_mean: DVector::zeros(rows),
            count: 0,
        }
    }

    /// One sweep's curvature `a(ω)` of the column's conditional and its conditional mean.
    pub(super) fn record(&mut self, a: &[f64], mean: &[f64]) {
        for (s, v) in self.sum_a.iter_mut().zip(a) {
            *s += v;
        }
        for (s, v) in self.sum_mean.iter_mut().zip(mean) {
            *s += v;
        }
        self.count += 1;
    }

    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// A column's reference `N(m, R)`, `R = L Lᵀ` (the inflation included in `L`).
#[derive(Debug, Clone)]
pub struct Reference {
    /// `m`.
    pub mean: DVector<f64>,
    /// `L`, lower-triangular.
    pub factor: DMatrix<f64>,
}

impl Reference {
    /// The reference fitted to a window: `m` its mean conditional mean, `R = c² (K⁻¹ +
    /// diag ā)⁻¹` at the column's prior `gp` and the window's mean curvature `ā`.
    pub(super) fn fit(gp: &GpBlock, w: &Window, inflation: f64) -> Result<Self, RuntimeError> {
        let n = w.count as f64;
        let a: Vec<f64> = w.sum_a.iter().map(|s| s / n).collect();
        let mean = &w.sum_mean / n;
        let sigma = gp.conditional_covariance(&a)? * (inflation * inflation);
        let (chol, _) =
            crate::gaussian::cholesky_jitter(&sigma, "elliptical reference covariance")?;
        let factor = chol.unpack();
        Ok(Reference { mean, factor })
    }
}

impl super::Sampler<'_> {
    /// Before warm-up sweep `sweep` (from 1) of a marginal elliptical step with an adapted
    /// reference on `block`: the first opens each of its columns' windows.
    pub(super) fn open_ellipse_windows(&self, state: &mut State, block: BlockId, sweep: usize) {
        if sweep != 1 {
            return;
        }
        for bi in self.prep.spec_blocks[block.0].clone() {
            if let crate::prepared::Block::Gp { gp, .. } = &self.prep.blocks[bi] {
                state.ellipse_windows[bi] = Some(Window::new(gp.len()));
            }
        }
    }

    /// After warm-up sweep `sweep` of `warmup`, for the step on `block` whose reference
    /// `adapted` says how it adapts: at a window's end each column's reference is fitted to the
    /// window and a new window opened; after the last sweep of warm-up none is (the references
    /// are frozen).
    pub(super) fn adapt_ellipses(
        &self,
        state: &mut State,
        block: BlockId,
        (inflation, first_window): (f64, usize),
        (sweep, warmup): (usize, usize),
    ) {
        let ends = gpm_schedule::SliceScheme::window_ends(first_window, warmup);
        let end = ends.contains(&sweep);
        for bi in self.prep.spec_blocks[block.0].clone() {
            let crate::prepared::Block::Gp { gp, .. } = &self.prep.blocks[bi] else {
                continue;
            };
            if !(end || sweep >= warmup) {
                continue;
            }
            let Some(w) = state.ellipse_windows[bi].take() else {
                continue;
            };
            if end && !w.is_empty() {
                let prior = state.gp_priors[bi].as_deref().unwrap_or(gp);
                // A fit that cannot be factored leaves the reference as it was (the prior's,
                // before the first): the steps stay exact either way.
                if let Ok(r) = Reference::fit(prior, &w, inflation) {
                    state.ellipse_references[bi] = Some(std::sync::Arc::new(r));
                }
            }
            if sweep < warmup {
                state.ellipse_windows[bi] = Some(Window::new(gp.len()));
            }
        }
    }
}
