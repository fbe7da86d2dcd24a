//! # gpm-runtime
//!
//! Owns everything that runs numbers on data: binding the schedule to data, drawing the
//! auxiliaries (the named laws of `gpm-families`, and tilted completely-monotone mixtures by
//! Laplace inversion), covariance kernels and the Gaussian
//! linear algebra of latent blocks, the Gibbs, CAVI and particle-flow executors, MCMC diagnostics and prediction.
//! It must not parse model text or print, read `gpm_ir::Model`, or re-decide what the schedule
//! decided (blocks, steps, each hyperparameter's update): it receives a compiled schedule and data
//! as values, carries the schedule out, and returns draws, variational posteriors and
//! diagnostics as values.
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod adam;
mod along;
pub mod block;
pub mod categorical;
pub mod cavi;
pub mod chains;
pub mod cluster;
pub mod columns;
pub mod data;
pub mod density_nuts;
pub mod diagnostics;
pub mod draw;
pub mod draws;
mod error;
pub mod gaussian;
pub mod gibbs;
pub mod gpf;
pub mod kernel_gradient;
pub mod kernels;
pub mod learn;
pub mod linalg;
pub mod memory;
pub mod natural;
pub mod nuts;
pub mod nuts_control;
pub mod nuts_run;
mod parallel;
pub mod pathwise;
pub mod posterior;
pub mod predict;
pub mod prepared;
pub mod progress;
pub mod quadrature;
pub mod rao_blackwell;
pub mod reference_ess;
pub mod scale_gap;
pub mod shard;
pub mod slice;
pub mod sparse;
pub mod stop;
pub mod svi;
mod whitened;

pub use error::RuntimeError;
