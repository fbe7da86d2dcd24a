//! # gpm-density
//!
//! Owns a Stan program's whole log density as an evaluable program: names bound to typed
//! slots ([`program::SlotId`]), Stan's constraint transforms with their Jacobians, its
//! densities and functions, and reverse-mode gradients on a tape ([`ad`]). It is what NUTS
//! runs on when a program has no Gaussian-latent structure for the augmentation pipeline (an
//! ARMA or GARCH recursion, an HMM's forward algorithm, a mixture). It must not touch sampling
//! (the runtime's) nor decide which path a program takes (the CLI's, from the front end's
//! refusal); what it cannot evaluate it refuses at compile time, naming the construct.
//!
//! ```
//! use std::sync::Arc;
//! let src = "data { int N; vector[N] y; } parameters { real mu; real<lower=0> sigma; } \
//!            model { y ~ normal(mu, sigma); }";
//! let program = Arc::new(gpm_density::compile_source(src).unwrap());
//! let data = serde_json::json!({"N": 2, "y": [1.0, 2.0]});
//! let model = gpm_density::Model::bind(program, data.as_object().unwrap()).unwrap();
//! assert_eq!(model.dim(), 2);
//! let mut grad = vec![0.0; 2];
//! let lp = model.log_density_gradient(&[1.5, 0.0], &mut grad).unwrap();
//! assert!(lp.is_finite() && grad[0].abs() < 1e-12);
//! ```
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod ad;
pub mod cdf;
mod covariances;
mod data;
pub mod error;
mod eval;
mod functions;
mod glm;
mod index;
mod linalg;
mod lower;
pub mod lpdf;
mod model;
mod ode;
mod ops;
pub mod program;
mod reshape;
mod rng;
mod transform;
pub mod value;

pub use error::EvalError;
pub use eval::MAX_WHILE_TURNS;
pub use lower::compile;
pub use model::Model;
pub use program::Program;

/// Parse and compile a Stan program.
pub fn compile_source(src: &str) -> Result<Program, gpm_stan::StanError> {
    compile(&gpm_stan::parse(src)?)
}
