//! Blocked Gibbs sampling of an augmented model. One sweep (thesis ch. 5 §3.3.2, §7.2.1):
//! 1. latents read by collapsed predictors, from their un-augmented Gaussian conditionals;
//! 2. every auxiliary variable, observation by observation, from its exact conditional;
//! 3. every other latent block from its Gaussian conditional given the auxiliaries.
//!
//! Each chain has its own counter-based RNG stream (ChaCha8, stream = chain index), so a fixed
//! seed reproduces every chain bit for bit whatever the number of threads.

use crate::block::{GaussianBlock, SparseColumn};
use crate::data::Data;
use crate::draw;
use crate::draws::{Layout, VarKind};
use crate::gaussian::DenseBlock;
use crate::kernels::HyperValues;
use crate::natural::NaturalParams;
use crate::prepared::{dense_block, gather_dense, scatter_dense, stack_rows, Block, Prepared};
use crate::RuntimeError;
use gpm_schedule::{AuxKind, FactorProgram, GibbsStep, LatentId, Schedule};
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

mod ellipse_reference;
pub use ellipse_reference::Reference as EllipseReference;
mod categorical;
mod conditional;
mod dense_reference;
mod elliptical;
mod from_q;
mod interweave_dense;
mod kernel_marginal;
mod laplace_dense;
mod level_shift;
mod log_joint;
mod marginal_elliptical;
mod moves;
pub use moves::describe_sweep;
mod nuts_block;
pub use nuts_block::NutsBlockStats;
mod pointwise;
mod run;
mod shard;
mod spectra;
mod start;
mod surrogate;
pub use crate::chains::{ChainTimes, GibbsConfig, RowSink};
pub use pointwise::Pointwise;
pub use run::{run, run_into, run_until, SweepStats};
pub use shard::{RowStreams, ShardChain};
pub use start::Init;
mod hypers;
use crate::prepared::Coords;
use elliptical::BlockGaussian;
use hypers::bind_hypers;

/// The draws of one chain: one row per kept draw, laid out as [`Chain::layout`] says (the log
/// joint density first, then the sampled hyperparameters, the latents and the sparse blocks'
/// inducing coordinates).
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// What each row holds.
    pub layout: Layout,
    /// Rows of values.
    pub rows: Vec<Vec<f64>>,
    /// Seconds spent in warm-up.
    pub warmup_seconds: f64,
    /// Seconds spent sampling.
    pub sampling_seconds: f64,
}

impl Chain {
    /// A chain of these rows, made in these times.
    pub fn new(layout: Layout, rows: Vec<Vec<f64>>, times: ChainTimes) -> Chain {
        Chain {
            layout,
            rows,
            warmup_seconds: times.warmup_seconds,
            sampling_seconds: times.sampling_seconds,
        }
    }

    /// Its times.
    pub fn times(&self) -> ChainTimes {
        ChainTimes {
            warmup_seconds: self.warmup_seconds,
            sampling_seconds: self.sampling_seconds,
        }
    }
}

/// A logistic-softmax factor's auxiliaries (thesis §7.4): per observation the Gamma λ_i, per
/// observation and class the Poisson counts n_ic and Pólya-Gamma ω_ic.
pub type CategoricalAux = (Vec<f64>, DMatrix<f64>, DMatrix<f64>);

/// A point NUTS reached: latents, scalar hyperparameters by id, sparse blocks' whitened
/// inducing values by runtime block.
pub(crate) type NutsPoint<'a> = (Vec<DVector<f64>>, &'a [f64], Vec<Option<DVector<f64>>>);

