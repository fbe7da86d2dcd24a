//! Prediction at new inputs from a variational posterior (CAVI or SVI). Each latent block gives
//! the Gaussian marginal of its test values:
//! * full GP with `q(f) ∝ p(f) exp(bᵀf − ½ fᵀAf)`: mean `μ₀ + k*ᵀK⁻¹(m − μ₀)`, variance
//!   `k** − ‖L_B⁻¹ S k*‖²` with `S = A^½`, `B = I + S K S` (GPML eqs. 3.21, 3.24, §3.4);
//! * sparse GP: `φ* = L⁻¹k_m(x*)`, mean `μ₀ + φ*ᵀm`, variance `k** − ‖φ*‖² + φ*ᵀSφ*`;
//! * weights: mean and covariance of the coefficients through the test design.
//!
//! The test predictors are sums of independent blocks, hence Gaussian; the predictive density of a
//! factor, `∫ p(y* | η*) N(η*; μ, σ²) dη*`, is computed by Gauss-Hermite quadrature on the original
//! (un-augmented) log-density, in log space.

use crate::cavi::BlockPosterior;
use crate::data::Data;
use crate::kernels::{kernel_diag, kernel_matrix, HyperValues};
use crate::predict::Prediction;
use crate::prepared::{Block, Prepared, Read, Slot};
use crate::RuntimeError;
use gpm_ir::LatentPrior;
use gpm_schedule::Schedule;
use gpm_special::log_sum_exp;
use nalgebra::{DMatrix, DVector, SymmetricEigen};

/// Nodes and weights (summing to 1) of the `n`-point Gauss-Hermite rule for `N(0, 1)`, by the
/// Golub-Welsch eigenvalue method on the Jacobi matrix of the probabilists' Hermite polynomials.
pub fn gauss_hermite(n: usize) -> (Vec<f64>, Vec<f64>) {
    let j = DMatrix::from_fn(n, n, |r, c| {
        if r + 1 == c || c + 1 == r {
            (r.max(c) as f64).sqrt()
        } else {
            0.0
        }
    });
    let e = SymmetricEigen::new(j);
    let mut pairs: Vec<(f64, f64)> = (0..n)
        .map(|k| (e.eigenvalues[k], e.eigenvectors[(0, k)].powi(2)))
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    pairs.into_iter().unzip()
}

/// `log ∫ exp(ℓ(x)) N(x; m, v) dx` by adaptive Gauss-Hermite quadrature (Liu & Pierce 1994):
/// the rule is centred at the mode of the integrand and scaled by its curvature there, so that a
/// likelihood much narrower than the Gaussian is integrated as accurately as a broad one.
fn adaptive_gh(
    log_lik: &mut dyn FnMut(f64) -> f64,
    m: f64,
    v: f64,
    nodes: &[f64],
    weights: &[f64],
) -> f64 {
    let sd = v.max(0.0).sqrt();
    if sd < 1e-12 {
        return log_lik(m);
    }
    let g = |x: f64, log_lik: &mut dyn FnMut(f64) -> f64| {
        log_lik(x) - 0.5 * (x - m).powi(2) / v - 0.5 * (2.0 * std::f64::consts::PI * v).ln()
    };
    // Coarse search for the mode on ±10 sd, then Newton steps with finite differences.
    let (mut best, mut gbest) = (m, g(m, log_lik));
    for k in -100..=100 {
        let x = m + sd * k as f64 / 10.0;
        let gx = g(x, log_lik);
        if gx > gbest {
            (best, gbest) = (x, gx);
        }
    }
    let mut h = sd / 10.0;
    for _ in 0..30 {
        let (gl, gr) = (g(best - h, log_lik), g(best + h, log_lik));
        let d1 = (gr - gl) / (2.0 * h);
        let d2 = (gr - 2.0 * gbest + gl) / (h * h);
        if !(d2 < 0.0) || !d1.is_finite() {
            break;
        }
        let step = (-d1 / d2).clamp(-h * 10.0, h * 10.0);
        let x = best + step;
        let gx = g(x, log_lik);
        if gx < gbest || !gx.is_finite() {
            break;
        }
        (best, gbest) = (x, gx);
        h = (step.abs() * 0.5).clamp(sd * 1e-6, h);
    }
    let hh = (sd * 1e-4).max(1e-10);
    let d2 = (g(best + hh, log_lik) - 2.0 * gbest + g(best - hh, log_lik)) / (hh * hh);
    let scale = if d2 < 0.0 && d2.is_finite() {
        (-1.0 / d2).sqrt().min(sd)
    } else {
        sd
    };
    // ∫ e^g = scale Σ_k w_k e^{g(x̂ + scale t_k) + t_k²/2} √(2π), with w the N(0, 1) weights.
    let terms: Vec<f64> = nodes
        .iter()
        .zip(weights)
        .map(|(t, w)| {
            w.ln()
                + g(best + scale * t, log_lik)
                + 0.5 * t * t
                + 0.5 * (2.0 * std::f64::consts::PI).ln()
                + scale.ln()
        })
        .collect();
    log_sum_exp(&terms)
}

