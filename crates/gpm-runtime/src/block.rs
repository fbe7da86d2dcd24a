//! The Gaussian-block abstraction every executor works through: given the likelihood's terms
//! `Σ_i b_i z_i − ½ a_i z_i²` ([`NaturalParams`]), a block draws itself exactly (Gibbs), gives
//! its Gaussian `q`'s moments (CAVI) and its marginal likelihood with its values integrated out
//! (hyperparameter updates). Implemented by the full GP column ([`GpBlock`]), the sparse GP
//! column ([`SparseColumn`]: its prior and its features at the training inputs) and the dense
//! block of normal latents ([`DenseBlock`]).

use crate::gaussian::{gp_log_marginal, DenseBlock, GpBlock, Moments};
use crate::natural::NaturalParams;
use crate::posterior::BlockPosterior;
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
    /// The conditional mean the values were drawn about, where the block computes it (the
    /// Rao-Blackwellised summaries; `None` for a sparse block).
    pub mean: Option<DVector<f64>>,
}

/// A Gaussian block given its likelihood terms.
pub trait GaussianBlock {
    /// Draw the block from `p(z) exp(Σ b_i z_i − ½ a_i z_i²)`, normalised.
    fn sample(&self, np: &NaturalParams, rng: &mut ChaCha8Rng) -> Result<BlockDraw, RuntimeError>;
    /// Marginal means, variances and `KL(q ‖ p)` of `q(z) ∝ p(z) exp(Σ b_i z_i − ½ a_i z_i²)`.
    fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError>;
    /// `log ∫ p(z) exp(Σ b_i z_i − ½ a_i z_i²) dz`.
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError>;
    /// The conditional factored once: its mean and centred draws (elliptical slice sampling).
    fn ellipse<'a>(&'a self, np: &NaturalParams) -> Result<Box<dyn Ellipse + 'a>, RuntimeError>;
}

/// A Gaussian conditional `N(m, Σ)` factored once: its mean, and draws of `N(0, Σ)`.
pub trait Ellipse {
    /// `m`.
    fn mean(&self) -> &DVector<f64>;
    /// A draw of `N(0, Σ)`.
    fn centred_draw(&self, rng: &mut ChaCha8Rng) -> DVector<f64>;
    /// `log N(z | m, Σ)` up to a constant, where the ellipse can say (a dense block's): what a
    /// step about another reference slices against.
    fn log_density(&self, _z: &DVector<f64>) -> Option<f64> {
        None
    }
}

impl Ellipse for crate::gaussian::GpEllipse<'_> {
    fn mean(&self) -> &DVector<f64> {
        &self.mean
    }
    fn centred_draw(&self, rng: &mut ChaCha8Rng) -> DVector<f64> {
        crate::gaussian::GpEllipse::centred_draw(self, rng)
    }
}

/// A dense block's conditional: its mean and the Cholesky factor `L` of its precision.
struct DenseEllipse {
    mean: DVector<f64>,
    chol: nalgebra::Cholesky<f64, nalgebra::Dyn>,
}

impl Ellipse for DenseEllipse {
    fn mean(&self) -> &DVector<f64> {
        &self.mean
    }
    /// `L⁻ᵀz` has covariance `(LLᵀ)⁻¹`.
    fn centred_draw(&self, rng: &mut ChaCha8Rng) -> DVector<f64> {
        use rand_distr::{Distribution, StandardNormal};
        let z = DVector::from_fn(self.mean.len(), |_, _| StandardNormal.sample(rng));
        self.chol
            .l_dirty()
            .transpose()
            .solve_upper_triangular(&z)
            .unwrap_or(z)
    }
    /// `−½ (z − m)ᵀ P (z − m) = −½ ‖Lᵀ(z − m)‖²` with `P = LLᵀ` the precision.
    fn log_density(&self, z: &DVector<f64>) -> Option<f64> {
        // `l()`, not `l_dirty()`: the product reads the whole factor, whose upper triangle the
        // dirty form leaves unzeroed.
        let r = z - &self.mean;
        Some(-0.5 * (self.chol.l().transpose() * r).norm_squared())
    }
}

impl GaussianBlock for GpBlock {
    fn sample(&self, np: &NaturalParams, rng: &mut ChaCha8Rng) -> Result<BlockDraw, RuntimeError> {
        let (values, mean) = GpBlock::sample_with_mean(self, &np.a, &np.b, rng)?;
        Ok(BlockDraw {
            values,
            inducing: None,
            mean: Some(mean),
        })
    }
    fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError> {
        GpBlock::moments(self, &np.a, &np.b)
    }
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError> {
        gp_log_marginal(&self.k, self.mean, &np.a, &np.b)
    }
    fn ellipse<'a>(&'a self, np: &NaturalParams) -> Result<Box<dyn Ellipse + 'a>, RuntimeError> {
        Ok(Box::new(GpBlock::ellipse(self, &np.a, &np.b)?))
    }
}

