//! A model made ready to run: data bound to every slot, predictors as explicit designs, latent
//! blocks with their priors factored once. Shared by the Gibbs and CAVI executors.

use crate::data::Data;
use crate::gaussian::{DenseBlock, GpBlock};
use crate::kernels::HyperValues;
use crate::sparse::SparseGp;
use crate::RuntimeError;
use gpm_ir::Shape;

/// Seed of the k-means++ choice of inducing points: fixed, so that `inducing = M` gives the same
/// points on every run and in every chain.
pub const INDUCING_SEED: u64 = 0x5eed_1d0c;
use gpm_schedule::Schedule;
use nalgebra::{DMatrix, DVector};

mod bind;
mod inducing;
mod sparse_blocks;

/// Where a slot's value comes from, resolved against the data.
#[derive(Debug, Clone)]
pub enum Slot {
    /// Predictor by index.
    Pred(usize),
    /// A per-observation datum.
    Vector(Vec<f64>),
    /// A constant for this run (scalar datum or hyperparameter).
    Const(f64),
    /// Auxiliary variable `j` of the factor.
    Aux(usize),
    /// Hyperparameter `k` ([`gpm_schedule::HyperId`]; its current value lives in the chain
    /// state, a vector indexed by id).
    Hyper(usize),
}

/// How a term reads its latent at observation `i`.
#[derive(Debug, Clone)]
pub enum Read {
    /// `z[i]`
    Identity,
    /// scalar `z`
    Broadcast,
    /// `Σ_j X[i, j] z[j]`
    Matrix(DMatrix<f64>),
    /// `z[g[i]]` (0-based indices)
    Gather(Vec<usize>),
    /// `Z[i, c]` of a matrix latent stored column-major with `rows` rows.
    Column(usize, usize),
}

/// One term `coef · scale_i · read(latent)`.
#[derive(Debug, Clone)]
pub struct PTerm {
    /// Latent index.
    pub latent: usize,
    /// Coefficient.
    pub coef: f64,
    /// Read.
    pub read: Read,
    /// A per-observation covariate multiplying the term (`X[i,1] · v[g[i]]`).
    pub scale: Option<Vec<f64>>,
}

impl PTerm {
    /// The term's multiplier at observation `i`: `coef`, times the covariate if any.
    #[inline]
    pub fn coef_at(&self, i: usize) -> f64 {
        match &self.scale {
            Some(s) => self.coef * s[i],
            None => self.coef,
        }
    }
}

/// A predictor as an explicit affine map.
#[derive(Debug, Clone)]
pub struct PPred {
    /// Name.
    pub name: String,
    /// Number of observations.
    pub n: usize,
    /// Terms.
    pub terms: Vec<PTerm>,
    /// Offset.
    pub offset: f64,
}

impl PPred {
    /// Evaluate at all observations.
    pub fn eval(&self, latents: &[DVector<f64>]) -> Vec<f64> {
        let mut out = vec![self.offset; self.n];
        for t in &self.terms {
            let z = &latents[t.latent];
            match &t.read {
                Read::Identity => out
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, o)| *o += t.coef_at(i) * z[i]),
                Read::Broadcast => out
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, o)| *o += t.coef_at(i) * z[0]),
                Read::Matrix(x) => {
                    let v = x * z;
                    out.iter_mut()
                        .enumerate()
                        .for_each(|(i, o)| *o += t.coef_at(i) * v[i]);
                }
                Read::Gather(g) => out
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, o)| *o += t.coef_at(i) * z[g[i]]),
                Read::Column(c, rows) => out
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, o)| *o += t.coef_at(i) * z[c * rows + i]),
            }
        }
        out
    }
}

impl PPred {
    /// The adjoint of [`PPred::eval`]: `grads[z] += Σ_i w_i ∂η_i/∂z` for every latent `z` the
    /// predictor reads — with `w_i = ℓ_i'(η_i)`, the gradient of `Σ_i ℓ_i(η_i)` in the latents.
    pub fn add_adjoint(&self, w: &[f64], grads: &mut [DVector<f64>]) {
        for t in &self.terms {
            let g = &mut grads[t.latent];
            let wi = |i: usize| t.coef_at(i) * w[i];
            match &t.read {
                Read::Identity => (0..self.n).for_each(|i| g[i] += wi(i)),
                Read::Broadcast => g[0] += (0..self.n).map(wi).sum::<f64>(),
                Read::Matrix(x) => *g += x.tr_mul(&DVector::from_fn(self.n, |i, _| wi(i))),
                Read::Gather(ix) => (0..self.n).for_each(|i| g[ix[i]] += wi(i)),
                Read::Column(c, rows) => (0..self.n).for_each(|i| g[c * rows + i] += wi(i)),
            }
        }
    }
}

