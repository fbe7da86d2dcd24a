//! Hyperparameters with priors under Gibbs: which update each one gets (slice sampling from the
//! likelihood with the auxiliaries integrated out, from one GP's marginal, from a group of GPs
//! that share a kernel, from a dense block's marginal, or held with the reason), and the
//! updates themselves. The sweep that calls them, and the blocks they update, live in the
//! parent module.

use super::{SharedKernel, SharedLatent, SlicedDense, SlicedHyper, SlicedKernel, State};
use crate::data::Data;
use crate::kernels::HyperValues;
use crate::prepared::{Block, Prepared, Slot};
use crate::RuntimeError;
use gpm_ir::{Model, Shape};
use gpm_schedule::Schedule;
use nalgebra::DVector;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

impl super::Sampler<'_> {
    /// Every current scalar hyperparameter over the non-scalar base values.
    pub(super) fn hyper_values(&self, state: &State) -> HyperValues {
        let mut hv = self.base.clone();
        for (k, (name, _)) in self.prep.hypers.iter().enumerate() {
            hv.scalars.insert(name.clone(), state.hypers[k]);
        }
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

    /// Slice sampling of one shared hyperparameter on its unconstrained scale, with
    /// `log_gp(values)` the GP part of its conditional.
    pub(super) fn slice_one(
        &self,
        h: &SlicedHyper,
        state: &mut State,
        log_gp: &dyn Fn(&HyperValues) -> Result<f64, RuntimeError>,
        rng: &mut ChaCha8Rng,
    ) {
        let t = h.transform;
        let name = self.prep.hypers[h.index].0.clone();
        let mut hv = self.hyper_values(state);
        let u0 = t.to_u(state.hypers[h.index]);
        let mut logp = |u: f64| -> f64 {
            let theta = t.to_theta(u);
            let lp = crate::slice::log_prior(&h.prior, theta);
            if !lp.is_finite() {
                return f64::NEG_INFINITY;
            }
            hv.scalars.insert(name.clone(), theta);
            match log_gp(&hv) {
                // A kernel that cannot be factored there has no mass there.
                Ok(m) if m.is_finite() => lp + t.log_jacobian(u) + m,
                _ => f64::NEG_INFINITY,
            }
        };
        let u = crate::slice::step(rng, u0, &mut logp, 1.0, 10);
        state.hypers[h.index] = t.to_theta(u);
    }

    /// Store a group's GP priors at the current hyperparameters in the chain's state.
    pub(super) fn refresh_shared(
        &self,
        sh: &SharedKernel,
        state: &mut State,
    ) -> Result<(), RuntimeError> {
        let priors = self.shared_priors(sh, &self.hyper_values(state))?;
        for (sl, gp) in sh.latents.iter().zip(priors) {
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
        let mut curv: Vec<Vec<(usize, usize, usize, Vec<f64>, Vec<f64>)>> = Vec::new();
        for sl in &sh.latents {
            let mut per = Vec::new();
            for &(bi, li, c) in &sl.blocks {
                let (a, b) = self.gp_curvature(bi, &self.prep.blocks[bi], false, state, pv);
                per.push((bi, li, c, a, b));
            }
            curv.push(per);
        }
        for h in &sh.hypers {
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
            self.slice_one(h, state, &log_gp, rng);
        }
        self.refresh_shared(sh, state)?;
        for per in &curv {
            for (bi, li, c, a, b) in per {
                let gp = state.gp_priors[*bi].as_ref().expect("refreshed");
                let f = gp.sample(a, b, rng)?;
                let rows = f.len();
                for i in 0..rows {
                    state.latents[*li][c * rows + i] = f[i];
                }
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
        for h in &sh.hypers {
            let log_gp = |hv: &HyperValues| -> Result<f64, RuntimeError> {
                let mut total = 0.0;
                for (sl, gp) in sh.latents.iter().zip(self.shared_priors(sh, hv)?) {
                    for &(bi, latent, column) in &sl.blocks {
                        if bi == lead {
                            total += crate::gaussian::gp_log_marginal(&gp.k, gp.mean, &a, &b)?;
                            continue;
                        }
                        let rows = gp.len();
                        let d = DVector::from_fn(rows, |i, _| {
                            latents[latent][column * rows + i] - gp.mean
                        });
                        let v = gp
                            .chol
                            .l_dirty()
                            .solve_lower_triangular(&d)
                            .ok_or_else(|| {
                                RuntimeError::Numerical("triangular solve failed".into())
                            })?;
                        let half_log_det: f64 =
                            gp.chol.l_dirty().diagonal().iter().map(|x| x.ln()).sum();
                        total -= 0.5 * v.norm_squared() + half_log_det;
                    }
                }
                Ok(total)
            };
            self.slice_one(h, state, &log_gp, rng);
        }
        self.refresh_shared(sh, state)?;
        let (li, c) = sh
            .latents
            .iter()
            .flat_map(|sl| sl.blocks.iter())
            .find(|blk| blk.0 == lead)
            .map(|blk| (blk.1, blk.2))
            .expect("lead block in its group");
        let gp = state.gp_priors[lead].as_ref().expect("refreshed");
        let f = gp.sample(&a, &b, rng)?;
        let rows = f.len();
        for i in 0..rows {
            state.latents[li][c * rows + i] = f[i];
        }
        Ok(())
    }

    /// Slice-sampling updates of the non-conjugate likelihood hyperparameters, each on its
    /// unconstrained scale: log prior + log-Jacobian + Σᵢ log p(yᵢ | ηᵢ, θ).
    pub(super) fn slice_hypers(&self, state: &mut State, pv: &[Vec<f64>], rng: &mut ChaCha8Rng) {
        let mut stack = Vec::with_capacity(64);
        for h in &self.sliced {
            let t = h.transform;
            let u0 = t.to_u(state.hypers[h.index]);
            let mut logp = |u: f64| -> f64 {
                let theta = t.to_theta(u);
                let lp = crate::slice::log_prior(&h.prior, theta);
                if !lp.is_finite() {
                    return f64::NEG_INFINITY;
                }
                state.hypers[h.index] = theta;
                let mut total = lp + t.log_jacobian(u);
                for &f in &h.factors {
                    let fp = &self.schedule.factors[f];
                    let tape = fp.log_density.as_ref().expect("checked in sliced_hypers");
                    let mut vals = vec![0.0; fp.slots.len()];
                    for i in 0..self.prep.factors[f].n {
                        self.fill(f, i, pv, state, &mut vals);
                        total += tape.eval(&vals, &mut stack);
                    }
                }
                if total.is_nan() {
                    f64::NEG_INFINITY
                } else {
                    total
                }
            };
            let u = crate::slice::step(rng, u0, &mut logp, 1.0, 20);
            state.hypers[h.index] = t.to_theta(u);
        }
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
        for h in &sk.hypers {
            let log_gp = |hv: &HyperValues| -> Result<f64, RuntimeError> {
                let k = crate::kernels::kernel_matrix(&sk.kernel, &sk.inputs, &sk.inputs, hv)?;
                crate::gaussian::gp_log_marginal(&k, hv.eval(&sk.mean)?, a, b)
            };
            self.slice_one(h, state, &log_gp, rng);
        }
        let hv = self.hyper_values(state);
        let k = crate::kernels::kernel_matrix(&sk.kernel, &sk.inputs, &sk.inputs, &hv)?;
        state.gp_priors[sk.block] = Some(crate::gaussian::GpBlock::new(k, hv.eval(&sk.mean)?)?);
        Ok(())
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
            let gpm_ir::LatentPrior::Normal { mean, scale } = &self.model.latents[li].prior else {
                return Err(RuntimeError::Model(
                    "a dense block without a normal prior".into(),
                ));
            };
            let (mv, sv) = (hv.eval(mean)?, hv.eval(scale)?);
            if !(sv > 0.0 && sv.is_finite() && mv.is_finite()) {
                return Err(RuntimeError::Numerical(format!(
                    "the prior scale of `{}` is {sv}",
                    self.model.latents[li].name
                )));
            }
            for j in 0..len {
                m[off + j] = mv;
                sd[off + j] = sv;
            }
        }
        Ok((m, sd))
    }
}

/// What each hyperparameter with a prior gets: slice sampling from the likelihood, from one
/// GP's marginal, from a group of GPs, from a dense block's marginal, or held (with the reason).
pub(super) type HyperPlans = (
    Vec<SlicedHyper>,
    Vec<SlicedKernel>,
    Vec<SharedKernel>,
    Vec<SlicedDense>,
    Vec<(String, String)>,
);

pub(super) fn sliced_hypers(
    model: &Model,
    schedule: &Schedule,
    data: &Data,
    prep: &Prepared,
) -> Result<HyperPlans, RuntimeError> {
    let (mut sliced, mut kernels, mut shared, mut dense, mut held) = (
        Vec::new(),
        Vec::<SlicedKernel>::new(),
        Vec::new(),
        Vec::<SlicedDense>::new(),
        Vec::new(),
    );
    for h in &model.hypers {
        let gpm_ir::HyperKind::Prior { prior } = &h.kind else {
            continue;
        };
        if schedule.hypers.iter().any(|c| c.name == h.name) {
            continue;
        }
        let mut hold = |why: &str| held.push((h.name.clone(), why.to_string()));
        if !matches!(h.shape, Shape::Scalar) {
            hold("sampling vector (ARD) hyperparameters is not implemented");
            continue;
        }
        let Some(index) = prep.hypers.iter().position(|p| p.0 == h.name) else {
            hold("not read by the model");
            continue;
        };
        let factors: Vec<usize> = prep
            .factors
            .iter()
            .enumerate()
            .filter(|(_, pf)| {
                pf.slots
                    .iter()
                    .any(|s| matches!(s, Slot::Hyper(k) if *k == index))
            })
            .map(|(f, _)| f)
            .collect();
        let readers: Vec<usize> = model
            .latents
            .iter()
            .enumerate()
            .filter(|(_, l)| l.prior.hypers().contains(&h.name))
            .map(|(li, _)| li)
            .collect();
        let entry = SlicedHyper {
            index,
            prior: prior.clone(),
            transform: crate::slice::Transform::for_hyper(h.lower, prior),
            factors: factors.clone(),
        };
        let all_normal = !readers.is_empty()
            && readers
                .iter()
                .all(|&li| matches!(model.latents[li].prior, gpm_ir::LatentPrior::Normal { .. }));
        if factors.is_empty() && all_normal {
            // Normal priors: all readers must share one dense block.
            let blocks: BTreeSet<usize> = readers
                .iter()
                .filter_map(|&li| {
                    prep.blocks.iter().position(|b| {
                        matches!(b, Block::Dense { parts, .. } if parts.iter().any(|p| p.0 == li))
                    })
                })
                .collect();
            match blocks.iter().collect::<Vec<_>>().as_slice() {
                [bi] => match dense.iter_mut().find(|d| d.block == **bi) {
                    Some(d) => d.hypers.push(entry),
                    None => dense.push(SlicedDense {
                        block: **bi,
                        hypers: vec![entry],
                    }),
                },
                _ => hold("read by normal priors of latents in different blocks; sampling it is not implemented"),
            }
            continue;
        }
        match (factors.is_empty(), readers.as_slice()) {
            (false, []) => {
                if factors
                    .iter()
                    .any(|&f| schedule.factors[f].log_density.is_none())
                {
                    hold("a factor reading it has no pointwise log-density");
                } else {
                    sliced.push(entry);
                }
            }
            (true, [li]) => {
                let latent = &model.latents[*li];
                let gpm_ir::LatentPrior::Gp {
                    inputs,
                    kernel,
                    mean,
                    inducing: None,
                } = &latent.prior
                else {
                    hold("sampling the hyperparameters of a normal or sparse GP prior is not implemented");
                    continue;
                };
                let blocks: Vec<usize> = prep
                    .blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| matches!(b, Block::Gp { latent, .. } if latent == li))
                    .map(|(bi, _)| bi)
                    .collect();
                if blocks.len() != 1 {
                    // The columns of a matrix latent share the kernel.
                    add_shared(&mut shared, entry, vec![shared_latent(model, data, prep, *li)?]);
                    continue;
                }
                if let Some(k) = kernels.iter_mut().find(|k| k.block == blocks[0]) {
                    k.hypers.push(entry);
                } else {
                    let x = data
                        .inputs(inputs)
                        .ok_or_else(|| RuntimeError::Model(format!("no inputs `{inputs}`")))?;
                    kernels.push(SlicedKernel {
                        block: blocks[0],
                        hypers: vec![entry],
                        kernel: kernel.clone(),
                        mean: mean.clone(),
                        inputs: x,
                    });
                }
            }
            (true, []) => hold("not read by the model"),
            (true, several) => {
                let all_full_gp = several.iter().all(|&li| {
                    matches!(
                        model.latents[li].prior,
                        gpm_ir::LatentPrior::Gp { inducing: None, .. }
                    )
                });
                if !all_full_gp {
                    hold("shared by the priors of several latents, one of them a normal or sparse GP prior; sampling it is not implemented");
                    continue;
                }
                let latents = several
                    .iter()
                    .map(|&li| shared_latent(model, data, prep, li))
                    .collect::<Result<Vec<_>, _>>()?;
                add_shared(&mut shared, entry, latents);
            }
            _ => hold("read by several parts of the model (likelihood and priors); joint sampling is not implemented"),
        }
    }
    Ok((sliced, kernels, shared, dense, held))
}

/// Add a hyperparameter to the group of the same latents, or start a group.
fn add_shared(shared: &mut Vec<SharedKernel>, entry: SlicedHyper, latents: Vec<SharedLatent>) {
    let key: Vec<usize> = latents.iter().map(|l| l.latent).collect();
    match shared
        .iter_mut()
        .find(|s| s.latents.iter().map(|l| l.latent).collect::<Vec<_>>() == key)
    {
        Some(group) => group.hypers.push(entry),
        None => shared.push(SharedKernel {
            hypers: vec![entry],
            latents,
            integrated: false,
            lead: None,
        }),
    }
}

/// Whether no factor couples two blocks of the group: every non-categorical factor that reads
/// one of them reads no other (its curvature tapes may read any predictor of the factor), and no
/// block of the group is read by a collapsed predictor.
pub(super) fn shared_blocks_independent(
    schedule: &Schedule,
    prep: &Prepared,
    sh: &SharedKernel,
) -> bool {
    let group: Vec<(usize, usize)> = sh
        .latents
        .iter()
        .flat_map(|l| l.blocks.iter().map(|&(_, li, c)| (li, c)))
        .collect();
    for (f, fp) in schedule.factors.iter().enumerate() {
        if fp.categorical.is_some() {
            continue;
        }
        let mut touched = std::collections::BTreeSet::new();
        for slot in &prep.factors[f].slots {
            let Slot::Pred(p) = slot else { continue };
            let pred = &prep.preds[*p];
            if schedule.collapsed.contains(&pred.name)
                && group
                    .iter()
                    .any(|&(li, c)| prep.reads(*p, li, Some(c)).is_some())
            {
                return false;
            }
            for &(li, c) in &group {
                if prep.reads(*p, li, Some(c)).is_some() {
                    touched.insert((li, c));
                }
            }
        }
        if touched.len() > 1 {
            return false;
        }
    }
    true
}

/// A full-GP latent's kernel, mean, inputs and blocks `(block, latent, column)`.
fn shared_latent(
    model: &Model,
    data: &Data,
    prep: &Prepared,
    li: usize,
) -> Result<SharedLatent, RuntimeError> {
    let gpm_ir::LatentPrior::Gp {
        inputs,
        kernel,
        mean,
        ..
    } = &model.latents[li].prior
    else {
        return Err(RuntimeError::Model("a GP block without a GP prior".into()));
    };
    let x = data
        .inputs(inputs)
        .ok_or_else(|| RuntimeError::Model(format!("no inputs `{inputs}`")))?;
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
        latent: li,
        kernel: kernel.clone(),
        mean: mean.clone(),
        inputs: x,
        blocks,
    })
}
