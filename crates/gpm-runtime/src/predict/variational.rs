//! Prediction from a variational posterior (CAVI or SVI): each block's Gaussian marginals at
//! the test inputs ([`crate::block::Predictive`]), the test predictors' moments as sums of
//! independent blocks, and per factor `log ∫ p(y* | η*) N(η*; μ, σ²) dη*` by Gauss-Hermite
//! quadrature on the original (un-augmented) log-density, in log space.

use super::{Prediction, Setting, TestBlocks};
use crate::block::{Belief, Marginals, Predictive};
use crate::data::Data;
use crate::posterior::BlockPosterior;
use crate::prepared::{Block, Prepared, Read, Slot};
use crate::RuntimeError;
use gpm_library::likelihood::{CategoricalLogisticSoftmax, Likelihood};
use gpm_special::log_sum_exp;

pub use crate::quadrature::gauss_hermite;

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

/// The test marginals of a logistic-softmax factor's classes, by class (column of its matrix
/// latent).
fn class_marginals<'m>(
    cat: &gpm_schedule::CategoricalProgram,
    tr: &Prepared,
    marg: &'m [Option<Marginals>],
) -> Vec<(usize, &'m Marginals)> {
    let li = cat.latent_id.0;
    let mut columns: Vec<(usize, &Marginals)> = tr
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
    columns
}

/// Class probabilities `E_q[w_k / Σ_c w_c]` (`w_k = θ_k σ(f_k)`, thesis §7.4) of a
/// logistic-softmax factor at the test inputs, with the classes' test marginals independent
/// Gaussians: Monte Carlo with a fixed seed and common random numbers across points (4000
/// draws; MC error below 1e-2 relative). Returns the log predictive density at the test labels
/// (when given) and the probability table.
#[allow(clippy::type_complexity)]
fn softmax_predictive(
    cat: &gpm_schedule::CategoricalProgram,
    theta: &[f64],
    tr: &Prepared,
    test: &Data,
    marg: &[Option<Marginals>],
    label: Option<&Option<Vec<f64>>>,
) -> Result<(Vec<f64>, Option<(Vec<f64>, Vec<Vec<f64>>)>), RuntimeError> {
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};
    let columns = class_marginals(cat, tr, marg);
    let weights = gpm_library::likelihood::ClassWeights {
        bijective: cat.bijective,
        theta,
    };
    let (cols, classes) = (columns.len(), weights.classes(columns.len()));
    let n = columns.first().map_or(0, |c| c.1.mean.len());
    const DRAWS: usize = 4000;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5EED);
    let z: Vec<f64> = (0..DRAWS * cols)
        .map(|_| StandardNormal.sample(&mut rng))
        .collect();
    let mut probs = Vec::with_capacity(n);
    let mut w = Vec::with_capacity(classes);
    for i in 0..n {
        let mut p = vec![0.0; classes];
        for d in 0..DRAWS {
            let at = |k: usize| {
                let m = columns[k].1;
                m.mean[i] + m.var[i].sqrt() * z[d * cols + k]
            };
            weights.weights(at, cols, &mut w);
            let tot: f64 = w.iter().sum();
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
        Some(Some(ls)) => ls.clone(),
        _ => (1..=classes).map(|k| k as f64).collect(),
    };
    Ok((lp, Some((ls, probs))))
}

/// The predictors a factor's slots read, each once, in order.
fn predictors_read(slots: &[Slot]) -> Vec<usize> {
    let mut read: Vec<usize> = slots
        .iter()
        .filter_map(|s| match s {
            Slot::Pred(p) => Some(*p),
            _ => None,
        })
        .collect();
    read.sort_unstable();
    read.dedup();
    read
}

/// Put `x` in every slot that reads predictor `p`.
fn set_predictor(slots: &[Slot], vals: &mut [f64], p: usize, x: f64) {
    for (s, slot) in slots.iter().enumerate() {
        if matches!(slot, Slot::Pred(q) if *q == p) {
            vals[s] = x;
        }
    }
}

