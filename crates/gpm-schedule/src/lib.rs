//! # gpm-schedule
//!
//! Owns the step from *what* to augment to *how* to run it, decided once and data-free, and
//! printed by `gpmc check`: the Gaussian blocks ([`blocks`]), the ordered steps of a Gibbs sweep
//! and of a CAVI iteration ([`steps`]), every hyperparameter's start value and update
//! ([`hypers`]), and each certified [`Plan`] compiled into a [`FactorProgram`] — the auxiliary
//! variables in sampling order with their laws and parameters compiled to [`Tape`]s over
//! numbered slots, and the per-observation curvature `a` and linear term `b` of the augmented
//! log-likelihood `b·η − ½ a η²` for every predictor. It also carries what the runtime needs of
//! the model, bound to typed ids ([`ids`]), so that the runtime never reads `gpm_ir::Model`.
//! It must not decide augmentations (that is `gpm-augment`) nor run anything.
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod augmented_joint;
pub mod blocks;
mod cavi_program;
pub use cavi_program::{CaviAux, CaviFamily, CaviPoisson, CaviProgram, CountLaw, PolyTapes};
mod conjugate;
mod factor;
use factor::{collect, compile_factor, family_trees};
pub mod ellipse_reference;
pub mod gradient;
mod hyper_plan;
pub mod hypers;
pub mod ids;
pub mod learning;
pub use learning::Learning;
pub mod marginal_elliptical;
mod names;
pub mod nuts_block;
pub mod prior;
pub mod slice_scheme;
pub mod steps;
pub mod surrogate;
pub mod tape;
use cavi_program::{cavi_program, tilted};
use conjugate::conjugate_hypers;

pub use augmented_joint::{AugmentedJoint, JointAux};
pub use blocks::{BlockKind, BlockSpec};
pub use ellipse_reference::EllipseReference;
use gpm_augment::{Plan, Poly};
use gpm_families::MixingLaw;
use gpm_ir::Model;
pub use gradient::{HyperGradient, PredictorGradient};
pub use hypers::{
    start_value, DenseScaleUpdate, GibbsUpdate, GpKernelUpdate, HyperStep, KernelGroup, StartRule,
    VariationalUpdate, LAPLACE_MAX_DIM, NON_CENTRED_MOVES,
};
pub use ids::{BlockId, FactorId, HyperId, LatentId, PredictorId};
pub use nuts_block::{NutsBlock, Options};
pub use prior::{BoundArg, BoundKernel, BoundPrior, NormalPriorGradient};
pub use slice_scheme::SliceScheme;
use std::collections::BTreeSet;
pub use steps::{CaviStep, GibbsStep, GpfStep};
pub use surrogate::SurrogateTransition;
pub use tape::Tape;

/// Where a slot's value comes from at observation `i`.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A predictor's value at `i`.
    Predictor(PredictorId),
    /// A datum: a vector's entry `i`, a matrix column's entry `i`, or a scalar (bound to the
    /// data by the runtime).
    Data(DataRef),
    /// A hyperparameter.
    Hyper(HyperId),
    /// An auxiliary variable of this factor at `i`.
    Aux(usize),
}

/// A datum a slot reads: its name and, for a column of a data matrix, the 0-based column.
#[derive(Debug, Clone, PartialEq)]
pub struct DataRef {
    /// The datum's name as declared.
    pub name: String,
    /// The column of a matrix datum.
    pub column: Option<usize>,
}

impl DataRef {
    /// The datum behind a CAS data symbol (`y`, or `X[,2]` for a column).
    pub fn from_symbol(symbol: &str) -> DataRef {
        let (name, column) = gpm_ir::parse_data_column(symbol);
        DataRef {
            name: name.to_string(),
            column,
        }
    }

    /// The symbol as the CAS spells it.
    pub fn symbol(&self) -> String {
        match self.column {
            Some(c) => gpm_ir::data_column_symbol(&self.name, c + 1),
            None => self.name.clone(),
        }
    }
}

fn hyper_of(model: &Model, name: &str) -> Result<HyperId, String> {
    model
        .hypers
        .iter()
        .position(|h| h.name == name)
        .map(HyperId)
        .ok_or_else(|| format!("unknown hyperparameter `{name}`"))
}