/// The per-chain state.
#[derive(Debug, Clone)]
pub struct State {
    /// Latent values (matrix latents column-major).
    pub latents: Vec<DVector<f64>>,
    /// Auxiliaries: factor → auxiliary → observation.
    pub aux: Vec<Vec<Vec<f64>>>,
    /// Categorical auxiliaries per factor: (λ_i, n_ic, ω_ic).
    pub cat: Vec<Option<CategoricalAux>>,
    /// Current hyperparameter values by [`gpm_schedule::HyperId`] (NaN for a vector).
    pub hypers: Vec<f64>,
    /// Current values of the vector (ARD) hyperparameters by id (empty for a scalar).
    pub vectors: Vec<Vec<f64>>,
    /// Per block: the GP prior at this chain's current kernel hyperparameters, for blocks
    /// whose kernel is sampled (`None`: the prepared prior).
    pub gp_priors: Vec<Option<std::sync::Arc<crate::gaussian::GpBlock>>>,
    /// Per block: the whitened inducing coordinates `v` of a sparse block (`None` otherwise).
    pub sparse_v: Vec<Option<DVector<f64>>>,
    /// Per sparse block whose kernel is sampled: its prior and features `(Φ, k̃)` at the
    /// training inputs at this chain's current hyperparameters (`None`: the prepared ones).
    pub sparse_priors: Vec<Option<SparsePrior>>,
    /// Per dense block: prior means and sds at this chain's current hyperparameters, for blocks
    /// whose prior scale or mean is sampled (`None`: the prepared prior).
    pub dense_priors: Vec<Option<(DVector<f64>, DVector<f64>)>>,
    /// Per joint hyperparameter move ([`JointMove::slot`]): its warm-up adaptation and reference.
    pub adaptations: Vec<crate::reference_ess::Adaptation>,
    /// Evaluations of the hyperparameter moves' densities so far (each a factorisation for a
    /// kernel): what a full-Bayes sweep costs beyond a fixed-hyperparameter one.
    pub hyper_evaluations: u64,
    /// Evaluations of a surrogate transition's cheap density (FITC marginals, `O(NM²)` each),
    /// apart from the exact ones above.
    pub surrogate_evaluations: u64,
    /// Surrogate transitions run.
    pub surrogate_moves: u64,
    /// Surrogate transitions whose proposal the exact correction accepted.
    pub surrogate_accepted: u64,
    /// Each move's own state, in the sweep's order ([`moves::MoveState`]: a NUTS step's
    /// adaptation and transitions).
    moves: Vec<moves::MoveState>,
    /// Seconds spent in each move of the sweep so far (the schedule's Gibbs steps, in order;
    /// warm-up and sampling sweeps alike): where a sweep's time goes.
    pub step_seconds: Vec<f64>,
    /// During a warm-up sweep: `(sweep from 1, warm-up sweeps)` ([`Sampler::warmup_sweep`]).
    pub warmup: Option<(usize, usize)>,
    /// The latents' conditional means at their last draw, `E[z | everything else]` (same
    /// layout as `latents`): averaged over the kept draws they are the Rao-Blackwellised
    /// posterior means ([`crate::rao_blackwell`]).
    pub conditional_means: Vec<DVector<f64>>,
    /// Per latent: whether some block of it was drawn without a conditional mean (the generic
    /// update, a sparse GP, a block no factor reads); its Rao-Blackwellised mean is then not
    /// reported.
    pub without_mean: Vec<bool>,
    /// Per block: the fitted Gaussian whose ellipses its marginal elliptical steps follow
    /// ([`gpm_schedule::EllipseReference::Adapted`]; `None`: the GP prior's, as before the
    /// first fit).
    pub ellipse_references: Vec<Option<std::sync::Arc<ellipse_reference::Reference>>>,
    /// Per block, during warm-up: the current window of its reference's fit.
    ellipse_windows: Vec<Option<ellipse_reference::Window>>,
    /// Per dense block with a fitted generic update, during warm-up: the fit of its draws.
    dense_fits: Vec<Option<dense_reference::DenseFit>>,
    /// Per dense block with a fitted generic update: the reference its ellipses follow
    /// (`None`: the block's conditional, as before the first fit).
    pub dense_references: Vec<Option<std::sync::Arc<crate::reference_ess::Reference>>>,
}

/// A sparse GP column's prior at a chain's own kernel hyperparameters, with its features at
/// the training inputs (owned: it changes from sweep to sweep).
#[derive(Debug, Clone)]
pub struct SparsePrior {
    /// The prior.
    pub sp: crate::sparse::SparseGp,
    /// `Φ = L⁻¹K_mx` at the training inputs.
    pub phi: DMatrix<f64>,
    /// `k̃` at the training inputs.
    pub kt: Vec<f64>,
}

impl GaussianBlock for SparsePrior {
    fn sample(
        &self,
        np: &NaturalParams,
        rng: &mut ChaCha8Rng,
    ) -> Result<crate::block::BlockDraw, RuntimeError> {
        self.column().sample(np, rng)
    }
    fn moments(&self, np: &NaturalParams) -> Result<crate::gaussian::Moments, RuntimeError> {
        self.column().moments(np)
    }
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError> {
        self.column().log_marginal(np)
    }
    fn ellipse<'a>(
        &'a self,
        _: &NaturalParams,
    ) -> Result<Box<dyn crate::block::Ellipse + 'a>, RuntimeError> {
        Err(crate::block::no_sparse_ellipse())
    }
}

