//! NUTS's target: the latents whitened by their priors ([`crate::whitened`]) and the sampled
//! hyperparameters on their unconstrained scales, `position = (v, u)`, with
//!
//! `log π(v, u) = Σ log p(y | x(v, θ), θ) − ½|v|² + Σ_h [log p(θ_h) + log |dθ_h/du_h|]`,
//!
//! `θ = T(u)`. A GP block whose kernel reads one is factored again at each position
//! ([`super::gp_hypers`]). A dense block whose normal prior reads a sampled hyperparameter is
//! whitened at the current values, `x = m(θ) + s(θ) ⊙ v` — the non-centred parametrisation of a
//! hierarchical model, which keeps NUTS out of Neal's funnel — so that `∂/∂θ_h` of the
//! likelihood is `Σ_j g_j (∂m_j/∂h + v_j ∂s_j/∂h)` through the prior and `Σ_i ∂ℓ_i/∂h` through
//! the factors that read `h`, every derivative the CAS's.

use super::augmented::Augmented;
use super::gp_hypers::KernelBlock;
use crate::kernels::HyperValues;
use crate::prepared::{Block, Prepared};
use crate::slice::Transform;
use crate::whitened::{WhitenedBlock, Whitening};
use crate::RuntimeError;
use gpm_library::HyperPrior;
use gpm_schedule::{BoundPrior, HyperId, Schedule};
use nalgebra::{DMatrix, DVector};
use nuts_rs::{CpuLogpFunc, CpuMathError, HasDims};
use std::collections::HashMap;
use std::sync::Arc;

/// What a target reads of a model bound to data (the Gibbs sampler's binding; a trait so
/// that the sweep's NUTS step can build a target without this module reading the sampler's).
pub(crate) trait Bound {
    /// The model bound to the data.
    fn prepared(&self) -> &Prepared;
    /// The compiled model.
    fn schedule(&self) -> &Schedule;
    /// Every hyperparameter's starting value.
    fn hyper_base(&self) -> HyperValues;
    /// A full GP block's prior where its kernel or mean reads sampled hyperparameters.
    #[allow(clippy::type_complexity)]
    fn sampled_gp_prior(
        &self,
        bi: usize,
    ) -> Option<(
        &gpm_schedule::BoundKernel,
        &gpm_schedule::Tape,
        &Arc<DMatrix<f64>>,
    )>;
}

/// A sampled hyperparameter NUTS moves, on the unconstrained scale of its range.
#[derive(Clone)]
pub(crate) struct Moved {
    pub(crate) id: HyperId,
    prior: HyperPrior,
    transform: Transform,
}

/// Why NUTS cannot move the sampled hyperparameters of this model (`None`: it can, or there
/// are none): it moves scalar ones read by the factors (with the CAS's gradient in them), by
/// the dense blocks' normal priors and by full GP priors' kernels and means (each parameter
/// the hyperparameter itself: [`crate::kernel_gradient::differentiable`]).
pub(crate) fn hyper_refusal(schedule: &Schedule) -> Option<String> {
    let sampled = schedule.sampled_hypers();
    for h in &sampled {
        let decl = &schedule.hyper_decls[h.0];
        if !matches!(decl.shape, gpm_ir::Shape::Scalar) {
            return Some(format!(
                "NUTS with a sampled vector hyperparameter (`{}`) is not built yet: fix it or declare it `learn(...)`, or use --method gibbs",
                decl.name
            ));
        }
    }
    for (li, prior) in schedule.priors.iter().enumerate() {
        if let BoundPrior::Normal {
            gradient: Err(why), ..
        } = prior
        {
            if let Some(h) = prior.hypers().iter().find(|h| sampled.contains(h)) {
                return Some(format!(
                    "NUTS cannot differentiate the prior of `{}` in `{}` ({why}): fix it or declare it `learn(...)`, or use --method gibbs",
                    schedule.latents[li].name, schedule.hyper_decls[h.0].name
                ));
            }
        }
        let BoundPrior::Gp {
            kernel,
            mean,
            inducing,
            ..
        } = prior
        else {
            continue;
        };
        if let (Some(_), Some(h)) = (
            inducing,
            prior.hypers().iter().find(|h| sampled.contains(h)),
        ) {
            return Some(format!(
                "NUTS with a sparse GP's kernel hyperparameters sampled (`{}` in the prior of `{}`) is not built yet: fix them or declare them `learn(...)`, or use --method gibbs",
                schedule.hyper_decls[h.0].name, schedule.latents[li].name
            ));
        }
        for h in prior.hypers().iter().filter(|h| sampled.contains(h)) {
            let why = crate::kernel_gradient::differentiable(kernel, *h).or_else(|| {
                (mean.slots().any(|s| s == h.0) && mean.as_slot() != Some(h.0))
                    .then(|| "a GP mean computed from a hyperparameter".to_string())
            });
            if let Some(why) = why {
                return Some(format!(
                    "NUTS cannot differentiate the GP prior of `{}` in `{}` ({why}): fix it or declare it `learn(...)`, or use --method gibbs",
                    schedule.latents[li].name, schedule.hyper_decls[h.0].name
                ));
            }
        }
    }
    for fp in &schedule.factors {
        let reads = fp
            .slots
            .iter()
            .any(|s| matches!(s, gpm_schedule::Source::Hyper(h) if sampled.contains(h)));
        if let (true, Err(why)) = (reads, &fp.hyper_gradient) {
            return Some(format!(
                "NUTS needs factor #{}'s gradient in its sampled hyperparameters: {why}; use --method gibbs",
                fp.factor + 1
            ));
        }
    }
    None
}