/// Test marginals `(mean, var)` of every GP / sparse block at the test inputs.
fn block_marginals(
    schedule: &Schedule,
    tr: &Prepared,
    train: &Data,
    test: &Data,
    hypers: &HyperValues,
    post: &[BlockPosterior],
) -> Result<Vec<Option<(Vec<f64>, Vec<f64>)>>, RuntimeError> {
    let mut out = Vec::with_capacity(tr.blocks.len());
    for (bi, b) in tr.blocks.iter().enumerate() {
        let latent = match b {
            Block::Gp { latent, .. } | Block::Sparse { latent, .. } => *latent,
            Block::Dense { .. } => {
                out.push(None);
                continue;
            }
        };
        let LatentPrior::Gp { inputs, kernel, .. } = &schedule.latents[latent].prior else {
            return Err(RuntimeError::Inconsistent(
                "GP block without a GP prior".into(),
            ));
        };
        let xs = test.inputs(inputs).ok_or_else(|| {
            RuntimeError::MissingData(format!("the test data have no inputs `{inputs}`"))
        })?;
        match (b, &post[bi]) {
            (Block::Gp { gp, .. }, BlockPosterior::Gp { a, b: lin }) => {
                let x = train
                    .inputs(inputs)
                    .ok_or_else(|| RuntimeError::MissingData(format!("no inputs `{inputs}`")))?;
                let ks = kernel_matrix(kernel, &x, &xs, hypers)?; // train × test
                let kss = kernel_diag(kernel, &xs, hypers)?;
                let n = gp.len();
                let s = DVector::from_iterator(n, a.iter().map(|v| v.max(1e-12).sqrt()));
                let mut bm = DMatrix::from_fn(n, n, |i, j| s[i] * gp.k[(i, j)] * s[j]);
                for i in 0..n {
                    bm[(i, i)] += 1.0;
                }
                let lb = crate::linalg::cholesky(bm).ok_or_else(|| {
                    RuntimeError::Numerical("I + S K S is not positive definite".into())
                })?;
                // Posterior mean at the training inputs: m − μ₀ = Σ(b − aμ₀), Σ = K − KSB⁻¹SK;
                // then K⁻¹(m − μ₀) = b' − S B⁻¹ S K b'.
                let bp = DVector::from_fn(n, |i, _| lin[i] - a[i] * gp.mean);
                let kb = &gp.k * &bp;
                let alpha = &bp - lb.solve(&kb.component_mul(&s)).component_mul(&s);
                let mean = ks.tr_mul(&alpha);
                let sk = DMatrix::from_fn(n, xs.nrows(), |i, j| s[i] * ks[(i, j)]);
                let v = crate::linalg::solve_lower(lb.l_dirty(), sk);
                out.push(Some((
                    mean.iter().map(|m| m + gp.mean).collect(),
                    (0..xs.nrows())
                        .map(|i| (kss[i] - v.column(i).norm_squared()).max(0.0))
                        .collect(),
                )));
            }
            (Block::Sparse { sp, .. }, BlockPosterior::Sparse(q)) => {
                let (phi, kt) = sp.features(&xs)?;
                out.push(Some(q.marginals(&phi, &kt, sp.mean)?));
            }
            _ => {
                return Err(RuntimeError::Inconsistent(
                    "the variational posterior does not match the model's blocks".into(),
                ))
            }
        }
    }
    Ok(out)
}