/// A GP prior borrowed (the model's fixed one) or shared (the chain's own, made by a kernel
/// update): the sweep's draw reads it in place.
macro_rules! gp_block_by_reference {
    ($t:ty) => {
        impl GaussianBlock for $t {
            fn sample(
                &self,
                np: &NaturalParams,
                rng: &mut ChaCha8Rng,
            ) -> Result<BlockDraw, RuntimeError> {
                GaussianBlock::sample(&**self, np, rng)
            }
            fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError> {
                GaussianBlock::moments(&**self, np)
            }
            fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError> {
                GaussianBlock::log_marginal(&**self, np)
            }
            fn ellipse<'a>(
                &'a self,
                np: &NaturalParams,
            ) -> Result<Box<dyn Ellipse + 'a>, RuntimeError> {
                GaussianBlock::ellipse(&**self, np)
            }
        }
    };
}
gp_block_by_reference!(&GpBlock);
gp_block_by_reference!(std::sync::Arc<GpBlock>);

impl GaussianBlock for DenseBlock {
    /// `np` holds one pseudo-observation per row of the block's design.
    fn sample(&self, np: &NaturalParams, rng: &mut ChaCha8Rng) -> Result<BlockDraw, RuntimeError> {
        let (values, mean) = DenseBlock::sample_with_mean(self, &np.a, &np.b, rng)?;
        Ok(BlockDraw {
            values,
            inducing: None,
            mean: Some(mean),
        })
    }
    fn moments(&self, np: &NaturalParams) -> Result<Moments, RuntimeError> {
        Ok(DenseBlock::moments(self, &np.a, &np.b)?.0)
    }
    fn log_marginal(&self, np: &NaturalParams) -> Result<f64, RuntimeError> {
        DenseBlock::log_marginal(self, &np.a, &np.b)
    }
    fn ellipse<'a>(&'a self, np: &NaturalParams) -> Result<Box<dyn Ellipse + 'a>, RuntimeError> {
        let (mean, chol) = DenseBlock::ellipse(self, &np.a, &np.b)?;
        Ok(Box::new(DenseEllipse { mean, chol }))
    }
}

/// The generic update of a sparse GP does not exist (the schedule refuses it first).
pub(crate) fn no_sparse_ellipse() -> RuntimeError {
    RuntimeError::Unsupported("the generic update of a sparse GP is not implemented".into())
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
            mean: None,
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
    /// The generic update needs a full GP (the schedule refuses a sparse one).
    fn ellipse<'a>(&'a self, _: &NaturalParams) -> Result<Box<dyn Ellipse + 'a>, RuntimeError> {
        Err(no_sparse_ellipse())
    }
}

/// What prediction conditions a block on: one posterior draw of its coordinates (a full GP's
/// values at its training inputs, a sparse GP's whitened inducing values `v`, a dense block's
/// coefficients), or its variational posterior.
#[derive(Debug, Clone, Copy)]
pub enum Belief<'a> {
    /// One draw.
    Draw(&'a DVector<f64>),
    /// The variational `q`.
    Variational(&'a BlockPosterior),
}

/// A block's predictive marginals at the test inputs: mean and variance per test point.
#[derive(Debug, Clone)]
pub struct Marginals {
    /// Means.
    pub mean: Vec<f64>,
    /// Variances.
    pub var: Vec<f64>,
}

/// A block placed at the test inputs: its predictive marginals there, given a draw or a `q`.
/// One implementation per block kind, shared by Gibbs and variational prediction.
pub trait Predictive {
    /// The marginals of the block's values at the test inputs given `belief`.
    fn predict(&self, belief: Belief) -> Result<Marginals, RuntimeError>;
}

fn mismatch() -> RuntimeError {
    RuntimeError::Inconsistent("the posterior does not match the model's blocks".into())
}

/// A full GP column at the test inputs: the training prior with the cross-covariances
/// `K*` (test × train), the test variances `k**` and the conditional variances
/// `k** − ‖L⁻¹K*ᵀ‖²`.
#[derive(Debug, Clone)]
pub struct GpAtTest<'a> {
    /// The training prior.
    pub prior: &'a GpBlock,
    /// `K*` (test × train).
    pub kst: DMatrix<f64>,
    /// `k(x*_i, x*_i)`.
    pub kss: Vec<f64>,
    /// `Var[f*_i | f]`.
    pub cond_var: Vec<f64>,
}

impl<'a> GpAtTest<'a> {
    /// Place the prior `prior` (over `x`) at the test inputs `xs`.
    pub fn new(
        prior: &'a GpBlock,
        kernel: &gpm_schedule::BoundKernel,
        x: &DMatrix<f64>,
        xs: &DMatrix<f64>,
        hypers: &crate::kernels::HyperValues,
    ) -> Result<Self, RuntimeError> {
        let kst = crate::kernels::kernel_matrix(kernel, xs, x, hypers)?;
        let kss = crate::kernels::kernel_diag(kernel, xs, hypers)?;
        let v = crate::linalg::solve_lower(prior.chol.l_dirty(), kst.transpose());
        let cond_var = (0..xs.nrows())
            .map(|i| (kss[i] - v.column(i).norm_squared()).max(0.0))
            .collect();
        Ok(GpAtTest {
            prior,
            kst,
            kss,
            cond_var,
        })
    }
}

