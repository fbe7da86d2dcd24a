//! The logistic-softmax's auxiliaries under Gibbs (thesis Algorithm 4 with §7.4.1-7.4.3): per
//! observation `λ` with the counts integrated out, then (a scaled link with a Gamma prior) the
//! class scales θ with the counts integrated out, then the counts and the Pólya-Gamma
//! variables. Each draw is from a conditional of the joint with the not-yet-redrawn variables
//! integrated out, and those are redrawn right after: a valid partially collapsed sweep.

use super::*;
use crate::categorical::{scales, BoundCategorical};
use gpm_schedule::GibbsUpdate;

impl Sampler<'_> {
    /// The scales' hyperparameter and Gamma prior `(shape, rate)` when Gibbs samples them.
    fn sampled_scales(
        &self,
        c: &gpm_schedule::CategoricalProgram,
    ) -> Option<(gpm_schedule::HyperId, f64, f64)> {
        let h = c.scale?;
        match self.schedule.hyper_steps.get(h.0)?.gibbs {
            GibbsUpdate::ClassScales { shape, rate, .. } => Some((h, shape, rate)),
            _ => None,
        }
    }

    /// λ | f, θ; θ | λ, f, then the scales' sum given their ratios and λ | f, θ again (when
    /// sampled); n | λ, θ, f; ω | n, f.
    pub(super) fn sample_categorical_aux(
        &self,
        f: usize,
        fp: &FactorProgram,
        bound: &BoundCategorical,
        state: &mut State,
        _pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let c = fp.categorical.as_ref().expect("categorical");
        let (n, columns) = (bound.labels.len(), bound.columns);
        let sampled = self.sampled_scales(c);
        let State {
            latents,
            cat,
            vectors,
            ..
        } = state;
        let z = &latents[c.latent_id.0];
        let (lambda, counts, omega) = cat[f].as_mut().expect("categorical auxiliaries");
        let mut theta = scales(c, vectors).to_vec();
        let mut w = Vec::with_capacity(columns + 1);
        // λ with the counts integrated out (§7.4.1): Σ_n Π_c Po(n_c | λθ_c) σ(−η_c)^n_c
        // = e^(−λ Σ_c θ_c σ(η_c)), times the fixed class's e^(−λ θ_K D) under the bijective
        // link (§7.4.2), so λ | η, θ ~ Gamma(1, Σ_k w_k).
        let mut lambda_at = |i: usize, theta: &[f64], rng: &mut ChaCha8Rng| {
            bound
                .weights(theta)
                .weights(|k| z[k * n + i], columns, &mut w);
            draw::gamma(rng, 1.0, w.iter().sum())
        };
        let counts_at = |i: usize,
                         theta: &[f64],
                         lambda: f64,
                         counts: &mut DMatrix<f64>,
                         omega: &mut DMatrix<f64>,
                         rng: &mut ChaCha8Rng|
         -> Result<(), RuntimeError> {
            let weights = bound.weights(theta);
            for k in 0..columns {
                let eta = z[k * n + i];
                let s = 1.0 / (1.0 + eta.exp()); // σ(−η)
                counts[(i, k)] = draw::poisson(rng, lambda * weights.scale(k) * s)?;
                let y = if bound.labels[i] == k { 1.0 } else { 0.0 };
                omega[(i, k)] = draw::pg(rng, y + counts[(i, k)], eta)?;
            }
            Ok(())
        };
        let Some((h, shape, rate)) = sampled else {
            for i in 0..n {
                lambda[i] = lambda_at(i, &theta, rng)?;
                counts_at(i, &theta, lambda[i], counts, omega, rng)?;
            }
            return Ok(());
        };
        for i in 0..n {
            lambda[i] = lambda_at(i, &theta, rng)?;
        }
        // θ_k | λ, f ~ Gamma(a + #{y = k}, b + Σ_i λ_i σ(f_ik)) with the counts integrated out
        // (§7.4.3); `D` in place of `σ(f_ik)` for the fixed class.
        for (k, t) in theta.iter_mut().enumerate() {
            let labelled = bound.labels.iter().filter(|&&y| y == k).count() as f64;
            let exposure: f64 = (0..n)
                .map(|i| {
                    lambda[i]
                        * if k < columns {
                            gpm_special::logistic(z[k * n + i])
                        } else {
                            gpm_library::likelihood::FIXED_CLASS_WEIGHT
                        }
                })
                .sum();
            *t = draw::gamma(rng, shape + labelled, rate + exposure)?;
        }
        // The likelihood does not see the scales' common factor (θ → cθ leaves every
        // w_k / Σ_j w_j as it is), so given their ratios the sum has its prior's law: the
        // ratios of independent Gamma(a, b) are Dirichlet(a), independent of their sum
        // ~ Gamma(K a, b). Drawn afresh (λ and the counts integrated out), then λ again given
        // the new scales. Without it the sum moves only through λ: on iris and wine
        // (`bench/softmax_links.py`, 2 × 1 000 draws) the worst bulk ESS was 38 and 35, with it
        // 141 and 81 (the scales then couple with their columns' levels).
        let sum: f64 = theta.iter().sum();
        let fresh = draw::gamma(rng, shape * theta.len() as f64, rate)?;
        theta.iter_mut().for_each(|t| *t *= fresh / sum);
        for i in 0..n {
            lambda[i] = lambda_at(i, &theta, rng)?;
        }
        for i in 0..n {
            counts_at(i, &theta, lambda[i], counts, omega, rng)?;
        }
        vectors[h.0] = theta;
        Ok(())
    }
}
