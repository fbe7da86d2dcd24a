//! The Gaussian-block abstraction every executor works through: given the likelihood's terms
//! `Σ_i b_i z_i − ½ a_i z_i²` ([`NaturalParams`]), a block draws itself exactly (Gibbs), gives
//! its Gaussian `q`'s moments (CAVI) and its marginal likelihood with its values integrated out
//! (hyperparameter updates). Implemented by the full GP column ([`GpBlock`]), the sparse GP
//! column ([`SparseColumn`]: its prior and its features at the training inputs) and the dense
//! block of normal latents ([`DenseBlock`]).

use crate::gaussian::{gp_log_marginal, DenseBlock, GpBlock, Moments};
use crate::natural::NaturalParams;
use crate::sparse::{QInducing, SparseGp};
use crate::RuntimeError;
use nalgebra::{DMatrix, DVector};
use rand_chacha::ChaCha8Rng;

/// An exact draw of a block: its latent values and, for a sparse GP, the whitened inducing
/// coordinates `v` the values were drawn with (prediction needs them).
#[derive(Debug, Clone)]
pub struct BlockDraw {
    /// The block's latent values.
    pub values: DVector<f64>,
    /// A sparse block's `v`.
    pub inducing: Option<DVector<f64>>,
}

/// A Gaussian block given its likelihood terms.
pub trait GaussianBlock {
    /// Draw the block from `p(z) exp(Σ b_i z_i − ½ a_i z_i²)`, normalised.
    fn sample(&self, np: &NaturalParams, rng: &mut ChaCha8Rng) -> Result<BlockDraw, RuntimeError>;
    /// Marginal means, variances and `KL(q ‖ p)` of `q(z) ∝ p(z) exp(Σ b_i z_i − ½ a_i z_i²)`.
    fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError>;
    /// `log ∫ p(z) exp(Σ b_i z_i − ½ a_i z_i²) dz`.
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError>;
}

impl GaussianBlock for GpBlock {
    fn sample(&self, np: &NaturalParams, rng: &mut ChaCha8Rng) -> Result<BlockDraw, RuntimeError> {
        Ok(BlockDraw {
            values: GpBlock::sample(self, &np.a, &np.b, rng)?,
            inducing: None,
        })
    }
    fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError> {
        GpBlock::moments(self, &np.a, &np.b)
    }
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError> {
        gp_log_marginal(&self.k, self.mean, &np.a, &np.b)
    }
}

impl GaussianBlock for DenseBlock {
    /// `np` holds one pseudo-observation per row of the block's design.
    fn sample(&self, np: &NaturalParams, rng: &mut ChaCha8Rng) -> Result<BlockDraw, RuntimeError> {
        Ok(BlockDraw {
            values: DenseBlock::sample(self, &np.a, &np.b, rng)?,
            inducing: None,
        })
    }
    fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError> {
        Ok(DenseBlock::moments(self, &np.a, &np.b)?.0)
    }
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError> {
        DenseBlock::log_marginal(self, &np.a, &np.b)
    }
}

/// A sparse GP column: its prior with the features `Φ = L⁻¹K_mx`, `k̃` at its inputs.
#[derive(Debug, Clone, Copy)]
pub struct SparseColumn<'a> {
    /// The prior and its inducing points.
    pub sp: &'a SparseGp,
    /// `Φ` (`M × N`).
    pub phi: &'a DMatrix<f64>,
    /// `k̃` (`N`).
    pub kt: &'a [f64],
}

impl SparseColumn<'_> {
    /// The optimal `q(v)` for these terms.
    pub fn q(&self, np: &NaturalParams) -> Result<QInducing, RuntimeError> {
        let (prec, h) = QInducing::target(self.phi, &np.a, &np.b, self.sp.mean, 1.0)?;
        QInducing::from_natural(prec, h)
    }
}

impl GaussianBlock for SparseColumn<'_> {
    fn sample(&self, np: &NaturalParams, rng: &mut ChaCha8Rng) -> Result<BlockDraw, RuntimeError> {
        let (v, f) = self
            .sp
            .sample_conditional(self.phi, self.kt, &np.a, &np.b, rng)?;
        Ok(BlockDraw {
            values: f,
            inducing: Some(v),
        })
    }
    /// The collapsed variational `q(v)` of SVGP (Titsias 2009; Hensman et al. 2013), with
    /// the marginals of `f` it implies — CAVI's sparse posterior, not the FITC posterior that
    /// [`GaussianBlock::sample`] draws from.
    fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError> {
        let q = self.q(np)?;
        let (m, v) = q.marginals(self.phi, self.kt, self.sp.mean)?;
        Ok(Moments {
            mean: DVector::from_vec(m),
            var: DVector::from_vec(v),
            kl: q.kl()?,
        })
    }
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError> {
        self.sp.log_marginal(self.phi, self.kt, &np.a, &np.b)
    }
}
