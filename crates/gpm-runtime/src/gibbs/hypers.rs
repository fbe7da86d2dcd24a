//! Hyperparameters with priors under Gibbs: the schedule's decisions (slice sampling from the
//! likelihood with the auxiliaries integrated out, from one GP's marginal, from a group of GPs
//! that share a kernel, from a dense block's marginal) bound to the data, and the updates
//! themselves. The sweep that calls them, and the blocks they update, live in the
//! parent module.

use super::{JointMove, SharedKernel, SharedLatent, SlicedDense, SlicedHyper, SlicedKernel, State};
use crate::data::Data;
use crate::kernels::HyperValues;
use crate::prepared::{Block, Prepared};
use crate::RuntimeError;
use gpm_schedule::{BlockId, GibbsUpdate, HyperId, Schedule, SliceScheme};
use nalgebra::{DMatrix, DVector};
use rand_chacha::ChaCha8Rng;

impl super::Sampler<'_> {
    /// Every current scalar hyperparameter over the non-scalar base values.
    pub(super) fn hyper_values(&self, state: &State) -> HyperValues {
        let mut hv = self.base.clone();
        hv.scalars.copy_from_slice(&state.hypers);
        hv.vectors.clone_from(&state.vectors);
        hv
    }

    /// The GP priors of a group's latents at the current hyperparameters, one per latent.
    pub(super) fn shared_priors(
        &self,
        sh: &SharedKernel,
        hv: &HyperValues,
    ) -> Result<Vec<crate::gaussian::GpBlock>, RuntimeError> {
        sh.latents
            .iter()
            .map(|sl| {
                let k = crate::kernels::kernel_matrix(&sl.kernel, &sl.inputs, &sl.inputs, hv)?;
                crate::gaussian::GpBlock::new(k, hv.eval(&sl.mean)?)
            })
            .collect()
    }

    /// The joint moves of this run, in slot order: one per GP kernel update, shared-kernel
    /// group and dense block's prior update.
    pub(super) fn joint_moves(&self) -> impl Iterator<Item = (JointMove, &[SlicedHyper])> + '_ {
        let kernels = self.kernels.iter().map(|k| (k.joint, k.hypers.as_slice()));
        let shared = self.shared.iter().map(|g| (g.joint, g.hypers.as_slice()));
        let dense = self
            .dense_scales
            .iter()
            .map(|d| (d.joint, d.hypers.as_slice()));
        kernels.chain(shared).chain(dense)
    }

    /// After warm-up sweep `sweep` (from 1) of `warmup`: record each joint move's current
    /// unconstrained values in its adaptation window, which at a window's end sets its reference
    /// ([`gpm_schedule::SliceScheme::window_ends`]).
    pub(super) fn adapt(&self, state: &mut State, sweep: usize, warmup: usize) {
        for (mv, hs) in self.joint_moves() {
            if let SliceScheme::ReferenceElliptical { first_window, .. } = mv.scheme {
                let ends = SliceScheme::window_ends(first_window, warmup);
                let u = hs.iter().map(|h| h.transform.to_u(h.get(state))).collect();
                state.adaptations[mv.slot].record(sweep, &ends, u);
            }
        }
    }

    /// The schedule's slice move over one update's hyperparameters `hs` on their unconstrained
    /// scales, with `log_gp(values)` the part of their conditional beyond their priors: jointly
    /// about the warm-up reference once warm-up has set one, else one at a time.
    pub(super) fn slice_update(
        &self,
        hs: &[SlicedHyper],
        mv: JointMove,
        state: &mut State,
        log_gp: &dyn Fn(&HyperValues) -> Result<f64, RuntimeError>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let mut hv = self.hyper_values(state);
        let mut evaluations = 0u64;
        // Each hyperparameter's current value and its unconstrained image. The current point
        // maps back to the current value exactly, not through `to_theta(to_u(θ))` (one ulp
        // off as often as not), so that `log_gp` can recognise it (the non-centred move's
        // current point costs nothing) and a move that stays leaves the value as it was.
        let start: Vec<(f64, f64)> = hs
            .iter()
            .map(|h| (h.transform.to_u(h.get(state)), h.get(state)))
            .collect();
        let theta_at = |k: usize, u: f64| -> f64 {
            if u == start[k].0 {
                start[k].1
            } else {
                hs[k].transform.to_theta(u)
            }
        };
        // log prior + log-Jacobian + log_gp at `u` for hyperparameter `k`, set into `hv`.
        let term = |k: usize, u: f64, hv: &mut HyperValues| -> f64 {
            let h = &hs[k];
            let theta = theta_at(k, u);
            let lp = h.prior.log_density(theta);
            h.set_in(hv, theta);
            lp + h.transform.log_jacobian(u)
        };
        let mut finish = |base: f64, hv: &HyperValues| -> f64 {
            evaluations += 1;
            if !base.is_finite() {
                return f64::NEG_INFINITY;
            }
            match log_gp(hv) {
                // A kernel that cannot be factored there has no mass there.
                Ok(m) if m.is_finite() => base + m,
                _ => f64::NEG_INFINITY,
            }
        };
        let reference = match mv.scheme {
            SliceScheme::ReferenceElliptical { inflation, .. } => state.adaptations[mv.slot]
                .reference
                .clone()
                .map(|r| (r, inflation)),
            SliceScheme::Coordinatewise { .. } => None,
        };
        if let Some((reference, c)) = reference.filter(|(r, _)| r.dim() == hs.len()) {
            let u0: Vec<f64> = start.iter().map(|s| s.0).collect();
            let mut logp = |u: &[f64]| -> f64 {
                let mut base = 0.0;
                for (k, &uk) in u.iter().enumerate() {
                    base += term(k, uk, &mut hv);
                }
                finish(base, &hv)
            };
            let (u, _) = crate::reference_ess::step(rng, &u0, &mut logp, &reference, c);
            for (k, (h, uk)) in hs.iter().zip(u).enumerate() {
                h.set(state, theta_at(k, uk));
            }
        } else {
            // Before warm-up sets a reference (or by the schedule's choice): one at a time.
            let (width, max_steps) = match mv.scheme {
                SliceScheme::Coordinatewise { width, max_steps } => (width, max_steps),
                SliceScheme::ReferenceElliptical { .. } => (1.0, 10),
            };
            for (k, h) in hs.iter().enumerate() {
                let mut logp = |u: f64| -> f64 {
                    let base = term(k, u, &mut hv);
                    finish(base, &hv)
                };
                let u = crate::slice::step(rng, start[k].0, &mut logp, width, max_steps)
                    .map_err(|e| self.no_point(h, e))?;
                let theta = theta_at(k, u);
                h.set(state, theta);
                h.set_in(&mut hv, theta);
            }
        }
        state.hyper_evaluations += evaluations;
        Ok(())
    }

    /// A slice step of `h` that could not end, as the run's error: which hyperparameter, its
    /// range, what to do.
    fn no_point(&self, h: &SlicedHyper, e: crate::slice::NoPoint) -> RuntimeError {
        let (lo, hi) = (h.prior.lower(), h.prior.upper());
        let name = self
            .schedule
            .hyper_decls
            .get(h.index)
            .map_or("?", |d| d.name.as_str());
        RuntimeError::Numerical(format!(
            "hyperparameter `{name}` (range [{lo}, {hi}]): {e}; its conditional density is not finite around its value — fix its value, widen its range or check its prior"
        ))
    }

    /// Store a group's GP priors at the current hyperparameters in the chain's state.
    pub(super) fn refresh_shared(
        &self,
        sh: &SharedKernel,
        state: &mut State,
    ) -> Result<(), RuntimeError> {
        let priors = self.shared_priors(sh, &self.hyper_values(state))?;
        for (sl, gp) in sh.latents.iter().zip(priors) {
            // One prior shared by the columns that have it.
            let gp = std::sync::Arc::new(gp);
            for &(bi, _, _) in &sl.blocks {
                state.gp_priors[bi] = Some(gp.clone());
            }
        }
        Ok(())
    }

    /// An integrated group: every block's curvature at once, each hyperparameter from its
    /// conditional with the GPs integrated out, then every block given the new values.
    pub(super) fn sample_shared_group(
        &self,
        sh: &SharedKernel,
        state: &mut State,
        pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        // Per shared latent, per block: (block, latent, column, curvature a, b).
        type Curvature = (usize, usize, usize, Vec<f64>, Vec<f64>);
        let mut curv: Vec<Vec<Curvature>> = Vec::new();
        for sl in &sh.latents {
            let mut per = Vec::new();
            for &(bi, li, c) in &sl.blocks {
                let (a, b) = self.gp_curvature(bi, &self.prep.blocks[bi], false, state, pv);
                per.push((bi, li, c, a, b));
            }
            curv.push(per);
        }
        let log_gp = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let mut total = 0.0;
            for (sl, per) in sh.latents.iter().zip(&curv) {
                let k = crate::kernels::kernel_matrix(&sl.kernel, &sl.inputs, &sl.inputs, hv)?;
                let mean = hv.eval(&sl.mean)?;
                for (_, _, _, a, b) in per {
                    total += crate::gaussian::gp_log_marginal(&k, mean, a, b)?;
                }
            }
            Ok(total)
        };
        self.slice_update(&sh.hypers, sh.joint, state, &log_gp, rng)?;
        self.refresh_shared(sh, state)?;
        for per in &curv {
            for (bi, li, c, a, b) in per {
                let gp = state.gp_priors[*bi].as_ref().expect("refreshed");
                let (f, m) = gp.sample_with_mean(a, b, rng)?;
                let rows = f.len();
                state.latents[*li].rows_mut(c * rows, rows).copy_from(&f);
                state.conditional_means[*li]
                    .rows_mut(c * rows, rows)
                    .copy_from(&m);
            }
        }
        Ok(())
    }

    /// A group whose blocks a likelihood couples, at its leading block `lead` (the first one a
    /// sweep reaches): each hyperparameter from `p(θ | other blocks) ∝ p(θ) Π_b≠lead N(f_b | μ₀,
    /// K_θ) ∫ N(f_lead | μ₀, K_θ) e^(aᵀ…) df_lead`, with the lead block's curvature taken in its
    /// own phase (so, for a collapsed block, with the auxiliaries it integrates out also
    /// integrated out), then the lead block given the new values: a blocked Gibbs step of
    /// (θ, f_lead). The other blocks follow in their turn with the new prior.
    pub(super) fn sample_shared_lead(
        &self,
        sh: &SharedKernel,
        lead: usize,
        collapsed_phase: bool,
        state: &mut State,
        pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let (a, b) = self.gp_curvature(lead, &self.prep.blocks[lead], collapsed_phase, state, pv);
        let latents = state.latents.clone();
        let log_gp = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let mut total = 0.0;
            for (sl, gp) in sh.latents.iter().zip(self.shared_priors(sh, hv)?) {
                for &(bi, latent, column) in &sl.blocks {
                    if bi == lead {
                        total += crate::gaussian::gp_log_marginal(&gp.k, gp.mean, &a, &b)?;
                        continue;
                    }
                    let rows = gp.len();
                    let f = DVector::from_fn(rows, |i, _| latents[latent][column * rows + i]);
                    total += gp.log_prior(&f)?;
                }
            }
            Ok(total)
        };
        self.slice_update(&sh.hypers, sh.joint, state, &log_gp, rng)?;
        self.refresh_shared(sh, state)?;
        let (li, c) = sh
            .latents
            .iter()
            .flat_map(|sl| sl.blocks.iter())
            .find(|blk| blk.0 == lead)
            .map(|blk| (blk.1, blk.2))
            .expect("lead block in its group");
        let gp = state.gp_priors[lead].as_ref().expect("refreshed");
        let (f, m) = gp.sample_with_mean(&a, &b, rng)?;
        let rows = f.len();
        state.latents[li].rows_mut(c * rows, rows).copy_from(&f);
        state.conditional_means[li]
            .rows_mut(c * rows, rows)
            .copy_from(&m);
        Ok(())
    }

    /// Slice-sampling updates of the non-conjugate likelihood hyperparameters, each on its
    /// unconstrained scale: log prior + log-Jacobian + Σᵢ log p(yᵢ | ηᵢ, θ).
    pub(super) fn slice_hypers(
        &self,
        state: &mut State,
        pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let mut stack = Vec::with_capacity(64);
        for h in &self.sliced {
            let t = h.transform;
            let u0 = t.to_u(h.get(state));
            let mut logp = |u: f64| -> f64 {
                let theta = t.to_theta(u);
                let lp = h.prior.log_density(theta);
                if !lp.is_finite() {
                    return f64::NEG_INFINITY;
                }
                h.set(state, theta);
                let mut total = lp + t.log_jacobian(u);
                for &f in &h.factors {
                    let fp = &self.schedule.factors[f];
                    let tape = fp
                        .log_density
                        .as_ref()
                        .expect("the schedule slices only factors with a log-density");
                    total += self.prep.factors[f].tape_sum(
                        tape,
                        pv,
                        &state.aux[f],
                        &state.hypers,
                        &mut stack,
                    );
                }
                if total.is_nan() {
                    f64::NEG_INFINITY
                } else {
                    total
                }
            };
            let u =
                crate::slice::step(rng, u0, &mut logp, 1.0, 20).map_err(|e| self.no_point(h, e))?;
            h.set(state, t.to_theta(u));
        }
        Ok(())
    }

    /// Slice-sampling updates of a GP's prior hyperparameters given the auxiliaries (the GP
    /// integrated out), one coordinate at a time on the unconstrained scale; leaves the chain's
    /// GP prior factored at the new values.
    pub(super) fn slice_kernel(
        &self,
        sk: &SlicedKernel,
        state: &mut State,
        a: &[f64],
        b: &[f64],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        // A block with the generic update: θ given its current values, `log N(f | μ₀, K_θ)`.
        let values = sk.given_values.then(|| {
            let Block::Gp { latent, column, gp } = &self.prep.blocks[sk.block] else {
                unreachable!("a kernel update of a full GP block")
            };
            let rows = gp.len();
            DVector::from_fn(rows, |i, _| state.latents[*latent][column * rows + i])
        });
        if let Some(z) = &sk.inducing {
            return self.slice_sparse_kernel(sk, z, state, a, b, rng);
        }
        if let (None, Some(sur)) = (&values, &sk.surrogate) {
            if self.surrogate_kernel(sk, sur, state, a, b, rng)? {
                return Ok(());
            }
        }
        let kernel = super::kernel_marginal::KernelEvaluations::new(sk);
        let log_gp = |hv: &HyperValues| kernel.log_gp(hv, values.as_ref(), a, b);
        self.slice_update(&sk.hypers, sk.joint, state, &log_gp, rng)?;
        let prior = kernel.prior_at(&self.hyper_values(state), a)?;
        state.gp_priors[sk.block] = Some(std::sync::Arc::new(prior));
        Ok(())
    }

    /// [`Sampler::slice_kernel`] for a sparse GP: its column integrated out under its FITC
    /// prior (inducing inputs `z`) at each candidate value; leaves the chain's sparse prior at
    /// the new values.
    fn slice_sparse_kernel(
        &self,
        sk: &SlicedKernel,
        z: &DMatrix<f64>,
        state: &mut State,
        a: &[f64],
        b: &[f64],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        // A sparse column integrated out under its FITC prior at each candidate value.
        let prior_at = |hv: &HyperValues| -> Result<super::SparsePrior, RuntimeError> {
            let sp = crate::sparse::SparseGp::new(&sk.kernel, hv, z.clone(), hv.eval(&sk.mean)?)?;
            let (phi, kt) = sp.features(&sk.inputs)?;
            Ok(super::SparsePrior { sp, phi, kt })
        };
        let log_gp = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let p = prior_at(hv)?;
            p.sp.log_marginal(&p.phi, &p.kt, a, b)
        };
        self.slice_update(&sk.hypers, sk.joint, state, &log_gp, rng)?;
        state.sparse_priors[sk.block] = Some(prior_at(&self.hyper_values(state))?);
        Ok(())
    }

    /// The original log-densities of the factors a non-centred move evaluates (its
    /// `interweave`), summed over their observations, with the latents at `at`.
    pub(super) fn interwoven_log_lik(
        &self,
        factors: &[usize],
        at: &[DVector<f64>],
        aux: &[Vec<Vec<f64>>],
        hypers: &[f64],
    ) -> Result<f64, RuntimeError> {
        let pv: Vec<Vec<f64>> = self.prep.preds.iter().map(|p| p.eval(at)).collect();
        let mut stack = Vec::with_capacity(64);
        let mut total = 0.0;
        for &fi in factors {
            let tape = self.schedule.factors[fi]
                .log_density
                .as_ref()
                .ok_or_else(|| {
                    RuntimeError::Inconsistent("an interwoven factor without a log-density".into())
                })?;
            total += self.prep.factors[fi].tape_sum(tape, &pv, &aux[fi], hypers, &mut stack);
        }
        Ok(total)
    }

    /// The non-centred move of a GP's kernel hyperparameters after its draw
    /// ([`gpm_schedule::GpKernelUpdate::interweave`]): with `z = L_θ⁻¹(f − μ₀)` held, θ from
    /// `p(θ) Π_i p(y_i | f = μ₀ + L_θ z)` (the factors' original log-densities, the auxiliaries
    /// integrated out), `f` moved with it, then every auxiliary drawn again given the new `f` —
    /// together an exact update of `(θ, ω)` given `z`.
    pub(super) fn interweave_kernel(
        &self,
        sk: &SlicedKernel,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let Block::Gp { latent, column, gp } = &self.prep.blocks[sk.block] else {
            return Err(RuntimeError::Inconsistent(
                "a non-centred kernel move of a block that is not a full GP".into(),
            ));
        };
        let (latent, column, rows) = (*latent, *column, gp.len());
        if sk.interweave_variance_only {
            let gpm_schedule::BoundKernel::Scale { variance, .. } = &sk.kernel else {
                return Err(RuntimeError::Inconsistent(
                    "a non-centred move of a kernel's variance alone on a kernel with none".into(),
                ));
            };
            return self.interweave_variance(sk, variance, (latent, column, rows), state, rng);
        }
        let prior = state.gp_priors[sk.block].as_deref().unwrap_or(gp);
        let centred = DVector::from_fn(rows, |i, _| {
            state.latents[latent][column * rows + i] - prior.mean
        });
        let z = prior
            .chol
            .l_dirty()
            .solve_lower_triangular(&centred)
            .ok_or_else(|| RuntimeError::Numerical("triangular solve failed".into()))?;
        let (aux, hypers, latents) = (
            &state.aux.clone(),
            &state.hypers.clone(),
            state.latents.clone(),
        );
        // At the current values `f` does not move: the likelihood there needs no kernel matrix
        // and no factorisation (one of the move's 6-7 evaluations per sweep on a GP classifier).
        let current = self.hyper_values(state);
        // `f = μ₀ + L_θ z` and its prior at values `hv`.
        let moved =
            |hv: &HyperValues| -> Result<(crate::gaussian::GpBlock, DVector<f64>), RuntimeError> {
                let k = sk.training(&sk.kernel, hv)?;
                let gp = crate::gaussian::GpBlock::new(k, hv.eval(&sk.mean)?)?;
                let mut f = gp.chol.l_dirty() * &z;
                f.add_scalar_mut(gp.mean);
                Ok((gp, f))
            };
        type Last = (HyperValues, crate::gaussian::GpBlock, DVector<f64>);
        let last: std::cell::RefCell<Option<Last>> = Default::default();
        let log_lik = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let moved_to = if *hv == current {
                None
            } else {
                Some(moved(hv)?)
            };
            let mut at = latents.clone();
            if let Some((_, f)) = &moved_to {
                for i in 0..rows {
                    at[latent][column * rows + i] = f[i];
                }
            }
            let total = self.interwoven_log_lik(&sk.interweave, &at, aux, hypers)?;
            if let Some((gp, f)) = moved_to {
                *last.borrow_mut() = Some((hv.clone(), gp, f));
            }
            Ok(total)
        };
        self.slice_update(&sk.hypers, sk.joint, state, &log_lik, rng)?;
        let hv = self.hyper_values(state);
        if hv == current {
            // Not moved (a bracket shrunk to the current point): f, its prior and the
            // auxiliaries stand as they are.
            return Ok(());
        }
        let (gp, f) = match last.into_inner() {
            Some((at, gp, f)) if at == hv => (gp, f),
            _ => moved(&hv)?,
        };
        for i in 0..rows {
            state.latents[latent][column * rows + i] = f[i];
        }
        state.gp_priors[sk.block] = Some(std::sync::Arc::new(gp));
        let pv = self.predictors(state);
        self.sample_aux(state, &pv, rng)
    }

    /// [`Sampler::interweave_kernel`] of the kernel's variance `s` alone
    /// ([`gpm_schedule::GpKernelUpdate::interweave_variance_only`]): with `K = s K₁`,
    /// `L_θ = √s L₁`, so holding `z = L_θ⁻¹(f − μ₀)` a new `s'` sets `f' = μ₀ + √(s'/s)(f − μ₀)`
    /// and the prior's factor to `√(s'/s) L_θ` — each evaluation `O(N)`, no kernel matrix and no
    /// factorisation. `s`'s hyperparameters one at a time by slice sampling (a reference of the
    /// joint move does not apply to a part of it), then the auxiliaries drawn again.
    fn interweave_variance(
        &self,
        sk: &SlicedKernel,
        variance: &gpm_schedule::Tape,
        (latent, column, rows): (usize, usize, usize),
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let Block::Gp { gp, .. } = &self.prep.blocks[sk.block] else {
            return Err(RuntimeError::Inconsistent(
                "a non-centred move of a block that is not a full GP".into(),
            ));
        };
        let prior = state.gp_priors[sk.block].clone();
        let prior: &crate::gaussian::GpBlock = prior.as_deref().unwrap_or(gp);
        let hs: Vec<SlicedHyper> = sk
            .hypers
            .iter()
            .filter(|h| variance.slots().any(|v| v == h.index))
            .cloned()
            .collect();
        let v0 = self.hyper_values(state).eval(variance)?;
        let f0 = DVector::from_fn(rows, |i, _| state.latents[latent][column * rows + i]);
        let (aux, hypers, latents) = (
            &state.aux.clone(),
            &state.hypers.clone(),
            state.latents.clone(),
        );
        let log_lik = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let c = (hv.eval(variance)? / v0).sqrt();
            let mut at = latents.clone();
            for i in 0..rows {
                at[latent][column * rows + i] = prior.mean + c * (f0[i] - prior.mean);
            }
            self.interwoven_log_lik(&sk.interweave, &at, aux, hypers)
        };
        // One at a time, at the width of the joint move's warm-up phase (its slot's adaptation
        // is recorded by `Sampler::adapt` from the joint move's values, not here).
        let mv = JointMove {
            slot: sk.joint.slot,
            scheme: gpm_schedule::SliceScheme::Coordinatewise {
                width: 1.0,
                max_steps: 10,
            },
        };
        // Its evaluations are `O(N)`, not factorisations: `hyper_evaluations` counts what a
        // full-Bayes sweep costs beyond a fixed one in kernel matrices and factorisations.
        let counted = state.hyper_evaluations;
        self.slice_update(&hs, mv, state, &log_lik, rng)?;
        state.hyper_evaluations = counted;
        let v1 = self.hyper_values(state).eval(variance)?;
        if v1 == v0 {
            return Ok(());
        }
        let c = (v1 / v0).sqrt();
        for i in 0..rows {
            state.latents[latent][column * rows + i] = prior.mean + c * (f0[i] - prior.mean);
        }
        state.gp_priors[sk.block] = Some(std::sync::Arc::new(prior.scaled(c * c)));
        let pv = self.predictors(state);
        self.sample_aux(state, &pv, rng)
    }

    /// The prior means and sds of a dense block's coefficients at hyperparameter values, from
    /// each latent's `normal(mean, scale)` prior; positive finite sds only.
    pub(super) fn dense_prior(
        &self,
        parts: &[(usize, usize, usize)],
        hv: &HyperValues,
    ) -> Result<(DVector<f64>, DVector<f64>), RuntimeError> {
        let dim: usize = parts.iter().map(|p| p.2).sum();
        let (mut m, mut sd) = (DVector::zeros(dim), DVector::zeros(dim));
        for &(li, off, len) in parts {
            let gpm_schedule::BoundPrior::Normal {
                mean,
                scale,
                data_slot,
                ..
            } = &self.schedule.priors[li]
            else {
                return Err(RuntimeError::Inconsistent(
                    "a dense block without a normal prior".into(),
                ));
            };
            let columns = &self.prep.prior_data[li];
            let (mv, sv) =
                crate::prepared::normal_prior_at(hv, (mean, scale), *data_slot, columns, len)?;
            for j in 0..len {
                // A flat prior's scale is infinite by construction (zero precision).
                if !(sv[j] > 0.0 && mv[j].is_finite()) || sv[j].is_nan() {
                    return Err(RuntimeError::Numerical(format!(
                        "the prior scale of `{}` is {}",
                        self.schedule.latents[li].name, sv[j]
                    )));
                }
                m[off + j] = mv[j];
                sd[off + j] = sv[j];
            }
        }
        Ok((m, sd))
    }
}

