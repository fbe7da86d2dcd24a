//! Stochastic CAVI on sparse GP blocks (thesis ch. 3 §4; ch. 5 Algorithm 3; Hoffman et al. 2013).
//! Each iteration draws a minibatch `B` of observations (a fresh permutation every epoch), sets
//! every local `q(ω_i)` of the batch to its closed-form optimum given the current `q(u)`, and
//! moves the global natural parameters of every sparse block towards the minibatch estimate of
//! their optimum: `θ ← (1 − ρ_t) θ + ρ_t θ̂`, `θ̂ = (I + (N/|B|) Φ_B A Φ_Bᵀ, (N/|B|) Φ_B (b − a μ₀))`,
//! with the Robbins-Monro schedule `ρ_t = (t + τ)^(−κ)`. That step is the natural gradient of the
//! ELBO, so no learning rate needs tuning beyond the schedule, and with `|B| = N`, `ρ = 1` it
//! is exactly one CAVI sweep.
//!
//! Memory is `O(M² + |B|·M)` per block plus the data themselves; nothing of size `N × N` or
//! `N × M` is ever formed.

use crate::adam::Adam;
use crate::cavi::{local_elbo, local_step};
use crate::data::Data;
use crate::kernels::HyperValues;
use crate::natural::NaturalParams;
use crate::posterior::BlockPosterior;
use crate::prepared::{Block, Prepared, Read};
use crate::sparse::QInducing;
use crate::RuntimeError;
use gpm_schedule::{HyperId, PredictorId, Schedule};
use nalgebra::DMatrix;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// Settings of a stochastic CAVI run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SviConfig {
    /// Minibatch size `|B|`.
    pub batch: usize,
    /// Number of iterations (minibatches).
    pub iterations: usize,
    /// Delay `τ ≥ 0` of the step schedule `ρ_t = (t + τ)^(−κ)`.
    pub delay: f64,
    /// Forgetting rate `κ ∈ (0.5, 1]` of the step schedule.
    pub forgetting: f64,
    /// Seed of the minibatch order.
    pub seed: u64,
    /// Record the ELBO estimate every this many iterations.
    pub report_every: usize,
    /// Adam step size on the logarithms of learned hyperparameters.
    pub hyper_rate: f64,
    /// Logistic-softmax factors: the number `K` of non-label classes sampled per observation
    /// (thesis ch. 4, "extreme classification"), their sums weighted by `(C − 1)/K`; 0 uses
    /// every class.
    pub class_batch: usize,
}

impl Default for SviConfig {
    fn default() -> Self {
        SviConfig {
            batch: 1000,
            iterations: 1000,
            delay: 1.0,
            forgetting: 0.6,
            seed: 1,
            report_every: 50,
            hyper_rate: 0.01,
            class_batch: 0,
        }
    }
}

/// The options a user may give an SVI run (`None`: not given), resolved against
/// [`SviConfig::default`] in one place for the command line and Python.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SviOptions {
    /// Minibatch size.
    pub batch: Option<usize>,
    /// Forgetting rate `κ`.
    pub forgetting: Option<f64>,
    /// Delay `τ`.
    pub delay: Option<f64>,
    /// Adam step size on learned hyperparameters.
    pub hyper_rate: Option<f64>,
    /// Non-label classes sampled per observation.
    pub class_batch: Option<usize>,
}

impl SviOptions {
    /// The run's settings: the options given, the defaults for the others; the trace recorded
    /// `reports` times over the `iterations`.
    pub fn resolve(self, iterations: usize, seed: u64, reports: usize) -> SviConfig {
        let d = SviConfig::default();
        SviConfig {
            batch: self.batch.unwrap_or(d.batch),
            iterations,
            forgetting: self.forgetting.unwrap_or(d.forgetting),
            delay: self.delay.unwrap_or(d.delay),
            seed,
            report_every: (iterations / reports.max(1)).max(1),
            hyper_rate: self.hyper_rate.unwrap_or(d.hyper_rate),
            class_batch: self.class_batch.unwrap_or(d.class_batch),
        }
    }
}

