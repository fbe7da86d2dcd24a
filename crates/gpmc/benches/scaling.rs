//! How the cost grows with N (issue: benchmarks, item 5): time per Gibbs sweep and per CAVI
//! iteration of the full-GP classifier (N = 100 … 3000), and per full-batch sparse CAVI
//! iteration (M = 100, D = 10, N = 10⁴ … 10⁶), with the exponent of a least-squares fit of
//! log time on log N over the largest sizes. Prints a table; not pass/fail.
//!
//! `cargo bench -p gpmc --bench scaling [-- --quick]`

mod common;

use gpm_runtime::cavi::CaviConfig;
use gpm_runtime::gibbs::Sampler;
use gpm_runtime::kernels::HyperValues;
use rand::SeedableRng;
use std::time::Instant;

/// Least-squares slope of log t on log n.
fn exponent(points: &[(usize, f64)]) -> f64 {
    let xs: Vec<f64> = points.iter().map(|p| (p.0 as f64).ln()).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1.ln()).collect();
    let (mx, my) = (
        xs.iter().sum::<f64>() / xs.len() as f64,
        ys.iter().sum::<f64>() / ys.len() as f64,
    );
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    sxy / sxx
}

/// Seconds for `iters` CAVI iterations, everything included.
fn cavi_seconds(
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    iters: usize,
) -> f64 {
    let t0 = Instant::now();
    gpm_runtime::cavi::run(
        schedule,
        data,
        &HyperValues::default(),
        &CaviConfig {
            tolerance: 0.0,
            max_iter: iters,
        },
    )
    .expect("cavi");
    t0.elapsed().as_secs_f64()
}

/// Median of `reps` timings of `f`.
fn median_time(reps: usize, f: &mut dyn FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let full_sizes: &[usize] = if quick {
        &[100, 200, 400, 800]
    } else {
        &[100, 200, 400, 800, 1600, 3000]
    };
    let sparse_sizes: &[usize] = if quick {
        &[10_000, 30_000, 100_000]
    } else {
        &[10_000, 30_000, 100_000, 300_000, 1_000_000]
    };
    let full_src = "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {-1, 1}; }
                    latent { f : vector[N] ~ gp(X, 2.0 * sqexp(2.5)); }
                    model { y ~ bernoulli_logit(f); }";
    let c = gpmc::check("full", full_src).unwrap_or_else(|f| panic!("{}", f.render()));
    let schedule = gpm_schedule::build(&c.model, &c.plans).expect("schedule");
    let hv = HyperValues::default();
    println!(
        "# full GP classifier (D = {}), one core per chain",
        common::D
    );
    println!("       N   gibbs_sweep_s   cavi_iteration_s   cholesky_s");
    let (mut gibbs, mut cavi) = (Vec::new(), Vec::new());
    for &n in full_sizes {
        let data = common::synthetic(n, 1);
        let sampler = Sampler::new(&schedule, &data, &hv).expect("sampler");
        let mut state = sampler.init();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let reps = if n <= 800 { 7 } else { 3 };
        // Warm the state up so that the auxiliaries are typical.
        for _ in 0..2 {
            sampler.sweep(&mut state, &mut rng).expect("sweep");
        }
        let sweep = median_time(reps, &mut || {
            sampler.sweep(&mut state, &mut rng).expect("sweep")
        });
        // One CAVI iteration: the difference of 4 and 1 iterations, over 3.
        let run = |iters| cavi_seconds(&schedule, &data, iters);
        let iteration = ((run(4) - run(1)) / 3.0).max(1e-9);
        let k = nalgebra::DMatrix::<f64>::identity(n, n) * 2.0;
        let chol = median_time(reps, &mut || {
            gpm_runtime::linalg::cholesky(k.clone()).expect("pd");
        });
        println!("{n:>8}   {sweep:>13.5}   {iteration:>16.5}   {chol:>10.5}");
        gibbs.push((n, sweep));
        cavi.push((n, iteration));
    }
    let upper = |v: &[(usize, f64)]| v[v.len() / 2..].to_vec();
    println!(
        "# fitted exponent (largest half of N): Gibbs sweep {:.2}, CAVI iteration {:.2}",
        exponent(&upper(&gibbs)),
        exponent(&upper(&cavi))
    );

    let sparse_src = "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {-1, 1}; }
                      latent { f : vector[N] ~ gp(X, 2.0 * sqexp(2.5), inducing = 100); }
                      model { y ~ bernoulli_logit(f); }";
    let c = gpmc::check("sparse", sparse_src).unwrap_or_else(|f| panic!("{}", f.render()));
    let schedule = gpm_schedule::build(&c.model, &c.plans).expect("schedule");
    println!("# sparse GP classifier, M = 100 (full-batch sparse CAVI)");
    println!("       N   cavi_iteration_s");
    let mut sparse = Vec::new();
    for &n in sparse_sizes {
        let data = common::synthetic(n, 1);
        let run = |iters| cavi_seconds(&schedule, &data, iters);
        let iteration = ((run(3) - run(1)) / 2.0).max(1e-9);
        println!("{n:>8}   {iteration:>16.4}");
        sparse.push((n, iteration));
    }
    println!(
        "# fitted exponent (largest half of N): sparse CAVI iteration {:.2}",
        exponent(&upper(&sparse))
    );
}
