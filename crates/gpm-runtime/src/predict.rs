//! Prediction at new inputs from Gibbs draws. For every kept draw, each GP latent is extended to
//! the test inputs by its Gaussian conditional `f* | f ~ N(μ + K*ᵀK⁻¹(f − μ), k** − K*ᵀK⁻¹K*)`
//! (one marginal draw per test point), weights and random effects are reused as drawn, and the
//! test predictors follow. Predictive densities average the likelihood over draws:
//! `p(y*_i | y) ≈ (1/S) Σ_s p(y*_i | η*_is)`, computed in log space.

use crate::data::Data;
use crate::draws::VarKind;
use crate::gibbs::Chain;
use crate::kernels::{kernel_diag, kernel_matrix, HyperValues};
use crate::prepared::{Block, Prepared, Slot};
use crate::RuntimeError;
use gpm_ir::LatentPrior;
use gpm_schedule::{LatentId, Schedule};
use gpm_special::log_mean_exp;
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

/// Predictions at the test points.
#[derive(Debug, Clone)]
pub struct Prediction {
    /// Per predictor: posterior predictive mean and variance of `η*` at each test point.
    pub predictors: Vec<(String, Vec<f64>, Vec<f64>)>,
    /// Per factor with observed test responses: pointwise log predictive densities.
    pub log_predictive: Vec<Vec<f64>>,
    /// Per factor with a finite label set: the labels and the predictive probability of each
    /// label, per point.
    pub label_probabilities: Vec<Option<(Vec<f64>, Vec<Vec<f64>>)>>,
    /// Draws used.
    pub draws: usize,
}

