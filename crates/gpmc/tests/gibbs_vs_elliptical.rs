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

/// Elliptical slice sampling over all latent blocks jointly (their prior is one Gaussian):
/// returns the kept draws as flattened latent vectors, in the order of the Gibbs columns.
fn ess_chain(sampler: &Sampler, iters: usize, thin: usize, seed: u64) -> Vec<DVector<f64>> {
    let prep = sampler.prepared();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut state = sampler.init();
    let loglik = |lat: &[DVector<f64>], state: &mut gpm_runtime::gibbs::State| {
        state.latents = lat.to_vec();
        let pv: Vec<Vec<f64>> = prep.preds.iter().map(|p| p.eval(&state.latents)).collect();
        sampler.log_likelihood_at(state, &pv)
    };
    let mean: Vec<DVector<f64>> = state.latents.clone();
    let prior_draw = |rng: &mut rand_chacha::ChaCha8Rng| -> Vec<DVector<f64>> {
        let mut nu: Vec<DVector<f64>> = mean.iter().map(|m| DVector::zeros(m.len())).collect();
        for b in &prep.blocks {
            match b {
                Block::Gp { latent, column, gp } => {
                    let r = gp.len();
                    let z = DVector::from_fn(r, |_, _| rng.sample::<f64, _>(StandardNormal));
                    let v = gp.chol.l() * z;
                    for i in 0..r {
                        nu[*latent][column * r + i] = v[i];
                    }
                }
                Block::Sparse { .. } => unreachable!("the Gibbs sampler refuses sparse blocks"),
                Block::Dense {
                    parts, prior_sd, ..
                } => {
                    for (li, off, len) in parts {
                        for j in 0..*len {
                            nu[*li][j] = prior_sd[off + j] * rng.sample::<f64, _>(StandardNormal);
                        }
                    }
                }
            }
        }
        nu
    };
    let mut f = mean.clone();
    let mut ll = loglik(&f, &mut state);
    let mut out = Vec::new();
    for it in 0..iters {
        let nu = prior_draw(&mut rng);
        let log_y = ll + rng.gen::<f64>().ln();
        let mut theta: f64 = rng.gen_range(0.0..std::f64::consts::TAU);
        let (mut lo, mut hi) = (theta - std::f64::consts::TAU, theta);
        loop {
            let fc: Vec<DVector<f64>> = (0..f.len())
                .map(|k| &mean[k] + (&f[k] - &mean[k]) * theta.cos() + &nu[k] * theta.sin())
                .collect();
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
            let flat: Vec<f64> = f.iter().flat_map(|v| v.iter().copied()).collect();
            out.push(DVector::from_vec(flat));
        }
    }
    out
}

// A few models a test, so that the harness runs them side by side (all ten in one test took a
// minute of one core). `GPMC_ONLY=model` runs one model.
#[test]
fn gibbs_agrees_with_elliptical_slice_sampling_on_binary_gps() {
    agrees(&["gp_classification", "bayesian_svm", "logistic_regression"]);
}

#[test]
fn gibbs_agrees_with_elliptical_slice_sampling_on_robust_gps() {
    agrees(&[
        "student_t_regression",
        "laplace_regression",
        "matern32_regression",
    ]);
}

#[test]
fn gibbs_agrees_with_elliptical_slice_sampling_on_count_gps() {
    agrees(&["poisson_gp", "negbin_gp"]);
}

#[test]
fn gibbs_agrees_with_elliptical_slice_sampling_on_heteroscedastic_gp() {
    // Both take elliptical slice steps on the precision GP `g` (the mean GP `f` drawn from its
    // collapsed conditional).
    agrees(&["heteroscedastic_gp", "heteroscedastic_student_t"]);
}

#[test]
fn gibbs_agrees_with_elliptical_slice_sampling_on_multiclass_gp() {
    agrees(&["multiclass_gp"]);
}

fn agrees(models: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let only = std::env::var("GPMC_ONLY").ok();
    for &m in models {
        if only.as_deref().is_some_and(|o| o != m) {
            continue;
        }
        let src = std::fs::read_to_string(root.join(format!("{m}.gpm"))).unwrap();
        let c = gpmc::check(m, &src).unwrap();
        let d =
            gpmc::data::load(&c.model, &[root.join(format!("{m}.data.json")).as_path()]).unwrap();
        let config = GibbsConfig {
            first_chain: 0,
            chains: 4,
            warmup: 300,
            draws: if std::env::var("GPMC_LONG").is_ok() {
                10_000
            } else {
                2000
            },
            thin: 1,
            seed: 21,
            nuts: Default::default(),
        };
        let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
        let schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
        // The same hyperparameters as the Gibbs run (after type-II ML where declared).
        let sampler = Sampler::new(&schedule, &d, &r.values).unwrap();
        // The multi-GP models have 120-180 coordinates: longer reference runs.
        let iters = match m {
            "multiclass_gp" | "heteroscedastic_gp" | "heteroscedastic_student_t" => 25_000,
            "logistic_regression" => 60_000,
            _ => 15_000,
        };
        let chains: Vec<Vec<DVector<f64>>> = (0..4)
            .map(|k| ess_chain(&sampler, iters, 5, 100 + k))
            .collect();
        let n = chains[0][0].len();
        // Gibbs columns after lp__ (these models sample no hyperparameter).
        let names: Vec<String> = gpmc::infer::column_names(&c, &r.chains[0].layout)[1..].to_vec();
        assert_eq!(names.len(), n, "{m}: column count");
        let mut worst: f64 = 0.0;
        let mut worst_sd: f64 = 0.0;
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
                .find(|(name, _)| *name == names[i])
                .unwrap()
                .1;
            let z = (g.mean - e.mean) / (g.mcse_mean.powi(2) + e.mcse_mean.powi(2)).sqrt();
            worst = worst.max(z.abs());
            if n <= 4 {
                eprintln!("  {}: Gibbs {:.4} ± {:.4} (sd {:.4}, ess {:.0}) vs ESS {:.4} ± {:.4} (sd {:.4}, ess {:.0}); z {z:.2}", names[i], g.mean, g.mcse_mean, g.sd, g.ess_bulk, e.mean, e.mcse_mean, e.sd, e.ess_bulk);
            }
            assert!(
                z.abs() < 4.5,
                "{m} {}: Gibbs {:.4} vs elliptical slice {:.4} (z = {z:.2})",
                names[i],
                g.mean,
                e.mean
            );
            assert!(g.rhat < 1.02, "{m} {}: rhat {}", names[i], g.rhat);
            if m == "multiclass_gp" {
                // Its sweep has a translation move of F (GibbsStep::LevelShift): the spread
                // must agree too, the sd's relative error being about √(1/(2 ESS)) each.
                let zs = (g.sd / e.sd - 1.0) / (0.5 / g.ess_bulk + 0.5 / e.ess_bulk).sqrt();
                worst_sd = worst_sd.max(zs.abs());
                assert!(
                    zs.abs() < 4.5,
                    "{m} {}: sd {:.4} vs {:.4} (z = {zs:.2})",
                    names[i],
                    g.sd,
                    e.sd
                );
            }
        }
        if m == "multiclass_gp" {
            eprintln!("{m}: largest sd |z| = {worst_sd:.2}");
        }
        eprintln!("{m}: {n} coordinates, largest |z| = {worst:.2}");
    }
}
