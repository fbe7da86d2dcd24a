//! What sampling the kernel hyperparameters costs (issue 17, items 1 and 2): a Gibbs sweep of the
//! GP classifier with Gamma priors on its lengthscale and variance, against a sweep of the same
//! model with the two held at the values the chain reached; the hyperparameter density
//! evaluations per sweep (each one kernel matrix and one Cholesky factorisation), and what one
//! kernel matrix and one factorisation cost alone. Issue goal: a full-Bayes sweep ≤ 3× a fixed one.
//! Each size runs twice: `plain` (the marginal kernel move by elliptical slice sampling) and
//! `surrogate` (the schedule as built: the surrogate transition where its rule applies), with
//! the surrogate's FITC evaluations, its acceptance rate and the hyperparameters' minimum bulk
//! ESS per second of one chain (a rough guide at a few hundred draws: `--kept` for more).
//! Prints a table; not pass/fail.
//!
//! `cargo bench -p gpmc --bench full_bayes [-- --quick | --n N] [--kept K] [--seed S]` (each
//! hyperparameter's ESS printed to stderr)

mod common;

use gpm_runtime::gibbs::Sampler;
use gpm_runtime::kernels::HyperValues;
use rand::SeedableRng;
use std::time::Instant;

const FULL: &str = "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {-1, 1}; }
hyper { lengthscale : real in 0.. ~ gamma(5.0, 1.0); variance : real in 0.. ~ gamma(2.0, 0.5); }
latent { f : vector[N] ~ gp(X, variance * sqexp(lengthscale)); }
model { y ~ bernoulli_logit(f); }";

/// One variant's numbers at one size.
struct Measured {
    sweep_s: f64,
    evaluations: f64,
    surrogate_evaluations: f64,
    acceptance: f64,
    min_ess_per_s: f64,
    hypers: Vec<f64>,
}

/// Warm-up, then `kept` sweeps timed, with the hyperparameters' bulk ESS (one chain).
fn measure(
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    hv: &HyperValues,
    warmup: usize,
    kept: usize,
) -> Measured {
    let sampler = Sampler::new(schedule, data, hv).expect("sampler");
    let mut state = sampler.init();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(chain_seed());
    for s in 1..=warmup {
        sampler
            .warmup_sweep(&mut state, &mut rng, s, warmup)
            .expect("warm-up sweep");
    }
    let (e0, s0, m0, a0) = (
        state.hyper_evaluations,
        state.surrogate_evaluations,
        state.surrogate_moves,
        state.surrogate_accepted,
    );
    let mut trace = vec![Vec::with_capacity(kept); state.hypers.len()];
    let t0 = Instant::now();
    for _ in 0..kept {
        sampler.sweep(&mut state, &mut rng).expect("sweep");
        for (t, &h) in trace.iter_mut().zip(&state.hypers) {
            t.push(h);
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let ess: Vec<f64> = trace
        .iter()
        .map(|t| gpm_runtime::diagnostics::ess_bulk(&[t.as_slice()]))
        .collect();
    eprintln!("ESS per hyperparameter: {ess:?}");
    let min_ess = ess.iter().copied().fold(f64::INFINITY, f64::min);
    let moves = (state.surrogate_moves - m0) as f64;
    Measured {
        sweep_s: seconds / kept as f64,
        evaluations: (state.hyper_evaluations - e0) as f64 / kept as f64,
        surrogate_evaluations: (state.surrogate_evaluations - s0) as f64 / kept as f64,
        acceptance: if moves > 0.0 {
            (state.surrogate_accepted - a0) as f64 / moves
        } else {
            f64::NAN
        },
        min_ess_per_s: min_ess / seconds,
        hypers: state.hypers.clone(),
    }
}

/// The chain's seed: `--seed S` (default 1), for ESS estimates over several chains.
fn chain_seed() -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--seed")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--n N`: one size only (a larger N than the table's, measured on purpose).
    let one: Option<usize> = args
        .iter()
        .position(|a| a == "--n")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok());
    // `--kept K`: kept sweeps per variant (ESS estimates want more than the cost does).
    let kept_arg: Option<usize> = args
        .iter()
        .position(|a| a == "--kept")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok());
    let sizes: Vec<usize> = match (one, quick) {
        (Some(n), _) => vec![n],
        (None, true) => vec![300],
        (None, false) => vec![200, 500, 1000],
    };
    let warmup = if sizes.iter().any(|&n| n > 1000) {
        150
    } else {
        300
    };
    let c = gpmc::check("full_bayes", FULL).unwrap_or_else(|f| panic!("{}", f.render()));
    let schedule = gpm_schedule::build(&c.model, &c.plans).expect("schedule");
    // The same schedule with the plain slice move: what the surrogate transition is against.
    let mut plain = schedule.clone();
    for k in &mut plain.kernel_updates {
        k.surrogate = None;
    }
    let (hv, _) = gpmc::infer::hyper_values(&c);
    println!(
        "# GP classifier, D = {}, lengthscale and variance sampled; {warmup} warm-up sweeps; \
         `plain`: the marginal move by slice sampling, `surrogate`: by the surrogate transition \
         (applies from {} rows)",
        common::D,
        gpm_schedule::SurrogateTransition::for_marginal_update().min_rows
    );
    println!(
        "       N   move        full_sweep_ms   fixed_sweep_ms   ratio   evaluations/sweep   \
         surrogate_evals/sweep   accepted   min_ESS/s   kernel_ms   cholesky_ms"
    );
    for &n in &sizes {
        let data = common::synthetic(n, 1);
        let kept = kept_arg.unwrap_or(if n <= 500 {
            400
        } else if n <= 1000 {
            150
        } else {
            60
        });
        let (kernel_s, chol, fixed, runs) = {
            let runs: Vec<(&str, Measured)> = [("plain", &plain), ("surrogate", &schedule)]
                .into_iter()
                .map(|(name, s)| (name, measure(s, &data, &hv, warmup, kept)))
                .collect();
            let (kernel_s, chol, fixed) = fixed_costs(&schedule, &data, &hv, &runs[1].1.hypers, n);
            (kernel_s, chol, fixed, runs)
        };
        for (name, m) in &runs {
            println!(
                "{n:>8}   {name:<10}  {:>13.3}   {:>14.3}   {:>5.2}   {:>17.2}   {:>21.1}   {:>8.2}   {:>9.1}   {:>9.3}   {:>11.3}",
                m.sweep_s * 1e3,
                fixed * 1e3,
                m.sweep_s / fixed,
                m.evaluations,
                m.surrogate_evaluations,
                m.acceptance,
                m.min_ess_per_s,
                kernel_s * 1e3,
                chol * 1e3
            );
        }
    }
}

