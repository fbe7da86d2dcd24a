//! The horseshoe prior `beta ~ horseshoe(tau)` (Carvalho, Polson & Scott 2010) on a sparse
//! regression, p = 50 coefficients of which 5 are non-zero, against an independent exact
//! sampler: the Makalic & Schmidt (2016) Gibbs sampler, whose inverse-Gamma auxiliaries
//! (`λ² | ν`, `τ² | ξ`) are a different augmentation from gpmc's (the local scales integrated
//! out, `ω | β` drawn by inverting E₁, τ sliced from its marginal given β).

use crate::common;
use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma, StandardNormal};

const N: usize = 100;
const P: usize = 50;

/// A design with independent standard normal columns, 5 signals, unit noise.
fn data() -> (DMatrix<f64>, DVector<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(50);
    let x = DMatrix::from_fn(N, P, |_, _| rng.sample::<f64, _>(StandardNormal));
    let mut beta = DVector::zeros(P);
    for (j, b) in [3.0, -2.5, 2.0, -1.5, 1.5].into_iter().enumerate() {
        beta[j] = b;
    }
    let noise = DVector::from_fn(N, |_, _| rng.sample::<f64, _>(StandardNormal));
    let y = &x * &beta + noise;
    (x, y)
}

/// `b / Gamma(a, 1)`: an inverse-Gamma draw with shape `a` and scale `b`.
fn inv_gamma(rng: &mut ChaCha8Rng, a: f64, b: f64) -> f64 {
    b / Gamma::new(a, 1.0).unwrap().sample(rng)
}

/// Makalic & Schmidt (2016), σ = 1: `β | λ, τ` Gaussian, `λ_j² ~ IG(1, 1/ν_j + β_j²/(2τ²))`,
/// `ν_j ~ IG(1, 1 + 1/λ_j²)`, `τ² ~ IG((p+1)/2, 1/ξ + Σ β_j²/(2λ_j²))`, `ξ ~ IG(1, 1 + 1/τ²)`.
/// Returns per chain the draws of `(τ, β_1, β_5, β_6, |β_6|)`.
fn makalic_schmidt(x: &DMatrix<f64>, y: &DVector<f64>, seed: u64, n: usize) -> Vec<[f64; 5]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (xtx, xty) = (x.transpose() * x, x.transpose() * y);
    let (mut lambda2, mut nu) = (vec![1.0; P], vec![1.0; P]);
    let (mut tau2, mut xi) = (1.0, 1.0);
    let mut out = Vec::with_capacity(n);
    for it in 0..n + 2_000 {
        let mut a = xtx.clone();
        for j in 0..P {
            a[(j, j)] += 1.0 / (lambda2[j] * tau2);
        }
        let chol = a.cholesky().expect("positive definite");
        let mean = chol.solve(&xty);
        let z = DVector::from_fn(P, |_, _| rng.sample::<f64, _>(StandardNormal));
        // β = mean + L⁻ᵀ z has covariance A⁻¹.
        let l = chol.l();
        let w = l.transpose().solve_upper_triangular(&z).unwrap();
        let beta = mean + w;
        for j in 0..P {
            lambda2[j] = inv_gamma(
                &mut rng,
                1.0,
                1.0 / nu[j] + beta[j] * beta[j] / (2.0 * tau2),
            );
            nu[j] = inv_gamma(&mut rng, 1.0, 1.0 + 1.0 / lambda2[j]);
        }
        let ss: f64 = (0..P).map(|j| beta[j] * beta[j] / (2.0 * lambda2[j])).sum();
        tau2 = inv_gamma(&mut rng, (P as f64 + 1.0) / 2.0, 1.0 / xi + ss);
        xi = inv_gamma(&mut rng, 1.0, 1.0 + 1.0 / tau2);
        if it >= 2_000 {
            out.push([tau2.sqrt(), beta[0], beta[4], beta[5], beta[5].abs()]);
        }
    }
    out
}

/// Mean and its Monte Carlo standard error by batch means (40 batches per chain).
fn batch_mean(chains: &[Vec<f64>]) -> (f64, f64) {
    let mut batches = Vec::new();
    for c in chains {
        let b = c.len() / 40;
        for k in 0..40 {
            batches.push(c[k * b..(k + 1) * b].iter().sum::<f64>() / b as f64);
        }
    }
    let m = batches.iter().sum::<f64>() / batches.len() as f64;
    let v = batches.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (batches.len() - 1) as f64;
    (m, (v / batches.len() as f64).sqrt())
}

