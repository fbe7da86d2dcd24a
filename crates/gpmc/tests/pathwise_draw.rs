//! The pathwise draw of a fixed-kernel GP block inside the Gibbs sampler (issue 52, item 2):
//! the schedule chooses it for a fixed kernel only; from its crossover size on the sampler's
//! chain is the factorised chain (the same draws to the solve's tolerance); and forced onto a
//! small GP regression, the sampler's draws match the closed-form posterior.

use gpm_runtime::gibbs::Sampler;
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

const FIXED: &str = "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
latent { f : vector[N] ~ gp(x, 2.0 * sqexp(0.7)); }
model { y ~ bernoulli_logit(f); }";

const SAMPLED: &str = "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
hyper { lengthscale : real in 0.. ~ gamma(4.0, 4.0); }
latent { f : vector[N] ~ gp(x, 2.0 * sqexp(lengthscale)); }
model { y ~ bernoulli_logit(f); }";

fn inputs(n: usize) -> Vec<f64> {
    (0..n).map(|i| -3.0 + 6.0 * i as f64 / n as f64).collect()
}

fn labels(x: &[f64]) -> Vec<i64> {
    x.iter()
        .enumerate()
        .map(|(i, &t)| {
            if (1.7 * t).sin() + 0.4 * ((i * 7 % 5) as f64 - 2.0) > 0.0 {
                1
            } else {
                -1
            }
        })
        .collect()
}

#[test]
fn the_schedule_chooses_it_for_a_fixed_kernel_only() {
    let fixed = gpmc::check("m.gpm", FIXED).unwrap();
    let s = gpm_schedule::build(&fixed.model, &fixed.plans).unwrap();
    assert_eq!(
        s.blocks[0].pathwise,
        Some(gpm_schedule::PathwiseDraw::for_fixed_kernel())
    );
    let sampled = gpmc::check("m.gpm", SAMPLED).unwrap();
    let s = gpm_schedule::build(&sampled.model, &sampled.plans).unwrap();
    assert_eq!(s.blocks[0].pathwise, None, "a sampled kernel moves K");
}

/// At the rule's smallest size the sampler solves by CG, and its chain is the one the
/// factorised schedule runs from the same seed: the latents agree after warm-up sweeps (the
/// Pólya-Gamma draws, the marginal elliptical steps and the reference's fit included).
#[test]
fn from_its_size_on_the_chain_is_the_factorised_chain() {
    let c = gpmc::check("m.gpm", FIXED).unwrap();
    let n = gpm_schedule::PathwiseDraw::for_fixed_kernel().min_rows;
    let x = inputs(n);
    let data = serde_json::json!({ "N": n, "x": x, "y": labels(&x) });
    let data = gpmc::data::from_json_value(&c.model, &data).unwrap();
    let pathwise = gpm_schedule::build(&c.model, &c.plans).unwrap();
    let mut factorised = pathwise.clone();
    factorised.blocks[0].pathwise = None;
    let (hv, _) = gpmc::infer::hyper_values(&c);
    let run = |schedule: &gpm_schedule::Schedule| {
        let sampler = Sampler::new(schedule, &data, &hv).unwrap();
        let uses_cg = sampler.prepared().blocks.iter().any(|b| match b {
            gpm_runtime::prepared::Block::Gp { gp, .. } => gp.is_pathwise(),
            _ => false,
        });
        let mut state = sampler.init();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for s in 1..=6 {
            sampler.warmup_sweep(&mut state, &mut rng, s, 40).unwrap();
        }
        (uses_cg, state.latents[0].clone())
    };
    let (cg, f_cg) = run(&pathwise);
    let (chol, f_chol) = run(&factorised);
    assert!(cg && !chol, "the rule must decide the path");
    let err = (&f_cg - &f_chol).amax();
    assert!(
        err < 1e-6 * f_chol.amax().max(1.0),
        "chains differ by {err}"
    );
}

/// Forced onto a GP regression of 30 points (rule from 1 row, 3 eigenpairs, so that CG
/// iterates): each coordinate's posterior mean and sd from 4 chains × 2 000 draws match the
/// closed form `K (K + σ²I)⁻¹ y`, `K − K (K + σ²I)⁻¹ K` within Monte Carlo error.
#[test]
fn forced_on_a_regression_it_matches_the_closed_form() {
    let src = "data { N : int; x : vector[N]; y : vector[N]; }
latent { f : vector[N] ~ gp(x, 1.5 * sqexp(0.8)); }
model { y ~ normal(f, 0.4); }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let n = 30;
    let x = inputs(n);
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &t)| (1.3 * t).sin() + 0.3 * ((i as f64 * 12.9898).sin() * 43758.5453).fract())
        .collect();
    let data = serde_json::json!({ "N": n, "x": x, "y": y });
    let data = gpmc::data::from_json_value(&c.model, &data).unwrap();
    let mut schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
    schedule.blocks[0].pathwise = Some(gpm_schedule::PathwiseDraw {
        min_rows: 1,
        rank: 3,
    });
    let (hv, _) = gpmc::infer::hyper_values(&c);
    let sampler = Sampler::new(&schedule, &data, &hv).unwrap();
    let (chains, draws) = (4, 2000);
    let mut traces = vec![vec![Vec::with_capacity(draws); chains]; n];
    for ch in 0..chains {
        let mut state = sampler.init();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(40 + ch as u64);
        for s in 1..=50 {
            sampler.warmup_sweep(&mut state, &mut rng, s, 50).unwrap();
        }
        for _ in 0..draws {
            sampler.sweep(&mut state, &mut rng).unwrap();
            for i in 0..n {
                traces[i][ch].push(state.latents[0][i]);
            }
        }
    }
    let k = DMatrix::from_fn(n, n, |i, j| {
        1.5 * (-0.5 * ((x[i] - x[j]) / 0.8).powi(2)).exp()
    });
    let ky = &k + DMatrix::identity(n, n) * 0.16;
    let chol = ky.clone().cholesky().unwrap();
    let mean = &k * chol.solve(&DVector::from_column_slice(&y));
    let cov = &k - &k * chol.solve(&k);
    let mut worst = (0.0f64, 0.0f64);
    for i in 0..n {
        let all: Vec<f64> = traces[i].iter().flatten().copied().collect();
        let m = all.iter().sum::<f64>() / all.len() as f64;
        let sd = (all.iter().map(|v| (v - m).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
        let slices: Vec<&[f64]> = traces[i].iter().map(|t| t.as_slice()).collect();
        let ess = gpm_runtime::diagnostics::ess_bulk(&slices);
        let sd0 = cov[(i, i)].sqrt();
        worst.0 = worst.0.max(((m - mean[i]) / (sd0 / ess.sqrt())).abs());
        // The sd's Monte Carlo error, ≈ sd / √(2 ESS) for a Gaussian.
        worst.1 = worst.1.max(((sd - sd0) / (sd0 / (2.0 * ess).sqrt())).abs());
    }
    // 30 coordinates: max |z| above 4.5 has probability < 0.02 % under the null.
    assert!(
        worst.0 < 4.5,
        "a posterior mean is off: max |z| = {}",
        worst.0
    );
    assert!(
        worst.1 < 4.5,
        "a posterior sd is off: max |z| = {}",
        worst.1
    );
}