/// One point of the SVI trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SviPoint {
    /// Iterations done.
    pub iteration: usize,
    /// Passes over the data done.
    pub epoch: f64,
    /// Seconds since the start (excluding time spent in the report callback).
    pub seconds: f64,
    /// Unbiased minibatch estimate of the ELBO at this iteration.
    pub elbo: f64,
}

/// The result of a stochastic CAVI run.
#[derive(Debug, Clone)]
pub struct SviResult {
    /// Final posterior of every block (as [`Prepared::blocks`]).
    pub blocks: Vec<BlockPosterior>,
    /// ELBO estimates along the way.
    pub trace: Vec<SviPoint>,
    /// Total seconds (excluding callbacks).
    pub seconds: f64,
    /// Final values of the learned hyperparameters (empty when none were learned).
    pub hypers: Vec<(HyperId, f64)>,
}

/// One minibatch evaluated at given priors and `q`: the features of every block, the sum of the
/// local ELBO terms (at their optimal `q(ω)`), and the curvature and linear terms per block.
mod growth;

struct BatchEval {
    feats: Vec<DMatrix<f64>>,
    local: f64,
    /// Per block, its natural parameters on the batch.
    np: Vec<NaturalParams>,
}

/// What every minibatch evaluation reads.
struct Setup<'a> {
    prep: &'a Prepared,
    schedule: &'a Schedule,
    /// Predictor terms resolved to (block, coefficient).
    terms: Vec<Vec<(usize, f64)>>,
    /// Non-label classes sampled per observation (0: all).
    class_batch: usize,
}

impl<'a> Setup<'a> {
    /// Predictor terms resolved to (block, coefficient) once.
    fn new(
        prep: &'a Prepared,
        schedule: &'a Schedule,
        class_batch: usize,
    ) -> Result<Self, RuntimeError> {
        let term = |t: &crate::prepared::PTerm| {
            let col = match t.read {
                Read::Column(c, _) => c,
                _ => 0,
            };
            block_of(prep, t.latent, col)
                .map(|b| (b, t.coef))
                .ok_or_else(|| RuntimeError::Inconsistent("predictor reads no sparse block".into()))
        };
        let terms = prep
            .preds
            .iter()
            .map(|p| p.terms.iter().map(term).collect::<Result<_, _>>())
            .collect::<Result<_, _>>()?;
        Ok(Setup {
            prep,
            schedule,
            terms,
            class_batch,
        })
    }

