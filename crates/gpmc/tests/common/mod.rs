//! What the tests comparing Gibbs with an independent reference share: the run settings and the
//! assertion that draws match a reference mean and sd within Monte Carlo error.
#![allow(dead_code)]

use gpm_runtime::gibbs::GibbsConfig;

/// 4 chains × `draws` after `warmup` sweeps, unthinned, from `seed`.
pub fn four_chains(warmup: usize, draws: usize, seed: u64) -> GibbsConfig {
    GibbsConfig {
        first_chain: 0,
        chains: 4,
        warmup,
        draws,
        thin: 1,
        seed,
        nuts: Default::default(),
    }
}

/// 4 chains × 3 000 draws after 200 warm-up sweeps.
pub fn four_chains_of_3000(seed: u64) -> GibbsConfig {
    four_chains(200, 3000, seed)
}

/// The Gibbs draws of `name` match a reference mean and sd within Monte Carlo error (z from the
/// MCSE; the sd's relative standard error is about √((κ − 1)/ESS)/2 with κ the draws' kurtosis:
/// 1/√(2 ESS) for a Gaussian, up to three times that for the heavy-tailed posterior of a scale),
/// and R̂ < 1.01.
pub fn assert_matches(r: &gpmc::infer::InferResult, case: &str, name: &str, mean: f64, sd: f64) {
    assert_matches_rhat(r, case, name, mean, sd, 1.01)
}

pub fn assert_matches_rhat(
    r: &gpmc::infer::InferResult,
    case: &str,
    name: &str,
    mean: f64,
    sd: f64,
    rhat_max: f64,
) {
    let column = r.summaries.iter().position(|(n, _)| n == name).unwrap();
    let s = &r.summaries[column].1;
    let draws: Vec<f64> = r
        .chains
        .iter()
        .flat_map(|c| c.rows.iter().map(|row| row[column]))
        .collect();
    let moment =
        |k: i32| draws.iter().map(|v| (v - s.mean).powi(k)).sum::<f64>() / draws.len() as f64;
    let kurtosis = moment(4) / moment(2).powi(2);
    let zm = (s.mean - mean) / s.mcse_mean;
    let zs = (s.sd / sd - 1.0) / (0.5 * ((kurtosis - 1.0) / s.ess_bulk).sqrt());
    eprintln!(
        "{case} {name}: Gibbs {:.4} (sd {:.4}) vs quadrature {mean:.4} (sd {sd:.4}); z {zm:.2}, sd z {zs:.2} (kurtosis {kurtosis:.2}), ess {:.0}, rhat {:.4}",
        s.mean, s.sd, s.ess_bulk, s.rhat
    );
    assert!(zm.abs() < 4.5 && zs.abs() < 4.5, "{case} {name}");
    assert!(s.rhat < rhat_max, "{case} {name}: rhat {}", s.rhat);
}

/// Mean and sd of θ under `lognormal(0, prior_sd)` times `exp(log_evidence(θ))`, by the midpoint
/// rule on `u = log θ` over `[lo, hi]` (where the prior is N(0, prior_sd²)).
pub fn log_scale_posterior(
    log_evidence: &dyn Fn(f64) -> f64,
    prior_sd: f64,
    (lo, hi, m): (f64, f64, usize),
) -> (f64, f64) {
    let h = (hi - lo) / m as f64;
    let logp: Vec<(f64, f64)> = (0..m)
        .map(|k| {
            let u = lo + (k as f64 + 0.5) * h;
            (
                u.exp(),
                -0.5 * (u / prior_sd).powi(2) + log_evidence(u.exp()),
            )
        })
        .collect();
    let mx = logp.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut m1, mut m2) = (0.0, 0.0, 0.0);
    for &(theta, lp) in &logp {
        let w = (lp - mx).exp();
        z += w;
        m1 += w * theta;
        m2 += w * theta * theta;
    }
    (m1 / z, (m2 / z - (m1 / z).powi(2)).sqrt())
}

/// A Poisson regression with exposures, `y ~ poisson(E exp(b))` written as the rate (the
/// recognizers find its Pólya-Gamma form; the generic update and particle flow take it as written).
pub const POISSON_LOG: &str = r#"
data {
  N : int;
  E : vector[N] in 0..;
  y : int[N] in 0..;
}
latent {
  b : real ~ normal(0, 1.5);
}
model {
  for i in 1..N { y[i] ~ poisson(E[i] * exp(b)); }
}
"#;

/// ±1 labels from a sine of the inputs with a deterministic jitter: a classification problem
/// with both classes on either side of every crossing.
pub fn sine_labels(x: &[f64]) -> Vec<i64> {
    x.iter()
        .enumerate()
        .map(|(i, v)| {
            if (v.sin() + 0.3 * ((i * 7 % 5) as f64 - 2.0)) > 0.0 {
                1
            } else {
                -1
            }
        })
        .collect()
}

/// A GP regression on one input `x`: `sigma` and `lengthscale` fixed hyperparameters at the
/// values given, `f ~ gp(x, kernel)`, and the model block's one `statement` about `y`.
pub fn gp_regression(sigma: f64, lengthscale: f64, kernel: &str, statement: &str) -> String {
    format!(
        "data {{ N : int; x : vector[N]; y : vector[N]; }}
hyper {{ sigma : real in 0.. = {sigma:?}; lengthscale : real in 0.. = {lengthscale:?}; }}
latent {{ f : vector[N] ~ gp(x, {kernel}); }}
model {{ {statement}; }}
"
    )
}

/// `log N(y | 0, C)`, up to a constant.
pub fn log_gaussian(y: &[f64], c: nalgebra::DMatrix<f64>) -> f64 {
    let ch = nalgebra::Cholesky::new(c).expect("positive definite");
    let a = ch
        .l()
        .solve_lower_triangular(&nalgebra::DVector::from_column_slice(y))
        .unwrap();
    -0.5 * a.norm_squared() - ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>()
}

/// Mean and sd of θ with log-density `logp` on `(lo, hi)` by the midpoint rule on `m` cells of
/// `g(θ)` (`g = ln` for a scale on `(0, ∞)`, with its Jacobian added).
pub fn grid_posterior(
    logp: &dyn Fn(f64) -> f64,
    lo: f64,
    hi: f64,
    m: usize,
    log_scale: bool,
) -> (f64, f64) {
    let h = (hi - lo) / m as f64;
    let pts: Vec<(f64, f64)> = (0..m)
        .map(|k| {
            let g = lo + (k as f64 + 0.5) * h;
            if log_scale {
                (g.exp(), logp(g.exp()) + g)
            } else {
                (g, logp(g))
            }
        })
        .collect();
    let mx = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut m1, mut m2) = (0.0, 0.0, 0.0);
    for &(t, lp) in &pts {
        let w = (lp - mx).exp();
        z += w;
        m1 += w * t;
        m2 += w * t * t;
    }
    (m1 / z, (m2 / z - (m1 / z).powi(2)).sqrt())
}
