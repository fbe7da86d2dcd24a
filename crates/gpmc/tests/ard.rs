//! ARD lengthscales with a prior are sampled under Gibbs, one entry at a time with the GP
//! integrated out. On a conjugate GP regression with two inputs the exact posterior of
//! `(ℓ₁, ℓ₂)` is `p(ℓ) N(y | 0, K_ℓ + σ²I)`, computed on a grid: the sampled posterior means of
//! both lengthscales must agree with it within Monte Carlo error.

use crate::common;
use common::four_chains;
use nalgebra::{DMatrix, DVector};
use serde_json::json;

const MODEL: &str = r#"
data {
  N : int;
  D : int;
  X : matrix[N, D];
  y : vector[N];
}
hyper {
  ell : vector[D] in 0.. ~ gamma(3, 3);
}
latent {
  f : vector[N] ~ gp(X, sqexp(ell));
}
model {
  y ~ normal(f, 0.3);
}
"#;

#[test]
fn ard_lengthscales_match_grid_quadrature_of_their_posterior() {
    let n = 30;
    let x: Vec<[f64; 2]> = (0..n)
        .map(|i| {
            let t = i as f64 / n as f64;
            [4.0 * t - 2.0, ((i * 7) % n) as f64 / n as f64 * 4.0 - 2.0]
        })
        .collect();
    // y depends strongly on x₁ and weakly on x₂.
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, p)| (1.5 * p[0]).sin() + 0.1 * p[1] + 0.2 * (((i * 13) % 7) as f64 / 7.0 - 0.5))
        .collect();
    let data = json!({"N": n, "D": 2, "X": x, "y": y});
    let c = gpmc::check("ard", MODEL).unwrap();
    let d = gpmc::data::from_json_value(&c.model, &data).unwrap();
    let config = four_chains(200, 1500, 9);
    let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
    // Grid posterior in (log ℓ₁, log ℓ₂): prior Gamma(3, 3) on each, times the Jacobian ℓ.
    let log_marginal = |l1: f64, l2: f64| {
        let k = DMatrix::from_fn(n, n, |i, j| {
            let r2 = ((x[i][0] - x[j][0]) / l1).powi(2) + ((x[i][1] - x[j][1]) / l2).powi(2);
            (-0.5 * r2).exp() + if i == j { 0.09 } else { 0.0 }
        });
        let ch = k.cholesky().unwrap();
        let yv = DVector::from_vec(y.clone());
        let a = ch.l().solve_lower_triangular(&yv).unwrap();
        -0.5 * a.norm_squared() - ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>()
    };
    let log_prior = |l: f64| 2.0 * l.ln() - 3.0 * l + l.ln();
    let grid: Vec<f64> = (0..90)
        .map(|k| (-2.5 + 4.5 * k as f64 / 89.0).exp())
        .collect();
    let mut lw = Vec::new();
    for &l1 in &grid {
        for &l2 in &grid {
            lw.push((l1, l2, log_marginal(l1, l2) + log_prior(l1) + log_prior(l2)));
        }
    }
    let top = lw.iter().map(|t| t.2).fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = lw.iter().map(|t| (t.2 - top).exp()).sum();
    let m1: f64 = lw.iter().map(|t| t.0 * (t.2 - top).exp()).sum::<f64>() / z;
    let m2: f64 = lw.iter().map(|t| t.1 * (t.2 - top).exp()).sum::<f64>() / z;
    for (name, exact) in [("ell.1", m1), ("ell.2", m2)] {
        let s = &r.summaries.iter().find(|(n, _)| n == name).unwrap().1;
        let zscore = (s.mean - exact) / s.mcse_mean;
        eprintln!(
            "{name}: Gibbs {:.4} ± {:.4} vs grid {exact:.4}",
            s.mean, s.mcse_mean
        );
        assert!(
            zscore.abs() < 4.0,
            "{name}: Gibbs {} vs grid {exact} (z {zscore:.2})",
            s.mean
        );
        assert!(s.rhat < 1.02, "{name}: R-hat {}", s.rhat);
    }
    assert!(m1 < m2, "the relevant input has the shorter lengthscale");
}