    /// A logistic-softmax factor on the batch: per observation, its class subsample, the local
    /// coordinate step (closed form, `λ` integrated out: [`crate::cavi::softmax_local`]), its ELBO
    /// terms, and the weighted curvature `w E[ω]` and linear term `w (y − γ)/2` of each sampled
    /// class's block. Returns the sum of the ELBO terms.
    #[allow(clippy::too_many_arguments)]
    fn softmax_batch(
        &self,
        (latent, labels, classes): (usize, &[usize], usize),
        weights: gpm_library::likelihood::ClassWeights,
        idx: &[usize],
        marg: &[(Vec<f64>, Vec<f64>)],
        rng: &mut rand_chacha::ChaCha8Rng,
        np: &mut [NaturalParams],
    ) -> Result<f64, RuntimeError> {
        let blocks: Vec<usize> = (0..classes)
            .map(|k| {
                block_of(self.prep, latent, k).ok_or_else(|| {
                    RuntimeError::Unsupported(
                        "the logistic-softmax latent needs a sparse GP per class".into(),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let subsample = self.class_batch > 0 && self.class_batch + 1 < classes;
        let mut obs = crate::cavi::SoftmaxObs::new(classes);
        // The class scales and the bijective link's fixed class (thesis §7.4.2-7.4.3); under
        // SVI the scales keep their values.
        for (k, t) in obs.theta.iter_mut().enumerate() {
            *t = weights.scale(k);
        }
        obs.fixed = weights.fixed_weight(classes);
        let mut others: Vec<usize> = Vec::with_capacity(classes);
        let mut local = 0.0;
        for (j, &i) in idx.iter().enumerate() {
            let label = labels[i];
            if subsample {
                obs.weight.iter_mut().for_each(|w| *w = 0.0);
                // The bijective link's fixed class (`label == classes`) has no column.
                if label < classes {
                    obs.weight[label] = 1.0;
                }
                others.clear();
                others.extend((0..classes).filter(|&k| k != label));
                let w = others.len() as f64 / self.class_batch as f64;
                for s in 0..self.class_batch {
                    let pick = s + rng.gen_range(0..others.len() - s);
                    others.swap(s, pick);
                    obs.weight[others[s]] = w;
                }
            } else {
                obs.weight.iter_mut().for_each(|w| *w = 1.0);
            }
            for k in 0..classes {
                obs.mu[k] = marg[blocks[k]].0[j];
                obs.var[k] = marg[blocks[k]].1[j];
            }
            crate::cavi::softmax_local(label, &mut obs);
            local += crate::cavi::softmax_elbo(label, &obs);
            for k in 0..classes {
                let w = obs.weight[k];
                if w == 0.0 {
                    continue;
                }
                let y = if k == label { 1.0 } else { 0.0 };
                np[blocks[k]].a[j] += w * obs.omega[k];
                np[blocks[k]].b[j] += w * 0.5 * (y - obs.gamma[k]);
            }
        }
        Ok(local)
    }

    /// Every block's features and marginals on the batch `idx`, and each predictor's moments
    /// there (blocks independent under `q`).
    #[allow(clippy::type_complexity)]
    fn batch_moments(
        &self,
        sps: &[crate::sparse::SparseGp],
        q: &[QInducing],
        idx: &[usize],
    ) -> Result<(Vec<DMatrix<f64>>, MeanVar, MeanVar), RuntimeError> {
        let prep = self.prep;
        let batch = idx.len();
        // Features and marginals of every block on the batch.
        let mut feats = Vec::with_capacity(prep.blocks.len());
        let mut marg = Vec::with_capacity(prep.blocks.len());
        for (bi, b) in prep.blocks.iter().enumerate() {
            let Block::Sparse { inputs, .. } = b else {
                unreachable!("checked")
            };
            let sp = &sps[bi];
            let xb = DMatrix::from_fn(batch, inputs.ncols(), |j, d| inputs[(idx[j], d)]);
            let (phi, kt) = sp.features(&xb)?;
            marg.push(q[bi].marginals(&phi, &kt, sp.mean)?);
            feats.push(phi);
        }
        // Predictor moments on the batch (blocks independent under q).
        let pm: Vec<(Vec<f64>, Vec<f64>)> = prep
            .preds
            .iter()
            .zip(&self.terms)
            .map(|(p, ts)| {
                let mut m = vec![p.offset; batch];
                let mut v = vec![0.0; batch];
                for &(b, c) in ts {
                    for j in 0..batch {
                        m[j] += c * marg[b].0[j];
                        v[j] += c * c * marg[b].1[j];
                    }
                }
                (m, v)
            })
            .collect();
        Ok((feats, marg, pm))
    }

    /// `class_seed` fixes the class subsample, so that evaluations at other hyperparameter
    /// values (finite differences) see the same one.
    fn eval(
        &self,
        sps: &[crate::sparse::SparseGp],
        hypers: &HyperValues,
        q: &[QInducing],
        idx: &[usize],
        class_seed: u64,
    ) -> Result<BatchEval, RuntimeError> {
        let (prep, schedule) = (self.prep, self.schedule);
        let batch = idx.len();
        // The likelihood's hyperparameters at the values being evaluated.
        let hyper_vals: Vec<f64> = prep
            .hypers
            .iter()
            .zip(&hypers.scalars)
            .map(|(v0, v)| if v.is_nan() { *v0 } else { *v })
            .collect();
        let mut stack = Vec::with_capacity(64);
        let mut vals = Vec::new();
        let (feats, marg, pm) = self.batch_moments(sps, q, idx)?;
        // Local steps, the ELBO estimate and the curvature of every block.
        let mut np = vec![NaturalParams::zeros(batch); prep.blocks.len()];
        let mut local = 0.0;
        let mut class_rng = rand_chacha::ChaCha8Rng::seed_from_u64(class_seed);
        for (f, fp) in schedule.factors.iter().enumerate() {
            if let Some((li, labels, classes)) = &prep.factors[f].categorical {
                let cat = fp.categorical.as_ref().expect("a categorical program");
                let weights = gpm_library::likelihood::ClassWeights {
                    bijective: cat.bijective,
                    theta: crate::categorical::scales(cat, &hypers.vectors),
                };
                local += self.softmax_batch(
                    (*li, labels, *classes),
                    weights,
                    idx,
                    &marg,
                    &mut class_rng,
                    &mut np,
                )?;
                continue;
            }
            let cp = fp.cavi.as_ref().expect("checked");
            let mut e_aux = vec![1.0; fp.aux.len()];
            if let Some(pn) = &cp.poisson {
                e_aux[pn.index] = 0.0;
            }
            for j in 0..batch {
                let i = idx[j];
                vals.resize(prep.factors[f].slots.len(), 0.0);
                prep.factors[f].fill(i, |p| pm[p].0[j], |k| e_aux[k], &hyper_vals, &mut vals);
                let m = |p: PredictorId| (pm[p.0].0[j], pm[p.0].1[j]);
                // A Poisson chain's q(n) and q(ω) depend on each other: iterate the local
                // coordinate steps to their joint fixed point (the full-batch CAVI keeps them
                // between sweeps; here they start afresh for every visit).
                let passes = if cp.poisson.is_some() { 100 } else { 1 };
                for _ in 0..passes {
                    let mut change = 0.0f64;
                    local_step(cp, &mut vals, &m, &mut stack, &mut |k, v| {
                        change = change.max((v - e_aux[k]).abs() / v.abs().max(1e-12));
                        e_aux[k] = v;
                    });
                    if change < 1e-12 {
                        break;
                    }
                }
                local += local_elbo(cp, &vals, &m, &mut stack);
                for cv in &fp.curvature {
                    let pi = cv.pred.0;
                    let (ai, bi) = (
                        cv.quad.eval(&vals, &mut stack),
                        cv.lin.eval(&vals, &mut stack),
                    );
                    for &(blk, coef) in &self.terms[pi] {
                        let rest = pm[pi].0[j] - coef * marg[blk].0[j];
                        np[blk].add(j, ai, bi, coef, rest);
                    }
                }
                // The double bound (collapsed predictors read through the Poisson rate), with
                // γ fresh from the local steps above.
                if let Some(pn) = &cp.poisson {
                    for &pred in &cp.double_bound {
                        let pi = pred.0;
                        let (ai, bi) =
                            crate::cavi::double_bound_terms(pn, pred, &vals, &m, &mut stack);
                        for &(blk, coef) in &self.terms[pi] {
                            let rest = pm[pi].0[j] - coef * marg[blk].0[j];
                            np[blk].add(j, ai, bi, coef, rest);
                        }
                    }
                }
            }
        }
        Ok(BatchEval { feats, local, np })
    }
}

/// The next minibatch of rows, drawn without replacement from a shuffled order that is
/// shuffled again when it runs out (`cursor` its position).
fn next_batch(
    idx: &mut [usize],
    order: &mut [usize],
    cursor: &mut usize,
    rng: &mut rand_chacha::ChaCha8Rng,
) {
    for slot in idx.iter_mut() {
        if *cursor == order.len() {
            order.shuffle(rng);
            *cursor = 0;
        }
        *slot = order[*cursor];
        *cursor += 1;
    }
}

/// Every block's `q` a fraction `ρ` of the way to the batch's optimum (thesis ch. 5,
/// Algorithm 3), the batch's statistics scaled by `N / batch`.
fn natural_gradient_step(
    prep: &Prepared,
    q: &mut [QInducing],
    (feats, np): (&[DMatrix<f64>], &[NaturalParams]),
    scale: f64,
    rho: f64,
) -> Result<(), RuntimeError> {
    for (bi, b) in prep.blocks.iter().enumerate() {
        let Block::Sparse { sp, .. } = b else {
            unreachable!("checked")
        };
        let target = QInducing::target(&feats[bi], &np[bi].a, &np[bi].b, sp.mean, scale)?;
        q[bi] = q[bi].toward(target, rho)?;
    }
    Ok(())
}

/// Per block or predictor: its means and variances at the batch's rows.
type MeanVar = Vec<(Vec<f64>, Vec<f64>)>;

/// Every block's sparse prior (a model [`check`]ed: every block is sparse).
fn sparse_priors(prep: &Prepared) -> Vec<crate::sparse::SparseGp> {
    prep.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Sparse { sp, .. } => Some(sp.clone()),
            _ => None,
        })
        .collect()
}

/// The hyperparameter values the sparse priors were bound at, the likelihood's own filled in
/// from the prepared model.
fn bound_hypers(prep: &Prepared, sp: &crate::sparse::SparseGp) -> HyperValues {
    let mut hv = sp.hypers().clone();
    for (v, v0) in hv.scalars.iter_mut().zip(&prep.hypers) {
        if v.is_nan() {
            *v = *v0;
        }
    }
    hv
}

/// One shard's contribution to a full-batch CAVI step of the sparse blocks at `q` (the shard
/// primitive, [`crate::shard`]): every observation of `prep` (the shard's rows, bound with the
/// inducing inputs shared by all shards) gets its local factors' closed-form optimum given
/// `q`, and the shard returns, per block, the pseudo-observation sums `Σ a φφᵀ`, `Σ (b − a μ₀) φ`
/// and the sum of its local ELBO terms. What an SVI minibatch computes, over the shard's rows
/// `subset` (0-based; `None`: all of them — a CAVI step).
pub fn shard_stats(
    prep: &Prepared,
    schedule: &Schedule,
    q: &[QInducing],
    subset: Option<&[usize]>,
) -> Result<crate::shard::ShardStats, RuntimeError> {
    let Shard {
        sps,
        setup,
        hv,
        idx,
    } = Shard::new(prep, schedule, q, subset)?;
    let BatchEval { feats, local, np } = setup.eval(&sps, &hv, q, &idx, 0)?;
    let blocks = sps
        .iter()
        .enumerate()
        .map(|(bi, sp)| {
            crate::shard::InducingStats::of_sites(&feats[bi], &np[bi].a, &np[bi].b, sp.mean)
        })
        .collect::<Result<_, _>>()?;
    Ok(crate::shard::ShardStats { blocks, local })
}

/// One shard's part of a hyperparameter step over shards: the central-difference gradient in
/// `log θ` of the sum of its local ELBO terms at `q` (the hyperparameters `learn`, at the values
/// `prep` was bound with), over its rows `subset` (0-based; `None`: all) — what the
/// single-process SVI's step reads from its minibatch ([`local_gradient`]), unscaled.
pub fn shard_gradient(
    prep: &Prepared,
    schedule: &Schedule,
    q: &[QInducing],
    learn: &[HyperId],
    subset: Option<&[usize]>,
) -> Result<Vec<f64>, RuntimeError> {
    let Shard {
        setup,
        hv,
        idx,
        sps,
    } = Shard::new(prep, schedule, q, subset)?;
    check_learnable(schedule, &hv, learn)?;
    local_gradient(&setup, &sps, &hv, learn, q, &idx, 0)
}

/// What a shard's step and its gradient both read: the sparse priors, the batch evaluation's
/// setup, the hyperparameter values `prep` was bound with, and the rows asked — checked once
/// (the model runs by SVI, `q` has its blocks, the rows' features fit in memory).
struct Shard<'a> {
    sps: Vec<crate::sparse::SparseGp>,
    setup: Setup<'a>,
    hv: HyperValues,
    idx: Vec<usize>,
}

impl<'a> Shard<'a> {
    fn new(
        prep: &'a Prepared,
        schedule: &'a Schedule,
        q: &[QInducing],
        subset: Option<&[usize]>,
    ) -> Result<Self, RuntimeError> {
        let n = check(prep, schedule)?;
        if q.len() != prep.blocks.len() {
            return Err(RuntimeError::Inconsistent(format!(
                "a global state of {} sparse blocks for a model with {}",
                q.len(),
                prep.blocks.len()
            )));
        }
        let sps = sparse_priors(prep);
        let setup = Setup::new(prep, schedule, 0)?;
        let hv = bound_hypers(prep, &sps[0]);
        let idx = shard_rows(n, subset)?;
        let sizes: Vec<(usize, usize)> = sps.iter().map(|sp| (idx.len(), sp.m())).collect();
        crate::memory::check_features(&sizes, "a partition's step")?;
        Ok(Shard {
            sps,
            setup,
            hv,
            idx,
        })
    }
}

/// The rows `subset` asks of a shard of `n` (all of them for `None`).
fn shard_rows(n: usize, subset: Option<&[usize]>) -> Result<Vec<usize>, RuntimeError> {
    match subset {
        Some(rows) => {
            if let Some(&bad) = rows.iter().find(|&&i| i >= n) {
                return Err(RuntimeError::Inconsistent(format!(
                    "row {bad} asked of a shard of {n} rows"
                )));
            }
            Ok(rows.to_vec())
        }
        None => Ok((0..n).collect()),
    }
}

/// The sparse priors `sps` (with their current inducing inputs) at other hyperparameter values.
fn priors_at(
    sps: &[crate::sparse::SparseGp],
    hv: &HyperValues,
) -> Result<Vec<crate::sparse::SparseGp>, RuntimeError> {
    sps.iter().map(|sp| sp.with_hypers(hv)).collect()
}

/// The central-difference gradient in `log θ` (step `10⁻⁴`) of the local ELBO terms of the
/// rows `idx` at `q`, each learned hyperparameter moved alone from `hv`: what SVI's Adam step
/// on the hyperparameters reads (times `N/|B|`), on one machine or summed over shards.
fn local_gradient(
    setup: &Setup,
    sps: &[crate::sparse::SparseGp],
    hv: &HyperValues,
    learn: &[HyperId],
    q: &[QInducing],
    idx: &[usize],
    class_seed: u64,
) -> Result<Vec<f64>, RuntimeError> {
    const STEP: f64 = 1e-4;
    learn
        .iter()
        .map(|&h| {
            let log_theta = hv.scalars[h.0].ln();
            let at = |x: f64| -> Result<f64, RuntimeError> {
                let mut h2 = hv.clone();
                h2.set_scalar(h, x.exp());
                Ok(setup
                    .eval(&priors_at(sps, &h2)?, &h2, q, idx, class_seed)?
                    .local)
            };
            Ok((at(log_theta + STEP)? - at(log_theta - STEP)?) / (2.0 * STEP))
        })
        .collect()
}

/// SVI learns positive scalar hyperparameters only.
fn check_learnable(
    schedule: &Schedule,
    hv: &HyperValues,
    learn: &[HyperId],
) -> Result<(), RuntimeError> {
    for &h in learn {
        match hv.scalar(h) {
            Some(v) if v > 0.0 => {}
            _ => {
                return Err(RuntimeError::Unsupported(format!(
                    "SVI can learn positive scalar hyperparameters only; `{}` is not one",
                    schedule.hyper_decls[h.0].name
                )))
            }
        }
    }
    Ok(())
}

/// Check that a prepared model can run by SVI; returns the number of observations.
fn check(prep: &Prepared, schedule: &Schedule) -> Result<usize, RuntimeError> {
    for (f, fp) in schedule.factors.iter().enumerate() {
        if fp.categorical.is_some() {
            if prep.factors[f].categorical.is_none() {
                return Err(RuntimeError::MissingData(format!(
                    "factor #{}: no labels for the logistic-softmax",
                    fp.factor + 1
                )));
            }
            continue;
        }
        if fp.cavi.is_none() {
            return Err(RuntimeError::Unsupported(format!(
                "factor #{}: its augmentation has no closed-form CAVI program ({}), so SVI is not implemented for it",
                fp.factor + 1,
                fp.cavi_unavailable.as_deref().unwrap_or("no program")
            )));
        }
    }
    let mut n = None;
    for b in &prep.blocks {
        match b {
            Block::Sparse { inputs, .. } => {
                if n.is_some_and(|m| m != inputs.nrows()) {
                    return Err(RuntimeError::Unsupported(
                        "SVI needs every sparse GP over the same observations".into(),
                    ));
                }
                n = Some(inputs.nrows());
            }
            _ => {
                return Err(RuntimeError::Unsupported(
                    "SVI needs every latent block to be a sparse GP (`gp(X, k, inducing = M)`); weights and full GPs with SVI are not implemented yet: use --method cavi".into(),
                ))
            }
        }
    }
    let n = n.ok_or_else(|| RuntimeError::Unsupported("SVI needs a sparse GP latent".into()))?;
    for (f, pf) in prep.factors.iter().enumerate() {
        if pf.n != n {
            return Err(RuntimeError::Unsupported(format!(
                "factor #{} has {} observations but the sparse GP has {n} inputs; SVI subsamples observations and needs one factor term per input",
                schedule.factors[f].factor + 1,
                pf.n
            )));
        }
    }
    for p in &prep.preds {
        for t in &p.terms {
            if !matches!(t.read, Read::Identity | Read::Column(..)) {
                return Err(RuntimeError::Unsupported(format!(
                    "predictor `{}` reads a latent other than element-wise; SVI needs `f[i]`",
                    p.name
                )));
            }
        }
    }
    Ok(n)
}

/// Which block holds latent `latent`, column `column`.
fn block_of(prep: &Prepared, latent: usize, column: usize) -> Option<usize> {
    prep.blocks.iter().position(
        |b| matches!(b, Block::Sparse { latent: l, column: c, .. } if *l == latent && *c == column),
    )
}

/// Run stochastic CAVI. `report` is called every `report_every` iterations with the trace point
/// and the current posteriors (for held-out metrics); its time is not counted.
pub fn run(
    schedule: &Schedule,
    data: &Data,
    hypers: &HyperValues,
    config: &SviConfig,
    report: &mut dyn FnMut(&SviPoint, &[BlockPosterior]),
) -> Result<SviResult, RuntimeError> {
    let prep = Prepared::for_streaming(schedule, data, hypers)?;
    run_prepared(&prep, schedule, config, report)
}

/// [`run`] on an already prepared model.
pub fn run_prepared(
    prep: &Prepared,
    schedule: &Schedule,
    config: &SviConfig,
    report: &mut dyn FnMut(&SviPoint, &[BlockPosterior]),
) -> Result<SviResult, RuntimeError> {
    run_learning(prep, schedule, config, &[], report)
}

/// [`run_prepared`], also learning the positive scalar hyperparameters named in `learn` (read
/// by the sparse GPs' kernels, by the likelihood, or both) by Adam on the minibatch ELBO, one
/// step per iteration after the natural-gradient step. The gradient in `log θ` is a central
/// difference of the minibatch ELBO estimate on the same batch (step 1e-4), which in the
/// whitened parameterisation depends on `θ` only through the features `Φ = L⁻¹K_mx` and `k̃`
/// and the local terms: `KL(q(v) ‖ N(0, I))` does not. Each learned hyperparameter costs two extra evaluations of
/// the batch per iteration.
pub fn run_learning(
    prep: &Prepared,
    schedule: &Schedule,
    config: &SviConfig,
    learn: &[HyperId],
    report: &mut dyn FnMut(&SviPoint, &[BlockPosterior]),
) -> Result<SviResult, RuntimeError> {
    let n = check(prep, schedule)?;
    if config.batch == 0 || !(config.forgetting > 0.5 && config.forgetting <= 1.0) {
        return Err(RuntimeError::Settings(
            "SVI needs a positive batch size and a forgetting rate in (0.5, 1]".into(),
        ));
    }
    let batch = config.batch.min(n);
    let scale = n as f64 / batch as f64;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed);
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    let mut cursor = 0;
    let mut q: Vec<QInducing> = prep
        .blocks
        .iter()
        .map(|b| match b {
            Block::Sparse { sp, .. } => QInducing::prior(sp.m()),
            _ => unreachable!("checked"),
        })
        .collect();
    let mut sps = sparse_priors(prep);
    let setup = Setup::new(prep, schedule, config.class_batch)?;
    // Learned hyperparameters: current log values, all read from the first block's prior.
    // Learned hyperparameters may be read by the kernels (through the blocks' priors) and by
    // the likelihood (through the factors' slots); both read these values.
    let mut hv = bound_hypers(prep, &sps[0]);
    check_learnable(schedule, &hv, learn)?;
    let mut log_theta: Vec<f64> = learn.iter().map(|k| hv.scalars[k.0].ln()).collect();
    let mut adam = Adam::new(learn.len(), config.hyper_rate);
    let mut trace = Vec::new();
    let mut elapsed = 0.0;
    let mut idx = vec![0usize; batch];
    let growth = growth::Growth::new(prep);
    for t in 0..config.iterations {
        crate::stop::check("SVI")?;
        let t0 = std::time::Instant::now();
        next_batch(&mut idx, &mut order, &mut cursor, &mut rng);
        growth.offer(t == 0, &idx, &mut sps, &mut q)?;
        let BatchEval { feats, local, np } =
            setup.eval(&sps, &hv, &q, &idx, config.seed ^ (t as u64 + 1))?;
        let mut kl = 0.0;
        for qb in &q {
            kl += qb.kl()?;
        }
        let elbo = scale * local - kl;
        // Natural-gradient step on every block.
        let rho = (t as f64 + 1.0 + config.delay).powf(-config.forgetting);
        natural_gradient_step(prep, &mut q, (&feats, &np), scale, rho)?;
        // Hyperparameter step at the new q, on the same batch.
        if !learn.is_empty() {
            let seed = config.seed ^ (t as u64 + 1);
            let grad: Vec<f64> = local_gradient(&setup, &sps, &hv, learn, &q, &idx, seed)?
                .into_iter()
                .map(|g| scale * g)
                .collect();
            adam.step(&mut log_theta, &grad);
            for (k, h) in learn.iter().enumerate() {
                hv.set_scalar(*h, log_theta[k].exp());
            }
            sps = priors_at(&sps, &hv)?;
        }
        elapsed += t0.elapsed().as_secs_f64();
        if !elbo.is_finite() {
            return Err(RuntimeError::Numerical(format!(
                "the ELBO estimate became {elbo} at iteration {}",
                t + 1
            )));
        }
        if (t + 1) % config.report_every.max(1) == 0 || t + 1 == config.iterations {
            let point = SviPoint {
                iteration: t + 1,
                epoch: ((t + 1) * batch) as f64 / n as f64,
                seconds: elapsed,
                elbo,
            };
            trace.push(point);
            let posts: Vec<BlockPosterior> =
                q.iter().cloned().map(BlockPosterior::Sparse).collect();
            report(&point, &posts);
        }
    }
    let q = growth.carry_inputs(q, &sps);
    Ok(SviResult {
        blocks: q.into_iter().map(BlockPosterior::Sparse).collect(),
        trace,
        seconds: elapsed,
        hypers: learn.iter().map(|&k| (k, hv.scalars[k.0])).collect(),
    })
}
