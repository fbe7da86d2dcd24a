//! Prediction at new inputs from a posterior: Gibbs draws or a variational `q` (CAVI, SVI).
//! One path: the training and test data are bound once, every block is placed at the test
//! inputs once ([`crate::block::Predictive`]: a full GP's cross-covariances, a sparse GP's
//! features, a dense block's test design), and each block gives its predictive marginals at
//! the test inputs given a posterior draw or given `q`. What differs is only how the
//! posterior is averaged over:
//! * draws ([`draws`]): per kept draw, each GP latent is drawn at the test points from its
//!   Gaussian conditional (one marginal draw per point), weights and random effects are reused
//!   as drawn, and the test predictors follow; predictive densities average the likelihood over
//!   draws, `p(y*_i | y) ≈ (1/S) Σ_s p(y*_i | η*_is)`, in log space;
//! * `q` ([`variational`]): the test predictors are sums of independent Gaussian blocks, so
//!   Gaussian, and `∫ p(y* | η*) N(η*; μ, σ²) dη*` is computed by Gauss-Hermite quadrature on the
//!   original (un-augmented) log-density.

mod accumulate;
mod draws;
pub mod variational;

use crate::block::{GpAtTest, Marginals, Predictive, SparseColumn};
use crate::data::Data;
use crate::gibbs::Chain;
use crate::kernels::HyperValues;
use crate::posterior::BlockPosterior;
use crate::prepared::{Block, Prepared};
use crate::RuntimeError;
use gpm_schedule::{BoundPrior, Schedule};
use nalgebra::DMatrix;
use std::sync::Arc;

pub use variational::gauss_hermite;

/// A factor's labels and, per point, the predictive probability of each.
pub type LabelProbabilities = (Vec<f64>, Vec<Vec<f64>>);

/// Predictions at the test points.
#[derive(Debug, Clone)]
pub struct Prediction {
    /// Per predictor: posterior predictive mean and variance of `η*` at each test point.
    pub predictors: Vec<(String, Vec<f64>, Vec<f64>)>,
    /// Per factor with observed test responses: pointwise log predictive densities.
    pub log_predictive: Vec<Vec<f64>>,
    /// Per factor with a finite label set: the labels and the predictive probability of each
    /// label, per point.
    pub label_probabilities: Vec<Option<LabelProbabilities>>,
    /// Draws used (0 for a variational posterior).
    pub draws: usize,
    /// Per factor whose distribution can be drawn from (a library distribution or the
    /// logistic-softmax): the posterior predictive distribution of a new response at each test
    /// point — from one draw of `y*` per posterior draw (Gibbs), or from draws of the test
    /// predictors' Gaussian marginals under `q` (variational).
    pub responses: Vec<Option<Vec<ResponseSummary>>>,
}

/// The posterior predictive distribution of a new response at one test point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResponseSummary {
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub sd: f64,
    /// 5 % quantile.
    pub q5: f64,
    /// Median.
    pub q50: f64,
    /// 95 % quantile.
    pub q95: f64,
}

impl ResponseSummary {
    /// The summary of draws (NaN draws, from parameters outside a distribution's domain, left
    /// out).
    pub fn of(draws: &[f64]) -> ResponseSummary {
        let mut sorted: Vec<f64> = draws.iter().copied().filter(|v| !v.is_nan()).collect();
        // Values equal under the total order are the same bits, so the unstable sort gives the
        // stable one's sequence — faster, above all on the ties of a discrete response.
        sorted.sort_unstable_by(f64::total_cmp);
        let n = sorted.len();
        if n == 0 {
            let nan = f64::NAN;
            return ResponseSummary {
                mean: nan,
                sd: nan,
                q5: nan,
                q50: nan,
                q95: nan,
            };
        }
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let var =
            sorted.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n.max(2) - 1) as f64;
        // Type-7 quantiles (linear between order statistics).
        let q = |p: f64| {
            let h = p * (n - 1) as f64;
            let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        };
        ResponseSummary {
            mean,
            sd: var.sqrt(),
            q5: q(0.05),
            q50: q(0.5),
            q95: q(0.95),
        }
    }
}

/// Prediction from `total` draws uses every `draw_step`-th of them (all chains' draws in
/// order, from the first), about `max_draws` in all.
pub fn draw_step(total: usize, max_draws: usize) -> usize {
    (total / max_draws.max(1)).max(1)
}

/// The posterior to predict from.
#[derive(Debug, Clone, Copy)]
pub enum Posterior<'a> {
    /// Gibbs chains: at most `max_draws` draws are used (evenly thinned); `seed` seeds the
    /// draws of the GP values at the test inputs.
    Draws {
        /// The chains.
        chains: &'a [Chain],
        /// Most draws used.
        max_draws: usize,
        /// Seed.
        seed: u64,
    },
    /// A variational posterior, one entry per block of [`Prepared::blocks`].
    Variational(&'a [BlockPosterior]),
}