/// A factor's log predictive density at each test point (where its response is known) and,
/// for labels, each label's predictive probability: Gauss-Hermite quadrature over the
/// predictors it reads, adaptive for one, a product grid for several.
#[allow(clippy::type_complexity)]
fn factor_quadrature(
    fp: &gpm_schedule::FactorProgram,
    factor: &crate::prepared::PFactor,
    tape: &gpm_schedule::Tape,
    hypers: &[f64],
    predictors: &[(String, Vec<f64>, Vec<f64>)],
    label: &Option<Vec<f64>>,
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let mut stack = Vec::new();
    let slots = &factor.slots;
    let preds_read = predictors_read(slots);
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
    let resp = &fp.response_slots;
    let n = factor.n;
    let mut lp = Vec::with_capacity(n);
    let mut probs = Vec::with_capacity(n);
    let mut vals = vec![0.0; slots.len()];
    let mut terms = vec![0.0; grid_size];
    for i in 0..n {
        factor.fill(i, |p| predictors[p].1[i], |_| 0.0, hypers, &mut vals);
        let mut eval_grid = |vals: &mut Vec<f64>, terms: &mut Vec<f64>| {
            if preds_read.len() == 1 {
                let p = preds_read[0];
                let (m, v) = (predictors[p].1[i], predictors[p].2[i]);
                let mut log_lik = |x: f64| {
                    set_predictor(slots, vals, p, x);
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
                    set_predictor(slots, vals, p, x);
                    logw += weights[k].ln();
                }
                *term = logw + tape.eval(vals, &mut stack);
            }
            log_sum_exp(terms)
        };
        if response_known {
            lp.push(eval_grid(&mut vals, &mut terms));
        }
        if let Some(ls) = label {
            let row: Vec<f64> = ls
                .iter()
                .map(|l| {
                    for &s in resp {
                        vals[s] = *l;
                    }
                    eval_grid(&mut vals, &mut terms).exp()
                })
                .collect();
            probs.push(row);
        }
    }
    (lp, probs)
}

/// Each test predictor's mean and variance under `q`: a GP block's marginals at the test
/// inputs, a dense block's predictive moments, summed over the predictor's terms.
#[allow(clippy::type_complexity)]
fn predictor_moments(
    tr: &Prepared,
    te: &Prepared,
    marg: &[Option<Marginals>],
    post: &[BlockPosterior],
) -> Result<Vec<(String, Vec<f64>, Vec<f64>)>, RuntimeError> {
    // Per dense block: its index and its parts (latent, offset, length).
    type Parts = Vec<(usize, usize, usize)>;
    let dense: Vec<(usize, Parts)> = tr
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
            let Marginals { mean: bm, var: bv } = marg[bi].as_ref().expect("GP block marginals");
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
        for (bi, _) in &dense {
            if let Some(block) = TestBlocks::dense(tr, te, *bi, pi) {
                let bm = block.predict(Belief::Variational(&post[*bi]))?;
                for i in 0..p.n {
                    m[i] += bm.mean[i];
                    v[i] += bm.var[i];
                }
            }
        }
        predictors.push((p.name.clone(), m, v));
    }
    Ok(predictors)
}

