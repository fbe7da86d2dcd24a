//! The GP block's draw `f | ω` two ways (issue 52, item 2): factorising `B = I + SKS` every
//! sweep, against the pathwise draw whose solves with `B` run by conjugate gradients
//! preconditioned with the fixed prior's leading eigenpairs (`gpm_runtime::pathwise`). The GP
//! classifier with the kernel fixed, on synthetic data (D = 10); the curvature is a Pólya-Gamma
//! draw at the latent values a chain reached after its warm-up. Prints, per N, both draws'
//! times, their ratio, the CG iterations and the preconditioner's rank — the crossover the
//! schedule's `PathwiseDraw::min_rows` is measured against (whole runs decide it: see the
//! rule's comment), and on stderr what one product of `K` with two vectors (a CG iteration's
//! floor) and the CG solve alone take. Not pass/fail.
//!
//! `cargo bench -p gpmc --bench pathwise [-- --n N] [--rank R]`

mod common;

use gpm_runtime::gibbs::Sampler;
use rand::SeedableRng;
use std::time::Instant;

const FIXED: &str = "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {-1, 1}; }
latent { f : vector[N] ~ gp(X, 4.0 * sqexp(3.16)); }
model { y ~ bernoulli_logit(f); }";

fn arg(name: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

fn main() {
    let sizes = match arg("--n") {
        Some(n) => vec![n],
        None => vec![200, 400, 600, 800, 1000, 1500, 2000],
    };
    let c = gpmc::check("pathwise", FIXED).unwrap_or_else(|f| panic!("{}", f.render()));
    let mut schedule = gpm_schedule::build(&c.model, &c.plans).expect("schedule");
    // The prepared block factorises (the rule would give it the spectrum from 800 rows on):
    // the pathwise block is made from it below.
    schedule.blocks[0].pathwise = None;
    let (hv, _) = gpmc::infer::hyper_values(&c);
    println!("# GP classifier, D = 10, kernel fixed; one draw of f | ω (the draw and its conditional mean)");
    println!(
        "{:>8} {:>16} {:>15} {:>8} {:>12} {:>6} {:>14}",
        "N", "factorised_ms", "pathwise_ms", "ratio", "iterations", "rank", "eigen_once_ms"
    );
    for n in sizes {
        let data = common::synthetic(n, 11);
        let sampler = Sampler::new(&schedule, &data, &hv).expect("sampler");
        let mut state = sampler.init();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for s in 1..=50 {
            sampler
                .warmup_sweep(&mut state, &mut rng, s, 50)
                .expect("warm-up");
        }
        let gp = sampler
            .prepared()
            .blocks
            .iter()
            .find_map(|b| match b {
                gpm_runtime::prepared::Block::Gp { gp, .. } => Some(gp.clone()),
                _ => None,
            })
            .expect("a GP block");
        assert!(
            !gp.is_pathwise(),
            "the factorised draw is measured without a spectrum"
        );
        let f = &state.latents[0];
        let y = match data.values.get("y") {
            Some(gpm_runtime::data::Value::Vector(y)) => y.clone(),
            _ => panic!("labels"),
        };
        let a: Vec<f64> = f
            .iter()
            .map(|&fi| gpm_families::polya_gamma_sampler::sample_exact(&mut rng, 1.0, fi))
            .collect();
        let b: Vec<f64> = y.iter().map(|v| v / 2.0).collect();
        let rank = arg("--rank").unwrap_or(gpm_schedule::PathwiseDraw::for_fixed_kernel().rank);
        let t0 = Instant::now();
        let pw = gp.clone().with_spectrum(rank).expect("spectrum");
        let eigen = t0.elapsed().as_secs_f64();
        let reps = if n >= 1500 { 5 } else { 9 };
        let per = (400_000_000 / (n * n * n)).clamp(1, 200);
        let factorised = common::per_call(reps, per, &mut || {
            std::hint::black_box(gp.sample_with_mean(&a, &b, &mut rng).expect("draw"));
        });
        let pathwise = common::per_call(reps, per, &mut || {
            std::hint::black_box(pw.sample_with_mean(&a, &b, &mut rng).expect("draw"));
        });
        let s = nalgebra::DVector::from_iterator(n, a.iter().map(|v| v.sqrt()));
        let rhs = nalgebra::DMatrix::from_fn(n, 2, |i, j| if j == 0 { b[i] / s[i] } else { 1.0 });
        let stats = pw.pathwise_stats(&s, &rhs);
        let (v0, v1) = (b.clone(), a.clone());
        let two = nalgebra::DMatrix::from_fn(n, 2, |i, j| if j == 0 { v0[i] } else { v1[i] });
        let t_dense = common::per_call(reps, per * 10, &mut || {
            std::hint::black_box(gpm_runtime::linalg::matmul(&gp.k, &two));
        });
        let t_solve = common::per_call(reps, per, &mut || {
            std::hint::black_box(pw.pathwise_stats(&s, &rhs));
        });
        eprintln!(
            "N {n}: dense pair {:.4} ms, solve {:.4} ms",
            t_dense * 1e3,
            t_solve * 1e3
        );
        println!(
            "{:>8} {:>16.3} {:>15.3} {:>8.2} {:>12} {:>6} {:>14.1}",
            n,
            factorised * 1e3,
            pathwise * 1e3,
            factorised / pathwise,
            stats.map_or("none".into(), |s| s.iterations.to_string()),
            stats.map_or(0, |s| s.rank),
            eigen * 1e3
        );
    }
}