/// A fixed-hyperparameter sweep at `hypers`, one kernel matrix and one factorisation there.
fn fixed_costs(
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    hv: &HyperValues,
    hypers: &[f64],
    n: usize,
) -> (f64, f64, f64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let (l, v) = (hypers[0], hypers[1]);
    let fixed_src = format!(
        "data {{ N : int; D : int; X : matrix[N, D]; y : int[N] in {{-1, 1}}; }}
         latent {{ f : vector[N] ~ gp(X, {v:.17e} * sqexp({l:.17e})); }}
         model {{ y ~ bernoulli_logit(f); }}"
    );
    let cf = gpmc::check("fixed", &fixed_src).unwrap_or_else(|f| panic!("{}", f.render()));
    let sf = gpm_schedule::build(&cf.model, &cf.plans).expect("schedule");
    let fixed_sampler = Sampler::new(&sf, data, &HyperValues::default()).expect("sampler");
    let mut fs = fixed_sampler.init();
    for _ in 0..5 {
        fixed_sampler.sweep(&mut fs, &mut rng).expect("sweep");
    }
    let fixed = common::per_call(5, 20, &mut || {
        fixed_sampler.sweep(&mut fs, &mut rng).expect("sweep")
    });
    let gpm_runtime::data::Value::Matrix(x) = &data.values["X"] else {
        panic!("X is a matrix")
    };
    let mut at = hv.clone();
    at.scalars.copy_from_slice(hypers);
    let kernel = match &schedule.priors[0] {
        gpm_schedule::BoundPrior::Gp { kernel, .. } => kernel.clone(),
        _ => panic!("a GP prior"),
    };
    let d2 = gpm_runtime::kernels::squared_distances(x);
    let kernel_s = common::per_call(5, 20, &mut || {
        std::hint::black_box(
            gpm_runtime::kernels::training_matrix(&kernel, x, &d2, &at).expect("kernel"),
        );
    });
    let k = gpm_runtime::kernels::training_matrix(&kernel, x, &d2, &at).expect("kernel")
        + nalgebra::DMatrix::<f64>::identity(n, n);
    let chol = common::per_call(5, 20, &mut || {
        std::hint::black_box(gpm_runtime::linalg::cholesky(k.clone()).expect("pd"));
    });
    (kernel_s, chol, fixed)
}
