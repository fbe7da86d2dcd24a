//! The compiled programs the runtime runs per factor ([`FactorProgram`]: its slots, auxiliaries,
//! the curvature of its augmented log-likelihood per predictor, its log-densities, replicate,
//! categorical, CAVI, generic-update and gradient programs) and per conjugate hyperparameter
//! ([`HyperProgram`]).

use crate::augmented_joint::AugmentedJoint;
use crate::aux::AuxProgram;
use crate::cavi_program::CaviProgram;
use crate::gradient::{HyperGradient, PredictorGradient};
use crate::ids::{HyperId, LatentId, PredictorId};
use crate::source::Source;
use crate::tape::Tape;

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
