//! Sparse Gibbs at a Power-EP power α (`gp(x, k, inducing = Z, alpha = a)`, thesis §7.5), end
//! to end: with a Gaussian likelihood the sites are fixed, so every Gibbs draw is exact from
//! `q*(u) Π_i q(f_i | u)` — `q*(u)` the Power-EP optimum, `q(f_i | u)` the tilted conditional —
//! whose moments at the training inputs are computed here from the kernel matrices; the draws'
//! means and sds must match them within Monte Carlo error for α = 0 (Titsias' posterior with
//! `p(f | u)`), 0.5 and 1 (FITC). `alpha = 1` is the default, draw for draw.

use crate::common;
use common::four_chains;
use nalgebra::{DMatrix, DVector};

const SIGMA: f64 = 0.3;

fn problem() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = 30;
    let x: Vec<f64> = (0..n)
        .map(|i| -3.0 + 6.0 * i as f64 / (n - 1) as f64)
        .collect();
    let y = x
        .iter()
        .enumerate()
        .map(|(i, &v)| (1.2 * v).sin() + 0.3 * (((i * 7919) % 97) as f64 / 97.0 - 0.5))
        .collect();
    let z = (0..6).map(|k| -3.0 + 6.0 * k as f64 / 5.0).collect();
    (x, y, z)
}

fn run(alpha: Option<f64>, seed: u64) -> gpmc::infer::InferResult {
    let (x, y, z) = problem();
    let opt = alpha.map_or(String::new(), |a| format!(", alpha = {a}"));
    let src = format!(
        "data {{ N : int; M : int; x : vector[N]; Z : matrix[M, 1]; y : vector[N]; }}
         latent {{ f : vector[N] ~ gp(x, sqexp(1.0), inducing = Z{opt}); }}
         model {{ y ~ normal(f, {SIGMA}); }}"
    );
    let c = gpmc::check("power_ep.gpm", &src).unwrap_or_else(|e| panic!("{}", e.render()));
    let zs: Vec<Vec<f64>> = z.iter().map(|v| vec![*v]).collect();
    let json = serde_json::json!({"N": x.len(), "M": z.len(), "x": x, "Z": zs, "y": y});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    gpmc::infer::run_gibbs(&c, &d, &four_chains(100, 2000, seed), &|_, _| {}).unwrap()
}

/// Means and variances of `f_i` under `q*(v) q(f_i | v)` at power α.
fn moments(alpha: f64) -> (Vec<f64>, Vec<f64>) {
    let (x, y, z) = problem();
    let k = |a: f64, b: f64| (-(a - b) * (a - b) / 2.0).exp();
    let (n, m) = (x.len(), z.len());
    let kuu = DMatrix::from_fn(m, m, |i, j| k(z[i], z[j]));
    let l = kuu.cholesky().unwrap().l();
    let kuf = DMatrix::from_fn(m, n, |i, j| k(z[i], x[j]));
    let phi = l.solve_lower_triangular(&kuf).unwrap();
    let kt: Vec<f64> = (0..n).map(|i| 1.0 - phi.column(i).norm_squared()).collect();
    let a = 1.0 / (SIGMA * SIGMA);
    let mut prec = DMatrix::identity(m, m);
    let mut h = DVector::zeros(m);
    for i in 0..n {
        let var = 1.0 / a + alpha * kt[i];
        prec += phi.column(i) * phi.column(i).transpose() / var;
        h += phi.column(i) * (y[i] / var);
    }
    let cov = prec.try_inverse().unwrap();
    let mean_v = &cov * h;
    let (mut mean, mut var) = (vec![0.0; n], vec![0.0; n]);
    for i in 0..n {
        // f_i | v: precision p = 1/k̃ + αa, mean base + α(b − a·base)/p with base = φᵀv, b = ay:
        // affine in base with slope s = 1 − αa/p.
        let p = 1.0 / kt[i] + alpha * a;
        let s = 1.0 - alpha * a / p;
        let base = phi.column(i).dot(&mean_v);
        mean[i] = base * s + alpha * a * y[i] / p;
        let vb = (phi.column(i).transpose() * &cov * phi.column(i))[(0, 0)];
        var[i] = s * s * vb + 1.0 / p;
    }
    (mean, var)
}

#[test]
fn gibbs_draws_the_power_ep_posterior_for_every_alpha() {
    for (alpha, seed) in [(0.0, 3), (0.5, 4), (1.0, 6)] {
        let r = run(Some(alpha), seed);
        let (mean, var) = moments(alpha);
        let mut worst: f64 = 0.0;
        for i in 0..mean.len() {
            let s = &r
                .summaries
                .iter()
                .find(|(c, _)| *c == format!("f.{}", i + 1))
                .unwrap()
                .1;
            let zm = (s.mean - mean[i]) / s.mcse_mean;
            let zs = (s.sd / var[i].sqrt() - 1.0) / (0.5 / s.ess_bulk).sqrt();
            worst = worst.max(zm.abs()).max(zs.abs());
        }
        eprintln!("α = {alpha}: worst z {worst:.2}");
        assert!(worst < 4.5, "α = {alpha}: worst z {worst}");
    }
    // The three posteriors differ by more than the tolerance (the test can tell them apart).
    let (m0, v0) = moments(0.0);
    let (m1, v1) = moments(1.0);
    let gap = (0..m0.len())
        .map(|i| ((m0[i] - m1[i]).abs() + (v0[i].sqrt() - v1[i].sqrt()).abs()) / v1[i].sqrt())
        .fold(0.0, f64::max);
    assert!(gap > 0.3, "α = 0 and 1 too close to tell apart: {gap}");
}

#[test]
fn alpha_one_is_the_default_draw_for_draw() {
    let (a, b) = (run(None, 7), run(Some(1.0), 7));
    assert_eq!(a.chains[0].rows, b.chains[0].rows);
    let c = run(Some(0.5), 7);
    assert_ne!(a.chains[0].rows, c.chains[0].rows);
}