impl SparsePrior {
    fn column(&self) -> SparseColumn<'_> {
        SparseColumn {
            sp: &self.sp,
            phi: &self.phi,
            kt: &self.kt,
        }
    }
}

/// A scalar hyperparameter with a non-conjugate prior that only the likelihood reads: updated
/// each sweep by slice sampling its conditional given the latents, with the auxiliaries
/// integrated out (the original log-density), and the auxiliaries are redrawn right after —
/// together an exact draw of the block (θ, ω) given everything else.
#[derive(Debug, Clone)]
struct SlicedHyper {
    /// The hyperparameter ([`gpm_schedule::HyperId`] index into the chain's values).
    index: usize,
    /// For a vector (ARD) hyperparameter, the entry this update samples.
    entry: Option<usize>,
    prior: gpm_library::HyperPrior,
    transform: crate::slice::Transform,
    /// Factors that read it.
    factors: Vec<usize>,
}

impl SlicedHyper {
    /// Its current value in a chain's state.
    fn get(&self, state: &State) -> f64 {
        match self.entry {
            Some(k) => state.vectors[self.index][k],
            None => state.hypers[self.index],
        }
    }

    /// Set its value in a chain's state.
    fn set(&self, state: &mut State, v: f64) {
        match self.entry {
            Some(k) => state.vectors[self.index][k] = v,
            None => state.hypers[self.index] = v,
        }
    }

    /// Set its value among hyperparameter values.
    fn set_in(&self, hv: &mut HyperValues, v: f64) {
        match self.entry {
            Some(k) => hv.vectors[self.index][k] = v,
            None => hv.scalars[self.index] = v,
        }
    }
}

/// Hyperparameters with priors read only by one GP's prior (kernel parameters, its mean):
/// updated with the GP's values integrated out given the auxiliaries,
/// `p(θ | ω, y) ∝ p(θ) ∫ N(f | μ₀, K_θ) exp(bᵀf − ½ fᵀ diag(a) f) df`
/// ([`crate::gaussian::gp_log_marginal`]), then `f` is drawn given the new `θ`: an exact draw of
/// the block `(θ, f)` that does not suffer the strong `θ`-`f` coupling of updating `θ | f`.
#[derive(Debug, Clone)]
struct SlicedKernel {
    /// Index into [`Prepared::blocks`].
    block: usize,
    hypers: Vec<SlicedHyper>,
    /// A sparse GP block: its inducing inputs (its column is integrated out under the FITC
    /// prior, [`crate::sparse::SparseGp::log_marginal`]).
    inducing: Option<DMatrix<f64>>,
    /// Sampled given the block's current values (a block with the generic update), not with
    /// the block integrated out.
    given_values: bool,
    kernel: gpm_schedule::BoundKernel,
    mean: gpm_schedule::Tape,
    inputs: std::sync::Arc<DMatrix<f64>>,
    /// How its hyperparameters are slice sampled.
    joint: JointMove,
    /// The factors the non-centred move evaluates after the block's draw (empty: none;
    /// [`gpm_schedule::GpKernelUpdate::interweave`]).
    interweave: Vec<usize>,
    /// The non-centred move moves the kernel's variance alone
    /// ([`gpm_schedule::GpKernelUpdate::interweave_variance_only`]).
    interweave_variance_only: bool,
    /// The inputs' squared distances, kept when the kernel has a scalar-lengthscale part.
    sqdist: Option<std::sync::Arc<DMatrix<f64>>>,
    /// The marginal move's surrogate transition, where the schedule's rule applies.
    surrogate: Option<surrogate::Surrogate>,
}

impl SlicedKernel {
    /// `kernel` (its own or a part of it) at the inputs, at values `hv`.
    fn training(
        &self,
        kernel: &gpm_schedule::BoundKernel,
        hv: &HyperValues,
    ) -> Result<DMatrix<f64>, RuntimeError> {
        let mut k = self.training_lower(kernel, hv)?;
        if self.sqdist.is_some() {
            crate::kernels::mirror_lower(&mut k);
        }
        Ok(k)
    }

    /// [`SlicedKernel::training`]'s lower triangle (the diagonal included; above it zeros or
    /// the mirror): what the marginal move's evaluations read.
    fn training_lower(
        &self,
        kernel: &gpm_schedule::BoundKernel,
        hv: &HyperValues,
    ) -> Result<DMatrix<f64>, RuntimeError> {
        match &self.sqdist {
            Some(d2) => crate::kernels::training_lower(kernel, &self.inputs, d2, hv),
            None => crate::kernels::kernel_matrix(kernel, &self.inputs, &self.inputs, hv),
        }
    }
}

