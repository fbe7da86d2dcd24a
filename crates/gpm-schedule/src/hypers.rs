//! Every hyperparameter's update as the schedule states it (the types, data-free): where a run
//! starts it, and how Gibbs and the variational methods update it; `hyper_plan.rs` decides them.
//! The runtime carries these decisions out; it does not re-derive them from the model.

use crate::blocks::BlockSpec;
use crate::ids::{BlockId, FactorId, HyperId, LatentId};
use crate::program::FactorProgram;
use crate::slice_scheme::SliceScheme;
use crate::source::Source;
use gpm_ir::{Design, HyperKind, Model};
use gpm_library::PriorStart;
use serde::Serialize;
use std::collections::BTreeSet;

/// How a run's starting value of a hyperparameter was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StartRule {
    /// The declared fixed value.
    Fixed,
    /// The initial value of `learn(init)`.
    Init,
    /// The prior's mean.
    PriorMean,
    /// The prior's mode (an inverse Gamma with shape ≤ 1 has no mean).
    PriorMode,
    /// The median of the prior truncated to the declared range (a half-Cauchy's scale).
    PriorTruncatedMedian,
    /// A point inside the declared range of a flat prior.
    PriorFlat,
}

impl StartRule {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            StartRule::Fixed => "fixed",
            StartRule::Init => "initial value",
            StartRule::PriorMean => PriorStart::Mean.describe(),
            StartRule::PriorMode => PriorStart::Mode.describe(),
            StartRule::PriorTruncatedMedian => PriorStart::TruncatedMedian.describe(),
            StartRule::PriorFlat => PriorStart::FlatRange.describe(),
        }
    }
    /// Whether the value comes from a prior (then CAVI and SVI hold it there).
    pub fn from_prior(self) -> bool {
        !matches!(self, StartRule::Fixed | StartRule::Init)
    }
}

/// The starting value of a hyperparameter and how it was chosen: the fixed value, `learn`'s
/// initial value, or the prior's ([`gpm_library::HyperPrior::start`]: its mean, else its
/// interior mode, else the median of the prior truncated to the range; inside the range for a
/// flat prior).
pub fn start_value(kind: &HyperKind) -> (f64, StartRule) {
    match kind {
        HyperKind::Fixed { value } => (*value, StartRule::Fixed),
        HyperKind::Learn { init } => (*init, StartRule::Init),
        HyperKind::Prior { prior } => {
            let (v, how) = prior.start();
            let rule = match how {
                PriorStart::Mean => StartRule::PriorMean,
                PriorStart::Mode => StartRule::PriorMode,
                PriorStart::TruncatedMedian => StartRule::PriorTruncatedMedian,
                PriorStart::FlatRange => StartRule::PriorFlat,
            };
            (v, rule)
        }
    }
}

/// How Gibbs updates a hyperparameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "update", rename_all = "snake_case")]
pub enum GibbsUpdate {
    /// Fixed: never changes.
    Fixed,
    /// `learn()`: type-II maximum likelihood (on the CAVI ELBO) before sampling, then held.
    TypeIiMl,
    /// `learn()`, but the augmentation has no closed-form CAVI: held at its initial value.
    LearnUnavailable,
    /// Drawn from its conjugate Gamma conditional ([`crate::schedule::Schedule::hypers`]).
    Conjugate,
    /// Slice sampled from the likelihood of these factors with the auxiliaries integrated out,
    /// then the auxiliaries redrawn.
    Likelihood {
        /// The factors that read it.
        factors: Vec<FactorId>,
    },
    /// Slice sampled with one GP block integrated out given the auxiliaries.
    GpMarginal {
        /// The block.
        block: BlockId,
    },
    /// Slice sampled with the GPs of a shared-kernel group (see [`KernelGroup`]).
    KernelGroup {
        /// Index into [`crate::schedule::Schedule::kernel_groups`].
        group: usize,
    },
    /// Slice sampled with a dense block's weights integrated out given the auxiliaries.
    DenseMarginal {
        /// The block.
        block: BlockId,
    },
    /// Slice sampled from the prior density of one block's current values (a block with the
    /// generic update cannot be integrated out).
    GivenValues {
        /// The block.
        block: BlockId,
    },
    /// Moved with its block by the sweep's NUTS step ([`crate::nuts_block::NutsBlock`]).
    Nuts {
        /// The block.
        block: BlockId,
    },
    /// The class scales of a scaled logistic-softmax factor: each drawn from its Gamma
    /// conditional with the factor's counts integrated out, inside the factor's auxiliary step
    /// between `λ` and the counts (thesis §7.4.3).
    ClassScales {
        /// The factor.
        factor: FactorId,
        /// The Gamma prior's shape.
        shape: f64,
        /// The Gamma prior's rate.
        rate: f64,
    },
    /// A prior that Gibbs cannot sample yet: held at its starting value.
    Held {
        /// Why.
        reason: String,
    },
}

