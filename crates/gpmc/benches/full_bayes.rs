//! What sampling the kernel hyperparameters costs (issue 17, items 1 and 2): a Gibbs sweep of the
//! GP classifier with Gamma priors on its lengthscale and variance, against a sweep of the same
//! model with the two held at the values the chain reached; the hyperparameter density
//! evaluations per sweep (each one kernel matrix and one Cholesky factorisation), and what one
//! kernel matrix and one factorisation cost alone. Issue goal: a full-Bayes sweep ≤ 3× a fixed one.
//! Prints a table; not pass/fail.
//!
//! `cargo bench -p gpmc --bench full_bayes [-- --quick]`

mod common;

use gpm_runtime::gibbs::Sampler;
use gpm_runtime::kernels::HyperValues;
use rand::SeedableRng;
use std::time::Instant;

const FULL: &str = "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {-1, 1}; }
hyper { lengthscale : real in 0.. ~ gamma(5.0, 1.0); variance : real in 0.. ~ gamma(2.0, 0.5); }
latent { f : vector[N] ~ gp(X, variance * sqexp(lengthscale)); }
model { y ~ bernoulli_logit(f); }";

/// Seconds per call of `f`, the median of `reps` rounds of `per` calls.
fn per_call(reps: usize, per: usize, f: &mut dyn FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..per {
                f();
            }
            t0.elapsed().as_secs_f64() / per as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes: &[usize] = if quick { &[200] } else { &[200, 500, 1000] };
    let warmup = 300;
    let c = gpmc::check("full_bayes", FULL).unwrap_or_else(|f| panic!("{}", f.render()));
    let schedule = gpm_schedule::build(&c.model, &c.plans).expect("schedule");
    let (hv, _) = gpmc::infer::hyper_values(&c);
    println!(
        "# GP classifier, D = {}, lengthscale and variance sampled; {warmup} warm-up sweeps",
        common::D
    );
    println!(
        "       N   full_sweep_ms   fixed_sweep_ms   ratio   evaluations/sweep   kernel_ms   cholesky_ms"
    );
    for &n in sizes {
        let data = common::synthetic(n, 1);
        let sampler = Sampler::new(&schedule, &data, &hv).expect("sampler");
        let mut state = sampler.init();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for s in 1..=warmup {
            sampler
                .warmup_sweep(&mut state, &mut rng, s, warmup)
                .expect("warm-up sweep");
        }
        let sweeps = if n <= 500 { 200 } else { 50 };
        let e0 = state.hyper_evaluations;
        let t0 = Instant::now();
        for _ in 0..sweeps {
            sampler.sweep(&mut state, &mut rng).expect("sweep");
        }
        let full = t0.elapsed().as_secs_f64() / sweeps as f64;
        let evaluations = (state.hyper_evaluations - e0) as f64 / sweeps as f64;

        // The same model with the hyperparameters held where the chain is.
        let (l, v) = (state.hypers[0], state.hypers[1]);
        let fixed_src = format!(
            "data {{ N : int; D : int; X : matrix[N, D]; y : int[N] in {{-1, 1}}; }}
             latent {{ f : vector[N] ~ gp(X, {v:.17e} * sqexp({l:.17e})); }}
             model {{ y ~ bernoulli_logit(f); }}"
        );
        let cf = gpmc::check("fixed", &fixed_src).unwrap_or_else(|f| panic!("{}", f.render()));
        let sf = gpm_schedule::build(&cf.model, &cf.plans).expect("schedule");
        let fixed_sampler = Sampler::new(&sf, &data, &HyperValues::default()).expect("sampler");
        let mut fs = fixed_sampler.init();
        for _ in 0..5 {
            fixed_sampler.sweep(&mut fs, &mut rng).expect("sweep");
        }
        let fixed = per_call(5, sweeps / 5, &mut || {
            fixed_sampler.sweep(&mut fs, &mut rng).expect("sweep")
        });

        // One kernel matrix at the chain's values, and one factorisation of it.
        let gpm_runtime::data::Value::Matrix(x) = &data.values["X"] else {
            panic!("X is a matrix")
        };
        let mut at = hv.clone();
        at.scalars.copy_from_slice(&state.hypers);
        let kernel = match &schedule.priors[0] {
            gpm_schedule::BoundPrior::Gp { kernel, .. } => kernel.clone(),
            _ => panic!("a GP prior"),
        };
        let d2 = gpm_runtime::kernels::squared_distances(x);
        let kernel_s = per_call(5, 20, &mut || {
            std::hint::black_box(
                gpm_runtime::kernels::training_matrix(&kernel, x, &d2, &at).expect("kernel"),
            );
        });
        let k = gpm_runtime::kernels::training_matrix(&kernel, x, &d2, &at).expect("kernel")
            + nalgebra::DMatrix::<f64>::identity(n, n);
        let chol = per_call(5, 20, &mut || {
            std::hint::black_box(gpm_runtime::linalg::cholesky(k.clone()).expect("pd"));
        });
        println!(
            "{n:>8}   {:>13.3}   {:>14.3}   {:>5.2}   {evaluations:>17.2}   {:>9.3}   {:>11.3}",
            full * 1e3,
            fixed * 1e3,
            full / fixed,
            kernel_s * 1e3,
            chol * 1e3
        );
    }
}