/// The schedule's hyperparameter updates bound to this run: slice sampling from the likelihood,
/// from one GP's marginal, from a group of GPs, from a dense block's marginal. Nothing is decided here: [`gpm_schedule::hypers`] decided it.
pub(super) type HyperPlans = (
    Vec<SlicedHyper>,
    Vec<SlicedKernel>,
    Vec<SharedKernel>,
    Vec<SlicedDense>,
);

pub(super) fn bind_hypers(
    schedule: &Schedule,
    data: &Data,
    prep: &Prepared,
    values: &HyperValues,
) -> Result<HyperPlans, RuntimeError> {
    let binding = HyperBinding {
        schedule,
        data,
        prep,
        values,
    };
    let sliced = binding.entries(&schedule.likelihood_hypers)?;
    let kernels = schedule
        .kernel_updates
        .iter()
        .enumerate()
        .map(|(slot, k)| binding.kernel(k, slot))
        .collect::<Result<Vec<_>, _>>()?;
    let mut shared = Vec::new();
    for g in &schedule.kernel_groups {
        shared.push(SharedKernel {
            hypers: binding.entries(&g.hypers)?,
            joint: JointMove {
                slot: kernels.len() + shared.len(),
                scheme: g.slice,
            },
            latents: g
                .latents
                .iter()
                .map(|l| shared_latent(schedule, data, prep, l.0))
                .collect::<Result<_, _>>()?,
        });
    }
    let dense = schedule
        .dense_updates
        .iter()
        .enumerate()
        .map(|(i, d)| binding.dense(d, kernels.len() + shared.len() + i))
        .collect::<Result<Vec<_>, RuntimeError>>()?;
    Ok((sliced, kernels, shared, dense))
}