impl GibbsUpdate {
    /// For people.
    pub fn describe(&self, groups: &[KernelGroup]) -> String {
        match self {
            GibbsUpdate::Fixed => "fixed".into(),
            GibbsUpdate::TypeIiMl => "learned by type-II ML (CAVI ELBO) before sampling, then held".into(),
            GibbsUpdate::LearnUnavailable => {
                "held at its initial value: type-II ML needs closed-form CAVI, not yet available for this augmentation".into()
            }
            GibbsUpdate::Conjugate => "sampled by its conjugate Gamma update".into(),
            GibbsUpdate::Likelihood { .. } => {
                "sampled by slice sampling given the latents (auxiliaries integrated out)".into()
            }
            GibbsUpdate::GpMarginal { .. } => {
                "sampled by slice sampling given the auxiliaries, with the GP integrated out".into()
            }
            GibbsUpdate::DenseMarginal { .. } => "sampled by slice sampling given the auxiliaries, with the weights of its normal prior integrated out".into(),
            GibbsUpdate::GivenValues { .. } => "sampled by slice sampling given the current values of the block whose prior reads it (that block takes the generic update and cannot be integrated out)".into(),
            GibbsUpdate::KernelGroup { group } => {
                if groups.get(*group).is_some_and(|g| g.integrated) {
                    "sampled by slice sampling given the auxiliaries, with the GPs that share it integrated out".into()
                } else {
                    "sampled by slice sampling with one of the GPs that share it integrated out and the others given (a likelihood couples them: slower mixing, check its ESS)".into()
                }
            }
            GibbsUpdate::Nuts { .. } => "sampled jointly with the weights of the block whose prior reads it, by a NUTS step of the sweep (non-centred: the weights whitened by their prior, the hyperparameter on its unconstrained scale)".into(),
            GibbsUpdate::ClassScales { factor, shape, rate } => format!(
                "sampled in factor #{}'s auxiliary step: θ_k | λ, F ~ Gamma({shape} + #{{y = k}}, {rate} + Σ_i λ_i σ(F_ik)), the counts integrated out (thesis §7.4.3)",
                factor.0 + 1
            ),
            GibbsUpdate::Held { reason } => format!("held at its starting value ({reason})"),
        }
    }

    /// Whether the update draws the hyperparameter (so that it is a column of the draws).
    pub fn is_sampled(&self) -> bool {
        matches!(
            self,
            GibbsUpdate::Conjugate
                | GibbsUpdate::Likelihood { .. }
                | GibbsUpdate::GpMarginal { .. }
                | GibbsUpdate::KernelGroup { .. }
                | GibbsUpdate::DenseMarginal { .. }
                | GibbsUpdate::GivenValues { .. }
                | GibbsUpdate::ClassScales { .. }
                | GibbsUpdate::Nuts { .. }
        )
    }
}

/// How CAVI and SVI treat a hyperparameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "update", rename_all = "snake_case")]
pub enum VariationalUpdate {
    /// Fixed.
    Fixed,
    /// `learn()`: type-II ML (CAVI: the ELBO maximised over log θ; SVI: Adam on the minibatch
    /// ELBO, with a finite-difference gradient in log θ).
    TypeIiMl,
    /// `learn()` of a vector (ARD) or of a hyperparameter that is not a positive scalar: type-II
    /// ML under CAVI; SVI, which learns on the log scale, keeps its initial value.
    TypeIiMlCaviOnly,
    /// `learn()` without closed-form CAVI for some factor: held at its initial value.
    LearnUnavailable,
    /// `learn()` of a scaled logistic-softmax factor's class scales: after each CAVI step,
    /// their closed-form maximiser of the ELBO given `q(f)` (thesis §7.4.3), normalised to
    /// mean 1 (the likelihood does not change when all scales are multiplied by one number).
    /// SVI keeps their initial values.
    ClassScales {
        /// The factor.
        factor: FactorId,
    },
    /// A prior: held at its starting value (the variational methods do not integrate over
    /// hyperparameter priors).
    Held,
}