/// How an auxiliary variable is drawn, with compiled parameters.
#[derive(Debug, Clone)]
pub enum AuxKind {
    /// A named law ([`gpm_families`]) with its parameters, in the order of
    /// [`MixingLaw::params`].
    Law {
        /// The law.
        law: &'static dyn MixingLaw,
        /// Its parameters.
        params: Vec<Tape>,
    },
    /// The tilted inverse-Laplace law of a CAS-proved completely monotone `φ`.
    Tilted(Tilted),
}

impl AuxKind {
    /// The law's name for people (`Pólya-Gamma`; the same as the augmentation plan's).
    pub fn name(&self) -> &'static str {
        match self {
            AuxKind::Law { law, .. } => law.name(),
            AuxKind::Tilted(_) => gpm_augment::plan::TILTED_LAW,
        }
    }
}

/// A completely monotone `φ(r) = exp(−ψ(r))` with no named law: evaluated by the CAS (in
/// complex arithmetic for Laplace inversion), its parameters read from slots.
#[derive(Debug, Clone)]
pub struct Tilted {
    /// `ψ(r)`, its symbols bound to `[r, params…]`.
    pub psi: gpm_cas::SlotExpr,
    /// `ψ'(r)`, bound alike: `E[ω | c] = ψ'(c²)`.
    pub dpsi: gpm_cas::SlotExpr,
    /// The tilt `c²`.
    pub c2: Tape,
    /// The factor's slots of `ψ`'s symbols other than `r`, in binding order.
    pub params: Vec<usize>,
}

impl Tilted {
    /// The arguments of `ψ` and `ψ'` at `r`: `[r, params…]` read from a factor's slot values.
    pub fn args<V: Copy + From<f64>>(&self, r: V, vals: &[f64], out: &mut Vec<V>) {
        out.clear();
        out.push(r);
        out.extend(self.params.iter().map(|&k| V::from(vals[k])));
    }
}

/// One auxiliary variable of a factor (one value per observation).
#[derive(Debug, Clone)]
pub struct AuxProgram {
    /// Name.
    pub name: String,
    /// Its slot.
    pub slot: usize,
    /// Its conditional.
    pub kind: AuxKind,
    /// Its conditional mean as a function of the slots (CAVI uses it with `c² = E[r]`).
    pub mean: Tape,
}

/// The curvature `a` and linear term `b` of `b·η − ½ a η²` for one predictor.
#[derive(Debug, Clone)]
pub struct Curvature {
    /// The predictor's name, for people.
    pub predictor: String,
    /// The predictor.
    pub pred: PredictorId,
    /// `b`.
    pub lin: Tape,
    /// `a` (≥ 0).
    pub quad: Tape,
}

/// After the uncollapsed draw of each logistic-softmax factor's latent matrix, a translation
/// move of it ([`GibbsStep::LevelShift`]) — where the matrix is one full GP block drawn on its
/// own or with its kernel's hyperparameters (not by the generic update, not as a coupled
/// group's lead) and no other factor reads it, so that
/// `p(F | y)` is the GP prior times this factor alone.
fn level_shifts(
    model: &Model,
    factors: &[FactorProgram],
    blocks: &[blocks::BlockSpec],
    groups: &[KernelGroup],
    gibbs: &mut Vec<GibbsStep>,
) {
    for (f, fp) in factors.iter().enumerate() {
        let Some(c) = &fp.categorical else { continue };
        let Some(b) = blocks.iter().find(|b| b.latents.contains(&c.latent_id)) else {
            continue;
        };
        let alone = b.latents.len() == 1
            && b.kind == blocks::BlockKind::FullGp
            && b.elliptical.is_empty()
            && !b.collapsed
            && hypers::factors_reading(model, factors, c.latent_id)
                .iter()
                .all(|r| r.0 == f);
        let at = steps::drawn_at(gibbs, groups, b.id);
        if let (true, Some(at)) = (alone, at) {
            // Whether it redraws the factor's auxiliaries itself: `set_redraws`, once every
            // move is in place.
            gibbs.insert(
                at + 1,
                GibbsStep::LevelShift {
                    factor: FactorId(f),
                    block: b.id,
                    redraw: true,
                },
            );
        }
    }
}