/// A dense block whose prior reads sampled hyperparameters: re-whitened at each position.
struct Hierarchical {
    /// Index into the target's blocks.
    block: usize,
    /// `(latent index, offset, length)` of the block's latents.
    parts: Vec<(usize, usize, usize)>,
}

/// The whitened target of one chain. Cloned cheaply: the blocks (each a GP's `N × N` factor)
/// are shared between `CpuMath`'s copy and the one that maps draws back to latents.
#[derive(Clone)]
pub(crate) struct Target<'a> {
    prep: &'a Prepared,
    schedule: &'a Schedule,
    blocks: Arc<Vec<WhitenedBlock<'a>>>,
    hierarchical: Arc<Vec<Hierarchical>>,
    kernel_blocks: Arc<Vec<KernelBlock>>,
    /// NUTS on the augmented model: its auxiliaries' coordinates (after the hyperparameters').
    augmented: Option<Arc<Augmented<'a>>>,
    /// Every hyperparameter's value at the start (the moved ones are overwritten).
    base: HyperValues,
    pub(crate) moved: Vec<Moved>,
    /// The runtime block of each of [`Target::blocks`].
    ids: Arc<Vec<usize>>,
    /// A conditional target ([`Target::conditional`]): every latent's current value, the
    /// moved blocks' overwritten at each position; and the factors that read them.
    held: Option<Arc<Held>>,
}

/// Every latent's value at the held point, and which factors read the moved blocks.
type Held = (Vec<DVector<f64>>, Vec<bool>);

/// What a target moves: these runtime blocks and these hyperparameters, the others held.
pub(crate) struct Scope<'s> {
    pub(crate) blocks: Vec<usize>,
    pub(crate) hypers: Vec<HyperId>,
    pub(crate) base: HyperValues,
    /// Every latent's value and the factors reading the moved blocks (`None`: the whole model).
    pub(crate) held: Option<(&'s [DVector<f64>], Vec<bool>)>,
}

/// A position where the log density is not finite: the transition is a divergence.
#[derive(Debug, thiserror::Error)]
#[error("the log density is not finite here")]
pub(crate) struct NotFinite;

impl nuts_rs::LogpError for NotFinite {
    fn is_recoverable(&self) -> bool {
        true
    }
}

/// The latents and hyperparameter values at one position, and each sparse block's whitened
/// inducing values (by runtime block).
pub(crate) struct Point {
    pub(crate) latents: Vec<DVector<f64>>,
    pub(crate) hypers: Vec<f64>,
    pub(crate) sparse_v: Vec<Option<DVector<f64>>>,
}

