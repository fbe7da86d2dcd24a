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
mod aux;
pub mod blocks;
mod build;
mod cavi_program;
mod conjugate;
pub mod ellipse_reference;
mod error;
mod factor;
pub mod gradient;
mod hyper_plan;
pub mod hypers;
pub mod ids;
pub mod learning;
pub mod marginal_elliptical;
mod names;
pub mod nuts_block;
pub mod pathwise;
pub mod prior;
mod program;
mod schedule;
pub mod slice_scheme;
mod source;
pub mod steps;
pub mod surrogate;
pub mod tape;
mod trees;

pub use augmented_joint::{AugmentedJoint, JointAux};
pub use aux::{AuxKind, AuxProgram, Tilted};
pub use blocks::{BlockKind, BlockSpec};
pub use build::{build, build_with};
pub use cavi_program::{CaviAux, CaviFamily, CaviPoisson, CaviProgram, CountLaw, PolyTapes};
pub use ellipse_reference::EllipseReference;
pub use error::ScheduleError;
pub use gradient::{HyperGradient, PredictorGradient};
pub use hypers::{
    start_value, DenseScaleUpdate, GibbsUpdate, GpKernelUpdate, HyperStep, KernelGroup, StartRule,
    VariationalUpdate, LAPLACE_MAX_DIM, NON_CENTRED_MOVES,
};
pub use ids::{BlockId, FactorId, HyperId, LatentId, PredictorId};
pub use learning::Learning;
pub use nuts_block::{NutsBlock, Options};
pub use pathwise::PathwiseDraw;
pub use prior::{BoundArg, BoundKernel, BoundPrior, NormalPriorGradient};
pub use program::{
    CategoricalProgram, Curvature, FactorProgram, GenericProgram, GenericVariational, HyperProgram,
    ReplicateProgram,
};
pub use schedule::Schedule;
pub use slice_scheme::SliceScheme;
pub use source::{DataRef, Source};
pub use steps::{CaviStep, GibbsStep, GpfStep};
pub use surrogate::SurrogateTransition;
pub use tape::Tape;