/// Predict from Gibbs chains. `labels`: per factor, the response datum and its finite label set
/// (for predictive probabilities), if any. At most `max_draws` draws are used (evenly thinned).
#[allow(clippy::too_many_arguments)]
pub fn predict(
    schedule: &Schedule,
    train: &Data,
    test: &Data,
    hypers: &HyperValues,
    chains: &[Chain],
    labels: &[Option<(String, Vec<f64>)>],
    max_draws: usize,
    seed: u64,
) -> Result<Prediction, RuntimeError> {
    let tr = Prepared::new(schedule, train, hypers)?;
    // Test data: predictors and factor slots only (no test × test prior is formed).
    let te = Prepared::for_test(schedule, test, hypers)?;
    let layout = &chains[0].layout;
    // Offset of each latent in a draw row.
    let mut offsets = Vec::new();
    for (li, (name, len, _)) in tr.latents.iter().enumerate() {
        let var = layout
            .find(VarKind::Latent(LatentId(li)))
            .ok_or_else(|| RuntimeError::Inconsistent(format!("no draws for `{name}`")))?;
        offsets.push((var.offset, *len));
    }
    // Sampled hyperparameters: (index in `Prepared::hypers`, offset in a row).
    let hyper_cols: Vec<(usize, usize)> = layout
        .vars
        .iter()
        .filter_map(|v| match v.kind {
            VarKind::Hyper(h) => te.hyper_slots[h.0].map(|k| (k, v.offset)),
            _ => None,
        })
        .collect();
    // Per GP block: K*ᵀ (test × train) and the conditional variances.
    struct GpPred {
        latent: usize,
        column: usize,
        kst: nalgebra::DMatrix<f64>,
        var: Vec<f64>,
        block: usize,
        rows_test: usize,
        /// When the chains sampled this GP's hyperparameters: what recomputes the conditional
        /// at each draw's values (kernel, prior mean, train and test inputs).
        resample: Option<(
            gpm_ir::Kernel,
            gpm_ir::Sx,
            std::sync::Arc<DMatrix<f64>>,
            std::sync::Arc<DMatrix<f64>>,
        )>,
    }
    // K*ᵀ and the conditional variances k** − ‖L⁻¹K*ᵀ‖² of a GP at given hyperparameters.
    let conditional = |kernel: &gpm_ir::Kernel,
                       x: &DMatrix<f64>,
                       xs: &DMatrix<f64>,
                       chol: &nalgebra::Cholesky<f64, nalgebra::Dyn>,
                       hv: &HyperValues|
     -> Result<(DMatrix<f64>, Vec<f64>), RuntimeError> {
        let ks = kernel_matrix(kernel, xs, x, hv)?; // test × train
        let kss = kernel_diag(kernel, xs, hv)?;
        let v = crate::linalg::solve_lower(chol.l_dirty(), ks.transpose());
        let var = (0..xs.nrows())
            .map(|i| (kss[i] - v.column(i).norm_squared()).max(0.0))
            .collect();
        Ok((ks, var))
    };
    let mut gps = Vec::new();
    for (bi, b) in tr.blocks.iter().enumerate() {
        if let Block::Gp { latent, column, gp } = b {
            let z = &schedule.latents[*latent];
            let LatentPrior::Gp {
                inputs,
                kernel,
                mean,
                ..
            } = &z.prior
            else {
                continue;
            };
            let x = train
                .inputs(inputs)
                .ok_or_else(|| RuntimeError::MissingData(format!("no inputs `{inputs}`")))?;
            let xs = test.inputs(inputs).ok_or_else(|| {
                RuntimeError::MissingData(format!("the test data have no inputs `{inputs}`"))
            })?;
            let (ks, var) = conditional(kernel, &x, &xs, &gp.chol, hypers)?;
            let sampled = z.prior.hypers().iter().any(|h| {
                te.hypers
                    .iter()
                    .enumerate()
                    .any(|(k, (n, _))| n == h && hyper_cols.iter().any(|c| c.0 == k))
            });
            let resample = sampled.then(|| (kernel.clone(), mean.clone(), x.clone(), xs.clone()));
            gps.push(GpPred {
                latent: *latent,
                column: *column,
                kst: ks,
                var,
                block: bi,
                rows_test: xs.nrows(),
                resample,
            });
        }
    }
    // Per sparse block: test features φ*, k̃*, and where its `v` columns start in a draw row.
    struct SparsePred {
        latent: usize,
        column: usize,
        phi: DMatrix<f64>,
        kt: Vec<f64>,
        mean: f64,
        first_v: usize,
    }
    let mut sparse = Vec::new();
    for b in &tr.blocks {
        if let Block::Sparse {
            latent, column, sp, ..
        } = b
        {
            let LatentPrior::Gp { inputs, .. } = &schedule.latents[*latent].prior else {
                continue;
            };
            let xs = test.inputs(inputs).ok_or_else(|| {
                RuntimeError::MissingData(format!("the test data have no inputs `{inputs}`"))
            })?;
            let (phi, kt) = sp.features(&xs)?;
            let name = &tr.latents[*latent].0;
            let first_v = layout
                .find(VarKind::Inducing(LatentId(*latent)))
                .map(|v| v.offset + column * sp.m())
                .ok_or_else(|| {
                    RuntimeError::Inconsistent(format!("no inducing draws for `{name}`"))
                })?;
            sparse.push(SparsePred {
                latent: *latent,
                column: *column,
                phi,
                kt,
                mean: sp.mean,
                first_v,
            });
        }
    }
    // The draws to use.
    let all: Vec<&Vec<f64>> = chains.iter().flat_map(|c| c.rows.iter()).collect();
    let step = (all.len() / max_draws.max(1)).max(1);
    let used: Vec<&Vec<f64>> = all.iter().step_by(step).copied().collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut acc = DrawAccumulator::new(schedule, &te, labels, used.len());
    for row in &used {
        // Test-side latents.
        let mut lat: Vec<DVector<f64>> = te
            .latents
            .iter()
            .map(|(_, n, _)| DVector::zeros(*n))
            .collect();
        for (k, (first, len)) in offsets.iter().enumerate() {
            if te.latents[k].1 == *len {
                for j in 0..*len {
                    lat[k][j] = row[first + j];
                }
            }
        }
        for g in &gps {
            let Block::Gp { gp, .. } = &tr.blocks[g.block] else {
                unreachable!()
            };
            // With sampled kernel hyperparameters, the conditional at this draw's values.
            let redone;
            let (gp, kst, var) = match &g.resample {
                None => (gp, &g.kst, &g.var),
                Some((kernel, mean, x, xs)) => {
                    let mut hv = hypers.clone();
                    for (k, col) in &hyper_cols {
                        hv.scalars.insert(te.hypers[*k].0.clone(), row[*col]);
                    }
                    let block = crate::gaussian::GpBlock::new(
                        kernel_matrix(kernel, x, x, &hv)?,
                        hv.eval(mean)?,
                    )?;
                    let (kst, var) = conditional(kernel, x, xs, &block.chol, &hv)?;
                    redone = (block, kst, var);
                    (&redone.0, &redone.1, &redone.2)
                }
            };
            let rows = gp.len();
            let (first, _) = offsets[g.latent];
            let f = DVector::from_fn(rows, |i, _| row[first + g.column * rows + i] - gp.mean);
            let alpha = gp.chol.solve(&f);
            let m = kst * alpha;
            for i in 0..g.rows_test {
                let z: f64 = StandardNormal.sample(&mut rng);
                lat[g.latent][g.column * g.rows_test + i] = gp.mean + m[i] + var[i].sqrt() * z;
            }
        }
        for sp in &sparse {
            // f* = μ₀ + φ*ᵀv + ε*, ε* ~ N(0, k̃*): the sparse prior's conditional at the test inputs.
            let m = sp.phi.nrows();
            let v = DVector::from_fn(m, |k, _| row[sp.first_v + k]);
            let fv = sp.phi.tr_mul(&v);
            let rows_test = sp.kt.len();
            for i in 0..rows_test {
                let z: f64 = StandardNormal.sample(&mut rng);
                lat[sp.latent][sp.column * rows_test + i] = sp.mean + fv[i] + sp.kt[i].sqrt() * z;
            }
        }
        let mut hv: Vec<f64> = te.hypers.iter().map(|h| h.1).collect();
        for (k, col) in &hyper_cols {
            hv[*k] = row[*col];
        }
        acc.add_draw(schedule, &te, test, labels, &lat, &hv);
    }
    Ok(acc.finish(&te, labels))
}

