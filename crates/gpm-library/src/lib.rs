//! # gpm-library
//!
//! Owns the library of named distributions a `.gpm` program can use, as plug-ins: one file per
//! entry implementing a trait, registered by one line in a table. Today it holds every prior a
//! hyperparameter can take ([`hyperprior`]: Stan's names and parametrisations, truncated to the
//! declared range as Stan does); the likelihoods and kernels still live in `gpm-ir`
//! (`library.rs`) and are to move here.
//!
//! It is a leaf: it must not know about models, expressions, data or inference. Every stage that
//! needs a prior's numbers (the lowering checks its parameters, the schedule its start value,
//! certification draws test points from it, the runtime evaluates its log-density) asks the
//! entry here, so no stage repeats a match over prior families.
#![warn(missing_docs)]

pub mod hyperprior;

pub use hyperprior::{
    HyperPrior, HyperPriorLaw, ParamKind, ParamSpec, PriorError, PriorStart, HYPER_PRIORS,
};
