//! The generic update (elliptical slice sampling of the blocks read by factors no rule
//! augments) against exact references: one-dimensional quadrature of a Poisson log-link
//! posterior; the augmented sampler of the same model (the two are exact samplers of one
//! posterior); and a model mixing an augmented factor with a generic one on the same GP, whose
//! ellipse then carries the augmented factor's Gaussian terms.

use crate::common;
use common::{sine_labels, POISSON_LOG};
use gpm_runtime::gibbs::GibbsConfig;
use gpmc::infer::InferResult;
use serde_json::json;

fn run(c: &gpmc::Checked, data: &serde_json::Value, draws: usize, seed: u64) -> InferResult {
    let d = gpmc::data::from_json_value(&c.model, data).unwrap();
    let config = GibbsConfig {
        first_chain: 0,
        chains: 4,
        warmup: 200,
        draws,
        thin: 1,
        seed,
        nuts: Default::default(),
    };
    gpmc::infer::run_gibbs(c, &d, &config, &|_, _| {}).unwrap()
}

fn summary<'a>(r: &'a InferResult, name: &str) -> &'a gpm_runtime::diagnostics::Summary {
    &r.summaries.iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn a_factor_no_rule_augments_takes_the_generic_update_and_says_so() {
    let c = gpmc::check("poisson_log", POISSON_LOG).unwrap();
    assert!(c.plans[0].generic.is_some());
    let text = gpmc::report::text(&c);
    assert!(text.contains("no augmentation: generic update"), "{text}");
    assert!(text.contains("elliptical slice sampling"), "{text}");
    let s = c.schedule.as_ref().unwrap();
    assert!(s
        .gibbs
        .iter()
        .any(|st| matches!(st, gpm_schedule::GibbsStep::Elliptical { .. })));
}

#[test]
fn generic_update_matches_quadrature_on_a_poisson_log_link() {
    let e = [0.5, 1.0, 2.0, 1.5, 0.8, 1.2, 0.3, 2.5, 1.0, 0.7, 1.1, 1.9];
    let y = [1, 2, 6, 3, 1, 4, 0, 9, 2, 2, 3, 5];
    let data = json!({"N": e.len(), "E": e, "y": y});
    let c = gpmc::check("poisson_log", POISSON_LOG).unwrap();
    let r = run(&c, &data, 3000, 5);
    // Quadrature of p(b | y) ∝ N(b; 0, 1.5²) Π Poisson(y_i; E_i e^b) on a fine grid.
    let log_post = |b: f64| {
        let lik: f64 = e
            .iter()
            .zip(&y)
            .map(|(ei, yi)| *yi as f64 * (ei * b.exp()).ln() - ei * b.exp())
            .sum();
        lik - 0.5 * (b / 1.5).powi(2)
    };
    let grid: Vec<f64> = (0..20001)
        .map(|k| -5.0 + 10.0 * k as f64 / 20000.0)
        .collect();
    let lp: Vec<f64> = grid.iter().map(|b| log_post(*b)).collect();
    let top = lp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = lp.iter().map(|l| (l - top).exp()).collect();
    let z: f64 = w.iter().sum();
    let mean: f64 = grid.iter().zip(&w).map(|(b, w)| b * w).sum::<f64>() / z;
    let var: f64 = grid
        .iter()
        .zip(&w)
        .map(|(b, w)| (b - mean).powi(2) * w)
        .sum::<f64>()
        / z;
    let g = summary(&r, "b");
    let zscore = (g.mean - mean) / g.mcse_mean;
    assert!(
        zscore.abs() < 4.0,
        "posterior mean {} vs quadrature {mean} (z {zscore:.2})",
        g.mean
    );
    assert!(
        (g.sd / var.sqrt() - 1.0).abs() < 0.06,
        "posterior sd {} vs quadrature {}",
        g.sd,
        var.sqrt()
    );
    assert!(g.rhat < 1.01 && g.ess_bulk > 1000.0, "mixing: {g:?}");
}

/// Both samplers target the same posterior: every latent's mean agrees within Monte Carlo
/// error.
fn assert_same_posterior(a: &InferResult, b: &InferResult, what: &str) {
    let mut worst: f64 = 0.0;
    for (name, s) in a.summaries.iter().filter(|(n, _)| n != "lp__") {
        let t = summary(b, name);
        let z = (s.mean - t.mean) / (s.mcse_mean.powi(2) + t.mcse_mean.powi(2)).sqrt();
        worst = worst.max(z.abs());
        assert!(
            z.abs() < 4.5,
            "{what} {name}: {} vs {} (z = {z:.2})",
            s.mean,
            t.mean
        );
    }
    eprintln!("{what}: largest |z| = {worst:.2}");
}

#[test]
fn generic_update_agrees_with_the_augmentation_on_the_poisson_gp() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let src = std::fs::read_to_string(root.join("poisson_gp.gpm")).unwrap();
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("poisson_gp.data.json")).unwrap())
            .unwrap();
    let augmented = run(&gpmc::check("poisson_gp", &src).unwrap(), &data, 1500, 11);
    let generic_c = gpmc::check_with("poisson_gp", &src, true).unwrap();
    assert!(generic_c.plans.iter().all(|p| p.generic.is_some()));
    let generic = run(&generic_c, &data, 1500, 12);
    assert_same_posterior(&augmented, &generic, "poisson_gp");
}