/// What binding the hyperparameter updates reads.
struct HyperBinding<'a> {
    schedule: &'a Schedule,
    data: &'a Data,
    prep: &'a Prepared,
    values: &'a HyperValues,
}

impl HyperBinding<'_> {
    /// The first runtime block of a schedule block.
    fn first_block(&self, b: BlockId) -> usize {
        self.prep.spec_blocks[b.0].start
    }

    /// The sliced coordinates of hyperparameters: a scalar is one, a vector (ARD) one per entry.
    fn entries(&self, ids: &[HyperId]) -> Result<Vec<SlicedHyper>, RuntimeError> {
        let mut out = Vec::new();
        for &h in ids {
            out.extend(self.entry(h)?);
        }
        Ok(out)
    }

    fn entry(&self, hid: HyperId) -> Result<Vec<SlicedHyper>, RuntimeError> {
        let (schedule, prep) = (self.schedule, self.prep);
        let h = &schedule.hyper_decls[hid.0];
        let gpm_ir::HyperKind::Prior { prior } = &h.kind else {
            return Err(RuntimeError::Inconsistent(format!(
                "the schedule samples `{}`, which has no prior",
                h.name
            )));
        };
        let entries: Vec<Option<usize>> = match self.values.vector(hid) {
            Some(v) => (0..v.len()).map(Some).collect(),
            None if prep.hypers[hid.0].is_nan() => {
                return Err(RuntimeError::MissingData(format!(
                    "no value for `{}`",
                    h.name
                )))
            }
            None => vec![None],
        };
        let index = hid.0;
        let factors = match &schedule.hyper_steps[hid.0].gibbs {
            GibbsUpdate::Likelihood { factors } => factors.iter().map(|f| f.0).collect(),
            _ => Vec::new(),
        };
        Ok(entries
            .into_iter()
            .map(|entry| SlicedHyper {
                index,
                entry,
                prior: prior.clone(),
                transform: crate::slice::Transform::for_hyper(prior),
                factors: factors.clone(),
            })
            .collect())
    }

    /// One GP's kernel update (joint move `slot`): its kernel, mean and inputs, the inducing
    /// inputs of a sparse GP, the squared distances kept where the kernel reads only them, and
    /// the surrogate transition where scheduled.
    fn kernel(
        &self,
        k: &gpm_schedule::GpKernelUpdate,
        slot: usize,
    ) -> Result<SlicedKernel, RuntimeError> {
        let bi = self.first_block(k.block);
        let (latent, inducing) = match &self.prep.blocks[bi] {
            Block::Gp { latent, .. } => (*latent, None),
            Block::Sparse { latent, sp, .. } => (*latent, Some(sp.z.clone())),
            Block::Dense { .. } => {
                return Err(RuntimeError::Inconsistent(
                    "a kernel update of a dense block".into(),
                ))
            }
        };
        let sl = shared_latent(self.schedule, self.data, self.prep, latent)?;
        let sqdist = (inducing.is_none()
            && crate::kernels::uses_scalar_distances(&sl.kernel)
            && sl.inputs.nrows() <= crate::kernels::MAX_KEPT_DISTANCES)
            .then(|| std::sync::Arc::new(crate::kernels::squared_distances(&sl.inputs)));
        let surrogate = match &inducing {
            None => super::surrogate::Surrogate::bind(k.surrogate, &sl.inputs)?,
            Some(_) => None,
        };
        Ok(SlicedKernel {
            block: bi,
            hypers: self.entries(&k.hypers)?,
            inducing,
            given_values: k.given_values,
            kernel: sl.kernel,
            mean: sl.mean,
            inputs: sl.inputs,
            joint: JointMove {
                slot,
                scheme: k.slice,
            },
            interweave: k.interweave.iter().map(|f| f.0).collect(),
            interweave_variance_only: k.interweave_variance_only,
            surrogate,
            sqdist,
        })
    }

    /// A dense block's prior-scale update (joint move `slot`), with its non-centred, level-held
    /// and Laplace-standardised moves bound where scheduled.
    fn dense(
        &self,
        d: &gpm_schedule::DenseScaleUpdate,
        slot: usize,
    ) -> Result<SlicedDense, RuntimeError> {
        let (schedule, prep) = (self.schedule, self.prep);
        let block = self.first_block(d.block);
        let interweave: Vec<usize> = d.interweave.iter().map(|f| f.0).collect();
        let laplace = match &prep.blocks[block] {
            Block::Dense {
                parts, prior_mean, ..
            } if d.laplace && prior_mean.len() <= gpm_schedule::LAPLACE_MAX_DIM => {
                super::laplace_dense::readings(schedule, prep, parts, &interweave)
            }
            _ => None,
        };
        Ok(SlicedDense {
            laplace,
            level: super::interweave_dense::LevelShear::bind(
                schedule,
                prep,
                block,
                &d.level,
                &interweave,
            )?,
            block,
            hypers: self.entries(&d.hypers)?,
            given_values: d.given_values,
            joint: JointMove {
                slot,
                scheme: d.slice,
            },
            interweave,
            interweave_moves: d.interweave_moves,
        })
    }
}

/// A full-GP latent's kernel, mean, inputs and blocks `(block, latent, column)`.
fn shared_latent(
    schedule: &Schedule,
    data: &Data,
    prep: &Prepared,
    li: usize,
) -> Result<SharedLatent, RuntimeError> {
    let gpm_schedule::BoundPrior::Gp {
        inputs,
        kernel,
        mean,
        ..
    } = &schedule.priors[li]
    else {
        return Err(RuntimeError::Inconsistent(
            "a GP block without a GP prior".into(),
        ));
    };
    let x = data
        .inputs(inputs)
        .ok_or_else(|| RuntimeError::MissingData(format!("no inputs `{inputs}`")))?;
    let blocks = prep
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(bi, b)| match b {
            Block::Gp { latent, column, .. } if *latent == li => Some((bi, li, *column)),
            _ => None,
        })
        .collect();
    Ok(SharedLatent {
        kernel: kernel.clone(),
        mean: mean.clone(),
        inputs: x,
        blocks,
    })
}
