//! A factor no rule augments but Gaussian in one predictor given the others
//! (`gpm_augment::generic_plan`): `y ~ normal(a, exp(c))` draws `a` exactly given `c` and moves
//! only `c` by the generic update. Gibbs must match 2-D grid quadrature of the exact posterior.

use crate::common;
use common::{assert_matches, four_chains_of_3000};

fn data() -> Vec<f64> {
    (0..15)
        .map(|i| 0.7 + 1.3 * (((i * 37 % 15) as f64 / 15.0) - 0.5) * 2.0)
        .collect()
}

/// Mean and sd of `a` and `c` under `a ~ N(0, 2²)`, `c ~ N(0, 1)`, `y_i ~ N(a, e^{2c})`, on a
/// 600 × 600 grid.
fn quadrature(y: &[f64]) -> [(f64, f64); 2] {
    let (na, nc) = (600, 600);
    let (alo, ahi, clo, chi) = (-3.0, 4.0, -2.5, 1.5);
    let mut lp = vec![0.0; na * nc];
    for ia in 0..na {
        let a = alo + (ia as f64 + 0.5) * (ahi - alo) / na as f64;
        for ic in 0..nc {
            let c = clo + (ic as f64 + 0.5) * (chi - clo) / nc as f64;
            let s2 = (2.0 * c).exp();
            let ll: f64 = y.iter().map(|v| -c - 0.5 * (v - a).powi(2) / s2).sum();
            lp[ia * nc + ic] = ll - 0.5 * (a / 2.0).powi(2) - 0.5 * c * c;
        }
    }
    let mx = lp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut m) = (0.0, [[0.0; 2]; 2]);
    for ia in 0..na {
        let a = alo + (ia as f64 + 0.5) * (ahi - alo) / na as f64;
        for ic in 0..nc {
            let c = clo + (ic as f64 + 0.5) * (chi - clo) / nc as f64;
            let w = (lp[ia * nc + ic] - mx).exp();
            z += w;
            m[0][0] += w * a;
            m[0][1] += w * a * a;
            m[1][0] += w * c;
            m[1][1] += w * c * c;
        }
    }
    let stat = |k: usize| {
        let mean = m[k][0] / z;
        (mean, (m[k][1] / z - mean * mean).sqrt())
    };
    [stat(0), stat(1)]
}

#[test]
fn the_gaussian_predictor_is_drawn_exactly_and_gibbs_matches_quadrature() {
    let y = data();
    let src = "data { N : int; y : vector[N]; }
               latent { a : real ~ normal(0, 2); c : real ~ normal(0, 1); }
               model { for i in 1..N { y[i] ~ normal(a, exp(c)); } }";
    let c = gpmc::check("m.gpm", src).unwrap_or_else(|f| panic!("{}", f.render()));
    let plan = &c.plans[0];
    assert!(plan.generic.is_some(), "no rule augments it");
    assert_eq!(plan.collapsed.len(), 1, "{}", plan.form);
    let s = gpmc::infer::schedule(&c).unwrap();
    // Two blocks: `a`'s drawn from its Gaussian conditional, `c`'s by the generic update.
    assert_eq!(s.blocks.len(), 2);
    assert_eq!(
        s.blocks.iter().filter(|b| b.elliptical.is_empty()).count(),
        1
    );
    let json = serde_json::json!({"N": y.len(), "y": y});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(9), &|_, _| {}).unwrap();
    let [(ma, sa), (mc, sc)] = quadrature(&y);
    assert_matches(&r, "normal(a, exp(c))", "a", ma, sa);
    assert_matches(&r, "normal(a, exp(c))", "c", mc, sc);
    // Under `--generic` the factor stays whole: one block, the generic update.
    let g = gpmc::check_with("m.gpm", src, true).unwrap();
    assert!(g.plans[0].collapsed.is_empty());
}

/// A GP drawn exactly given the log-scale, its lengthscale sampled with the GP integrated out
/// (the collapsed curvature), agrees with the whole factor under the generic update (an
/// independent sampler of the same posterior) within Monte Carlo error, for the lengthscale,
/// the log-scale and the GP's values.
#[test]
fn a_collapsed_gp_with_a_sampled_kernel_agrees_with_the_generic_update() {
    let src = "data { N : int; x : vector[N]; y : vector[N]; }
               hyper { ell : real in 0.. ~ gamma(2, 2); }
               latent { f : vector[N] ~ gp(x, sqexp(ell)); g : real ~ normal(0, 1); }
               model { for i in 1..N { y[i] ~ normal(f[i], exp(g)); } }";
    let json = serde_json::json!({"N": 5, "x": [0, 1, 2, 3, 4], "y": [0.1, 0.5, -0.3, 1.2, 0.8]});
    let run = |generic: bool, seed: u64| {
        let c = gpmc::check_with("m.gpm", src, generic).unwrap();
        assert_eq!(c.plans[0].collapsed.is_empty(), generic);
        let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
        gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(seed), &|_, _| {}).unwrap()
    };
    let (split, whole) = (run(false, 3), run(true, 4));
    for name in ["ell", "g", "f.1", "f.3", "f.5"] {
        let get =
            |r: &gpmc::infer::InferResult| r.summaries.iter().find(|(n, _)| n == name).unwrap().1;
        let (a, b) = (get(&split), get(&whole));
        let z = (a.mean - b.mean) / (a.mcse_mean.powi(2) + b.mcse_mean.powi(2)).sqrt();
        eprintln!(
            "{name}: split {:.4} ± {:.4}, whole {:.4} ± {:.4}, z {z:.2}",
            a.mean, a.mcse_mean, b.mean, b.mcse_mean
        );
        assert!(z.abs() < 4.0 && a.rhat < 1.01, "{name}: z {z}");
    }
}
