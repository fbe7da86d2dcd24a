//! The evaluations of one GP's kernel hyperparameters in the marginal move
//! ([`super::Sampler::slice_kernel`]): the kernel's lower triangle at each candidate value —
//! the unit kernel `K₁` of `variance * k(…)` kept while the values `k` reads do not move — and
//! the GP's log marginal (or log prior) there; then the chain's new prior, made from the last
//! evaluation (slice sampling accepts the point it evaluated last), with the factor of
//! `I + SKS` made there. Owns no decision: what is moved, and how, is the schedule's.

use super::SlicedKernel;
use crate::gaussian::GpBlock;
use crate::kernels::HyperValues;
use crate::RuntimeError;
use gpm_schedule::{BoundKernel, HyperId};
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};
use std::cell::RefCell;
use std::rc::Rc;

/// `variance * k(…)` with the variance read nowhere in `k`: the variance's term, `k`, and the
/// hyperparameters `k` reads.
struct Split<'a> {
    variance: &'a gpm_schedule::Tape,
    unit: &'a BoundKernel,
    read: Vec<HyperId>,
}

/// The last evaluation: its values, the kernel's lower triangle `K₁` and the variance `v` with
/// `K = v K₁`, and the factor of `I + SKS` where the block was integrated out.
type Last = (
    HyperValues,
    Rc<DMatrix<f64>>,
    f64,
    Option<Cholesky<f64, Dyn>>,
);

/// The unit kernel's lower triangle with the values of what it reads.
type Keyed = (Vec<Vec<f64>>, Rc<DMatrix<f64>>);

/// One marginal move's evaluations of a GP's kernel.
pub(super) struct KernelEvaluations<'a> {
    sk: &'a SlicedKernel,
    split: Option<Split<'a>>,
    /// The unit kernel's lower triangle, keyed by the values of what it reads.
    unit: RefCell<Option<Keyed>>,
    last: RefCell<Option<Last>>,
}

impl<'a> KernelEvaluations<'a> {
    pub(super) fn new(sk: &'a SlicedKernel) -> Self {
        let split = match &sk.kernel {
            BoundKernel::Scale { variance, kernel }
                if variance.slots().all(|v| !kernel_reads(kernel, v)) =>
            {
                let mut read = Vec::new();
                kernel.hypers(&mut read);
                Some(Split {
                    variance,
                    unit: kernel.as_ref(),
                    read,
                })
            }
            _ => None,
        };
        KernelEvaluations {
            sk,
            split,
            unit: RefCell::new(None),
            last: RefCell::new(None),
        }
    }

    /// `(K₁, v)` with `K = v K₁` at `hv`, `K₁`'s lower triangle only: a coordinate-wise move of
    /// the variance rescales the kept `K₁` (no kernel function evaluated).
    fn lower(&self, hv: &HyperValues) -> Result<(Rc<DMatrix<f64>>, f64), RuntimeError> {
        let Some(split) = &self.split else {
            return Ok((Rc::new(self.sk.training_lower(&self.sk.kernel, hv)?), 1.0));
        };
        let key: Vec<Vec<f64>> = split
            .read
            .iter()
            .map(|h| match hv.vector(*h) {
                Some(v) => v.to_vec(),
                None => vec![hv.scalars[h.0]],
            })
            .collect();
        let v = hv.eval(split.variance)?;
        crate::kernels::check_variance(v)?;
        let mut cache = self.unit.borrow_mut();
        match cache.as_ref() {
            Some((at, k1)) if *at == key => Ok((k1.clone(), v)),
            _ => {
                let k1 = Rc::new(self.sk.training_lower(split.unit, hv)?);
                *cache = Some((key, k1.clone()));
                Ok((k1, v))
            }
        }
    }

    /// The log density of the kernel's values at `hv` beside their prior: the GP's log marginal
    /// at curvature `(a, b)`, or, given the block's `values`, their log prior.
    pub(super) fn log_gp(
        &self,
        hv: &HyperValues,
        values: Option<&DVector<f64>>,
        a: &[f64],
        b: &[f64],
    ) -> Result<f64, RuntimeError> {
        let (k1, v) = self.lower(hv)?;
        let mean = hv.eval(&self.sk.mean)?;
        let (lp, lb) = match values {
            Some(f) => (
                GpBlock::new(full((*k1).clone(), v), mean)?.log_prior(f)?,
                None,
            ),
            None => {
                let (lp, lb) = crate::gaussian::gp_log_marginal_scaled(&k1, v, mean, a, b)?;
                (lp, Some(lb))
            }
        };
        *self.last.borrow_mut() = Some((hv.clone(), k1, v, lb));
        Ok(lp)
    }

    /// The chain's GP prior at the accepted values `hv`: from the last evaluation when it was
    /// made there (with its factor of `I + SKS` at curvature `a`), else formed afresh.
    pub(super) fn prior_at(self, hv: &HyperValues, a: &[f64]) -> Result<GpBlock, RuntimeError> {
        let KernelEvaluations { sk, unit, last, .. } = self;
        let mean = hv.eval(&sk.mean)?;
        // The cache's hold on `K₁` let go first: the last evaluation's is then the only one,
        // and it becomes the prior's `K` in place.
        drop(unit);
        match last.into_inner() {
            Some((at, k1, v, lb)) if at == *hv => {
                let k1 = Rc::try_unwrap(k1).unwrap_or_else(|shared| (*shared).clone());
                let gp = GpBlock::new(full(k1, v), mean)?;
                Ok(match lb {
                    Some(lb) => gp.with_b_factor(a, lb),
                    None => gp,
                })
            }
            _ => GpBlock::new(sk.training(&sk.kernel, hv)?, mean),
        }
    }
}

/// `v K₁` whole from `K₁`'s lower triangle: mirrored, then scaled (the numbers of
/// [`crate::kernels::training_matrix`] times `v`, to the bit).
fn full(k1: DMatrix<f64>, v: f64) -> DMatrix<f64> {
    let mut k = k1;
    crate::kernels::mirror_lower(&mut k);
    if v != 1.0 {
        k *= v;
    }
    k
}

/// Whether kernel `k` reads hyperparameter `index`.
fn kernel_reads(k: &gpm_schedule::BoundKernel, index: usize) -> bool {
    let mut read = Vec::new();
    k.hypers(&mut read);
    read.iter().any(|h| h.0 == index)
}