/// A categorical (logistic-softmax) factor: handled by its own block in the runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoricalProgram {
    /// Label datum (values `1..C`).
    pub label: String,
    /// Latent matrix, one column per class.
    pub latent: String,
    /// The same latent, by id.
    pub latent_id: LatentId,
    /// The bijective link: one latent column fewer than classes, the last class of fixed
    /// weight [`gpm_ir::FIXED_CLASS_WEIGHT`] (thesis §7.4.2).
    pub bijective: bool,
    /// The class scales θ of a scaled link (thesis §7.4.3): a vector hyperparameter, one entry
    /// per class; its updates are its [`HyperStep`].
    pub scale: Option<HyperId>,
}

/// Everything the runtime needs to run one likelihood factor.
#[derive(Debug, Clone)]
pub struct FactorProgram {
    /// Index of the factor in the model.
    pub factor: usize,
    /// Its number of observations.
    pub n: gpm_ir::Dim,
    /// Whether it is a latent's heavy-tailed prior written as a factor (`gpm_ir::Factor::
    /// prior_of`): inference follows it like any factor, but it observes nothing, so it has no
    /// `log_lik`, `y_rep` or prediction.
    pub is_prior: bool,
    /// What each slot holds.
    pub slots: Vec<Source>,
    /// The slots that read the factor's response (overwritten with each label in turn to get
    /// predictive label probabilities).
    pub response_slots: Vec<usize>,
    /// Auxiliary variables in sampling order.
    pub aux: Vec<AuxProgram>,
    /// The augmented log-likelihood given the auxiliaries, per predictor.
    pub curvature: Vec<Curvature>,
    /// Collapsed conditionals (un-augmented), per predictor sampled that way.
    pub collapsed: Vec<Curvature>,
    /// The original log-density: what inference follows (the log joint, likelihood
    /// hyperparameters' slices, the generic update, particle flow).
    pub log_density: Option<Tape>,
    /// [`Self::log_density`] less its terms free of the predictors (`lgamma(y + 1)`, `log σ`
    /// with σ fixed …), which cancel in every ratio an elliptical slice step takes: the
    /// likelihood it evaluates at each proposal, for the generic update and the marginal
    /// elliptical steps alike.
    pub log_density_in_predictors: Option<Tape>,
    /// An observation's density `log p(y_i | θ)` where it differs from [`Self::log_density`]
    /// (a robust statement's loss is not a density): what prediction scores.
    pub observation: Option<Tape>,
    /// How to draw a new response at an observation (posterior predictive checks), for a
    /// library distribution; the categorical factor is drawn from [`Self::categorical`].
    pub replicate: Option<ReplicateProgram>,
    /// The categorical payload, if any.
    pub categorical: Option<CategoricalProgram>,
    /// Closed-form CAVI, when the plan has only Pólya-Gamma and scale-mixture variables
    /// (`None` for Poisson chains, collapsed predictors and categorical factors: not yet).
    pub cavi: Option<CaviProgram>,
    /// Why [`FactorProgram::cavi`] is `None`, for people.
    pub cavi_unavailable: Option<String>,
    /// A factor with no augmentation: its log-density is used as written by the generic update
    /// of the blocks it reads ([`BlockSpec::elliptical`]).
    pub generic: Option<GenericProgram>,
    /// `∂ℓ/∂η` of the original log-density in each predictor (Gaussian particle flow), or why
    /// there is none.
    pub gradient: Result<Vec<PredictorGradient>, String>,
    /// `∂ℓ/∂h` in each hyperparameter with a prior the factor reads (NUTS), or why there is
    /// none.
    pub hyper_gradient: Result<Vec<HyperGradient>, String>,
    /// The augmented joint density with its gradients (NUTS on the augmented model; `None`:
    /// no auxiliaries, the original log-density serves), or why there is none.
    pub augmented_joint: Result<Option<AugmentedJoint>, String>,
}

/// A library distribution with its parameters compiled in the factor's slots.
#[derive(Debug, Clone)]
pub struct ReplicateProgram {
    /// The distribution.
    pub likelihood: gpm_library::LikelihoodRef,
    /// The declared label set of a binary response.
    pub labels: Option<Vec<i64>>,
    /// Its parameters, in the library's order.
    pub params: Vec<Tape>,
}

/// A factor no rule augments.
#[derive(Debug, Clone)]
pub struct GenericProgram {
    /// Which atom no rule applied to, and why.
    pub reason: String,
    /// The predictors it reads.
    pub predictors: Vec<PredictorId>,
    /// Its variational update, or why there is none.
    pub variational: Result<GenericVariational, String>,
}