impl Predictive for GpAtTest<'_> {
    fn predict(&self, belief: Belief) -> Result<Marginals, RuntimeError> {
        let gp = self.prior;
        let n = gp.len();
        match belief {
            // f* | f ~ N(μ + K*K⁻¹(f − μ), k** − K*K⁻¹K*ᵀ) (GPML eq. 2.19).
            Belief::Draw(f) => {
                let alpha = gp.chol.solve(&f.map(|v| v - gp.mean));
                let m = &self.kst * alpha;
                Ok(Marginals {
                    mean: m.iter().map(|m| gp.mean + m).collect(),
                    var: self.cond_var.clone(),
                })
            }
            // q(f) ∝ p(f) exp(bᵀf − ½ fᵀAf): mean μ₀ + K*K⁻¹(m − μ₀), variance
            // k** − ‖L_B⁻¹ S K*ᵀ‖² with S = A^½, B = I + SKS (GPML eqs. 3.21, 3.24, §3.4).
            Belief::Variational(BlockPosterior::Gp { a, b }) => {
                let s = DVector::from_iterator(n, a.iter().map(|v| v.max(1e-12).sqrt()));
                let lb = crate::gaussian::b_factor(&gp.k, &s)?;
                // m − μ₀ = Σ(b − aμ₀), Σ = K − KSB⁻¹SK; then K⁻¹(m − μ₀) = b' − S B⁻¹ S K b'.
                let bp = DVector::from_fn(n, |i, _| b[i] - a[i] * gp.mean);
                let kb = &gp.k * &bp;
                let alpha = &bp - lb.solve(&kb.component_mul(&s)).component_mul(&s);
                let mean = &self.kst * alpha;
                let tests = self.kst.nrows();
                let sk = DMatrix::from_fn(n, tests, |i, j| s[i] * self.kst[(j, i)]);
                let v = crate::linalg::solve_lower(lb.l_dirty(), sk);
                Ok(Marginals {
                    mean: mean.iter().map(|m| m + gp.mean).collect(),
                    var: (0..tests)
                        .map(|i| (self.kss[i] - v.column(i).norm_squared()).max(0.0))
                        .collect(),
                })
            }
            // q(f) = N(m, SSᵀ): f* = μ₀ + K*K⁻¹(f − μ₀) + ε*, so the mean is μ₀ + K*K⁻¹(m − μ₀)
            // and the variance k** − ‖L⁻¹K*ᵀ‖² + ‖SᵀK⁻¹K*ᵀ‖².
            Belief::Variational(BlockPosterior::Particles { mean, spread }) => {
                let alpha = gp.chol.solve(&mean.map(|v| v - gp.mean));
                let m = &self.kst * alpha;
                let w = crate::linalg::matmul(&self.kst, &gp.chol.solve(spread));
                Ok(Marginals {
                    mean: m.iter().map(|m| gp.mean + m).collect(),
                    var: (0..self.kst.nrows())
                        .map(|i| self.cond_var[i] + w.row(i).norm_squared())
                        .collect(),
                })
            }
            Belief::Variational(_) => Err(mismatch()),
        }
    }
}

/// A sparse GP column at the test inputs (`Φ*`, `k̃*` its features there): `f* = μ₀ + Φ*ᵀv
/// + ε*`, `ε* ~ N(0, k̃*)` — given a draw of `v`, or under `q(v)`.
impl Predictive for SparseColumn<'_> {
    fn predict(&self, belief: Belief) -> Result<Marginals, RuntimeError> {
        match belief {
            Belief::Draw(v) => {
                let fv = self.phi.tr_mul(v);
                Ok(Marginals {
                    mean: fv.iter().map(|f| self.sp.mean + f).collect(),
                    var: self.kt.to_vec(),
                })
            }
            Belief::Variational(BlockPosterior::Sparse(q)) => {
                let (mean, var) = q.marginals(self.phi, self.kt, self.sp.mean)?;
                Ok(Marginals { mean, var })
            }
            Belief::Variational(_) => Err(mismatch()),
        }
    }
}

/// A dense block at the test inputs (its `design` the test predictor's rows): `Φ*θ`.
impl Predictive for DenseBlock {
    fn predict(&self, belief: Belief) -> Result<Marginals, RuntimeError> {
        let phi = &self.design;
        match belief {
            Belief::Draw(theta) => Ok(Marginals {
                mean: (phi * theta).iter().copied().collect(),
                var: vec![0.0; phi.nrows()],
            }),
            Belief::Variational(BlockPosterior::Dense { mean, cov }) => {
                let pm = phi * mean;
                let pc = phi * cov;
                Ok(Marginals {
                    mean: pm.iter().copied().collect(),
                    var: (0..phi.nrows())
                        .map(|i| pc.row(i).dot(&phi.row(i)))
                        .collect(),
                })
            }
            Belief::Variational(_) => Err(mismatch()),
        }
    }
}
