//! The variational posterior of a latent block, as every variational method leaves it (CAVI,
//! SVI, particle flow) and prediction and Gibbs's start from `q` read it: its own file, so that
//! the block algebra (`block.rs`) and the methods share it without importing each other.

use crate::sparse::QInducing;
use nalgebra::{DMatrix, DVector};

/// A latent's name with its marginal means and variances under `q` (CAVI's and the particle
/// flow's result, what `gpmc` writes and warns of).
pub type LatentMoments = (String, DVector<f64>, DVector<f64>);

/// The variational posterior of one latent block, in the form prediction needs.
#[derive(Debug, Clone)]
pub enum BlockPosterior {
    /// A full GP column: `q(f) ∝ p(f) exp(Σ_i b_i f_i − ½ a_i f_i²)`, kept as its curvature and
    /// linear term (GPML §3.4: predictions need only these and the prior).
    Gp {
        /// Curvature `a`.
        a: Vec<f64>,
        /// Linear term `b`.
        b: Vec<f64>,
    },
    /// A sparse GP column: `q(v)` of the whitened inducing values.
    Sparse(QInducing),
    /// A full GP column represented by particles (Gaussian particle flow): `q(f) = N(m, SSᵀ)`
    /// with `S` the centred particles over `√N` (low rank when there are fewer particles than
    /// values).
    Particles {
        /// Mean `m`.
        mean: DVector<f64>,
        /// `S` (`n × N`).
        spread: DMatrix<f64>,
    },
    /// The dense block: mean and covariance of its coefficients.
    Dense {
        /// Mean.
        mean: DVector<f64>,
        /// Covariance.
        cov: DMatrix<f64>,
    },
}