/// The generic variational update of a factor that reads one predictor `η`: a Gaussian site
/// `b·η − ½a·η²` per observation, moved towards `a = −E_q[ℓ''(η)]`, `b = E_q[ℓ'(η)] + a·E_q[η]`
/// (a natural-gradient step on the ELBO; Khan & Lin 2017), the expectations by Gauss-Hermite
/// quadrature over `q(η) = N(m, v)` and the derivatives taken symbolically by the CAS.
#[derive(Debug, Clone)]
pub struct GenericVariational {
    /// `ℓ'(η)`, the predictor and the factor's slots that hold it (set to each quadrature
    /// node): the factor's gradient, as particle flow reads it.
    pub grad: PredictorGradient,
    /// `ℓ''(η)`.
    pub d2: Tape,
}

/// Pairs of blocks whose Gaussian conditionals an augmented factor couples: one of its
/// predictors with a Gaussian term reads latents of both.
fn coupled_blocks(
    model: &Model,
    factors: &[FactorProgram],
    blocks: &[BlockSpec],
) -> BTreeSet<(BlockId, BlockId)> {
    let block_of = |name: &str| blocks::block_holding(model, blocks, name).map(|b| blocks[b].id);
    let mut out = BTreeSet::new();
    for fp in factors {
        for cv in fp.curvature.iter().chain(&fp.collapsed) {
            let read: Vec<BlockId> = model.predictors[cv.pred.0]
                .terms
                .iter()
                .filter_map(|t| block_of(&t.latent))
                .collect();
            for &a in &read {
                for &b in &read {
                    if a != b {
                        out.insert((a, b));
                    }
                }
            }
        }
    }
    out
}

/// Mark every block read by a factor with no augmentation for the generic update, and refuse
/// the combinations it cannot run.
fn elliptical_blocks(
    model: &Model,
    factors: &[FactorProgram],
    blocks: &mut [BlockSpec],
) -> Result<(), ScheduleError> {
    for (fi, fp) in factors.iter().enumerate() {
        let Some(g) = &fp.generic else { continue };
        for p in &g.predictors {
            for t in &model.predictors[p.0].terms {
                let Some(b) = blocks::block_holding(model, blocks, &t.latent) else {
                    continue;
                };
                let b = &mut blocks[b];
                let refuse = |message: String| ScheduleError::Factor {
                    factor: fp.factor,
                    message,
                };
                if b.kind == BlockKind::SparseGp {
                    return Err(refuse(format!("it has no augmentation and reads the sparse GP `{}`: the generic update needs a full GP (drop `inducing`)", t.latent)));
                }
                if b.collapsed {
                    return Err(refuse(format!("it has no augmentation and reads `{}`, which another factor samples from a collapsed conditional; write the two factors with separate latents", t.latent)));
                }
                // A flat latent needs an augmented (Gaussian-conditional) factor of its own for
                // the ellipse — its heavy-tailed prior's factor, or an augmented likelihood;
                // whether that informs every coordinate is checked when the block is factored.
                let augmented_reader = |l: &LatentId| {
                    hypers::factors_reading(model, factors, *l)
                        .iter()
                        .any(|f| factors[f.0].generic.is_none())
                };
                if let Some(flat) = b.latents.iter().find(|l| {
                    model.latents[l.0].prior == gpm_ir::LatentPrior::Flat && !augmented_reader(l)
                }) {
                    return Err(refuse(format!("it has no augmentation and reads the block of `{}`, whose prior is flat: the generic update moves along the prior's ellipses, which an improper prior does not have; give `{}` a proper prior (e.g. `normal(0, 10)`)", model.latents[flat.0].name, model.latents[flat.0].name)));
                }
                if !b.elliptical.contains(&FactorId(fi)) {
                    b.elliptical.push(FactorId(fi));
                }
            }
        }
    }
    Ok(())
}

/// A hyperparameter with a Gamma prior that is conjugate to every factor it appears in:
/// sampled from `Gamma(shape + Σ k, rate + Σ q)` each sweep.
#[derive(Debug, Clone)]
pub struct HyperProgram {
    /// The hyperparameter.
    pub hyper: HyperId,
    /// Its name.
    pub name: String,
    /// Prior shape.
    pub shape: f64,
    /// Prior rate.
    pub rate: f64,
    /// The prior itself (its log-density enters the log joint).
    pub prior: gpm_library::HyperPrior,
    /// Per factor (index into [`Schedule::factors`]): the `k` and `q` statistics per observation.
    pub stats: Vec<(usize, Tape, Tape)>,
}