/// A latent block's Gibbs / CAVI machinery.
#[derive(Debug, Clone)]
pub enum Block {
    /// A GP column: latent `latent`, column `column` (0 for a vector).
    Gp {
        /// Latent index.
        latent: usize,
        /// Column of a matrix latent.
        column: usize,
        /// The factored prior.
        gp: GpBlock,
    },
    /// A sparse GP column (inducing points): the latent values are never formed jointly.
    Sparse {
        /// Latent index.
        latent: usize,
        /// Column of a matrix latent.
        column: usize,
        /// The prior with its inducing points.
        sp: SparseGp,
        /// Training inputs (rows), shared with the data.
        inputs: std::sync::Arc<DMatrix<f64>>,
    },
    /// All independent-normal latents together.
    Dense {
        /// `(latent index, offset in θ, length)`.
        parts: Vec<(usize, usize, usize)>,
        /// Prior means of θ.
        prior_mean: DVector<f64>,
        /// Prior sds of θ.
        prior_sd: DVector<f64>,
    },
}

/// What a factor's tape reads beside the data: predictor `p` at `preds[p]`, auxiliary `j` at
/// `aux[j]`, the hyperparameters at `hypers`.
#[derive(Debug, Clone, Copy)]
pub struct TapeInputs<'a> {
    /// Every predictor's values.
    pub preds: &'a [Vec<f64>],
    /// The factor's auxiliaries.
    pub aux: &'a [Vec<f64>],
    /// The scalar hyperparameters.
    pub hypers: &'a [f64],
}

/// What [`Prepared::bind`] forms of the latent blocks.
#[derive(Clone, Copy)]
enum Blocks<'z> {
    /// No blocks (test data for prediction).
    None,
    /// Every block, the sparse GPs' inducing inputs given or chosen from the data.
    Formed(Option<&'z [DMatrix<f64>]>),
    /// Every block, an online-chosen sparse GP's points started from the first row only: SVI
    /// starts them again from its first minibatch ([`Prepared::for_streaming`]).
    Streaming,
}

/// Per-factor resolved slots and sizes.
#[derive(Debug, Clone)]
pub struct PFactor {
    /// Observations.
    pub n: usize,
    /// Slot sources.
    pub slots: Vec<Slot>,
    /// A logistic-softmax factor: its latent matrix (index into [`Prepared::latents`]), the
    /// labels (0-based) and the number of classes.
    pub categorical: Option<(usize, Vec<usize>, usize)>,
}

impl PFactor {
    /// `Σ_i tape(observation i)` with predictor `p` at `preds[p]`, auxiliary `j` at `aux[j]`
    /// and the hyperparameters at `hypers`: the tape evaluated a chunk of observations at a
    /// time ([`gpm_schedule::tape::Tape::eval_chunk`]), summed in observation order. The one
    /// sum of a factor's log-density over its observations (Gibbs's log joint, the slice moves,
    /// the elliptical steps).
    pub fn tape_sum(
        &self,
        tape: &gpm_schedule::Tape,
        preds: &[Vec<f64>],
        aux: &[Vec<f64>],
        hypers: &[f64],
        stack: &mut Vec<f64>,
    ) -> f64 {
        let mut total = 0.0;
        let at = TapeInputs { preds, aux, hypers };
        self.tape_chunks(tape, at, stack, |_, out| {
            for v in out {
                total += v;
            }
        });
        total
    }

    /// The tape a chunk of observations at a time ([`gpm_schedule::tape::Tape::eval_chunk`]),
    /// each chunk's values handed to `each` with its first observation, in order: what
    /// [`PFactor::tape_sum`] adds up, and per-observation values where a sum is not enough
    /// (derivatives by differences).
    pub fn tape_chunks(
        &self,
        tape: &gpm_schedule::Tape,
        at: TapeInputs,
        stack: &mut Vec<f64>,
        mut each: impl FnMut(usize, &[f64]),
    ) {
        let TapeInputs { preds, aux, hypers } = at;
        use gpm_schedule::tape::{Lane, CHUNK};
        let mut out = [0.0; CHUNK];
        let mut lanes = Vec::with_capacity(self.slots.len());
        let mut start = 0;
        while start < self.n {
            let end = (start + CHUNK).min(self.n);
            lanes.clear();
            lanes.extend(self.slots.iter().map(|slot| match slot {
                Slot::Pred(p) => Lane::Each(&preds[*p][start..end]),
                Slot::Vector(x) => Lane::Each(&x[start..end]),
                Slot::Const(c) => Lane::All(*c),
                Slot::Aux(j) => Lane::Each(&aux[*j][start..end]),
                Slot::Hyper(k) => Lane::All(hypers[*k]),
            }));
            let out = &mut out[..end - start];
            tape.eval_chunk(&lanes, out, stack);
            each(start, out);
            start = end;
        }
    }