/// Predict from `q`: `post` has one entry per block of `tr`.
pub(super) fn predict(
    setting: &Setting,
    post: &[BlockPosterior],
    hypers: &crate::kernels::HyperValues,
) -> Result<Prediction, RuntimeError> {
    let (schedule, tr, te, at, test, labels) = setting.parts();
    let marg = tr
        .blocks
        .iter()
        .enumerate()
        .map(|(bi, b)| match b {
            Block::Dense { .. } => Ok(None),
            _ => at
                .marginals(tr, bi, Belief::Variational(&post[bi]))
                .map(Some),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let predictors = predictor_moments(tr, te, &marg, post)?;
    // Quadrature per factor over the predictors it reads.
    let mut log_predictive = Vec::with_capacity(schedule.factors.len());
    let mut label_probabilities = Vec::with_capacity(schedule.factors.len());
    for (f, fp) in schedule.factors.iter().enumerate() {
        if let Some(cat) = &fp.categorical {
            let theta = crate::categorical::scales(cat, &hypers.vectors);
            let (lp, probs) = softmax_predictive(cat, theta, tr, test, &marg, labels.get(f))?;
            log_predictive.push(lp);
            label_probabilities.push(probs);
            continue;
        }
        // An observation's density (a robust factor's loss is not one); a latent's prior
        // factor observes nothing.
        let tape = fp.observation.as_ref().or(fp.log_density.as_ref());
        let Some(tape) = tape.filter(|_| !fp.is_prior) else {
            log_predictive.push(vec![]);
            label_probabilities.push(None);
            continue;
        };
        let label = labels.get(f).cloned().flatten();
        let (lp, probs) =
            factor_quadrature(fp, &te.factors[f], tape, &te.hypers, &predictors, &label);
        log_predictive.push(lp);
        label_probabilities.push(label.map(|ls| (ls, probs)));
    }
    let responses = responses(schedule, tr, te, &predictors, &marg, hypers)?;
    Ok(Prediction {
        predictors,
        log_predictive,
        label_probabilities,
        draws: 0,
        responses,
    })
}

/// Draws of a new response per test point behind [`responses`].
const RESPONSE_DRAWS: usize = 4000;

/// The predictive distribution of a new response at each test point under `q`: per draw, each
/// predictor the factor reads from its Gaussian marginal `N(μ_i, σ²_i)` (independently, as the
/// quadrature treats them), then `y*` from the factor's distribution ([`crate::replicate`], the
/// same draws as Gibbs's); a logistic-softmax class from the classes' marginals. A fixed seed
/// and a random stream per factor and test point, so that a saved fit predicts the same numbers
/// and the points run in parallel (the same numbers at any thread count); 4000 draws (the
/// quantiles' Monte Carlo error is a few per cent of the sd).
fn responses(
    schedule: &gpm_schedule::Schedule,
    tr: &Prepared,
    te: &Prepared,
    predictors: &[(String, Vec<f64>, Vec<f64>)],
    marg: &[Option<Marginals>],
    hypers: &crate::kernels::HyperValues,
) -> Result<Vec<Option<Vec<super::ResponseSummary>>>, RuntimeError> {
    let mut out = Vec::with_capacity(schedule.factors.len());
    for (f, fp) in schedule.factors.iter().enumerate() {
        if let Some(cat) = &fp.categorical {
            let columns = class_marginals(cat, tr, marg);
            let weights = gpm_library::likelihood::ClassWeights {
                bijective: cat.bijective,
                theta: crate::categorical::scales(cat, &hypers.vectors),
            };
            let n = columns.first().map_or(0, |c| c.1.mean.len());
            out.push(Some(per_point(n, f, |i, rng, ys| {
                class_draws(&columns, &weights, i, rng, ys)
            })));
            continue;
        }
        let Some(r) = &fp.replicate else {
            out.push(None);
            continue;
        };
        let factor = &te.factors[f];
        let new = NewResponses {
            r,
            factor,
            read: predictors_read(&factor.slots),
            predictors,
            hypers: &te.hypers,
        };
        out.push(Some(per_point(factor.n, f, |i, rng, ys| {
            new.draws(i, rng, ys)
        })));
    }
    Ok(out)
}

/// [`RESPONSE_DRAWS`] draws at each of `n` test points of factor `f` by `draw(point, rng,
/// draws)`, summarised; the points in parallel, each with its own random stream.
fn per_point(
    n: usize,
    f: usize,
    draw: impl Fn(usize, &mut rand_chacha::ChaCha8Rng, &mut [f64]) + Sync,
) -> Vec<super::ResponseSummary> {
    use rand::SeedableRng;
    use rayon::prelude::*;
    (0..n)
        .into_par_iter()
        .with_min_len(crate::parallel::min_items(n, 16))
        .map_init(
            || vec![0.0; RESPONSE_DRAWS],
            |ys, i| {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x7965_725f_7161 ^ f as u64);
                rng.set_stream(i as u64);
                draw(i, &mut rng, ys);
                super::ResponseSummary::of(ys)
            },
        )
        .collect()
}

/// A logistic-softmax class at test point `i`, per draw: every class's value from its marginal.
fn class_draws(
    columns: &[(usize, &Marginals)],
    weights: &gpm_library::likelihood::ClassWeights,
    i: usize,
    rng: &mut rand_chacha::ChaCha8Rng,
    ys: &mut [f64],
) {
    use rand_distr::{Distribution, StandardNormal};
    let (mut w, mut f) = (
        Vec::with_capacity(columns.len() + 1),
        vec![0.0; columns.len()],
    );
    for y in ys.iter_mut() {
        for (fk, (_, m)) in f.iter_mut().zip(columns) {
            let z: f64 = StandardNormal.sample(rng);
            *fk = m.mean[i] + m.var[i].max(0.0).sqrt() * z;
        }
        weights.weights(|k| f[k], columns.len(), &mut w);
        *y = CategoricalLogisticSoftmax.draw(&w, None, rng);
    }
}

/// A factor's new responses at the test points: its replicate program and the predictors'
/// marginals it reads.
struct NewResponses<'a> {
    r: &'a gpm_schedule::ReplicateProgram,
    factor: &'a crate::prepared::PFactor,
    read: Vec<usize>,
    predictors: &'a [(String, Vec<f64>, Vec<f64>)],
    hypers: &'a [f64],
}

