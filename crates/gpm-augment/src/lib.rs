//! # gpm-augment
//!
//! Owns recognition: turning each likelihood factor of a [`gpm_ir::Model`] into a certified
//! augmentation [`Plan`] — the auxiliary variables that make the factor conditionally Gaussian in
//! its predictors, their conditional families, and the augmented log-likelihood as a quadratic
//! form — or into a [`Refusal`] that names the atom no rule applies to and why. Recognition works
//! on the formula, never on a distribution's name (RECOGNITION.md): atoms of the log-density,
//! rewrite rules that introduce auxiliary variables, and a numerical certificate for every plan.
//! It must not sample or read data.
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod atoms;
pub mod cas;
pub mod certify;
pub mod conjugate;
mod norm;
pub mod plan;
pub mod poly;
mod probe;
mod rules;
pub mod tree;

pub use plan::{AuxVar, CategoricalPlan, Certificate, Family, Plan, Refusal};
pub use poly::Poly;
pub use rules::{generic_plan, recognize, recognize_factor};
pub use tree::{Role, T};
