//! The pathwise GP draw (`GpBlock::with_spectrum`: CG on `B = I + SKS` preconditioned by the
//! prior's leading eigenpairs) against the factorised draw: the same draw from the same random
//! numbers, and draws whose moments are the conditional's closed form and whose coordinates pass
//! a Kolmogorov-Smirnov test against the factorised draws'.

mod common;

use common::ks_two_sample;
use gpm_runtime::gaussian::GpBlock;
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};

/// A squared-exponential prior over 2-D inputs (its spectrum decays, as a GP's does).
fn prior(n: usize) -> GpBlock {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let x: Vec<(f64, f64)> = (0..n)
        .map(|_| (rng.gen_range(-2.0..2.0), rng.gen_range(-2.0..2.0)))
        .collect();
    let k = DMatrix::from_fn(n, n, |i, j| {
        let d2 = (x[i].0 - x[j].0).powi(2) + (x[i].1 - x[j].1).powi(2);
        3.0 * (-0.5 * d2 / 0.8).exp() + if i == j { 1e-8 } else { 0.0 }
    });
    GpBlock::new(k, 0.3).expect("prior")
}

/// A Pólya-Gamma-like curvature (0.02 to 0.5) and a linear term of labels ±½.
fn curvature(n: usize) -> (Vec<f64>, Vec<f64>) {
    let a = (0..n)
        .map(|i| 0.02 + 0.48 * ((i * 37) % 11) as f64 / 10.0)
        .collect();
    let b = (0..n)
        .map(|i| if i % 3 == 0 { -0.5 } else { 0.5 })
        .collect();
    (a, b)
}

/// From the same random numbers the two draws (and the conditional means beside them) agree to
/// the solve's tolerance, with the preconditioner at a rank too low to need no iterations.
#[test]
fn same_draw_from_the_same_random_numbers() {
    let n = 160;
    let gp = prior(n);
    let (a, b) = curvature(n);
    for rank in [4usize, 30, n] {
        let pw = gp.clone().with_spectrum(rank).expect("spectrum");
        assert!(pw.is_pathwise() && !gp.is_pathwise());
        for seed in 0..5u64 {
            let mut r1 = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut r2 = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let (f1, m1) = gp.sample_with_mean(&a, &b, &mut r1).expect("factorised");
            let (f2, m2) = pw.sample_with_mean(&a, &b, &mut r2).expect("pathwise");
            let scale = f1.amax().max(1.0);
            assert!(
                (&f1 - &f2).amax() < 1e-7 * scale,
                "rank {rank}: draws differ"
            );
            assert!(
                (&m1 - &m2).amax() < 1e-7 * scale,
                "rank {rank}: means differ"
            );
        }
    }
}

/// 4 000 pathwise draws: each coordinate's mean and variance against the conditional's closed
/// form (`GpBlock::moments`), and a two-sample KS test of three coordinates against 4 000
/// factorised draws from another stream.
#[test]
fn pathwise_draws_have_the_conditional_distribution() {
    let n = 120;
    let gp = prior(n);
    let (a, b) = curvature(n);
    let pw = gp.clone().with_spectrum(8).expect("spectrum");
    let exact = gp.moments(&a, &b).expect("moments");
    let draws = 4000;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(77);
    let mut other = rand_chacha::ChaCha8Rng::seed_from_u64(78);
    let mut sum = vec![0.0; n];
    let mut sq = vec![0.0; n];
    let watched = [0usize, 57, 119];
    let mut ours = vec![Vec::new(); watched.len()];
    let mut theirs = vec![Vec::new(); watched.len()];
    for _ in 0..draws {
        let f = pw.sample(&a, &b, &mut rng).expect("pathwise");
        let g = gp.sample(&a, &b, &mut other).expect("factorised");
        for i in 0..n {
            sum[i] += f[i];
            sq[i] += f[i] * f[i];
        }
        for (w, &i) in watched.iter().enumerate() {
            ours[w].push(f[i]);
            theirs[w].push(g[i]);
        }
    }
    let d = draws as f64;
    let (mut worst_mean, mut worst_var) = (0.0f64, 0.0f64);
    for i in 0..n {
        let m = sum[i] / d;
        let v = sq[i] / d - m * m;
        let (mu, var) = (exact.mean[i], exact.var[i]);
        worst_mean = worst_mean.max(((m - mu) / (var / d).sqrt()).abs());
        // Var of a Gaussian sample variance: 2σ⁴/(n − 1).
        worst_var = worst_var.max(((v - var) / (var * (2.0 / d).sqrt())).abs());
    }
    // 120 coordinates: a maximum |z| above 4.5 has probability < 0.1 % under the null.
    assert!(worst_mean < 4.5, "a mean is off: max |z| = {worst_mean}");
    assert!(worst_var < 4.5, "a variance is off: max |z| = {worst_var}");
    for (w, &i) in watched.iter().enumerate() {
        let dks = ks_two_sample(ours[w].clone(), theirs[w].clone());
        // Critical value at α = 0.001 for two samples of 4 000: 1.95 √(2/4000) = 0.0436.
        assert!(dks < 0.0436, "coordinate {i}: KS distance {dks}");
    }
}