impl NewResponses<'_> {
    /// At test point `i`, per draw: each predictor the factor reads from its marginal, in every
    /// slot that reads it, then the factor's distribution.
    fn draws(&self, i: usize, rng: &mut rand_chacha::ChaCha8Rng, ys: &mut [f64]) {
        use rand_distr::{Distribution, StandardNormal};
        let (r, slots, predictors) = (self.r, &self.factor.slots, self.predictors);
        let (mut vals, mut stack) = (vec![0.0; slots.len()], Vec::new());
        let mut params = Vec::with_capacity(r.params.len());
        self.factor
            .fill(i, |p| predictors[p].1[i], |_| 0.0, self.hypers, &mut vals);
        for y in ys.iter_mut() {
            for &p in &self.read {
                let z: f64 = StandardNormal.sample(rng);
                let x = predictors[p].1[i] + predictors[p].2[i].max(0.0).sqrt() * z;
                set_predictor(slots, &mut vals, p, x);
            }
            params.clear();
            params.extend(r.params.iter().map(|t| t.eval(&vals, &mut stack)));
            *y = r.likelihood.draw(&params, r.labels.as_deref(), rng);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, StandardNormal};

    /// Each point's draws come from its own stream: the summaries are the same split across
    /// the global pool and in a pool of one thread, differ from point to point and from factor
    /// to factor, and are those of the point's distribution (here `N(i, 1)`).
    #[test]
    fn each_point_draws_from_its_own_stream() {
        let draw = |i: usize, rng: &mut rand_chacha::ChaCha8Rng, ys: &mut [f64]| {
            for y in ys.iter_mut() {
                let z: f64 = StandardNormal.sample(rng);
                *y = i as f64 + z;
            }
        };
        let split = per_point(40, 0, draw);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(pool.install(|| per_point(40, 0, draw)), split);
        assert_ne!(per_point(40, 1, draw), split);
        for (i, s) in split.iter().enumerate() {
            // 4000 draws: the mean within 5 standard errors, the sd within 10 %.
            assert!(
                (s.mean - i as f64).abs() < 5.0 / (RESPONSE_DRAWS as f64).sqrt(),
                "{s:?}"
            );
            assert!((s.sd - 1.0).abs() < 0.1, "{s:?}");
            assert!(s.q5 < s.q50 && s.q50 < s.q95);
        }
        let centred: Vec<f64> = split
            .iter()
            .enumerate()
            .map(|(i, s)| s.mean - i as f64)
            .collect();
        assert!(
            centred.windows(2).all(|w| w[0] != w[1]),
            "the streams repeat"
        );
    }
}