    /// Observation `i`'s slot values — the one per-observation evaluator shared by Gibbs, CAVI,
    /// SVI and prediction: predictor `p` is `pred(p)` (a draw, or a mean under `q`), auxiliary `j`
    /// is `aux(j)` (a draw, or an expectation), hyperparameter `k` is `hypers[k]`.
    #[inline]
    pub fn fill(
        &self,
        i: usize,
        pred: impl Fn(usize) -> f64,
        aux: impl Fn(usize) -> f64,
        hypers: &[f64],
        vals: &mut [f64],
    ) {
        for (v, slot) in vals.iter_mut().zip(&self.slots) {
            *v = match slot {
                Slot::Pred(p) => pred(*p),
                Slot::Vector(x) => x[i],
                Slot::Const(c) => *c,
                Slot::Aux(j) => aux(*j),
                Slot::Hyper(k) => hypers[*k],
            };
        }
    }
}

/// The model ready to run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Latent names with their lengths (matrix latents flattened column-major).
    pub latents: Vec<(String, usize, Shape)>,
    /// Each latent's declared shape with its sizes read from the data (`[]`, `[n]`, `[r, c]`).
    pub latent_dims: Vec<Vec<usize>>,
    /// Predictors.
    pub preds: Vec<PPred>,
    /// Blocks.
    pub blocks: Vec<Block>,
    /// Per-factor slot bindings (index = schedule factor index).
    pub factors: Vec<PFactor>,
    /// Diagonal jitter added to GP priors (largest), for the report.
    pub jitter: f64,
    /// Every hyperparameter's starting value by [`gpm_schedule::HyperId`] (NaN for a vector).
    pub hypers: Vec<f64>,
    /// Latents read by collapsed predictors (updated in a phase, and a dense block, of their own).
    pub collapsed_latents: std::collections::BTreeSet<usize>,
    /// Per block of the schedule ([`gpm_schedule::BlockSpec`]): its runtime blocks in
    /// [`Prepared::blocks`] (a matrix GP has one per column; empty for test data).
    pub spec_blocks: Vec<std::ops::Range<usize>>,
    /// Per latent with a `normal` prior that reads data (`normal(0, s * sqrt(spd))`): each
    /// datum's value at each coordinate, in the order of the prior's `data` (empty otherwise).
    pub prior_data: Vec<Vec<Vec<f64>>>,
    /// What the Gaussian blocks hold, once and per chain (checked for one chain when bound;
    /// a run of chains checks it for the chains it runs at once).
    pub memory: crate::memory::BlockBytes,
}

/// A `normal` prior's mean and sd at each of a latent's `len` coordinates: the tapes read the
/// hyperparameters and, from slot `data_slot` on, each datum of `columns` at the coordinate.
pub fn normal_prior_at(
    hv: &HyperValues,
    (mean, scale): (&gpm_schedule::Tape, &gpm_schedule::Tape),
    data_slot: usize,
    columns: &[Vec<f64>],
    len: usize,
) -> Result<(Vec<f64>, Vec<f64>), RuntimeError> {
    if columns.is_empty() {
        let (m, s) = (hv.eval(mean)?, hv.eval(scale)?);
        return Ok((vec![m; len], vec![s; len]));
    }
    let mut slots: Vec<f64> = hv.scalars.clone();
    slots.resize(data_slot + columns.len(), f64::NAN);
    let mut stack = Vec::new();
    let (mut m, mut s) = (Vec::with_capacity(len), Vec::with_capacity(len));
    for j in 0..len {
        for (k, c) in columns.iter().enumerate() {
            slots[data_slot + k] = c[j];
        }
        m.push(mean.eval(&slots, &mut stack));
        s.push(scale.eval(&slots, &mut stack));
    }
    Ok((m, s))
}

impl Prepared {
    /// Bind a model, its schedule and data.
    pub fn new(
        schedule: &Schedule,
        data: &Data,
        hypers: &HyperValues,
    ) -> Result<Self, RuntimeError> {
        Self::bind(schedule, data, hypers, Blocks::Formed(None))
    }