/// The schedule's slice scheme for one update's hyperparameters, with the slot of its warm-up
/// adaptation in a chain's [`State::adaptations`].
#[derive(Debug, Clone, Copy)]
struct JointMove {
    slot: usize,
    scheme: gpm_schedule::SliceScheme,
}

/// Scalar hyperparameters with priors read only by the priors of several GP blocks (a kernel
/// shared by latent functions, or by the columns of a matrix latent). When no factor couples
/// two of the blocks (each block's curvature reads only the auxiliaries and latents outside the
/// group), they are *integrated*: all blocks' curvatures are taken at once, each θ is slice
/// sampled from `p(θ) Π_b ∫ N(f_b | μ₀, K_θ) e^(b_bᵀf − ½fᵀA_b f) df`, then every block is drawn
/// given θ — an exact draw of (θ, f₁ … f_B) given the rest, as [`SlicedKernel`] does for one
/// block. Otherwise (e.g. the heteroscedastic model, where the mean GP's conditional reads the
/// noise GP) each θ is slice sampled at the group's lead block — the first one a sweep reaches —
/// with that block integrated out and the others given: valid, but it mixes slowly.
#[derive(Debug, Clone)]
struct SharedKernel {
    hypers: Vec<SlicedHyper>,
    /// How they are slice sampled.
    joint: JointMove,
    /// Per latent reading them: its kernel, mean, inputs and GP blocks (one per column).
    latents: Vec<SharedLatent>,
}

#[derive(Debug, Clone)]
struct SharedLatent {
    kernel: gpm_schedule::BoundKernel,
    mean: gpm_schedule::Tape,
    inputs: std::sync::Arc<DMatrix<f64>>,
    blocks: Vec<(usize, usize, usize)>,
}

/// Scalar hyperparameters with priors read only by `normal` priors of latents in one dense block
/// (a shrinkage scale `w ~ normal(0, s)`, a random-effect sd, a prior mean): slice sampled from
/// `p(θ) ∫ N(w | μ_θ, diag(sd_θ²)) e^(bᵀΦw − ½wᵀΦᵀAΦw) dw` with the block's weights integrated
/// out given the auxiliaries ([`DenseBlock::log_marginal`]), then the weights given θ — an exact
/// update of (θ, w), as for a GP kernel.
#[derive(Debug, Clone)]
struct SlicedDense {
    block: usize,
    hypers: Vec<SlicedHyper>,
    /// Sampled given the block's current values (a block with the generic update).
    given_values: bool,
    /// How they are slice sampled.
    joint: JointMove,
    /// The factors of the non-centred move after the block's generic update (empty: none;
    /// [`gpm_schedule::DenseScaleUpdate::interweave`]).
    interweave: Vec<usize>,
    /// How many non-centred moves per update (the schedule's).
    interweave_moves: usize,
    /// The level those moves hold ([`gpm_schedule::DenseScaleUpdate::level`]).
    level: Option<interweave_dense::LevelShear>,
    /// The block's readings for the Laplace-standardised move
    /// ([`gpm_schedule::DenseScaleUpdate::laplace`]; `None`: no such move).
    laplace: Option<Vec<laplace_dense::Reading>>,
}

/// A model bound to data, ready for sweeps.
pub struct Sampler<'a> {
    schedule: &'a Schedule,
    prep: Prepared,
    /// Per categorical factor: its labels and classes.
    labels: Vec<Option<crate::categorical::BoundCategorical>>,
    /// Dense-block designs per (block, factor, curvature index), the factor's collapsed
    /// curvatures first.
    dense_designs: Vec<Vec<Vec<Option<DMatrix<f64>>>>>,
    sliced: Vec<SlicedHyper>,
    kernels: Vec<SlicedKernel>,
    shared: Vec<SharedKernel>,
    dense_scales: Vec<SlicedDense>,
    /// Values of the hyperparameters that are not scalars (ARD vectors), for kernels.
    base: HyperValues,
    /// Per block: `Φ = L⁻¹K_mx` and `k̃` of a sparse block's training inputs.
    sparse_feats: Vec<Option<(DMatrix<f64>, Vec<f64>)>>,
    /// Per block: whether factors with no augmentation read it (the schedule's
    /// [`gpm_schedule::BlockSpec::elliptical`]): such a block is formed even when no augmented
    /// factor reads it.
    generic: Vec<bool>,
    /// The pointwise columns the rows carry ([`Sampler::with_pointwise`]).
    pointwise: Pointwise,
    /// Initial values given by the user ([`Sampler::with_init`]).
    init: Init,
    /// The sweep: the schedule's Gibbs steps as moves, in order ([`moves`]).
    moves: Vec<Box<dyn moves::Move>>,
}