impl VariationalUpdate {
    /// For people.
    pub fn describe(&self) -> &'static str {
        match self {
            VariationalUpdate::Fixed => "fixed",
            VariationalUpdate::TypeIiMl => "learned by type-II ML on the ELBO",
            VariationalUpdate::TypeIiMlCaviOnly => {
                "learned by type-II ML on the ELBO under CAVI; SVI keeps its initial value (it learns positive scalars only)"
            }
            VariationalUpdate::LearnUnavailable => {
                "held at its initial value (no closed-form CAVI for this augmentation)"
            }
            VariationalUpdate::Held => {
                "held at its starting value (CAVI and SVI do not integrate over hyperparameter priors)"
            }
            VariationalUpdate::ClassScales { .. } => {
                "learned under CAVI by the closed-form maximiser θ_k = #{y = k} / Σ_i E[λ_i] (1 − σ̃_ik) (thesis §7.4.3), normalised to mean 1; SVI keeps its initial value"
            }
        }
    }
}

/// One hyperparameter's plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HyperStep {
    /// Which hyperparameter.
    pub hyper: HyperId,
    /// Its name, for people and for the draws' column.
    pub name: String,
    /// A scalar (ARD vectors are sized by the data and hold one start value per entry).
    pub scalar: bool,
    /// Starting value.
    pub start: f64,
    /// How the starting value was chosen.
    pub start_rule: StartRule,
    /// Its Gibbs update.
    pub gibbs: GibbsUpdate,
    /// Its CAVI / SVI treatment.
    pub variational: VariationalUpdate,
}

/// Hyperparameters with priors read only by one full GP block's prior (kernel parameters, its
/// mean): each slice sampled with the GP integrated out given the auxiliaries, then the GP drawn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpKernelUpdate {
    /// The block.
    pub block: BlockId,
    /// Its hyperparameters, in update order.
    pub hypers: Vec<HyperId>,
    /// Sampled given the block's values instead of with the block integrated out.
    pub given_values: bool,
    /// How they are slice sampled together.
    pub slice: SliceScheme,
    /// The factors whose original log-densities a second, non-centred move of the same
    /// hyperparameters evaluates after the block's draw (empty: no such move). With
    /// `z = L_θ⁻¹(f − μ₀)` held, θ is slice sampled from `p(θ) Π p(y | f = μ₀ + L_θ z)` with
    /// the auxiliaries integrated out, then the auxiliaries are drawn again: an interweaving of
    /// the centred (`θ | ω`, `f` integrated out) and non-centred (`θ | z, y`) forms (Yu & Meng
    /// 2011), which breaks the coupling of a kernel variance with the auxiliaries that slows
    /// the centred move alone. Chosen when every factor reading the block has a pointwise
    /// log-density and none is categorical or collapsed.
    pub interweave: Vec<FactorId>,
    /// The non-centred move moves the kernel's variance alone: the kernel is `s · k(…)` with
    /// `k` and the mean reading none of `s`'s hyperparameters, so `L_θ = √s L₁` and a new `s`
    /// rescales `f − μ₀` and the factor — no kernel matrix, no factorisation per evaluation
    /// (one at a time, by slice sampling). Measured on the GP classifier with Gamma priors on
    /// lengthscale and variance (`cargo bench -p gpmc --bench full_bayes`): the sweep 0.72× at
    /// N = 300 and 600, the hyperparameters' minimum ESS per second 1.9–2.0× that of moving
    /// both. `false`: every hyperparameter of the update, jointly, as the marginal move does.
    pub interweave_variance_only: bool,
    /// The marginal move proposes through a cheap approximation of its density and corrects
    /// once ([`crate::surrogate::SurrogateTransition`]); `None` for a move given the block's values or a
    /// sparse block's (its marginal is already `O(NM²)`).
    pub surrogate: Option<crate::surrogate::SurrogateTransition>,
}