impl<'a> Target<'a> {
    /// The whole model's target (NUTS on every latent and sampled hyperparameter).
    pub(crate) fn new(sampler: &'a dyn Bound, augmented: bool) -> Result<Self, RuntimeError> {
        let scope = Scope {
            blocks: (0..sampler.prepared().blocks.len()).collect(),
            hypers: sampler.schedule().sampled_hypers(),
            base: sampler.hyper_base(),
            held: None,
        };
        Self::build(sampler, scope, augmented)
    }

    /// The conditional target of a Gibbs sweep's NUTS block: `scope.blocks` and
    /// `scope.hypers` moved, every other latent and hyperparameter held at its current value,
    /// the likelihood only the factors that read the moved blocks (the others are constant).
    pub(crate) fn conditional(sampler: &'a dyn Bound, scope: Scope) -> Result<Self, RuntimeError> {
        Self::build(sampler, scope, false)
    }

    fn build(sampler: &'a dyn Bound, scope: Scope, augmented: bool) -> Result<Self, RuntimeError> {
        let (prep, schedule, base) = (sampler.prepared(), sampler.schedule(), scope.base);
        // Every sampled hyperparameter may have moved from the prepared blocks' values: a
        // prior that reads one is formed again at each position.
        let sampled = schedule.sampled_hypers();
        let moved = scope
            .hypers
            .iter()
            .map(|&id| match &schedule.hyper_decls[id.0].kind {
                gpm_ir::HyperKind::Prior { prior } => Ok(Moved {
                    id,
                    prior: prior.clone(),
                    transform: Transform::for_hyper(prior),
                }),
                _ => Err(RuntimeError::Inconsistent(format!(
                    "`{}` is sampled but has no prior",
                    schedule.hyper_decls[id.0].name
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut hierarchical = Vec::new();
        let mut kernel_blocks = Vec::new();
        for (k, &bi) in scope.blocks.iter().enumerate() {
            let b = &prep.blocks[bi];
            if let Block::Gp { latent, .. } = b {
                if schedule.priors[*latent]
                    .hypers()
                    .iter()
                    .any(|h| sampled.contains(h))
                {
                    let (kernel, mean, inputs) = sampler.sampled_gp_prior(bi).ok_or_else(|| {
                        RuntimeError::Inconsistent(format!(
                            "the GP prior of `{}` reads sampled hyperparameters but has no kernel update",
                            schedule.latents[*latent].name
                        ))
                    })?;
                    kernel_blocks.push(KernelBlock {
                        block: k,
                        kernel: kernel.clone(),
                        mean: mean.clone(),
                        inputs: inputs.clone(),
                    });
                }
            }
            if let Block::Dense { parts, .. } = b {
                let reads = parts.iter().any(|p| {
                    schedule.priors[p.0]
                        .hypers()
                        .iter()
                        .any(|h| sampled.contains(h))
                });
                if reads {
                    hierarchical.push(Hierarchical {
                        block: k,
                        parts: parts.clone(),
                    });
                }
            }
        }
        Ok(Target {
            prep,
            schedule,
            blocks: Arc::new(
                scope
                    .blocks
                    .iter()
                    .map(|&bi| WhitenedBlock::new(&prep.blocks[bi]))
                    .collect::<Result<_, _>>()?,
            ),
            ids: Arc::new(scope.blocks),
            held: scope
                .held
                .map(|(latents, only)| Arc::new((latents.to_vec(), only))),
            hierarchical: Arc::new(hierarchical),
            kernel_blocks: Arc::new(kernel_blocks),
            augmented: if augmented {
                Some(Arc::new(Augmented::new(schedule, prep)?))
            } else {
                None
            },
            base,
            moved,
        })
    }

    fn latent_dim(&self) -> usize {
        self.blocks.iter().map(WhitenedBlock::dim).sum()
    }

    /// The starting `log ω` of the augmented model's auxiliaries (empty on the original model).
    pub(crate) fn start_aux(
        &self,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> Result<Vec<f64>, RuntimeError> {
        match &self.augmented {
            Some(a) => a.start(self.prep, &self.base.scalars, rng),
            None => Ok(Vec::new()),
        }
    }

    /// The number of auxiliary coordinates (0 on the original model).
    pub(crate) fn aux_dim(&self) -> usize {
        self.augmented.as_ref().map_or(0, |a| a.dim)
    }

    /// The starting unconstrained values of the moved hyperparameters (their start values).
    pub(crate) fn start_u(&self) -> Vec<f64> {
        self.moved
            .iter()
            .map(|m| m.transform.to_u(self.base.scalars[m.id.0]))
            .collect()
    }

    /// Every hyperparameter's value at the position.
    fn hyper_values(&self, position: &[f64]) -> HyperValues {
        let mut hv = self.base.clone();
        let n = self.latent_dim();
        let u = &position[n..n + self.moved.len()];
        for (m, &uk) in self.moved.iter().zip(u) {
            hv.scalars[m.id.0] = m.transform.to_theta(uk);
        }
        hv
    }

    /// A hierarchical block's prior mean and sd at `hv`, and with `derivatives` their
    /// derivatives in each moved hyperparameter (in [`Target::moved`]'s order).
    #[allow(clippy::type_complexity)]
    fn dense_prior(
        &self,
        h: &Hierarchical,
        hv: &HyperValues,
        derivatives: bool,
    ) -> Result<
        (
            DVector<f64>,
            DVector<f64>,
            Vec<(DVector<f64>, DVector<f64>)>,
        ),
        RuntimeError,
    > {
        let dim: usize = h.parts.iter().map(|p| p.2).sum();
        let (mut m, mut s) = (DVector::zeros(dim), DVector::zeros(dim));
        let mut d = if derivatives {
            vec![(DVector::zeros(dim), DVector::zeros(dim)); self.moved.len()]
        } else {
            vec![]
        };
        for &(li, off, len) in &h.parts {
            let BoundPrior::Normal {
                mean,
                scale,
                data_slot,
                gradient,
                ..
            } = &self.schedule.priors[li]
            else {
                return Err(RuntimeError::Inconsistent(
                    "a dense block without a normal prior".into(),
                ));
            };
            let columns = &self.prep.prior_data[li];
            let at = |tapes| crate::prepared::normal_prior_at(hv, tapes, *data_slot, columns, len);
            let (mv, sv) = at((mean, scale))?;
            m.rows_mut(off, len).copy_from_slice(&mv);
            s.rows_mut(off, len).copy_from_slice(&sv);
            let gradient = gradient.as_ref().map_err(|why| {
                RuntimeError::Inconsistent(format!(
                    "a hierarchical prior without derivatives: {why}"
                ))
            })?;
            for g in gradient.iter().filter(|_| derivatives) {
                let Some(k) = self.moved.iter().position(|mv| mv.id == g.hyper) else {
                    continue;
                };
                let (dm, ds) = at((&g.d_mean, &g.d_scale))?;
                d[k].0.rows_mut(off, len).copy_from_slice(&dm);
                d[k].1.rows_mut(off, len).copy_from_slice(&ds);
            }
        }
        if s.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
            return Err(RuntimeError::Numerical(
                "a prior scale is not positive".into(),
            ));
        }
        Ok((m, s, d))
    }

    /// A conditional target's position at the held values: each moved block's whitened
    /// coordinates under its prior at the current hyperparameters, then the moved
    /// hyperparameters' unconstrained values.
    pub(crate) fn position_at_held(&self) -> Result<Vec<f64>, RuntimeError> {
        let Some(held) = &self.held else {
            return Err(RuntimeError::Inconsistent(
                "the whole model's target holds no values".into(),
            ));
        };
        let whitening = self.whitenings(&self.base)?;
        let mut out = Vec::with_capacity(CpuLogpFunc::dim(self));
        for (b, w) in self.blocks.iter().zip(&whitening) {
            let x = b.coords.get(&held.0);
            let v = w
                .as_ref()
                .unwrap_or(&b.whitening)
                .coordinates(&x)
                .ok_or_else(|| {
                    RuntimeError::Unsupported(
                        "a sparse GP block cannot take a NUTS block update".into(),
                    )
                })?;
            out.extend(v.iter());
        }
        out.extend(self.start_u());
        Ok(out)
    }

    /// Per block, its prior's whitening at `hv` where sampled hyperparameters move it (`None`:
    /// the block's own, fixed).
    fn whitenings(&self, hv: &HyperValues) -> Result<Vec<Option<Whitening>>, RuntimeError> {
        let mut whitening: Vec<Option<Whitening>> = (0..self.blocks.len()).map(|_| None).collect();
        for h in self.hierarchical.iter() {
            let (mean, sd, _) = self.dense_prior(h, hv, false)?;
            whitening[h.block] = Some(Whitening::Dense { mean, sd });
        }
        for kb in self.kernel_blocks.iter() {
            whitening[kb.block] = Some(kb.whitening(hv)?.0);
        }
        Ok(whitening)
    }

    /// The latents and hyperparameters at a position.
    pub(crate) fn point(&self, position: &[f64]) -> Result<Point, RuntimeError> {
        let hv = self.hyper_values(position);
        let mut latents = self.zero_latents();
        let whitening = self.whitenings(&hv)?;
        self.place(position, &whitening, &mut latents);
        let mut sparse_v = vec![None; self.prep.blocks.len()];
        let mut at = 0;
        for (k, b) in self.blocks.iter().enumerate() {
            if let Whitening::Sparse { phi, .. } = &b.whitening {
                sparse_v[self.ids[k]] =
                    Some(DVector::from_column_slice(&position[at..at + phi.nrows()]));
            }
            at += b.dim();
        }
        Ok(Point {
            latents,
            hypers: hv.scalars,
            sparse_v,
        })
    }

    /// The latents before the moved blocks are placed: the held values, or zeros.
    fn zero_latents(&self) -> Vec<DVector<f64>> {
        if let Some(held) = &self.held {
            return held.0.clone();
        }
        self.prep
            .latents
            .iter()
            .map(|l| DVector::zeros(l.1))
            .collect()
    }

    /// Set each block's values from its whitened coordinates (`whitening[b]` overriding the
    /// block's own).
    fn place(
        &self,
        position: &[f64],
        whitening: &[Option<Whitening>],
        latents: &mut [DVector<f64>],
    ) {
        let mut at = 0;
        for (b, w) in self.blocks.iter().zip(whitening) {
            let d = b.dim();
            let v = DMatrix::from_column_slice(d, 1, &position[at..at + d]);
            let x = match w {
                Some(w) => w.values(&v),
                None => b.values(&v),
            };
            b.coords.set(latents, &x.column(0).into_owned());
            at += d;
        }
    }

    /// The moved hyperparameters' log prior with the Jacobians of their transforms (at the
    /// unconstrained `u`), and the prior's derivative in each `θ`.
    fn hyper_prior(&self, hv: &HyperValues, u: &[f64]) -> Result<(f64, Vec<f64>), RuntimeError> {
        let mut lp = 0.0;
        let mut d_theta = vec![0.0; self.moved.len()];
        for (k, (m, &uk)) in self.moved.iter().zip(u).enumerate() {
            let theta = hv.scalars[m.id.0];
            lp += m.prior.log_density(theta) + m.transform.log_jacobian(uk);
            d_theta[k] = m.prior.d_log_density(theta);
        }
        if !lp.is_finite() {
            return Err(RuntimeError::Numerical(
                "outside the prior's support".into(),
            ));
        }
        Ok((lp, d_theta))
    }

    /// `log π` and its gradient (module docs).
    pub(crate) fn log_density(
        &self,
        position: &[f64],
        grad: &mut [f64],
    ) -> Result<f64, RuntimeError> {
        let n_latent = self.latent_dim();
        let hv = self.hyper_values(position);
        let n_hyper = n_latent + self.moved.len();
        let u = &position[n_latent..n_hyper];
        let (lp, mut d_theta) = self.hyper_prior(&hv, u)?;
        let mut whitening: Vec<Option<Whitening>> = (0..self.blocks.len()).map(|_| None).collect();
        let mut dense_d = Vec::new();
        for h in self.hierarchical.iter() {
            let (mean, sd, d) = self.dense_prior(h, &hv, true)?;
            whitening[h.block] = Some(Whitening::Dense { mean, sd });
            dense_d.push((h.block, d));
        }
        let mut jitters = Vec::with_capacity(self.kernel_blocks.len());
        for kb in self.kernel_blocks.iter() {
            let (w, j) = kb.whitening(&hv)?;
            whitening[kb.block] = Some(w);
            jitters.push(j);
        }
        let mut latents = self.zero_latents();
        self.place(position, &whitening, &mut latents);
        let mut hyper_grad = vec![0.0; hv.scalars.len()];
        let pv: Vec<Vec<f64>> = self.prep.preds.iter().map(|p| p.eval(&latents)).collect();
        let (mut ll, mut g) = crate::whitened::log_lik_grads(
            self.prep,
            self.schedule,
            (&latents, &pv),
            &hv,
            (!self.moved.is_empty()).then_some(hyper_grad.as_mut_slice()),
            match (&self.held, &self.augmented) {
                (Some(h), _) => Some(h.1.as_slice()),
                (None, Some(a)) => Some(a.original.as_slice()),
                (None, None) => None,
            },
        )?;
        if let Some(a) = &self.augmented {
            let (u_aux, g_aux) = (&position[n_hyper..], &mut grad[n_hyper..]);
            ll += a.log_density(self.prep, &pv, &hv.scalars, u_aux, &mut g, g_aux)?;
        }
        let mut at = 0;
        let mut offsets = Vec::with_capacity(self.blocks.len());
        // Each block's part of the likelihood's gradient in its values.
        let gxs: Vec<DVector<f64>> = self.blocks.iter().map(|b| b.coords.get(&g)).collect();
        for ((b, w), gx) in self.blocks.iter().zip(&whitening).zip(&gxs) {
            let d = b.dim();
            offsets.push(at);
            let gx = DMatrix::from_column_slice(gx.len(), 1, gx.as_slice());
            let gv = match w {
                Some(w) => w.pullback(&gx),
                None => b.pullback(&gx),
            };
            for i in 0..d {
                grad[at + i] = gv[(i, 0)] - position[at + i];
            }
            at += d;
        }
        // Through the hierarchical priors: Σ_j g_j (∂m_j/∂h + v_j ∂s_j/∂h).
        for (bi, d) in &dense_d {
            let (b, gx) = (&self.blocks[*bi], &gxs[*bi]);
            let v = &position[offsets[*bi]..offsets[*bi] + b.dim()];
            for (k, (dm, ds)) in d.iter().enumerate() {
                d_theta[k] += (0..v.len())
                    .map(|j| gx[j] * (dm[j] + v[j] * ds[j]))
                    .sum::<f64>();
            }
        }
        // Through the GP priors' kernels and means (reverse mode through `L`: gp_hypers.rs).
        let ids: Vec<HyperId> = self.moved.iter().map(|m| m.id).collect();
        for (kb, jitter) in self.kernel_blocks.iter().zip(jitters) {
            let (b, gx) = (&self.blocks[kb.block], &gxs[kb.block]);
            let v = &position[offsets[kb.block]..offsets[kb.block] + b.dim()];
            let w = whitening[kb.block].as_ref().expect("set above");
            for (k, d) in kb
                .hyper_gradient((w, jitter), gx.as_slice(), v, &hv, &ids)?
                .into_iter()
                .enumerate()
            {
                d_theta[k] += d;
            }
        }
        for (k, (m, &uk)) in self.moved.iter().zip(u).enumerate() {
            let total = d_theta[k] + hyper_grad[m.id.0];
            grad[n_latent + k] = m.transform.dtheta_du(uk) * total + m.transform.d_log_jacobian(uk);
        }
        let v2: f64 = position[..n_latent].iter().map(|v| v * v).sum();
        Ok(lp + ll - 0.5 * v2)
    }
}

impl HasDims for Target<'_> {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        HashMap::from([("unconstrained_parameter".to_string(), self.dim() as u64)])
    }
}

impl CpuLogpFunc for Target<'_> {
    type LogpError = NotFinite;
    type ExpandedVector = Vec<f64>;
    type FlowParameters = ();

    fn dim(&self) -> usize {
        self.latent_dim() + self.moved.len() + self.augmented.as_ref().map_or(0, |a| a.dim)
    }

    fn logp(&mut self, position: &[f64], grad: &mut [f64]) -> Result<f64, NotFinite> {
        let lp = self.log_density(position, grad).map_err(|_| NotFinite)?;
        if lp.is_finite() && grad.iter().all(|x| x.is_finite()) {
            Ok(lp)
        } else {
            Err(NotFinite)
        }
    }

    fn expand_vector<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        position: &[f64],
    ) -> Result<Vec<f64>, CpuMathError> {
        Ok(position.to_vec())
    }
}
