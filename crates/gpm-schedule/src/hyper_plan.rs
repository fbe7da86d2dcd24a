//! Deciding every hyperparameter's update: its start value, its Gibbs move (fixed, conjugate,
//! type-II ML, slice sampled given the latents, with a GP or dense block integrated out, in a
//! group shared by several GPs, or held with the reason) and its variational update; then the
//! moves that follow from the whole set (non-centred moves, shared groups, their lead blocks).

use crate::blocks::BlockSpec;
use crate::hypers::*;
use crate::ids::{BlockId, FactorId, HyperId, LatentId};
use crate::program::FactorProgram;
use crate::program::HyperProgram;
use crate::slice_scheme::SliceScheme;
use crate::source::Source;
use gpm_ir::{HyperKind, LatentPrior, Model, Shape};
use std::collections::BTreeSet;

/// The moves of the sampled hyperparameters, gathered as each one's update is decided.
#[derive(Default)]
struct Moves {
    likelihood: Vec<HyperId>,
    kernels: Vec<GpKernelUpdate>,
    groups: Vec<KernelGroup>,
    dense: Vec<DenseScaleUpdate>,
}

/// What deciding an update reads: the model, its factors' programs, the conjugate updates
/// and the blocks; and whether every factor has a variational update (so `learn()` runs).
struct Deciding<'a> {
    model: &'a Model,
    factors: &'a [FactorProgram],
    conjugate: &'a [HyperProgram],
    blocks: &'a [BlockSpec],
    has_cavi: bool,
}

/// Decide every hyperparameter's update.
pub(crate) fn plan(
    model: &Model,
    factors: &[FactorProgram],
    conjugate: &[HyperProgram],
    collapsed: &BTreeSet<String>,
    blocks: &[BlockSpec],
) -> HyperPlan {
    let has_cavi = factors.iter().all(|f| {
        f.cavi.is_some()
            || f.categorical.is_some()
            || f.generic.as_ref().is_some_and(|g| g.variational.is_ok())
    });
    let deciding = Deciding {
        model,
        factors,
        conjugate,
        blocks,
        has_cavi,
    };
    let mut moves = Moves::default();
    let mut steps: Vec<HyperStep> = (0..model.hypers.len())
        .map(|hi| deciding.step(HyperId(hi), &mut moves))
        .collect();
    let Moves {
        likelihood,
        mut kernels,
        mut groups,
        mut dense,
    } = moves;
    // A block whose own hyperparameter (its variance, say) sits in a shared group is updated
    // with the group: the group's step replaces the block's own.
    kernels.retain(
        |k| match groups.iter_mut().position(|g| g.blocks.contains(&k.block)) {
            Some(gi) => {
                groups[gi].hypers.extend(k.hypers.iter().copied());
                for hid in &k.hypers {
                    steps[hid.0].gibbs = GibbsUpdate::KernelGroup { group: gi };
                }
                false
            }
            None => true,
        },
    );
    for k in &mut kernels {
        deciding.kernel_interweave(k);
    }
    for d in &mut dense {
        deciding.dense_interweave(d);
    }
    for g in &mut groups {
        g.integrated = group_independent(model, factors, collapsed, &g.latents);
        if !g.integrated {
            // Collapsed blocks come first in a sweep, then the others, each in block order.
            g.lead = g
                .blocks
                .iter()
                .copied()
                .min_by_key(|b| (!blocks[b.0].collapsed, b.0));
        }
    }
    HyperPlan {
        steps,
        likelihood,
        kernels,
        groups,
        dense,
    }
}