/// Hyperparameters with priors read only by the `normal` priors of one dense block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DenseScaleUpdate {
    /// The block.
    pub block: BlockId,
    /// Its hyperparameters, in update order.
    pub hypers: Vec<HyperId>,
    /// Sampled given the block's values instead of with the block integrated out.
    pub given_values: bool,
    /// How they are slice sampled together.
    pub slice: SliceScheme,
    /// The factors whose original log-densities a second, non-centred move of the same
    /// hyperparameters evaluates after the block's generic update (empty: no such move). With
    /// the standardised values `z = (θ − m)/s` held, the hyperparameters are slice sampled from
    /// `p(h) Π p(y | θ = m_h + s_h z)` with the auxiliaries integrated out, `θ` moved with
    /// them, then the auxiliaries drawn again: an interweaving (Yu & Meng 2011) of the centred
    /// move given `θ` — which alone is a funnel: a scale given its weights — with the
    /// non-centred one. Chosen for a block with the generic update (`given_values`) whose
    /// every reading factor has a pointwise log-density and is neither categorical nor
    /// collapsed.
    pub interweave: Vec<FactorId>,
    /// How many times the non-centred move runs after each update ([`NON_CENTRED_MOVES`]
    /// with an interweaving, else 0).
    pub interweave_moves: usize,
    /// The block's latents with a flat prior (heavy-tailed priors included: they are factors),
    /// which the non-centred move shifts to hold the *level* (empty: none, or no interweaving).
    /// The standardised weights `z` alone held, a scale's move changes what the weights add to
    /// the predictor along these latents' columns — an intercept beside a basis function that
    /// is nearly constant — and the likelihood pins the scale where it is. Held instead:
    /// `L = θ_a + A θ_s`, `A = (Φ_aᵀΦ_a)⁻¹Φ_aᵀΦ_s` the least-squares map of the standardised
    /// coordinates' design columns onto these latents' in the observation factors. For fixed
    /// hyperparameters `(θ_a, θ_s) ↦ (L, z)` has Jacobian `Π 1/s`, which the weights' prior
    /// cancels: the hyperparameters' conditional given `(L, z)` is the same product of priors
    /// and factors, at the moved `θ`. Measured on `bench/models/heteroscedastic_agp.gpm` (the
    /// log-scale's intercept `c` and a basis function of mean 0.59, sd 0.04 over the inputs):
    /// worst bulk ESS 74 / 83 / 60 → 358 / 302 / 293 (seeds 1-3, 4 × 1 000 draws; 407-578 over
    /// seeds 1-6 once the centred move beside a flat latent was mended).
    pub level: Vec<LatentId>,
    /// A third move after the non-centred ones (with an interweaving): the hyperparameters
    /// slice sampled again with the values standardised by the block's Laplace approximation
    /// at each value of them, `ε = L_hᵀ(θ − θ̂_h)` held, `θ̂_h` the mode of the block's
    /// conditional (these factors' log-densities) and `L_h L_hᵀ` its negative Hessian; the
    /// target carries the map's Jacobian `|det L_h|⁻¹`. Where the data inform some weights
    /// and not others, neither the centred nor the non-centred move frees the scale; this one
    /// does (Christensen, Roberts & Sköld 2006). Measured on
    /// `bench/models/heteroscedastic_agp.gpm` (4 × 1 000 draws, seeds 1-6): worst bulk ESS
    /// 407-578 with max R̂ 1.017 → 964-1 216 with max R̂ 1.004, at 1.6× the time per sweep.
    /// The runtime skips it for a block of more than [`LAPLACE_MAX_DIM`] coordinates (each
    /// evaluation is a Newton solve) or whose reading factors' observations `n` make `n d²`
    /// exceed 10⁷ (the Hessian's cost).
    pub laplace: bool,
}

/// The largest dense block the Laplace-standardised move runs on: each of its evaluations
/// factors a `d × d` Hessian several times (Newton), `O(N d² + d³)`.
pub const LAPLACE_MAX_DIM: usize = 200;

/// Non-centred moves of a dense block's scales per sweep. One slice step moves the scales
/// only part of the way through their conditional given the standardised weights, and each
/// costs a pass of the reading factors' log-densities (`O(N)`, small beside the block's
/// elliptical steps): on `hierarchical_logistic --generic` (4 × 1 000 draws, seeds 1-6) the
/// worst parameter's bulk ESS was 203-1 055 with one move (R̂ up to 1.021), 531-1 253 with
/// two, 807-1 543 with three and 1 192-1 626 with five (R̂ ≤ 1.004), for 20 % more time per
/// sweep than one.
pub const NON_CENTRED_MOVES: usize = 5;

