//! The chain's log joint density (`lp__`) and its log-likelihood: the original factors' log-densities, the sampled hyperparameters' priors and the Gaussian blocks' priors.

use super::*;

impl<'a> Sampler<'a> {
    /// Log joint density up to a constant: Σ log-likelihood + Σ Gaussian log-priors.
    pub fn log_joint(&self, state: &State) -> f64 {
        self.log_joint_at(state, &self.predictors(state))
    }

    /// [`Sampler::log_joint`] with the predictors' values at the state, `pv`, already known.
    pub(super) fn log_joint_at(&self, state: &State, pv: &[Vec<f64>]) -> f64 {
        let mut lp = self.log_likelihood_at(state, pv);
        // Priors of the sampled hyperparameters (the others are constants).
        for hp in &self.schedule.hypers {
            lp += hp.prior.log_density(state.hypers[hp.hyper.0]);
        }
        for h in self
            .sliced
            .iter()
            .chain(self.kernels.iter().flat_map(|k| k.hypers.iter()))
            .chain(self.shared.iter().flat_map(|s| s.hypers.iter()))
            .chain(self.dense_scales.iter().flat_map(|d| d.hypers.iter()))
        {
            lp += h.prior.log_density(h.get(state));
        }
        // Sampled class scales (thesis §7.4.3): their declared prior, entry by entry.
        for step in &self.schedule.hyper_steps {
            let sampled = matches!(step.gibbs, gpm_schedule::GibbsUpdate::ClassScales { .. });
            if let (true, gpm_ir::HyperKind::Prior { prior }) =
                (sampled, &self.schedule.hyper_decls[step.hyper.0].kind)
            {
                for &t in &state.vectors[step.hyper.0] {
                    lp += prior.log_density(t);
                }
            }
        }
        for (bi, b) in self.prep.blocks.iter().enumerate() {
            match b {
                Block::Gp { latent, column, gp } => {
                    let gp = state.gp_priors[bi].as_deref().unwrap_or(gp);
                    let rows = gp.len();
                    let d = DVector::from_fn(rows, |i, _| {
                        state.latents[*latent][column * rows + i] - gp.mean
                    });
                    let v = crate::linalg::solve_lower_vec(gp.chol.l_dirty(), &d);
                    // −½ log|K| matters once K changes from draw to draw.
                    let half_log_det: f64 =
                        gp.chol.l_dirty().diagonal().iter().map(|x| x.ln()).sum();
                    lp -= 0.5 * v.norm_squared() + half_log_det;
                }
                Block::Sparse {
                    latent, column, sp, ..
                } => {
                    // −½‖v‖² − ½ Σ ε_i²/k̃_i, ε = f − μ₀ − Φᵀv (the FITC prior's density).
                    let feats = match &state.sparse_priors[bi] {
                        Some(own) => Some((&own.phi, &own.kt)),
                        None => self.sparse_feats[bi].as_ref().map(|(p, k)| (p, k)),
                    };
                    let (Some(v), Some((phi, kt))) = (&state.sparse_v[bi], feats) else {
                        continue;
                    };
                    let rows = kt.len();
                    let fv = phi.tr_mul(v);
                    lp -= 0.5 * v.norm_squared();
                    for i in 0..rows {
                        if kt[i] > 0.0 {
                            let e = state.latents[*latent][column * rows + i] - sp.mean - fv[i];
                            lp -= 0.5 * (e * e / kt[i] + kt[i].ln());
                        }
                    }
                }
                Block::Dense {
                    parts,
                    prior_mean,
                    prior_sd,
                } => {
                    let (prior_mean, prior_sd) = match &state.dense_priors[bi] {
                        Some((m, sd)) => (m, sd),
                        None => (prior_mean, prior_sd),
                    };
                    for (li, off, len) in parts {
                        for j in 0..*len {
                            // A flat prior's log-density is an improper constant.
                            if prior_sd[off + j].is_infinite() {
                                continue;
                            }
                            let z =
                                (state.latents[*li][j] - prior_mean[off + j]) / prior_sd[off + j];
                            // −log sd matters once the sd changes from draw to draw.
                            lp -= 0.5 * z * z + prior_sd[off + j].ln();
                        }
                    }
                }
            }
        }
        lp
    }

    /// Σ_i log p(y_i | η_i) of every factor at the state.
    pub fn log_likelihood_at(&self, state: &State, pv: &[Vec<f64>]) -> f64 {
        let mut stack = Vec::new();
        let mut total = 0.0;
        for (f, fp) in self.schedule.factors.iter().enumerate() {
            if let Some(bound) = &self.labels[f] {
                let c = fp
                    .categorical
                    .as_ref()
                    .expect("a factor with bound labels is categorical");
                let z = state.latents[c.latent_id.0].as_slice();
                let theta = crate::categorical::scales(c, &state.vectors);
                total += marginal_elliptical::categorical_log_lik(z, bound, theta, 0.0);
                continue;
            }
            let Some(tape) = &fp.log_density else {
                continue;
            };
            total +=
                self.prep.factors[f].tape_sum(tape, pv, &state.aux[f], &state.hypers, &mut stack);
        }
        total
    }
}
