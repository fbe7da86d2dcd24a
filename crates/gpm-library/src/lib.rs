//! # gpm-library
//!
//! Owns the library of named distributions a `.gpm` program can use, as plug-ins: one file per
//! entry implementing a trait, registered by one line in a table:
//! - [`likelihood`]: every distribution a response can be drawn from — its log-density as a
//!   [`likelihood::Formula`] (which the lowering turns into the IR's expressions, where the CAS
//!   and the recognizers find its augmentation), the response it takes, a draw for predictive
//!   checks, its robust power integral, its mean and variance;
//! - [`kernel`]: every covariance function — its parameters (lengthscales, which may be ARD)
//!   and its form (a vectorised profile in the scaled distance, or a function of two points);
//! - [`constraint`]: what values a parameter may take, one type every registry declares its
//!   parameters with (NumPyro's `constraints`);
//! - [`hyperprior`]: every prior a hyperparameter can take (Stan's names and parametrisations,
//!   truncated to the declared range as Stan does).
//!
//! It is a leaf (it reads only `gpm-special`'s functions): it must not know about models, the
//! IR's expressions, data or inference. Every stage that needs a distribution's numbers (the
//! lowering its density and parameters, the schedule a prior's start value, certification test
//! points, the runtime a log-density or a draw) asks the entry here, so no stage repeats a match
//! over families.
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

#[macro_use]
mod macros;
pub mod constraint;
pub mod hyperprior;
pub mod kernel;
pub mod likelihood;

pub use constraint::Constraint;
pub use hyperprior::{HyperPrior, HyperPriorLaw, ParamSpec, PriorError, PriorStart, HYPER_PRIORS};
pub use kernel::{KernelForm, KernelLaw, KernelRef, KERNELS};
pub use likelihood::{Likelihood, LikelihoodRef, ResponseKind, LIKELIHOODS, MAX_CLASSES};
