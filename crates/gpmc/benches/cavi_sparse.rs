//! Full-batch sparse CAVI at the size of docs/benchmarks_cavi_in_process.md (issue 52, item 4):
//! the sparse GP classifier with M = 100 inducing inputs given as data (`inducing = Z`), D = 10,
//! N = 2·10⁵ by default. Prints the seconds of a fit of k = 1, 2, 4, 8 iterations (binding and
//! the features included), the setup (k = 1 minus an iteration) and the cost of an iteration,
//! each the median of a few runs, and the ELBO reached. Not pass/fail.
//!
//! `cargo bench -p gpmc --bench cavi_sparse [-- --n 200000 --reps 3]`

mod common;

use gpm_runtime::cavi::CaviConfig;
use gpm_runtime::data::Value;
use gpm_runtime::kernels::HyperValues;
use std::time::Instant;

/// The two products an iteration is made of, alone, with their arithmetic rates: the
/// weighted Gram `Σ wφφᵀ` (its lower triangle: `M²N` flops) and the marginals' triangular
/// solve (`M²N`) with `Φᵀμ` (`2MN`).
fn primitives(n: usize, reps: usize) {
    let m = 100;
    let phi = nalgebra::DMatrix::from_fn(m, n, |r, c| ((r * 7 + c * 3) as f64 * 0.37).sin());
    let w: Vec<f64> = (0..n).map(|i| 0.1 + (i as f64 * 0.5).cos().abs()).collect();
    let l = nalgebra::DMatrix::from_fn(m, m, |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Less => 0.0,
        std::cmp::Ordering::Equal => 2.0,
        std::cmp::Ordering::Greater => 0.01,
    });
    let mu = nalgebra::DVector::from_element(m, 0.5);
    let gram = common::per_call(reps, 3, &mut || {
        std::hint::black_box(gpm_runtime::columns::weighted_gram(&phi, &w, &w));
    });
    let proj = common::per_call(reps, 3, &mut || {
        std::hint::black_box(gpm_runtime::columns::projections(&phi, &l, &mu));
    });
    let flops = (m * m * n) as f64;
    println!(
        "# weighted Gram {gram:.4} s ({:.1} GFlop/s), projections {proj:.4} s ({:.1} GFlop/s) on {} cores",
        flops / gram / 1e9,
        (flops + 2.0 * (m * n) as f64) / proj / 1e9,
        std::thread::available_parallelism().map_or(1, |p| p.get())
    );
}

fn main() {
    let (n, reps) = (common::arg("--n", 200_000), common::arg("--reps", 3));
    let src = "data { N : int; D : int; M : int; X : matrix[N, D]; Z : matrix[M, D]; y : int[N] in {-1, 1}; }
               latent { f : vector[N] ~ gp(X, 2.0 * sqexp(2.5), inducing = Z); }
               model { y ~ bernoulli_logit(f); }";
    let c = gpmc::check("cavi_sparse", src).unwrap_or_else(|f| panic!("{}", f.render()));
    let schedule = gpm_schedule::build(&c.model, &c.plans).expect("schedule");
    let mut data = common::synthetic(n, 1);
    let Some(Value::Matrix(x)) = data.values.get("X").cloned() else {
        panic!("synthetic data without X")
    };
    let z = gpm_runtime::sparse::kmeans_pp(&x, 100, 1).expect("k-means");
    data.values.insert("M".into(), Value::Scalar(100.0));
    data.values
        .insert("Z".into(), Value::Matrix(std::sync::Arc::new(z)));
    println!(
        "# sparse GP classifier, N = {n}, M = 100, D = {}",
        common::D
    );
    println!("   iterations   seconds        elbo");
    let mut by_k = Vec::new();
    for k in [1usize, 2, 4, 8] {
        let mut times = Vec::new();
        let mut elbo = f64::NAN;
        for _ in 0..reps {
            let t0 = Instant::now();
            let fit = gpm_runtime::cavi::run(
                &schedule,
                &data,
                &HyperValues::default(),
                &CaviConfig {
                    tolerance: 0.0,
                    max_iter: k,
                },
            )
            .expect("cavi");
            times.push(t0.elapsed().as_secs_f64());
            elbo = fit.elbo.last().copied().unwrap_or(f64::NAN);
        }
        times.sort_by(f64::total_cmp);
        let t = times[reps / 2];
        println!("   {k:>10}   {t:>7.3}   {elbo:>12.3}");
        by_k.push((k, t));
    }
    let per_iteration = (by_k[3].1 - by_k[2].1) / 4.0;
    primitives(n, reps);
    println!(
        "# an iteration {per_iteration:.3} s; setup (one-iteration fit minus an iteration) {:.3} s",
        by_k[0].1 - per_iteration
    );
}