/// Class probabilities `E_q[σ(f_k) / Σ_c σ(f_c)]` of a logistic-softmax factor at the test
/// inputs, with the classes' test marginals independent Gaussians: Monte Carlo with a fixed seed
/// and common random numbers across points (4000 draws; MC error below 1e-2 relative). Returns
/// the log predictive density at the test labels (when given) and the probability table.
#[allow(clippy::type_complexity)]
fn softmax_predictive(
    cat: &gpm_schedule::CategoricalProgram,
    tr: &Prepared,
    test: &Data,
    marg: &[Option<(Vec<f64>, Vec<f64>)>],
    label: Option<&Option<(String, Vec<f64>)>>,
) -> Result<(Vec<f64>, Option<(Vec<f64>, Vec<Vec<f64>>)>), RuntimeError> {
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};
    let li = cat.latent_id.0;
    let mut columns: Vec<(usize, &(Vec<f64>, Vec<f64>))> = tr
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(bi, b)| match b {
            Block::Gp { latent, column, .. } | Block::Sparse { latent, column, .. }
                if *latent == li =>
            {
                marg[bi].as_ref().map(|m| (*column, m))
            }
            _ => None,
        })
        .collect();
    columns.sort_by_key(|c| c.0);
    let classes = columns.len();
    let n = columns.first().map_or(0, |c| c.1 .0.len());
    const DRAWS: usize = 4000;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5EED);
    let z: Vec<f64> = (0..DRAWS * classes)
        .map(|_| StandardNormal.sample(&mut rng))
        .collect();
    let sig = gpm_special::logistic;
    let mut probs = Vec::with_capacity(n);
    let mut w = vec![0.0; classes];
    for i in 0..n {
        let mut p = vec![0.0; classes];
        for d in 0..DRAWS {
            let mut tot = 0.0;
            for (k, (_, (m, v))) in columns.iter().enumerate() {
                w[k] = sig(m[i] + v[i].sqrt() * z[d * classes + k]);
                tot += w[k];
            }
            for k in 0..classes {
                p[k] += w[k] / tot / DRAWS as f64;
            }
        }
        probs.push(p);
    }
    let lp = match test.vector(&cat.label) {
        Some(y) if y.len() == n && y.iter().all(|v| v.is_finite()) => y
            .iter()
            .zip(&probs)
            .map(|(y, p)| p[(*y as usize).saturating_sub(1).min(classes - 1)].ln())
            .collect(),
        _ => vec![],
    };
    let ls = match label {
        Some(Some((_, ls))) => ls.clone(),
        _ => (1..=classes).map(|k| k as f64).collect(),
    };
    Ok((lp, Some((ls, probs))))
}

/// Predict from a variational posterior. `labels`: per factor, the response datum and its finite
/// label set, if any (as for [`crate::predict::predict`]).
pub fn predict(
    schedule: &Schedule,
    train: &Data,
    test: &Data,
    hypers: &HyperValues,
    post: &[BlockPosterior],
    labels: &[Option<(String, Vec<f64>)>],
) -> Result<Prediction, RuntimeError> {
    let tr = Prepared::new(schedule, train, hypers)?;
    predict_prepared(&tr, schedule, train, test, hypers, post, labels)
}