    /// [`Prepared::new`] with the inducing inputs of every sparse GP given (one matrix per
    /// sparse GP latent, in declaration order) rather than chosen from these data: a shard of
    /// a larger data set binds with the inducing inputs chosen once for all shards
    /// ([`crate::shard`]).
    pub fn with_inducing(
        schedule: &Schedule,
        data: &Data,
        hypers: &HyperValues,
        inducing: &[DMatrix<f64>],
    ) -> Result<Self, RuntimeError> {
        Self::bind(schedule, data, hypers, Blocks::Formed(Some(inducing)))
    }

    /// [`Prepared::new`] for SVI: a sparse GP whose points are chosen online
    /// (`inducing = adaptive(…)`) starts from the first row rather than a pass over all of them,
    /// since SVI chooses them again as its minibatches arrive.
    pub fn for_streaming(
        schedule: &Schedule,
        data: &Data,
        hypers: &HyperValues,
    ) -> Result<Self, RuntimeError> {
        Self::bind(schedule, data, hypers, Blocks::Streaming)
    }

    /// Bind test data for prediction: predictors and factor slots only, no latent priors
    /// (`blocks` is empty, nothing of size test × test is formed).
    pub fn for_test(
        schedule: &Schedule,
        data: &Data,
        hypers: &HyperValues,
    ) -> Result<Self, RuntimeError> {
        Self::bind(schedule, data, hypers, Blocks::None)
    }

    /// The dense block's design rows for a predictor: `Φ` with one row per observation.
    pub fn dense_design(
        &self,
        pred: usize,
        parts: &[(usize, usize, usize)],
        dim: usize,
    ) -> Option<DMatrix<f64>> {
        let p = &self.preds[pred];
        let mut phi = DMatrix::zeros(p.n, dim);
        let mut any = false;
        for t in &p.terms {
            let Some(&(_, off, len)) = parts.iter().find(|(li, _, _)| *li == t.latent) else {
                continue;
            };
            any = true;
            match &t.read {
                Read::Identity => (0..p.n).for_each(|i| phi[(i, off + i)] += t.coef_at(i)),
                Read::Broadcast => (0..p.n).for_each(|i| phi[(i, off)] += t.coef_at(i)),
                Read::Matrix(x) => {
                    for i in 0..p.n {
                        for j in 0..len {
                            phi[(i, off + j)] += t.coef_at(i) * x[(i, j)];
                        }
                    }
                }
                Read::Gather(g) => (0..p.n).for_each(|i| phi[(i, off + g[i])] += t.coef_at(i)),
                Read::Column(c, rows) => {
                    (0..p.n).for_each(|i| phi[(i, off + c * rows + i)] += t.coef_at(i))
                }
            }
        }
        any.then_some(phi)
    }

    /// Whether a predictor reads this latent (and column).
    pub fn reads(&self, pred: usize, latent: usize, column: Option<usize>) -> Option<f64> {
        self.preds[pred].terms.iter().find_map(|t| {
            let col_ok = match (&t.read, column) {
                (Read::Column(c, _), Some(k)) => *c == k,
                (Read::Column(..), None) => false,
                (Read::Identity, Some(0)) | (Read::Identity, None) => true,
                _ => column.is_none(),
            };
            (t.latent == latent && col_ok).then_some(t.coef)
        })
    }
}

/// A dense block's coefficients `θ` gathered from the latents' values: `parts` lists each latent
/// with its offset in `θ` and its length.
pub fn gather_dense(
    parts: &[(usize, usize, usize)],
    dim: usize,
    latents: &[DVector<f64>],
) -> DVector<f64> {
    let mut theta = DVector::zeros(dim);
    for &(li, off, len) in parts {
        theta
            .rows_mut(off, len)
            .copy_from(&latents[li].rows(0, len));
    }
    theta
}

/// Where a block's coordinates live among the latents (the generic update and particle flow
/// move a block's coordinates as one vector).
#[derive(Debug, Clone, Copy)]
pub enum Coords<'a> {
    /// Column `column` (of `rows` entries) of latent `latent`.
    Column {
        /// Latent index.
        latent: usize,
        /// Column of a matrix latent (0 for a vector).
        column: usize,
        /// Entries per column.
        rows: usize,
    },
    /// A dense block's `(latent, offset, length)` parts.
    Dense(&'a [(usize, usize, usize)]),
}