/// The compiled model: everything the runtime needs to run it, so that the runtime never reads
/// `gpm_ir::Model` (stanc3's lesson: the middle IR says everything the back ends need).
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The latents (names, declared shapes, priors), indexed by [`LatentId`].
    pub latents: Vec<gpm_ir::Latent>,
    /// Each latent's prior with its parameters bound to hyperparameter ids, indexed by
    /// [`LatentId`]: what the runtime evaluates (never `latents[_].prior`).
    pub priors: Vec<BoundPrior>,
    /// The linear predictors, indexed by [`PredictorId`].
    pub predictors: Vec<gpm_ir::Predictor>,
    /// The hyperparameters as declared (shape, lower bound, fixed / learn / prior), indexed by
    /// [`HyperId`].
    pub hyper_decls: Vec<gpm_ir::Hyper>,
    /// One program per factor.
    pub factors: Vec<FactorProgram>,
    /// Hyperparameters sampled by conjugate Gamma updates.
    pub hypers: Vec<HyperProgram>,
    /// Predictors whose latents are sampled from collapsed conditionals first in a sweep.
    pub collapsed: BTreeSet<String>,
    /// The Gaussian blocks, in the order the runtime forms them.
    pub blocks: Vec<BlockSpec>,
    /// Every hyperparameter's start value and updates, in declaration order.
    pub hyper_steps: Vec<HyperStep>,
    /// The phase before a method's iterations: the `learn()` hyperparameters' type-II ML.
    pub learning: Learning,
    /// Likelihood hyperparameters slice sampled given the latents, in update order.
    pub likelihood_hypers: Vec<HyperId>,
    /// Hyperparameters of one full GP block, sampled with it integrated out.
    pub kernel_updates: Vec<GpKernelUpdate>,
    /// Hyperparameters shared by several full GP blocks.
    pub kernel_groups: Vec<KernelGroup>,
    /// Hyperparameters of the normal priors of one dense block.
    pub dense_updates: Vec<DenseScaleUpdate>,
    /// The blocks a sweep updates by NUTS ([`GibbsStep::Nuts`]).
    pub nuts_blocks: Vec<NutsBlock>,
    /// The steps of one Gibbs sweep.
    pub gibbs: Vec<GibbsStep>,
    /// The steps of one CAVI iteration.
    pub cavi: Vec<CaviStep>,
    /// The steps of one Gaussian particle flow iteration, or why the model cannot take it.
    pub gpf: Result<Vec<GpfStep>, String>,
}

impl Schedule {
    /// Hyperparameters Gibbs samples, in the order of the draws' columns: conjugate ones, then
    /// the likelihood's, one GP's, shared-kernel groups', dense blocks', class scales.
    pub fn sampled_hypers(&self) -> Vec<HyperId> {
        self.hypers
            .iter()
            .map(|c| c.hyper)
            .chain(self.likelihood_hypers.iter().copied())
            .chain(
                self.kernel_updates
                    .iter()
                    .flat_map(|k| k.hypers.iter().copied()),
            )
            .chain(
                self.kernel_groups
                    .iter()
                    .flat_map(|g| g.hypers.iter().copied()),
            )
            .chain(
                self.dense_updates
                    .iter()
                    .flat_map(|d| d.hypers.iter().copied()),
            )
            .chain(
                self.nuts_blocks
                    .iter()
                    .flat_map(|n| n.hypers.iter().copied()),
            )
            .chain(
                self.hyper_steps
                    .iter()
                    .filter(|s| matches!(s.gibbs, GibbsUpdate::ClassScales { .. }))
                    .map(|s| s.hyper),
            )
            .collect()
    }
}

/// A plan the runtime cannot run.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ScheduleError {
    /// A factor's plan cannot be compiled (`factor` counts from 0; shown from 1).
    #[error("factor #{}: {message}", factor + 1)]
    Factor {
        /// Factor index.
        factor: usize,
        /// What is missing.
        message: String,
    },
    /// A latent's prior reads something a prior cannot read.
    #[error("the prior of `{latent}`: {message}")]
    Prior {
        /// The latent.
        latent: String,
        /// What is wrong.
        message: String,
    },
}

