//! # gpm-runtime
//!
//! Owns everything that runs numbers: exact samplers for the auxiliary-variable families
//! (Pólya-Gamma, tilted completely-monotone mixtures by Laplace inversion, inverse Gaussian, GIG,
//! Gamma, Poisson, negative binomial, negative multinomial), covariance kernels and the Gaussian
//! linear algebra of latent blocks, the Gibbs and CAVI executors, MCMC diagnostics and prediction.
//! It must not parse model text or print: it receives a compiled schedule and data as values and
//! returns draws, variational posteriors and diagnostics as values.
#![warn(missing_docs)]

pub mod cavi;
pub mod data;
pub mod diagnostics;
pub mod draw;
pub mod draws;
mod error;
pub mod gaussian;
pub mod gibbs;
pub mod kernels;
pub mod learn;
pub mod linalg;
pub mod natural;
pub mod predict;
pub mod prepared;
pub mod slice;
pub mod sparse;
pub mod svi;
pub mod vpredict;

pub use error::RuntimeError;