impl Coords<'_> {
    /// The block's coordinates read from the latents.
    pub fn get(&self, latents: &[DVector<f64>]) -> DVector<f64> {
        match *self {
            Coords::Column {
                latent,
                column,
                rows,
            } => latents[latent].rows(column * rows, rows).into_owned(),
            Coords::Dense(parts) => {
                let dim = parts.iter().map(|p| p.2).sum();
                gather_dense(parts, dim, latents)
            }
        }
    }

    /// The latents the block's coordinates belong to.
    pub fn latents(&self) -> Vec<usize> {
        match *self {
            Coords::Column { latent, .. } => vec![latent],
            Coords::Dense(parts) => parts.iter().map(|p| p.0).collect(),
        }
    }

    /// The block's coordinates written into the latents.
    pub fn set(&self, latents: &mut [DVector<f64>], z: &DVector<f64>) {
        match *self {
            Coords::Column {
                latent,
                column,
                rows,
            } => latents[latent].rows_mut(column * rows, rows).copy_from(z),
            Coords::Dense(parts) => scatter_dense(parts, z, latents),
        }
    }
}

/// `θ`'s entries written back into the latents (the inverse of [`gather_dense`]).
pub fn scatter_dense(
    parts: &[(usize, usize, usize)],
    theta: &DVector<f64>,
    latents: &mut [DVector<f64>],
) {
    for &(li, off, len) in parts {
        latents[li]
            .rows_mut(0, len)
            .copy_from(&theta.rows(off, len));
    }
}

/// Design rows of several predictors stacked into one `Φ` with `dim` columns.
pub fn stack_rows(rows: Vec<DMatrix<f64>>, dim: usize) -> DMatrix<f64> {
    let total: usize = rows.iter().map(|r| r.nrows()).sum();
    let mut design = DMatrix::zeros(total, dim);
    let mut at = 0;
    for r in rows {
        design.rows_mut(at, r.nrows()).copy_from(&r);
        at += r.nrows();
    }
    design
}

/// Dense blocks need the design; build the block from its parts.
pub fn dense_block(
    design: DMatrix<f64>,
    prior_mean: &DVector<f64>,
    prior_sd: &DVector<f64>,
) -> DenseBlock {
    DenseBlock {
        design,
        prior_mean: prior_mean.clone(),
        prior_sd: prior_sd.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The adjoint is the transpose of the predictor map: `wᵀ η(z) − wᵀ η(0) = Σ_z ⟨∇, z⟩` for
    /// every kind of read, covariate-scaled terms included.
    #[test]
    fn adjoint_is_the_transpose_of_eval() {
        let n = 4;
        let x = DMatrix::from_fn(n, 2, |i, j| (i as f64 + 1.0) * (j as f64 - 0.5));
        let pred = PPred {
            name: "eta".into(),
            n,
            offset: 0.3,
            terms: vec![
                PTerm {
                    latent: 0,
                    coef: 1.5,
                    read: Read::Identity,
                    scale: None,
                },
                PTerm {
                    latent: 1,
                    coef: -0.5,
                    read: Read::Broadcast,
                    scale: None,
                },
                PTerm {
                    latent: 2,
                    coef: 2.0,
                    read: Read::Matrix(x),
                    scale: None,
                },
                PTerm {
                    latent: 3,
                    coef: 1.0,
                    read: Read::Gather(vec![1, 0, 1, 2]),
                    scale: Some(vec![0.5, -1.0, 2.0, 3.0]),
                },
                PTerm {
                    latent: 4,
                    coef: 0.7,
                    read: Read::Column(1, n),
                    scale: None,
                },
            ],
        };
        let z: Vec<DVector<f64>> = [n, 1, 2, 3, 2 * n]
            .iter()
            .enumerate()
            .map(|(k, &len)| DVector::from_fn(len, |i, _| ((i + 3 * k) as f64 * 0.37).sin()))
            .collect();
        let zero: Vec<DVector<f64>> = z.iter().map(|v| DVector::zeros(v.len())).collect();
        let w = [0.2, -1.1, 0.6, 1.3];
        let dot = |eta: Vec<f64>| eta.iter().zip(&w).map(|(e, w)| e * w).sum::<f64>();
        let lhs = dot(pred.eval(&z)) - dot(pred.eval(&zero));
        let mut grads = zero.clone();
        pred.add_adjoint(&w, &mut grads);
        let rhs: f64 = grads.iter().zip(&z).map(|(g, v)| g.dot(v)).sum();
        assert!((lhs - rhs).abs() < 1e-12, "{lhs} vs {rhs}");
    }
}