/// Compile a model's plans.
pub fn build(model: &Model, plans: &[Plan]) -> Result<Schedule, ScheduleError> {
    build_with(model, plans, Options::default())
}

/// [`build`] with the sweep's choices limited by `options`.
pub fn build_with(
    model: &Model,
    plans: &[Plan],
    options: Options,
) -> Result<Schedule, ScheduleError> {
    let mut factors = Vec::new();
    let mut collapsed = BTreeSet::new();
    for plan in plans {
        factors.push(compile_factor(model, plan, &mut collapsed)?);
    }
    let hypers = conjugate_hypers(model, &factors, plans)?;
    let collapsed_latents = blocks::collapsed_latents(model, &collapsed);
    let mut blocks = blocks::blocks(model, &collapsed_latents);
    elliptical_blocks(model, &factors, &mut blocks)?;
    let mut plan = hyper_plan::plan(model, &factors, &hypers, &collapsed, &blocks);
    let coupled = coupled_blocks(model, &factors, &blocks);
    let mut gibbs = steps::gibbs(
        &blocks,
        &coupled,
        &plan.groups,
        !plan.likelihood.is_empty(),
        !hypers.is_empty(),
    );
    level_shifts(model, &factors, &blocks, &plan.groups, &mut gibbs);
    marginal_elliptical::marginal_ellipticals(
        model,
        &factors,
        &blocks,
        &plan.kernels,
        &plan.groups,
        &mut gibbs,
    );
    marginal_elliptical::set_redraws(&mut gibbs);
    let cavi = steps::cavi(&blocks);
    let gpf = steps::gpf(model, &blocks, &factors);
    let priors = bind_priors(model)?;
    let nuts_blocks = if options.nuts_blocks {
        nuts_block::nuts_blocks(
            model,
            &factors,
            (&blocks, &priors),
            gpf.is_ok(),
            &mut plan,
            &mut gibbs,
        )
    } else {
        vec![]
    };
    Ok(Schedule {
        latents: model.latents.clone(),
        priors,
        predictors: model.predictors.clone(),
        hyper_decls: model.hypers.clone(),
        factors,
        hypers,
        collapsed,
        blocks,
        learning: Learning::from_steps(&plan.steps),
        hyper_steps: plan.steps,
        likelihood_hypers: plan.likelihood,
        kernel_updates: plan.kernels,
        kernel_groups: plan.groups,
        dense_updates: plan.dense,
        nuts_blocks,
        gibbs,
        cavi,
        gpf,
    })
}

/// Every latent's prior bound to typed hyperparameter ids.
fn bind_priors(model: &Model) -> Result<Vec<BoundPrior>, ScheduleError> {
    let binder = prior::Binder {
        hypers: &model.hypers,
    };
    model
        .latents
        .iter()
        .map(|z| {
            binder
                .prior(&z.prior)
                .map_err(|message| ScheduleError::Prior {
                    latent: z.name.clone(),
                    message,
                })
        })
        .collect::<Result<Vec<_>, _>>()
}

/// A predictor's id from its name: bound once, here, so that nothing downstream looks a
/// predictor up by name.
type PredOf<'a> = &'a dyn Fn(&str) -> Result<PredictorId, String>;

fn pred_of(model: &Model) -> impl Fn(&str) -> Result<PredictorId, String> + '_ {
    move |name: &str| {
        model
            .predictors
            .iter()
            .position(|p| p.name == name)
            .map(PredictorId)
            .ok_or_else(|| format!("unknown predictor `{name}`"))
    }
}

fn poly_tapes(p: &Poly, slot_of: tape::SlotOf, pred: PredOf) -> Result<PolyTapes, String> {
    let mut quad = Vec::new();
    for ((a, b), t) in &p.quad {
        if a != b {
            return Err(format!("a cross term {a}·{b}"));
        }
        quad.push((pred(a)?, Tape::compile(t, slot_of)?));
    }
    Ok(PolyTapes {
        c0: Tape::compile(&p.c0, slot_of)?,
        lin: p
            .lin
            .iter()
            .map(|(k, t)| Ok((pred(k)?, Tape::compile(t, slot_of)?)))
            .collect::<Result<_, String>>()?,
        quad,
    })
}
