//! Gibbs on the augmented GP models against an independent sampler of the *un-augmented*
//! posterior: elliptical slice sampling (Murray, Adams & MacKay 2010), which needs only the
//! original log-likelihood and draws from the GP prior. Every latent coordinate's posterior
//! mean must agree within Monte Carlo error (z-score from both samplers' MCSE).

use gpm_runtime::diagnostics::summarize;
use gpm_runtime::gibbs::{GibbsConfig, Sampler};
use gpm_runtime::prepared::Block;
use nalgebra::DVector;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use std::path::Path;

fn ess_chain(sampler: &Sampler, iters: usize, thin: usize, seed: u64) -> Vec<DVector<f64>> {
    let (gp, latent) = sampler
        .prepared()
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::Gp { gp, latent, .. } => Some((gp.clone(), *latent)),
            _ => None,
        })
        .unwrap();
    let n = gp.len();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut state = sampler.init();
    let loglik = |f: &DVector<f64>, state: &mut gpm_runtime::gibbs::State| {
        state.latents[latent] = f.clone();
        let pv: Vec<Vec<f64>> = sampler
            .prepared()
            .preds
            .iter()
            .map(|p| p.eval(&state.latents))
            .collect();
        sampler.log_likelihood_at(state, &pv)
    };
    let mut f = DVector::from_element(n, gp.mean);
    let mut ll = loglik(&f, &mut state);
    let mut out = Vec::new();
    for it in 0..iters {
        let z = DVector::from_fn(n, |_, _| rng.sample::<f64, _>(StandardNormal));
        let nu = gp.chol.l() * z;
        let log_y = ll + rng.gen::<f64>().ln();
        let mut theta: f64 = rng.gen_range(0.0..std::f64::consts::TAU);
        let (mut lo, mut hi) = (theta - std::f64::consts::TAU, theta);
        loop {
            let fc = DVector::from_fn(n, |i, _| {
                gp.mean + (f[i] - gp.mean) * theta.cos() + nu[i] * theta.sin()
            });
            let l = loglik(&fc, &mut state);
            if l > log_y {
                f = fc;
                ll = l;
                break;
            }
            if theta < 0.0 {
                lo = theta;
            } else {
                hi = theta;
            }
            theta = rng.gen_range(lo..hi);
        }
        if it >= iters / 5 && it % thin == 0 {
            out.push(f.clone());
        }
    }
    out
}

#[test]
fn gibbs_agrees_with_elliptical_slice_sampling_on_gp_models() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    for m in [
        "gp_classification",
        "student_t_regression",
        "laplace_regression",
        "bayesian_svm",
        "poisson_gp",
        "negbin_gp",
    ] {
        let src = std::fs::read_to_string(root.join(format!("{m}.gpm"))).unwrap();
        let c = gpmc::check(m, &src).unwrap();
        let d =
            gpmc::data::load(&c.model, &[root.join(format!("{m}.data.json")).as_path()]).unwrap();
        let config = GibbsConfig {
            chains: 4,
            warmup: 300,
            draws: 2000,
            thin: 1,
            seed: 21,
        };
        let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
        let schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
        // The same hyperparameters as the Gibbs run (after type-II ML where declared).
        let sampler = Sampler::new(&c.model, &schedule, &d, &r.values).unwrap();
        let chains: Vec<Vec<DVector<f64>>> = (0..4)
            .map(|k| ess_chain(&sampler, 15_000, 5, 100 + k))
            .collect();
        let n = chains[0][0].len();
        let mut worst: f64 = 0.0;
        for i in 0..n {
            let cols: Vec<Vec<f64>> = chains
                .iter()
                .map(|ch| ch.iter().map(|f| f[i]).collect())
                .collect();
            let refs: Vec<&[f64]> = cols.iter().map(|c| c.as_slice()).collect();
            let e = summarize(&refs);
            let g = &r
                .summaries
                .iter()
                .find(|(name, _)| *name == format!("f.{}", i + 1))
                .unwrap()
                .1;
            let z = (g.mean - e.mean) / (g.mcse_mean.powi(2) + e.mcse_mean.powi(2)).sqrt();
            worst = worst.max(z.abs());
            assert!(
                z.abs() < 4.5,
                "{m} f.{}: Gibbs {:.4} vs elliptical slice {:.4} (z = {z:.2})",
                i + 1,
                g.mean,
                e.mean
            );
            assert!(g.rhat < 1.01, "{m} f.{}: rhat {}", i + 1, g.rhat);
        }
        eprintln!("{m}: {n} coordinates, largest |z| = {worst:.2}");
    }
}