/// Per factor, the finite label set of its response, if any (for predictive probabilities).
pub type Labels = [Option<Vec<f64>>];

/// Predict from a posterior, `tr` being the schedule bound to the training data
/// ([`Prepared::new`]; the blocks a variational posterior refers to).
pub fn predict(
    tr: &Prepared,
    schedule: &Schedule,
    train: &Data,
    test: &Data,
    hypers: &HyperValues,
    posterior: Posterior,
    labels: &Labels,
) -> Result<Prediction, RuntimeError> {
    // Test data: predictors and factor slots only (no test × test prior is formed).
    let te = Prepared::for_test(schedule, test, hypers)?;
    let at = TestBlocks::new(schedule, tr, train, test, hypers)?;
    let setting = Setting {
        schedule,
        tr,
        te: &te,
        at: &at,
        test,
        labels,
    };
    let mut p = match posterior {
        Posterior::Draws {
            chains,
            max_draws,
            seed,
        } => draws::predict(&setting, hypers, chains, max_draws, seed)?,
        Posterior::Variational(post) => {
            if post.len() != tr.blocks.len() {
                return Err(RuntimeError::Inconsistent(
                    "the variational posterior does not match the model's blocks".into(),
                ));
            }
            for (bi, (q, b)) in post.iter().zip(&tr.blocks).enumerate() {
                fits_block(q, b).map_err(|why| {
                    RuntimeError::BadData(format!(
                        "the variational posterior of block {} does not fit the model ({why}): a fit.json edited or damaged, or made for other data; run `gpmc infer` again",
                        bi + 1
                    ))
                })?;
            }
            variational::predict(&setting, post, hypers)?
        }
    };
    // A predictor only a latent's prior factor reads (`w ~ laplace(...)`: its coordinates)
    // is not a quantity at the test points.
    let reads = |fp: &gpm_schedule::FactorProgram, pi: usize| {
        fp.slots
            .iter()
            .any(|s| matches!(s, gpm_schedule::Source::Predictor(q) if q.0 == pi))
    };
    let observed = |pi: usize| {
        let factors = &schedule.factors;
        !factors.iter().any(|fp| fp.is_prior && reads(fp, pi))
            || factors.iter().any(|fp| !fp.is_prior && reads(fp, pi))
    };
    let mut k = 0;
    p.predictors.retain(|_| {
        k += 1;
        observed(k - 1)
    });
    Ok(p)
}

/// What both ways of averaging over the posterior read: the schedule, the training and test
/// bindings, the blocks at the test inputs, the test data and the label sets.
pub(crate) struct Setting<'a> {
    pub schedule: &'a Schedule,
    pub tr: &'a Prepared,
    pub te: &'a Prepared,
    pub at: &'a TestBlocks<'a>,
    pub test: &'a Data,
    pub labels: &'a Labels,
}

impl<'a> Setting<'a> {
    /// Its parts, for a function that reads all of them.
    #[allow(clippy::type_complexity)]
    pub fn parts(
        &self,
    ) -> (
        &'a Schedule,
        &'a Prepared,
        &'a Prepared,
        &'a TestBlocks<'a>,
        &'a Data,
        &'a Labels,
    ) {
        (
            self.schedule,
            self.tr,
            self.te,
            self.at,
            self.test,
            self.labels,
        )
    }
}

/// One block of [`Prepared::blocks`] at the test inputs.
pub(crate) enum TestBlock<'a> {
    /// A full GP column at the run's hyperparameters, and what places it at other values.
    Gp {
        at: GpAtTest<'a>,
        kernel: gpm_schedule::BoundKernel,
        mean: gpm_schedule::Tape,
        inputs: (Arc<DMatrix<f64>>, Arc<DMatrix<f64>>),
        /// Hyperparameters its prior reads.
        reads: Vec<gpm_schedule::HyperId>,
    },
    /// A sparse GP column: `Φ*` and `k̃*`, and what recomputes them at other kernel values.
    Sparse {
        phi: DMatrix<f64>,
        kt: Vec<f64>,
        kernel: gpm_schedule::BoundKernel,
        xs: Arc<DMatrix<f64>>,
        reads: Vec<gpm_schedule::HyperId>,
    },
    /// A dense block (placed per predictor, see [`TestBlocks::dense`]).
    Dense,
}

/// Every block of the model at the test inputs.
pub(crate) struct TestBlocks<'a> {
    pub blocks: Vec<TestBlock<'a>>,
}