#[test]
fn horseshoe_regression_matches_an_independent_makalic_schmidt_sampler() {
    let (x, y) = data();
    let src = "data { N : int; P : int; X : matrix[N, P]; y : vector[N]; }
               hyper { tau : real in 0.. ~ cauchy(0, 1); }
               latent { beta : vector[P] ~ horseshoe(tau); }
               model { y ~ normal(X * beta, 1.0); }";
    let c = gpmc::check("hs.gpm", src).unwrap();
    assert!(c.plans[0].certificate.passed && !c.plans[0].aux.is_empty());
    let rows: Vec<Vec<f64>> = (0..N).map(|i| x.row(i).iter().copied().collect()).collect();
    let json = serde_json::json!({"N": N, "P": P, "X": rows, "y": y.as_slice()});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &d, &common::four_chains_of_3000(7), &|_, _| {}).unwrap();
    let reference: Vec<Vec<[f64; 5]>> = (0..4)
        .map(|s| makalic_schmidt(&x, &y, 100 + s, 25_000))
        .collect();
    let names = ["tau", "beta.1", "beta.5", "beta.6", "|beta.6|"];
    for (k, name) in names.iter().enumerate() {
        let column = name.trim_matches('|');
        let col = r.summaries.iter().position(|(n, _)| n == column).unwrap();
        let draws: Vec<Vec<f64>> = r
            .chains
            .iter()
            .map(|ch| {
                let v = ch.rows.iter().map(|row| row[col]);
                if name.starts_with('|') {
                    v.map(f64::abs).collect()
                } else {
                    v.collect()
                }
            })
            .collect();
        let (gm, gse) = batch_mean(&draws);
        let ms: Vec<Vec<f64>> = reference
            .iter()
            .map(|c| c.iter().map(|d| d[k]).collect())
            .collect();
        let (mm, mse) = batch_mean(&ms);
        let z = (gm - mm) / (gse * gse + mse * mse).sqrt();
        eprintln!("{name}: gpmc {gm:.4} ± {gse:.4}, Makalic-Schmidt {mm:.4} ± {mse:.4}, z {z:.2}");
        assert!(z.abs() < 4.0, "{name}: z = {z}");
    }
    // The shrinkage itself: the null coefficient's posterior is concentrated near 0, the
    // signal's is not.
    let s = |n: &str| &r.summaries.iter().find(|(m, _)| m == n).unwrap().1;
    assert!(s("beta.6").sd < 0.2 && (s("beta.1").mean - 3.0).abs() < 0.5);
}

/// CAVI on the same regression at a fixed global scale: the horseshoe's tilted moments (E₂/E₁)
/// give an ELBO that never decreases, and the signals are kept while the nulls shrink.
#[test]
fn horseshoe_cavi_elbo_never_decreases() {
    let (x, y) = data();
    let src = "data { N : int; P : int; X : matrix[N, P]; y : vector[N]; }
               latent { beta : vector[P] ~ horseshoe(0.05); }
               model { y ~ normal(X * beta, 1.0); }";
    let c = gpmc::check("hs.gpm", src).unwrap();
    let rows: Vec<Vec<f64>> = (0..N).map(|i| x.row(i).iter().copied().collect()).collect();
    let json = serde_json::json!({"N": N, "P": P, "X": rows, "y": y.as_slice()});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let config = gpm_runtime::cavi::CaviConfig {
        tolerance: 1e-10,
        max_iter: 500,
    };
    let (q, _) = gpmc::infer::run_cavi(&c, &d, &config).unwrap();
    assert!(q.elbo.len() > 3 && q.elbo.iter().all(|e| e.is_finite()));
    assert!(
        q.elbo.windows(2).all(|w| w[1] >= w[0] - 1e-8 * w[0].abs()),
        "{:?}",
        q.elbo
    );
    let m = &q.latents[0].1;
    assert!((m[0] - 3.0).abs() < 0.5 && m[5].abs() < 0.1, "{m:?}");
}
