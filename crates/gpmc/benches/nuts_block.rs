//! The sweep's NUTS step against the updates it replaces (issue 35, item 2): on hierarchical
//! models whose likelihood takes the generic update, the schedule as built (one NUTS
//! transition on the weights and their prior's scales, [`gpm_schedule::GibbsStep::Nuts`])
//! against the schedule without NUTS blocks (elliptical slice steps on the weights, slice
//! sampling of the scales given them with the non-centred and Laplace-standardised moves).
//! Per model and seed: the minimum bulk ESS over every column, chain-seconds (warm-up and
//! sampling summed over the chains) and their ratio; then the ratio of the two schedules'
//! min-ESS per second. Prints a table; not pass/fail.
//!
//! `cargo bench -p gpmc --bench nuts_block [-- --seeds K] [--draws D]`

use gpm_runtime::gibbs::GibbsConfig;
use serde_json::json;

mod common;

const EIGHT_SCHOOLS: &str = "data { J : int; y : vector[J]; sigma : vector[J]; }
hyper { mu : real ~ normal(0, 5); tau : real in 0.. ~ half_cauchy(5); }
latent { theta : vector[J] ~ normal(mu, tau); }
model { for j in 1..J { y[j] ~ normal(theta[j], sigma[j]); } }";

/// A Poisson GLMM with a log link: no rule augments `poisson(exp(η))`, so this one takes the
/// generic update without `--generic`.
const POISSON_GLMM: &str = "data { N : int; G : int; g : int[N] in 1..G; y : int[N] in 0..; }
hyper { s : real in 0.. ~ half_normal(1); }
latent { b0 : real ~ normal(0, 2); u : vector[G] ~ normal(0, s); }
model { for i in 1..N { y[i] ~ poisson(exp(b0 + u[g[i]])); } }";

/// 20 groups of 20 counts, `u_g ~ N(0, 0.5²)`, `b0 = 1` (a fixed stream: the same data on every
/// run).
fn glmm_data() -> serde_json::Value {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let (groups, per) = (20, 20);
    let u: Vec<f64> = (0..groups)
        .map(|_| 0.5 * rng.sample::<f64, _>(rand_distr::StandardNormal))
        .collect();
    let (mut g, mut y) = (Vec::new(), Vec::new());
    for (k, uk) in u.iter().enumerate() {
        for _ in 0..per {
            let lambda = (1.0 + uk).exp();
            let count = rand_distr::Distribution::sample(
                &rand_distr::Poisson::new(lambda).unwrap(),
                &mut rng,
            );
            g.push(k + 1);
            y.push(count as i64);
        }
    }
    json!({"N": groups * per, "G": groups, "g": g, "y": y})
}

/// (min bulk ESS, chain-seconds, max R-hat) of one run.
fn run(c: &gpmc::Checked, data: &gpm_runtime::data::Data, seed: u64, draws: usize) -> [f64; 3] {
    let config = GibbsConfig {
        first_chain: 0,
        chains: 4,
        warmup: 1000,
        draws,
        thin: 1,
        seed,
        nuts: Default::default(),
    };
    let r = gpmc::infer::run_gibbs(c, data, &config, &|_, _| {}).expect("run");
    let seconds: f64 = r
        .times
        .iter()
        .map(|t| t.warmup_seconds + t.sampling_seconds)
        .sum();
    let ess = r
        .summaries
        .iter()
        .map(|(_, s)| s.ess_bulk)
        .fold(f64::INFINITY, f64::min);
    let rhat = r.summaries.iter().map(|(_, s)| s.rhat).fold(0.0, f64::max);
    [ess, seconds, rhat]
}

fn main() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/");
    let hl = std::fs::read_to_string(format!("{root}hierarchical_logistic.gpm")).unwrap();
    let hl_data: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}hierarchical_logistic.data.json")).unwrap(),
    )
    .unwrap();
    let eight = json!({"J": 8, "y": [28, 8, -3, 7, -1, 1, 18, 12],
                       "sigma": [15, 10, 16, 11, 9, 11, 10, 18]});
    let cases = [
        ("eight schools --generic", EIGHT_SCHOOLS, eight),
        ("hierarchical_logistic --generic", hl.as_str(), hl_data),
        ("Poisson GLMM (log link)", POISSON_GLMM, glmm_data()),
    ];
    let (seeds, draws) = (common::arg("--seeds", 3), common::arg("--draws", 1000));
    println!("4 chains × {draws} draws after 1 000 warm-up sweeps; min bulk ESS over every column");
    println!(
        "{:<34} {:>4} {:>22} {:>22} {:>8}",
        "model", "seed", "slice: ESS / s / R̂", "NUTS: ESS / s / R̂", "ratio"
    );
    for (name, source, data) in cases {
        let nuts = gpmc::check_with(name, source, true).expect("check");
        let mut plain = gpmc::check_with(name, source, true).expect("check");
        let options = gpm_schedule::Options { nuts_blocks: false };
        plain.schedule = gpm_schedule::build_with(&plain.model, &plain.plans, options);
        assert!(!nuts.schedule.as_ref().unwrap().nuts_blocks.is_empty());
        let d = gpmc::data::from_json_value(&nuts.model, &data).expect("data");
        let mut ratios = Vec::new();
        for seed in 1..=seeds as u64 {
            let p = run(&plain, &d, seed, draws);
            let n = run(&nuts, &d, seed, draws);
            let ratio = (n[0] / n[1]) / (p[0] / p[1]);
            ratios.push(ratio);
            println!(
                "{name:<34} {seed:>4} {:>8.0} {:>6.2} {:>6.3} {:>8.0} {:>6.2} {:>6.3} {ratio:>7.2}×",
                p[0], p[1], p[2], n[0], n[1], n[2]
            );
        }
        ratios.sort_by(f64::total_cmp);
        println!(
            "{name}: NUTS/slice min-ESS per second, median {:.2}× (range {:.2}-{:.2}×)",
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
}