/// [`predict`] with the training side already prepared.
#[allow(clippy::too_many_arguments)]
pub fn predict_prepared(
    tr: &Prepared,
    schedule: &Schedule,
    train: &Data,
    test: &Data,
    hypers: &HyperValues,
    post: &[BlockPosterior],
    labels: &[Option<(String, Vec<f64>)>],
) -> Result<Prediction, RuntimeError> {
    if post.len() != tr.blocks.len() {
        return Err(RuntimeError::Inconsistent(
            "the variational posterior does not match the model's blocks".into(),
        ));
    }
    let te = Prepared::for_test(schedule, test, hypers)?;
    let marg = block_marginals(schedule, tr, train, test, hypers, post)?;
    // Test predictor moments.
    let dense: Vec<(usize, Vec<(usize, usize, usize)>)> = tr
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(bi, b)| match b {
            Block::Dense { parts, .. } => Some((bi, parts.clone())),
            _ => None,
        })
        .collect();
    let mut predictors = Vec::with_capacity(te.preds.len());
    for (pi, p) in te.preds.iter().enumerate() {
        let mut m = vec![p.offset; p.n];
        let mut v = vec![0.0; p.n];
        for t in &p.terms {
            if dense
                .iter()
                .any(|(_, parts)| parts.iter().any(|d| d.0 == t.latent))
            {
                continue;
            }
            let col = match t.read {
                Read::Column(c, _) => c,
                _ => 0,
            };
            let bi = tr
                .blocks
                .iter()
                .position(|b| {
                    matches!(b, Block::Gp { latent, column, .. } | Block::Sparse { latent, column, .. }
                        if *latent == t.latent && *column == col)
                })
                .ok_or_else(|| RuntimeError::Inconsistent(format!("predictor `{}` reads no block", p.name)))?;
            let (bm, bv) = marg[bi].as_ref().expect("GP block marginals");
            if !matches!(t.read, Read::Identity | Read::Column(..)) || bm.len() != p.n {
                return Err(RuntimeError::Unsupported(format!(
                    "predictor `{}`: a GP latent is read other than element-wise at the test inputs",
                    p.name
                )));
            }
            for i in 0..p.n {
                m[i] += t.coef * bm[i];
                v[i] += t.coef * t.coef * bv[i];
            }
        }
        for (bi, parts) in &dense {
            let dim: usize = parts.iter().map(|d| d.2).sum();
            if let (Some(phi), BlockPosterior::Dense { mean, cov }) =
                (te.dense_design(pi, parts, dim), &post[*bi])
            {
                let pm = &phi * mean;
                let pc = &phi * cov;
                for i in 0..p.n {
                    m[i] += pm[i];
                    v[i] += pc.row(i).dot(&phi.row(i));
                }
            }
        }
        predictors.push((p.name.clone(), m, v));
    }
    // Quadrature per factor over the predictors it reads.
    let mut log_predictive = Vec::with_capacity(schedule.factors.len());
    let mut label_probabilities = Vec::with_capacity(schedule.factors.len());
    let mut stack = Vec::new();
    for (f, fp) in schedule.factors.iter().enumerate() {
        if let Some(cat) = &fp.categorical {
            let (lp, probs) = softmax_predictive(cat, tr, test, &marg, labels.get(f))?;
            log_predictive.push(lp);
            label_probabilities.push(probs);
            continue;
        }
        let Some(tape) = &fp.log_density else {
            log_predictive.push(vec![]);
            label_probabilities.push(None);
            continue;
        };
        let slots = &te.factors[f].slots;
        let te_hypers: Vec<f64> = te.hypers.iter().map(|h| h.1).collect();
        let mut preds_read: Vec<usize> = slots
            .iter()
            .filter_map(|s| match s {
                Slot::Pred(p) => Some(*p),
                _ => None,
            })
            .collect();
        preds_read.sort_unstable();
        preds_read.dedup();
        let per_dim = match preds_read.len() {
            0 | 1 => 40,
            2 => 16,
            _ => 8,
        };
        let (nodes, weights) = gauss_hermite(per_dim);
        let grid_size = per_dim.pow(preds_read.len() as u32);
        let response_known = slots
            .iter()
            .all(|s| !matches!(s, Slot::Vector(v) if v.iter().any(|x| x.is_nan())));
        let label = labels.get(f).cloned().flatten();
        let resp: Vec<usize> = match &label {
            Some((name, _)) => fp
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s, gpm_schedule::Source::Data(d) if d == name))
                .map(|(k, _)| k)
                .collect(),
            None => vec![],
        };
        let n = te.factors[f].n;
        let mut lp = Vec::with_capacity(n);
        let mut probs = Vec::with_capacity(n);
        let mut vals = vec![0.0; slots.len()];
        let mut terms = vec![0.0; grid_size];
        for i in 0..n {
            te.factors[f].fill(i, |p| predictors[p].1[i], |_| 0.0, &te_hypers, &mut vals);
            let mut eval_grid = |vals: &mut Vec<f64>, terms: &mut Vec<f64>| {
                if preds_read.len() == 1 {
                    let p = preds_read[0];
                    let (m, v) = (predictors[p].1[i], predictors[p].2[i]);
                    let mut log_lik = |x: f64| {
                        for (s, slot) in slots.iter().enumerate() {
                            if matches!(slot, Slot::Pred(q) if *q == p) {
                                vals[s] = x;
                            }
                        }
                        tape.eval(vals, &mut stack)
                    };
                    return adaptive_gh(&mut log_lik, m, v, &nodes, &weights);
                }
                for (g, term) in terms.iter_mut().enumerate() {
                    let mut rest = g;
                    let mut logw = 0.0;
                    for &p in &preds_read {
                        let k = rest % per_dim;
                        rest /= per_dim;
                        let x = predictors[p].1[i] + predictors[p].2[i].sqrt() * nodes[k];
                        for (s, slot) in slots.iter().enumerate() {
                            if matches!(slot, Slot::Pred(q) if *q == p) {
                                vals[s] = x;
                            }
                        }
                        logw += weights[k].ln();
                    }
                    *term = logw + tape.eval(vals, &mut stack);
                }
                log_sum_exp(terms)
            };
            if response_known {
                lp.push(eval_grid(&mut vals, &mut terms));
            }
            if let Some((_, ls)) = &label {
                let row: Vec<f64> = ls
                    .iter()
                    .map(|l| {
                        for &s in &resp {
                            vals[s] = *l;
                        }
                        eval_grid(&mut vals, &mut terms).exp()
                    })
                    .collect();
                probs.push(row);
            }
        }
        log_predictive.push(lp);
        label_probabilities.push(label.map(|(_, ls)| (ls, probs)));
    }
    Ok(Prediction {
        predictors,
        log_predictive,
        label_probabilities,
        draws: 0,
    })
}