impl Deciding<'_> {
    /// One hyperparameter's start value and updates under Gibbs and the variational methods.
    fn step(&self, id: HyperId, moves: &mut Moves) -> HyperStep {
        let h = &self.model.hypers[id.0];
        let (start, start_rule) = start_value(&h.kind);
        let scalar = matches!(h.shape, Shape::Scalar);
        let has_cavi = self.has_cavi;
        // The class scales of a scaled logistic-softmax: their own closed forms (§7.4.3).
        let scales_of = self
            .factors
            .iter()
            .position(|fp| fp.categorical.as_ref().is_some_and(|c| c.scale == Some(id)));
        let (gibbs, variational) = match (&h.kind, scales_of) {
            (HyperKind::Learn { .. }, Some(f)) if has_cavi => (
                GibbsUpdate::TypeIiMl,
                VariationalUpdate::ClassScales {
                    factor: FactorId(f),
                },
            ),
            (HyperKind::Prior { prior }, Some(f)) => match prior.conjugate_gamma() {
                Some((shape, rate)) => (
                    GibbsUpdate::ClassScales {
                        factor: FactorId(f),
                        shape,
                        rate,
                    },
                    VariationalUpdate::Held,
                ),
                None => (
                    GibbsUpdate::Held {
                        reason: "class scales are sampled under a Gamma prior only".into(),
                    },
                    VariationalUpdate::Held,
                ),
            },
            (HyperKind::Fixed { .. }, _) => (GibbsUpdate::Fixed, VariationalUpdate::Fixed),
            // SVI learns log θ: positive scalars only.
            (HyperKind::Learn { init }, _) if has_cavi => {
                let positive = scalar && h.lower.is_some_and(|l| l >= 0.0) && *init > 0.0;
                (
                    GibbsUpdate::TypeIiMl,
                    if positive {
                        VariationalUpdate::TypeIiMl
                    } else {
                        VariationalUpdate::TypeIiMlCaviOnly
                    },
                )
            }
            (HyperKind::Learn { .. }, _) => (
                GibbsUpdate::LearnUnavailable,
                VariationalUpdate::LearnUnavailable,
            ),
            (HyperKind::Prior { .. }, _) => (self.gibbs_update(id, moves), VariationalUpdate::Held),
        };
        HyperStep {
            hyper: id,
            name: h.name.clone(),
            scalar,
            start,
            start_rule,
            gibbs,
            variational,
        }
    }

    /// A sampled hyperparameter's Gibbs move, by what reads it: the likelihood, the normal
    /// priors of one dense block, one GP's kernel, or the kernels of several GPs.
    fn gibbs_update(&self, id: HyperId, moves: &mut Moves) -> GibbsUpdate {
        let (model, factors) = (self.model, self.factors);
        let h = &model.hypers[id.0];
        if self.conjugate.iter().any(|c| c.hyper == id) {
            return GibbsUpdate::Conjugate;
        }
        let reading: Vec<FactorId> = factors
            .iter()
            .enumerate()
            .filter(|(_, fp)| {
                fp.slots
                    .iter()
                    .any(|s| matches!(s, Source::Hyper(x) if model.hypers[x.0].name == h.name))
            })
            .map(|(f, _)| FactorId(f))
            .collect();
        let readers: Vec<LatentId> = model
            .latents
            .iter()
            .enumerate()
            .filter(|(_, l)| l.prior.hypers().contains(&h.name))
            .map(|(li, _)| LatentId(li))
            .collect();
        let all_normal = !readers.is_empty()
            && readers
                .iter()
                .all(|li| matches!(model.latents[li.0].prior, LatentPrior::Normal { .. }));
        if reading.is_empty() && all_normal {
            return self.dense_update(id, &readers, moves);
        }
        // A vector (ARD lengthscales): each entry in turn, with the one full GP whose kernel
        // reads it integrated out (or given its values); not shared, not read by the likelihood.
        if !matches!(h.shape, Shape::Scalar) {
            let one_gp = reading.is_empty()
                && matches!(readers.as_slice(), [li] if self.full_gp(*li)
                    && block_of(self.blocks, *li).is_some_and(|b| !b.per_column));
            if !one_gp {
                return held("a vector (ARD) hyperparameter is sampled only when the kernel of one full, single-column GP alone reads it");
            }
        }
        match (reading.is_empty(), readers.as_slice()) {
            (false, []) => {
                if reading
                    .iter()
                    .any(|f| factors[f.0].log_density.is_none())
                {
                    held("a factor reading it has no pointwise log-density")
                } else {
                    moves.likelihood.push(id);
                    GibbsUpdate::Likelihood { factors: reading }
                }
            }
            (true, [li]) => self.kernel_update(id, *li, moves),
            (true, []) => held("not read by the model"),
            (true, several) => self.shared_kernel_update(id, several, moves),
            _ => held("read by several parts of the model (likelihood and priors); joint sampling is not implemented"),
        }
    }

    fn full_gp(&self, li: LatentId) -> bool {
        matches!(
            self.model.latents[li.0].prior,
            LatentPrior::Gp { inducing: None, .. }
        )
    }

    /// Read by normal priors only: all its readers must share one dense block, whose scale
    /// move it joins.
    fn dense_update(&self, id: HyperId, readers: &[LatentId], moves: &mut Moves) -> GibbsUpdate {
        let owners: BTreeSet<BlockId> = readers
            .iter()
            .filter_map(|&li| block_of(self.blocks, li).map(|b| b.id))
            .collect();
        let [b] = owners.iter().copied().collect::<Vec<_>>()[..] else {
            return held("read by normal priors of latents in different blocks; sampling it is not implemented");
        };
        let given_values = !self.blocks[b.0].elliptical.is_empty();
        match moves.dense.iter_mut().find(|d| d.block == b) {
            Some(d) => d.hypers.push(id),
            None => moves.dense.push(DenseScaleUpdate {
                block: b,
                hypers: vec![id],
                given_values,
                slice: SliceScheme::for_marginal_update(),
                interweave: vec![],
                interweave_moves: 0,
                level: vec![],
                laplace: false,
            }),
        }
        if given_values {
            GibbsUpdate::GivenValues { block: b }
        } else {
            GibbsUpdate::DenseMarginal { block: b }
        }
    }

    /// Read by one latent's GP kernel: sliced with the GP integrated out (or given its values),
    /// a matrix GP's columns sharing it as a group.
    fn kernel_update(&self, id: HyperId, li: LatentId, moves: &mut Moves) -> GibbsUpdate {
        let model = self.model;
        let h = &model.hypers[id.0];
        let b = block_of(self.blocks, li).expect("every latent has a block");
        // A sparse GP's kernel hyperparameters: with the column integrated out under its
        // FITC prior (`SparseGp::log_marginal`); not its mean, not a matrix latent's, not
        // with the generic update.
        if b.kind == crate::blocks::BlockKind::SparseGp {
            let reads_mean = matches!(&model.latents[li.0].prior,
                LatentPrior::Gp { mean, .. } if mean.symbols().iter().any(|(_, n)| *n == h.name));
            if reads_mean || b.per_column || !b.elliptical.is_empty() {
                return held("sampling a sparse GP's prior mean, or the kernel of a matrix or generic-update sparse GP, is not implemented");
            }
            // Integrating the column out is FITC's marginal; at another Power-EP power the
            // draws are of a variational posterior, which has no such marginal to slice on.
            if matches!(&model.latents[li.0].prior, LatentPrior::Gp { alpha, .. } if *alpha != 1.0)
            {
                return held("sampling the kernel of a sparse GP with `alpha` below 1 is not implemented (its draws are a Power-EP approximation, not the FITC model's posterior): fix it, or `learn()` it");
            }
        } else if !self.full_gp(li) {
            return held(
                "sampling the hyperparameters of a normal prior shared this way is not implemented",
            );
        }
        let given_values = !b.elliptical.is_empty();
        if b.per_column && given_values {
            return held("a kernel shared by the columns of a matrix GP with the generic update; sampling it is not implemented");
        }
        if b.per_column {
            // The columns of a matrix latent share the kernel.
            let gi = add_to_group(&mut moves.groups, id, vec![li], vec![b.id]);
            return GibbsUpdate::KernelGroup { group: gi };
        }
        match moves.kernels.iter_mut().find(|k| k.block == b.id) {
            Some(k) => k.hypers.push(id),
            None => moves.kernels.push(GpKernelUpdate {
                block: b.id,
                hypers: vec![id],
                given_values,
                slice: SliceScheme::for_marginal_update(),
                interweave: Vec::new(),
                interweave_variance_only: false,
                surrogate: (!given_values && b.kind == crate::blocks::BlockKind::FullGp)
                    .then(crate::surrogate::SurrogateTransition::for_marginal_update),
            }),
        }
        if given_values {
            GibbsUpdate::GivenValues { block: b.id }
        } else {
            GibbsUpdate::GpMarginal { block: b.id }
        }
    }

    /// Read by the kernels of several full GPs: one group, sliced with all of them integrated
    /// out.
    fn shared_kernel_update(
        &self,
        id: HyperId,
        several: &[LatentId],
        moves: &mut Moves,
    ) -> GibbsUpdate {
        if !several.iter().all(|&li| self.full_gp(li)) {
            return held("shared by the priors of several latents, one of them a normal or sparse GP prior; sampling it is not implemented");
        }
        if several
            .iter()
            .any(|&li| block_of(self.blocks, li).is_some_and(|b| !b.elliptical.is_empty()))
        {
            return held("a kernel shared with a GP that takes the generic update; sampling it is not implemented");
        }
        let ids = several
            .iter()
            .map(|&li| {
                block_of(self.blocks, li)
                    .expect("every latent has a block")
                    .id
            })
            .collect();
        let gi = add_to_group(&mut moves.groups, id, several.to_vec(), ids);
        GibbsUpdate::KernelGroup { group: gi }
    }

    /// A single-column full GP's kernel also moves with its standardised values held (the
    /// non-centred move) when every factor reading it has a log-density to evaluate.
    fn kernel_interweave(&self, k: &mut GpKernelUpdate) {
        let b = &self.blocks[k.block.0];
        if b.kind != crate::blocks::BlockKind::FullGp || b.per_column || b.latents.len() != 1 {
            return;
        }
        let reading = factors_reading(self.model, self.factors, b.latents[0]);
        let evaluable = reading.iter().all(|f| {
            let fp = &self.factors[f.0];
            fp.log_density.is_some() && fp.categorical.is_none() && fp.collapsed.is_empty()
        });
        if evaluable && !reading.is_empty() {
            k.interweave = reading;
            k.interweave_variance_only = self.variance_alone(b.latents[0], &k.hypers);
        }
    }

    /// Whether latent `li`'s GP prior is `s · k(…)` with some of `hypers` read by `s` and none
    /// of `s`'s hyperparameters read by `k` or the mean: then its non-centred move of `s` needs
    /// no factorisation ([`GpKernelUpdate::interweave_variance_only`]).
    fn variance_alone(&self, li: LatentId, hypers: &[HyperId]) -> bool {
        let LatentPrior::Gp {
            kernel: gpm_ir::Kernel::Scale { variance, kernel },
            mean,
            ..
        } = &self.model.latents[li.0].prior
        else {
            return false;
        };
        let scale = variance.hypers();
        let elsewhere: Vec<String> = kernel.hypers().into_iter().chain(mean.hypers()).collect();
        let sampled = hypers
            .iter()
            .any(|h| scale.contains(&self.model.hypers[h.0].name));
        sampled && scale.iter().all(|n| !elsewhere.contains(n))
    }

    /// A dense block's prior scales, sampled given its values, also move non-centred (with
    /// the level of its flat latents held, and once more Laplace-standardised) when every
    /// factor reading it has a log-density to evaluate.
    fn dense_interweave(&self, d: &mut DenseScaleUpdate) {
        let b = &self.blocks[d.block.0];
        if !d.given_values {
            return;
        }
        let mut reading: Vec<FactorId> = Vec::new();
        for &li in &b.latents {
            for f in factors_reading(self.model, self.factors, li) {
                if !reading.contains(&f) {
                    reading.push(f);
                }
            }
        }
        // A generic factor's log-density as written is its likelihood, whichever of its
        // predictors are drawn from their Gaussian conditionals.
        let evaluable = reading.iter().all(|f| {
            let fp = &self.factors[f.0];
            fp.log_density.is_some()
                && fp.categorical.is_none()
                && (fp.collapsed.is_empty() || fp.generic.is_some())
        });
        if !evaluable || reading.is_empty() {
            return;
        }
        reading.sort();
        d.interweave = reading;
        d.interweave_moves = NON_CENTRED_MOVES;
        d.laplace = true;
        let flat: Vec<LatentId> = b
            .latents
            .iter()
            .copied()
            .filter(|li| matches!(self.model.latents[li.0].prior, LatentPrior::Flat))
            .collect();
        if flat.len() < b.latents.len() {
            d.level = flat;
        }
    }
}

fn held(why: &str) -> GibbsUpdate {
    GibbsUpdate::Held {
        reason: why.to_string(),
    }
}