/// The running sums of a prediction over draws: the predictors' first two moments, each
/// factor's pointwise log-likelihood per draw, and the label probabilities.
struct DrawAccumulator {
    sum: Vec<Vec<f64>>,
    sumsq: Vec<Vec<f64>>,
    lp_draws: Vec<Vec<Vec<f64>>>,
    label_acc: Vec<Option<Vec<Vec<f64>>>>,
    draws: usize,
    stack: Vec<f64>,
}

impl DrawAccumulator {
    fn new(
        schedule: &Schedule,
        te: &Prepared,
        labels: &[Option<(String, Vec<f64>)>],
        draws: usize,
    ) -> Self {
        let nf = schedule.factors.len();
        DrawAccumulator {
            sum: te.preds.iter().map(|p| vec![0.0; p.n]).collect(),
            sumsq: te.preds.iter().map(|p| vec![0.0; p.n]).collect(),
            lp_draws: (0..nf)
                .map(|f| vec![Vec::with_capacity(draws); te.factors[f].n])
                .collect(),
            label_acc: (0..nf)
                .map(|f| {
                    labels
                        .get(f)
                        .cloned()
                        .flatten()
                        .map(|l| vec![vec![0.0; l.1.len()]; te.factors[f].n])
                })
                .collect(),
            draws,
            stack: Vec::new(),
        }
    }