/// Hyperparameters with priors read only by the priors of several full GP blocks (a kernel
/// shared by latent functions, or by the columns of a matrix latent). `integrated`: no factor
/// couples the blocks, so θ is drawn with every block integrated out, then every block; else θ
/// is drawn at the `lead` block (the first the sweep reaches) with that one integrated out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelGroup {
    /// Its hyperparameters, in update order.
    pub hypers: Vec<HyperId>,
    /// The GP latents whose priors read them, in declaration order.
    pub latents: Vec<LatentId>,
    /// Their blocks.
    pub blocks: Vec<BlockId>,
    /// Whether the blocks are drawn jointly with θ (no factor couples them).
    pub integrated: bool,
    /// When not integrated: the block whose update carries θ (its first column).
    pub lead: Option<BlockId>,
    /// How they are slice sampled together.
    pub slice: SliceScheme,
}

/// All hyperparameter decisions of a schedule.
pub(crate) struct HyperPlan {
    pub steps: Vec<HyperStep>,
    pub likelihood: Vec<HyperId>,
    pub kernels: Vec<GpKernelUpdate>,
    pub groups: Vec<KernelGroup>,
    pub dense: Vec<DenseScaleUpdate>,
}

/// Whether a hyperparameter of block `b`'s GP prior is sampled: its own kernel update or a
/// shared-kernel group holding it (`K` then moves from sweep to sweep).
pub(crate) fn kernel_moves(
    b: crate::ids::BlockId,
    kernels: &[GpKernelUpdate],
    groups: &[KernelGroup],
) -> bool {
    kernels.iter().any(|k| k.block == b) || groups.iter().any(|g| g.blocks.contains(&b))
}

/// The factors with a predictor that reads latent `li`.
pub(crate) fn factors_reading(
    model: &Model,
    factors: &[FactorProgram],
    li: LatentId,
) -> Vec<FactorId> {
    let name = &model.latents[li.0].name;
    factors
        .iter()
        .enumerate()
        .filter(|(_, fp)| {
            fp.slots.iter().any(|s| {
                matches!(s, Source::Predictor(p)
                    if model.predictors[p.0].terms.iter().any(|t| &t.latent == name))
            })
        })
        .map(|(f, _)| FactorId(f))
        .collect()
}

/// Whether no factor couples two blocks of a group: every non-categorical factor that reads one
/// of them reads no other (its curvature may read any predictor of the factor), and no block of
/// the group is read by a collapsed predictor. Columns of a matrix latent count as blocks; which
/// columns a factor reads is read off the predictors' designs.
pub(crate) fn group_independent(
    model: &Model,
    factors: &[FactorProgram],
    collapsed: &BTreeSet<String>,
    latents: &[LatentId],
) -> bool {
    for fp in factors {
        if fp.categorical.is_some() {
            continue;
        }
        let mut touched = BTreeSet::new();
        for s in &fp.slots {
            let Source::Predictor(p) = s else { continue };
            let pred = &model.predictors[p.0];
            for &li in latents {
                // The columns of `li` this predictor reads as a GP block does: `z[i]` is
                // column 0, `Z[i, c]` column c.
                let columns = pred
                    .terms
                    .iter()
                    .filter(|t| t.latent == model.latents[li.0].name)
                    .filter_map(|t| match t.design {
                        Design::Column { column } => Some(column),
                        Design::Identity => Some(0),
                        _ => None,
                    });
                for c in columns {
                    if collapsed.contains(&pred.name) {
                        return false;
                    }
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

pub(crate) fn block_of(blocks: &[BlockSpec], li: LatentId) -> Option<&BlockSpec> {
    blocks.iter().find(|b| b.latents.contains(&li))
}

/// Add a hyperparameter to the group of the same latents, or start a group; its index.
pub(crate) fn add_to_group(
    groups: &mut Vec<KernelGroup>,
    id: HyperId,
    latents: Vec<LatentId>,
    blocks: Vec<BlockId>,
) -> usize {
    match groups.iter().position(|g| g.latents == latents) {
        Some(gi) => {
            groups[gi].hypers.push(id);
            gi
        }
        None => {
            groups.push(KernelGroup {
                hypers: vec![id],
                latents,
                blocks,
                integrated: false,
                lead: None,
                slice: SliceScheme::for_marginal_update(),
            });
            groups.len() - 1
        }
    }
}