impl<'a> Sampler<'a> {
    /// Bind a compiled model to data and hyperparameter values.
    pub fn new(
        schedule: &'a Schedule,
        data: &Data,
        hypers: &HyperValues,
    ) -> Result<Self, RuntimeError> {
        let prep = Prepared::new(schedule, data, hypers)?;
        Self::bound(schedule, data, prep, hypers)
    }

    /// [`Sampler::new`] with the model already bound to the data (a shard's rows with inducing
    /// inputs chosen for all the shards: [`Prepared::with_inducing`]).
    pub fn bound(
        schedule: &'a Schedule,
        data: &Data,
        prep: Prepared,
        hypers: &HyperValues,
    ) -> Result<Self, RuntimeError> {
        collapsed_phase_is_separate(schedule, &prep)?;
        let prep = spectra::attach(schedule, prep)?;
        // Sparse blocks: the features of the training inputs, once (`M × N`).
        crate::memory::check_features(&prep.sparse_sizes(), "Gibbs sampling")?;
        let sparse_feats = prep
            .blocks
            .iter()
            .map(|b| match b {
                Block::Sparse { sp, inputs, .. } => sp.features(inputs).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut labels = Vec::new();
        for fp in &schedule.factors {
            labels.push(match &fp.categorical {
                Some(c) => Some(crate::categorical::BoundCategorical::new(
                    c,
                    data,
                    prep.latents[c.latent_id.0].1,
                    hypers,
                )?),
                None => None,
            });
        }
        let dense_designs = dense_designs(schedule, &prep);
        let (sliced, kernels, shared, dense_scales) = bind_hypers(schedule, data, &prep, hypers)?;
        let mut generic = vec![false; prep.blocks.len()];
        for (spec, range) in schedule.blocks.iter().zip(&prep.spec_blocks) {
            for bi in range.clone() {
                generic[bi] = !spec.elliptical.is_empty();
            }
        }
        Ok(Sampler {
            schedule,
            prep,
            labels,
            dense_designs,
            sliced,
            kernels,
            shared,
            dense_scales,
            base: hypers.clone(),
            sparse_feats,
            generic,
            pointwise: Pointwise::default(),
            init: Init::default(),
            moves: moves::compile(schedule),
        })
    }

    /// The prepared model.
    pub fn prepared(&self) -> &Prepared {
        &self.prep
    }

    /// What a draw row holds: the log joint density, the sampled hyperparameters (in the
    /// schedule's order), every latent in its declared shape, and each sparse latent's whitened
    /// inducing coordinates (which prediction needs).
    pub fn layout(&self) -> Layout {
        let mut l = Layout::default();
        l.push(VarKind::LogJoint, vec![]);
        for h in self.schedule.sampled_hypers() {
            let dims = match self.base.vectors.get(h.0).filter(|v| !v.is_empty()) {
                Some(v) => vec![v.len()],
                None => vec![],
            };
            l.push(VarKind::Hyper(h), dims);
        }
        for (li, dims) in self.prep.latent_dims.iter().enumerate() {
            l.push(VarKind::Latent(LatentId(li)), dims.clone());
        }
        self.prep.push_inducing(&mut l);
        let observations: usize = self.observed().iter().map(|(_, n)| n).sum();
        if self.pointwise.log_lik {
            l.push(VarKind::LogLik, vec![observations]);
        }
        if self.pointwise.ppc {
            l.push(VarKind::Replicate, vec![observations]);
        }
        l
    }

    /// A state with the latents at their prior means, auxiliaries at 1 (counts at 0): what
    /// [`Sampler::start`] begins from.
    pub fn init(&self) -> State {
        let latents = self.prior_means();
        let aux = self
            .schedule
            .factors
            .iter()
            .zip(&self.prep.factors)
            .map(|(fp, pf)| {
                fp.aux
                    .iter()
                    .map(|a| {
                        vec![
                            if matches!(&a.kind, AuxKind::Law { law, .. } if law.is_count()) {
                                0.0
                            } else {
                                1.0
                            };
                            pf.n
                        ]
                    })
                    .collect()
            })
            .collect();
        let cat = self
            .labels
            .iter()
            .zip(&self.prep.factors)
            .map(|(l, pf)| {
                l.as_ref().map(|b| {
                    (
                        vec![1.0; pf.n],
                        DMatrix::zeros(pf.n, b.columns),
                        DMatrix::from_element(pf.n, b.columns, 1.0),
                    )
                })
            })
            .collect();
        let hypers = self.prep.hypers.clone();
        State {
            conditional_means: latents.clone(),
            without_mean: vec![false; latents.len()],
            latents,
            aux,
            cat,
            hypers,
            vectors: self.base.vectors.clone(),
            gp_priors: vec![None; self.prep.blocks.len()],
            sparse_priors: vec![None; self.prep.blocks.len()],
            dense_priors: vec![None; self.prep.blocks.len()],
            sparse_v: self
                .prep
                .blocks
                .iter()
                .map(|b| match b {
                    Block::Sparse { sp, .. } => Some(DVector::zeros(sp.m())),
                    _ => None,
                })
                .collect(),
            adaptations: vec![Default::default(); self.joint_moves().count()],
            ellipse_references: vec![None; self.prep.blocks.len()],
            ellipse_windows: vec![None; self.prep.blocks.len()],
            dense_fits: vec![None; self.prep.blocks.len()],
            dense_references: vec![None; self.prep.blocks.len()],
            hyper_evaluations: 0,
            surrogate_evaluations: 0,
            surrogate_moves: 0,
            surrogate_accepted: 0,
            moves: self.moves.iter().map(|m| m.init()).collect(),
            step_seconds: vec![0.0; self.moves.len()],
            warmup: None,
        }
    }

    /// Every latent at its prior mean, block by block.
    fn prior_means(&self) -> Vec<DVector<f64>> {
        let mut latents: Vec<DVector<f64>> = self
            .prep
            .latents
            .iter()
            .map(|(_, len, _)| DVector::zeros(*len))
            .collect();
        for b in &self.prep.blocks {
            match b {
                Block::Gp { latent, column, gp } => {
                    let rows = gp.len();
                    for i in 0..rows {
                        latents[*latent][column * rows + i] = gp.mean;
                    }
                }
                Block::Sparse {
                    latent, column, sp, ..
                } => {
                    // A GP latent is a vector or a matrix: its rows are its first size.
                    let rows = self.prep.latent_dims[*latent].first().copied().unwrap_or(1);
                    for i in 0..rows {
                        latents[*latent][column * rows + i] = sp.mean;
                    }
                }
                Block::Dense {
                    parts, prior_mean, ..
                } => {
                    scatter_dense(parts, prior_mean, &mut latents);
                }
            }
        }
        latents
    }

    fn fill(&self, f: usize, i: usize, pv: &[Vec<f64>], state: &State, vals: &mut [f64]) {
        let aux = &state.aux[f];
        self.prep.factors[f].fill(i, |p| pv[p][i], |j| aux[j][i], &state.hypers, vals);
    }

    fn predictors(&self, state: &State) -> Vec<Vec<f64>> {
        self.prep
            .preds
            .iter()
            .map(|p| p.eval(&state.latents))
            .collect()
    }

    /// Warm-up sweep `sweep` (from 1) of `warmup`: a sweep, then the adaptation the schedule
    /// asks for — the joint hyperparameter moves' references ([`Sampler::adapt`]: they ride on
    /// the block draws and kernel-group steps, which share them), then each move's own
    /// ([`moves::Move::adapt`]: the elliptical steps' fitted references). Sweeps after warm-up
    /// use the references as they are, unchanged.
    pub fn warmup_sweep(
        &self,
        state: &mut State,
        rng: &mut ChaCha8Rng,
        sweep: usize,
        warmup: usize,
    ) -> Result<(), RuntimeError> {
        for m in &self.moves {
            m.before_warmup_sweep(self, state, sweep);
        }
        state.warmup = Some((sweep, warmup));
        let swept = self.sweep(state, rng);
        state.warmup = None;
        swept?;
        self.adapt(state, sweep, warmup);
        for m in &self.moves {
            m.adapt(self, state, sweep, warmup);
        }
        Ok(())
    }

    /// One Gibbs sweep: the schedule's steps, compiled to moves, in order ([`moves`]).
    pub fn sweep(&self, state: &mut State, rng: &mut ChaCha8Rng) -> Result<(), RuntimeError> {
        let mut pv = self.predictors(state);
        // `step_seconds` is a public field: a caller may have emptied it, which must not panic.
        state.step_seconds.resize(self.moves.len(), 0.0);
        for (k, m) in self.moves.iter().enumerate() {
            let t0 = std::time::Instant::now();
            // The move's own state is taken out while it works on the chain's.
            let mut own = std::mem::take(&mut state.moves[k]);
            let applied = m.apply(self, state, &mut own, &mut pv, rng);
            state.moves[k] = own;
            applied?;
            state.step_seconds[k] += t0.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// Conjugate Gamma updates of the hyperparameters that allow them.
    fn sample_hypers(
        &self,
        state: &mut State,
        pv: &[Vec<f64>],
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let mut stack = Vec::new();
        for hp in &self.schedule.hypers {
            let (mut shape, mut rate) = (hp.shape, hp.rate);
            for (f, k, q) in &hp.stats {
                let mut vals = vec![0.0; self.schedule.factors[*f].slots.len()];
                for i in 0..self.prep.factors[*f].n {
                    self.fill(*f, i, pv, state, &mut vals);
                    shape += k.eval(&vals, &mut stack);
                    rate += q.eval(&vals, &mut stack);
                }
            }
            let v = draw::gamma(rng, shape, rate)?;
            state.hypers[hp.hyper.0] = v;
        }
        Ok(())
    }

    /// Every auxiliary from its exact conditional, row by row; row `i` of factor `f` draws
    /// from `rows.at(f, i)` (one stream for a single-process chain: [`RowRng`]).
    pub(super) fn sample_aux<G: RowRng + ?Sized>(
        &self,
        state: &mut State,
        pv: &[Vec<f64>],
        rows: &mut G,
    ) -> Result<(), RuntimeError> {
        let mut stack = Vec::with_capacity(64);
        for (f, fp) in self.schedule.factors.iter().enumerate() {
            if let Some(bound) = &self.labels[f] {
                let rng = rows.at(f, 0);
                self.sample_categorical_aux(f, fp, bound, state, pv, rng)?;
                continue;
            }
            let mut vals = vec![0.0; fp.slots.len()];
            for i in 0..self.prep.factors[f].n {
                let rng = rows.at(f, i);
                self.fill(f, i, pv, state, &mut vals);
                for (j, a) in fp.aux.iter().enumerate() {
                    let ev = |t: &gpm_schedule::Tape, st: &mut Vec<f64>| t.eval(&vals, st);
                    let v = match &a.kind {
                        AuxKind::Law { law, params } => {
                            let mut p = [0.0; 4];
                            for (v, t) in p.iter_mut().zip(params) {
                                *v = ev(t, &mut stack);
                            }
                            draw::law(rng, *law, &p[..params.len()])?
                        }
                        AuxKind::Tilted(t) => draw::tilted(rng, t, &vals, &mut stack)?,
                    };
                    vals[a.slot] = v;
                    state.aux[f][j][i] = v;
                }
            }
        }
        Ok(())
    }

    /// The draw row of a point NUTS reached: its latents, scalar hyperparameters (by id) and
    /// sparse blocks' whitened inducing values (by runtime block); the other variables at
    /// [`Sampler::init`]'s, the dense blocks' and GPs' priors at these hyperparameters.
    pub(crate) fn row_at(
        &self,
        (latents, hypers, sparse_v): NutsPoint<'_>,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<f64>, RuntimeError> {
        let mut state = self.init();
        state.latents = latents;
        state.hypers.copy_from_slice(hypers);
        for (bi, v) in sparse_v.into_iter().enumerate() {
            if v.is_some() {
                state.sparse_v[bi] = v;
            }
        }
        let hv = self.hyper_values(&state);
        for (bi, b) in self.prep.blocks.iter().enumerate() {
            if let Block::Dense { parts, .. } = b {
                state.dense_priors[bi] = Some(self.dense_prior(parts, &hv)?);
            }
        }
        // The GP priors whose kernels read sampled hyperparameters, at these values (`lp__`).
        for k in self.kernels.iter().filter(|k| k.inducing.is_none()) {
            let gp = crate::gaussian::GpBlock::new(k.training(&k.kernel, &hv)?, hv.eval(&k.mean)?)?;
            state.gp_priors[k.block] = Some(std::sync::Arc::new(gp));
        }
        for sh in &self.shared {
            self.refresh_shared(sh, &mut state)?;
        }
        Ok(self.row(&state, rng))
    }

    /// Every hyperparameter's starting value (scalars by id, and vectors).
    pub fn hyper_base(&self) -> HyperValues {
        self.base.clone()
    }

    /// The compiled model this sampler runs.
    pub fn schedule(&self) -> &'a Schedule {
        self.schedule
    }

    fn row(&self, state: &State, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let pv = self.predictors(state);
        let mut r = vec![self.log_joint_at(state, &pv)];
        for h in self.schedule.sampled_hypers() {
            match state.vectors.get(h.0).filter(|v| !v.is_empty()) {
                Some(v) => r.extend(v.iter().copied()),
                None => r.push(state.hypers[h.0]),
            }
        }
        for z in &state.latents {
            r.extend(z.iter().copied());
        }
        for v in state.sparse_v.iter().flatten() {
            r.extend(v.iter().copied());
        }
        if self.pointwise != Pointwise::default() {
            self.push_pointwise(state, &pv, rng, &mut r);
        }
        r
    }
}

/// Where row `i` of factor `f` takes its random numbers in the auxiliaries' step: one stream
/// for every row (a single-process chain, in row order), or a stream of its own per row (a
/// shard of a distributed run, keyed by the row's global position, so that the draws do not
/// depend on how the rows are partitioned: [`shard::RowStreams`]).
pub trait RowRng {
    /// The stream of row `i` of factor `f`.
    fn at(&mut self, f: usize, i: usize) -> &mut ChaCha8Rng;
}

impl RowRng for ChaCha8Rng {
    fn at(&mut self, _: usize, _: usize) -> &mut ChaCha8Rng {
        self
    }
}

/// Mixed into the seed of the replicated responses' streams.
const REPLICATE_SEED: u64 = 0x7965_725f_7265_7063;

/// What NUTS's targets read of a sampler (the whole-model one and the sweep's NUTS step's).
impl crate::nuts::target::Bound for Sampler<'_> {
    fn prepared(&self) -> &Prepared {
        Sampler::prepared(self)
    }

    fn schedule(&self) -> &Schedule {
        Sampler::schedule(self)
    }

    fn hyper_base(&self) -> HyperValues {
        Sampler::hyper_base(self)
    }

    /// The kernel, mean and training inputs of the full GP prior of runtime block `bi` where
    /// the schedule samples its hyperparameters (what NUTS factors again at each position).
    fn sampled_gp_prior(
        &self,
        bi: usize,
    ) -> Option<(
        &gpm_schedule::BoundKernel,
        &gpm_schedule::Tape,
        &std::sync::Arc<DMatrix<f64>>,
    )> {
        let single = self
            .kernels
            .iter()
            .find(|k| k.block == bi && k.inducing.is_none())
            .map(|k| (&k.kernel, &k.mean, &k.inputs));
        single.or_else(|| {
            self.shared
                .iter()
                .flat_map(|g| g.latents.iter())
                .find(|sl| sl.blocks.iter().any(|b| b.0 == bi))
                .map(|sl| (&sl.kernel, &sl.mean, &sl.inputs))
        })
    }
}
/// Latents read by collapsed predictors are drawn in a phase of their own: a factor must not
/// also read them through a predictor sampled from the augmented likelihood (that conditional,
/// with the auxiliaries integrated out, is not Gaussian).
fn collapsed_phase_is_separate(schedule: &Schedule, prep: &Prepared) -> Result<(), RuntimeError> {
    let collapsed_latents = &prep.collapsed_latents;
    for fp in &schedule.factors {
        for cv in &fp.curvature {
            let p = &prep.preds[cv.pred.0];
            if fp.collapsed.is_empty() {
                continue;
            }
            if let Some(t) = p
                .terms
                .iter()
                .find(|t| collapsed_latents.contains(&t.latent))
            {
                return Err(RuntimeError::Unsupported(format!(
                    "factor #{}: the latent `{}` is read both by a predictor sampled from its collapsed conditional and by `{}`, which the same factor augments; Gibbs cannot sample it (write the two predictors with separate latents)",
                    fp.factor + 1,
                    prep.latents[t.latent].0,
                    cv.predictor
                )));
            }
        }
    }
    Ok(())
}

/// Per dense block, per factor: the design of each curvature entry (collapsed ones first).
fn dense_designs(schedule: &Schedule, prep: &Prepared) -> Vec<Vec<Vec<Option<DMatrix<f64>>>>> {
    prep.blocks
        .iter()
        .map(|b| {
            let Block::Dense {
                parts, prior_mean, ..
            } = b
            else {
                return vec![];
            };
            schedule
                .factors
                .iter()
                .map(|fp| {
                    fp.collapsed
                        .iter()
                        .chain(&fp.curvature)
                        .map(|c| prep.dense_design(c.pred.0, parts, prior_mean.len()))
                        .collect()
                })
                .collect()
        })
        .collect()
}