    /// One draw: the test latents `lat` and the hyperparameter values `hv` (as
    /// [`Prepared::hypers`]).
    fn add_draw(
        &mut self,
        schedule: &Schedule,
        te: &Prepared,
        test: &Data,
        labels: &[Option<(String, Vec<f64>)>],
        lat: &[DVector<f64>],
        hv: &[f64],
    ) {
        let (sum, sumsq, lp_draws, label_acc, stack) = (
            &mut self.sum,
            &mut self.sumsq,
            &mut self.lp_draws,
            &mut self.label_acc,
            &mut self.stack,
        );
        let pv: Vec<Vec<f64>> = te.preds.iter().map(|p| p.eval(lat)).collect();
        for p in 0..te.preds.len() {
            for i in 0..pv[p].len() {
                sum[p][i] += pv[p][i];
                sumsq[p][i] += pv[p][i] * pv[p][i];
            }
        }
        for (f, fp) in schedule.factors.iter().enumerate() {
            if let Some(c) = &fp.categorical {
                let Some(y) = test.vector(&c.label) else {
                    continue;
                };
                let li = c.latent_id.0;
                let n = te.factors[f].n;
                let classes = te.latents[li].1 / n.max(1);
                for i in 0..n {
                    let sig = gpm_special::logistic;
                    let w: Vec<f64> = (0..classes).map(|k| sig(lat[li][k * n + i])).collect();
                    let tot: f64 = w.iter().sum();
                    let yi = y[i] as usize - 1;
                    lp_draws[f][i].push((w[yi] / tot).ln());
                    if let Some(acc) = &mut label_acc[f] {
                        for k in 0..classes.min(acc[i].len()) {
                            acc[i][k] += w[k] / tot;
                        }
                    }
                }
                continue;
            }
            let Some(tape) = &fp.log_density else {
                continue;
            };
            let mut vals = vec![0.0; fp.slots.len()];
            let response_known = te.factors[f]
                .slots
                .iter()
                .all(|s| !matches!(s, Slot::Vector(v) if v.iter().any(|x| x.is_nan())));
            // With a finite label set: its labels and the response's slots, overwritten with
            // each label in turn to evaluate the likelihood there.
            let label_slots = labels.get(f).and_then(|l| l.as_ref()).map(|(name, ls)| {
                let resp: Vec<usize> = fp
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| matches!(s, gpm_schedule::Source::Data(d) if d == name))
                    .map(|(k, _)| k)
                    .collect();
                (ls, resp)
            });
            for i in 0..te.factors[f].n {
                te.factors[f].fill(i, |p| pv[p][i], |_| 0.0, hv, &mut vals);
                if response_known {
                    lp_draws[f][i].push(tape.eval(&vals, stack));
                }
                if let (Some(acc), Some((ls, resp))) = (&mut label_acc[f], &label_slots) {
                    for (k, l) in ls.iter().enumerate() {
                        for &s in resp {
                            vals[s] = *l;
                        }
                        acc[i][k] += tape.eval(&vals, stack).exp();
                    }
                }
            }
        }
    }

    /// Means over the draws.
    fn finish(self, te: &Prepared, labels: &[Option<(String, Vec<f64>)>]) -> Prediction {
        let s = self.draws as f64;
        let predictors = te
            .preds
            .iter()
            .enumerate()
            .map(|(p, pr)| {
                let mean: Vec<f64> = self.sum[p].iter().map(|x| x / s).collect();
                let var: Vec<f64> = self.sumsq[p]
                    .iter()
                    .zip(&mean)
                    .map(|(q, m)| (q / s - m * m).max(0.0))
                    .collect();
                (pr.name.clone(), mean, var)
            })
            .collect();
        let log_predictive = self
            .lp_draws
            .iter()
            .map(|per| {
                per.iter()
                    .filter(|d| !d.is_empty())
                    .map(|d| log_mean_exp(d))
                    .collect()
            })
            .collect();
        let label_probabilities = self
            .label_acc
            .into_iter()
            .enumerate()
            .map(|(f, acc)| {
                let (_, ls) = labels.get(f).cloned().flatten()?;
                let acc = acc?;
                Some((
                    ls,
                    acc.into_iter()
                        .map(|v| v.into_iter().map(|x| x / s).collect())
                        .collect(),
                ))
            })
            .collect();
        Prediction {
            predictors,
            log_predictive,
            label_probabilities,
            draws: self.draws,
        }
    }
}
