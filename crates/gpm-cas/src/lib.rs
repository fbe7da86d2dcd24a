//! # gpm-cas
//!
//! Owns the algebra of real scalar expressions, built on the `egg` e-graph library: the
//! expression language ([`Math`], s-expressions), constant folding, a rule set of identities
//! (each tested numerically), simplification and equivalence by equality saturation, symbolic
//! derivatives, evaluation in real and complex arithmetic, and a prover of complete
//! monotonicity / the Bernstein property. It knows nothing about models, data or sampling.
//!
//! ```
//! let e = gpm_cas::parse("(/ 1 (+ 1 (exp (* -1 z))))").unwrap();
//! let f = gpm_cas::parse("(logistic z)").unwrap();
//! assert!(gpm_cas::equivalent(&e, &f));
//! ```
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

mod analysis;
mod diff;
mod error;
mod eval;
mod language;
pub mod monotone;
pub mod rules;
mod simplify;

pub use analysis::ConstantFold;
pub use diff::derivative;
pub use error::CasError;
pub use eval::{eval, eval_complex, SlotExpr};
pub use language::{parse, Constant, Expr, Math};
pub use monotone::{is_bernstein, is_completely_monotone, Proof};
pub use simplify::{equivalent, saturate, simplify, simplify_with, Limits};