const MIXED: &str = r#"
data {
  N : int;
  x : vector[N];
  y : int[N] in {-1, 1};
  c : int[N] in 0..;
}
latent {
  f : vector[N] ~ gp(x, sqexp(1.0));
}
model {
  y ~ bernoulli_logit(f);
  for i in 1..N { c[i] ~ poisson(exp(f[i])); }
}
"#;

#[test]
fn a_mixed_model_keeps_its_augmentation_and_agrees_with_the_all_generic_run() {
    let x: Vec<f64> = (0..25).map(|i| -2.5 + 0.2 * i as f64).collect();
    let y = sine_labels(&x);
    let counts: Vec<i64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| ((v.sin().exp() * 1.5) as i64 + (i % 3) as i64 - 1).max(0))
        .collect();
    let data = json!({"N": x.len(), "x": x, "y": y, "c": counts});
    let mixed_c = gpmc::check("mixed", MIXED).unwrap();
    assert!(mixed_c.plans[0].generic.is_none() && mixed_c.plans[1].generic.is_some());
    let text = gpmc::report::text(&mixed_c);
    assert!(
        text.contains("times the augmented factors' Gaussian terms"),
        "{text}"
    );
    let mixed = run(&mixed_c, &data, 1500, 3);
    let generic = run(
        &gpmc::check_with("mixed", MIXED, true).unwrap(),
        &data,
        1500,
        4,
    );
    assert_same_posterior(&mixed, &generic, "mixed");
}

/// The generic variational update reaches the Gaussian variational optimum: for one scalar
/// latent with a Poisson log link, `ELBO(m, s) = Σ y_i (log E_i + m) − Σ E_i e^(m + s²/2) −
/// (m² + s²)/(2·1.5²) + log s` in closed form; its maximiser (Newton on the stationarity
/// equations) must be CAVI's `q(b)`, and the ELBO must end at its maximum.
#[test]
fn generic_cavi_reaches_the_gaussian_variational_optimum() {
    let e = [0.5, 1.0, 2.0, 1.5, 0.8, 1.2, 0.3, 2.5, 1.0, 0.7, 1.1, 1.9];
    let y = [1, 2, 6, 3, 1, 4, 0, 9, 2, 2, 3, 5];
    let data = json!({"N": e.len(), "E": e, "y": y});
    let c = gpmc::check("poisson_log", POISSON_LOG).unwrap();
    let d = gpmc::data::from_json_value(&c.model, &data).unwrap();
    let (r, _) = gpmc::infer::run_cavi(
        &c,
        &d,
        &gpm_runtime::cavi::CaviConfig {
            tolerance: 1e-12,
            max_iter: 2000,
        },
    )
    .unwrap();
    assert!(r.converged, "{} iterations", r.elbo.len());
    let (big_y, big_e) = (y.iter().sum::<i64>() as f64, e.iter().sum::<f64>());
    let p2 = 1.5f64 * 1.5;
    // Stationarity: Y − S e^(m+s²/2) − m/p² = 0 and −S s e^(m+s²/2) − s/p² + 1/s = 0.
    let (mut m, mut s2) = (0.0f64, 0.1f64);
    for _ in 0..200 {
        let k = big_e * (m + s2 / 2.0).exp();
        // m from the first equation by Newton, then s² from the second in closed form.
        m -= (big_y - k - m / p2) / (-k - 1.0 / p2);
        let k = big_e * (m + s2 / 2.0).exp();
        s2 = 1.0 / (k + 1.0 / p2);
    }
    let (_, qm, qv) = r.latents.iter().find(|(n, _, _)| n == "b").unwrap();
    assert!(
        (qm[0] - m).abs() < 1e-6,
        "q(b) mean {} vs optimum {m}",
        qm[0]
    );
    assert!(
        (qv[0] / s2 - 1.0).abs() < 1e-4,
        "q(b) variance {} vs optimum {s2}",
        qv[0]
    );
    let best = r.elbo.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let last = *r.elbo.last().unwrap();
    assert!(
        last >= best - 1e-9 * best.abs(),
        "ELBO ended at {last}, below {best}"
    );
}

/// Random slopes and intercepts: a covariate scales terms of one predictor, so the Pólya-Gamma
/// plan draws all weights as one joint block and samples the group scales with the block
/// integrated out; the generic update (elliptical slice sampling, the scales given the
/// weights) is an independent exact sampler of the same posterior.
#[test]
fn random_slopes_agree_between_the_augmentation_and_the_generic_update() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let src = std::fs::read_to_string(root.join("hierarchical_logistic.gpm")).unwrap();
    let data: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("hierarchical_logistic.data.json")).unwrap(),
    )
    .unwrap();
    let c = gpmc::check("hierarchical_logistic", &src).unwrap();
    assert_eq!(
        c.model.predictors.len(),
        1,
        "one predictor with scaled terms"
    );
    assert!(c.plans[0].generic.is_none());
    let augmented = run(&c, &data, 2000, 21);
    let generic_c = gpmc::check_with("hierarchical_logistic", &src, true).unwrap();
    let generic = run(&generic_c, &data, 2000, 22);
    assert_same_posterior(&augmented, &generic, "hierarchical_logistic");
}
