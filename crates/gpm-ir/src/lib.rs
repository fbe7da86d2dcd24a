//! # gpm-ir
//!
//! Owns the meaning of a parsed program: name resolution, types and shapes, and lowering to the
//! [`Model`] IR — data declarations, hyperparameters, Gaussian latent blocks, linear predictors
//! (affine maps of the latents) and likelihood factors, each an unnormalised log-density per
//! observation written as a [`Sx`] scalar expression in the predictors, the observed data and the
//! hyperparameters. Library likelihoods (`gpm_library::LIKELIHOODS`: `bernoulli_logit`, `student_t`,
//! ...) are lowered here from their formulas to the same expression language as user-written density formulas, so that later stages never see
//! a distribution *name*. It must not rewrite or simplify the math (that is `gpm-cas`) nor decide
//! augmentations (that is `gpm-augment`); it reports every semantic mistake as a [`SemanticError`]
//! with the source span.
//!
//! ```
//! let src = "data { N : int; y : vector[N]; } latent { f : vector[N] ~ normal(0, 1); }
//!            model { y ~ normal(f, 0.5); }";
//! let program = gpm_syntax::parse(src).unwrap();
//! let model = gpm_ir::lower(&program).unwrap();
//! assert_eq!(model.factors.len(), 1);
//! ```
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod diag;
pub mod interval;
mod library;
mod lower;
mod model;
mod robust;
mod split;
mod sx;
mod transformed;

pub use diag::{did_you_mean, SemanticError, SemanticErrors};
pub use gpm_library::likelihood::{
    ClassWeights, LikelihoodRef, ResponseKind, FIXED_CLASS_WEIGHT, LIKELIHOODS, MAX_CLASSES,
};
pub use library::MATH_FUNCTIONS;
pub use lower::heavy_tailed::latent_prior_signatures;
pub use lower::lower;
pub use model::*;
pub use split::{split_parameters, ParamDecision};
pub use sx::{data_column_symbol, parse_data_column, Sx, SxFunc, SymRole};
pub use transformed::{DataArray, DataExpr, DataOp, Reduction};