impl<'a> TestBlocks<'a> {
    fn new(
        schedule: &Schedule,
        tr: &'a Prepared,
        train: &Data,
        test: &Data,
        hypers: &HyperValues,
    ) -> Result<Self, RuntimeError> {
        let inputs_of = |latent: usize| -> Result<_, RuntimeError> {
            let BoundPrior::Gp {
                inputs,
                kernel,
                mean,
                ..
            } = &schedule.priors[latent]
            else {
                return Err(RuntimeError::Inconsistent(
                    "a GP block without a GP prior".into(),
                ));
            };
            let xs = test.inputs(inputs).ok_or_else(|| {
                RuntimeError::MissingData(format!("the test data have no inputs `{inputs}`"))
            })?;
            Ok((inputs, kernel, mean, xs))
        };
        let mut blocks = Vec::with_capacity(tr.blocks.len());
        for b in &tr.blocks {
            blocks.push(match b {
                Block::Gp { latent, gp, .. } => {
                    let (inputs, kernel, mean, xs) = inputs_of(*latent)?;
                    let x = train.inputs(inputs).ok_or_else(|| {
                        RuntimeError::MissingData(format!("no inputs `{inputs}`"))
                    })?;
                    TestBlock::Gp {
                        at: GpAtTest::new(gp, kernel, &x, &xs, hypers)?,
                        kernel: kernel.clone(),
                        mean: mean.clone(),
                        inputs: (x, xs),
                        reads: schedule.priors[*latent].hypers(),
                    }
                }
                Block::Sparse { latent, sp, .. } => {
                    let (_, kernel, _, xs) = inputs_of(*latent)?;
                    let (phi, kt) = sp.features(&xs)?;
                    TestBlock::Sparse {
                        phi,
                        kt,
                        kernel: kernel.clone(),
                        xs,
                        reads: schedule.priors[*latent].hypers(),
                    }
                }
                Block::Dense { .. } => TestBlock::Dense,
            });
        }
        Ok(TestBlocks { blocks })
    }

    /// The predictive marginals of block `bi` (a GP or sparse column) at the test inputs.
    pub(super) fn marginals(
        &self,
        tr: &Prepared,
        bi: usize,
        belief: crate::block::Belief,
    ) -> Result<Marginals, RuntimeError> {
        match (&tr.blocks[bi], &self.blocks[bi]) {
            (Block::Gp { .. }, TestBlock::Gp { at, .. }) => at.predict(belief),
            (Block::Sparse { sp, .. }, TestBlock::Sparse { phi, kt, .. }) => {
                SparseColumn { sp, phi, kt }.predict(belief)
            }
            _ => Err(RuntimeError::Inconsistent(
                "a dense block has no per-point marginals".into(),
            )),
        }
    }

    /// A dense block placed at test predictor `pred`'s rows (`None` when it reads none of it).
    pub(super) fn dense(
        tr: &Prepared,
        te: &Prepared,
        bi: usize,
        pred: usize,
    ) -> Option<crate::gaussian::DenseBlock> {
        let Block::Dense {
            parts,
            prior_mean,
            prior_sd,
        } = &tr.blocks[bi]
        else {
            return None;
        };
        te.dense_design(pred, parts, prior_mean.len())
            .map(|design| crate::prepared::dense_block(design, prior_mean, prior_sd))
    }
}

/// Whether a saved `q` has the kind and the sizes of the block it is the posterior of (a fit
/// read back from a file may have been edited or truncated), and finite numbers.
fn fits_block(q: &BlockPosterior, b: &crate::prepared::Block) -> Result<(), String> {
    use crate::prepared::Block;
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    let size = |what: &str, have: String, want: usize| {
        Err(format!(
            "its {what} has {have} values where the block has {want}"
        ))
    };
    match (q, b) {
        (BlockPosterior::Gp { a, b: lin }, Block::Gp { gp, .. }) => {
            let n = gp.k.nrows();
            if a.len() != n || lin.len() != n {
                return size("curvature", format!("{} and {}", a.len(), lin.len()), n);
            }
            if !(finite(a) && finite(lin)) {
                return Err("it holds values that are not finite".into());
            }
        }
        (BlockPosterior::Particles { mean, spread }, Block::Gp { gp, .. }) => {
            let n = gp.k.nrows();
            if mean.len() != n || spread.nrows() != n {
                return size("mean", format!("{} and {}", mean.len(), spread.nrows()), n);
            }
            if !(finite(mean.as_slice()) && finite(spread.as_slice())) {
                return Err("it holds values that are not finite".into());
            }
        }
        (BlockPosterior::Sparse(q), Block::Sparse { sp, .. }) => {
            let m = sp.z.nrows();
            if q.prec.nrows() != m || q.h.len() != m {
                return size("inducing precision", format!("{}", q.h.len()), m);
            }
            if !finite(q.mean.as_slice()) {
                return Err("it holds values that are not finite".into());
            }
        }
        (BlockPosterior::Dense { mean, cov }, Block::Dense { prior_mean, .. }) => {
            let d = prior_mean.len();
            if mean.len() != d || cov.nrows() != d || cov.ncols() != d {
                let have = format!(
                    "{} (mean) and {}×{} (covariance)",
                    mean.len(),
                    cov.nrows(),
                    cov.ncols()
                );
                return size("mean or covariance", have, d);
            }
            if !(finite(mean.as_slice()) && finite(cov.as_slice())) {
                return Err("it holds values that are not finite".into());
            }
        }
        _ => return Err("it is the posterior of another kind of block".into()),
    }
    Ok(())
}
