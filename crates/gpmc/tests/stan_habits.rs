//! Stan habits in `.gpm` (issue 49, item 5): a vectorised statement with constant indices or a
//! grouped index is its loop, `target += normal_lpdf(y | ...)` is `y ~ normal(...)` — the same
//! model, so the same draws bit for bit for the same seed — and each message a Stan user met
//! says what to write.

use crate::common;
use common::four_chains;

fn draws(src: &str, data: &serde_json::Value) -> Vec<Vec<f64>> {
    let c = gpmc::check("m.gpm", src).unwrap_or_else(|f| panic!("{}", f.render()));
    let d = gpmc::data::from_json_value(&c.model, data).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &d, &four_chains(50, 100, 3), &|_, _| {}).unwrap();
    r.chains.into_iter().flat_map(|c| c.rows).collect()
}

fn data() -> serde_json::Value {
    let n = 30;
    let x: Vec<f64> = (0..n).map(|i| (i % 7) as f64 / 3.0 - 1.0).collect();
    let g: Vec<i64> = (0..n).map(|i| (i % 4) as i64 + 1).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| 0.5 + x[i] + 0.2 * g[i] as f64 + ((i * 13 % 5) as f64 - 2.0) * 0.3)
        .collect();
    serde_json::json!({"N": n, "G": 4, "x": x, "g": g, "y": y})
}

const HEAD: &str = "data { N : int; G : int; x : vector[N]; g : int[N] in 1..G; y : vector[N]; }
    hyper { s : real in 0.. ~ half_normal(1); }
    latent { beta : vector[2] ~ normal(0, 10); a : vector[G] ~ normal(0, 1); }";

#[test]
fn a_vectorised_statement_with_indices_is_its_loop() {
    let looped = format!("{HEAD} model {{ for i in 1..N {{ y[i] ~ normal(beta[1] + beta[2] * x[i] + a[g[i]], s); }} }}");
    let vectorised = format!("{HEAD} model {{ y ~ normal(beta[1] + beta[2] * x + a[g], s); }}");
    let lpdf =
        format!("{HEAD} model {{ target += normal_lpdf(y | beta[1] + beta[2] * x + a[g], s); }}");
    let reference = draws(&looped, &data());
    assert!(reference.len() == 400 && reference.iter().flatten().all(|v| v.is_finite()));
    assert_eq!(draws(&vectorised, &data()), reference);
    assert_eq!(draws(&lpdf, &data()), reference);
}

#[test]
fn messages_a_stan_user_meets_say_what_to_write() {
    let cases = [
        (
            "data { N : int; y : vector[N]; } hyper { sigma : real in 0.. = 1; } latent { mu : real ~ normal(0, 1); } model { sigma ~ cauchy(0, 2.5); y ~ normal(mu, sigma); }",
            "sigma : real in 0.. ~ cauchy(0, 2.5);",
        ),
        (
            "data { N : int; y : vector[N]; } latent { beta : vector[2]; } model { y ~ normal(beta[1], 1); }",
            "~ flat()",
        ),
        (
            "data { N : int; y : vector[N]; } hyper { sigma : real in 0..; } latent { mu : real ~ normal(0, 1); } model { y ~ normal(mu, sigma); }",
            "~ flat()",
        ),
        (
            "data { N : int; y : vector[N]; } latent { mu : real ~ normal(0, 1); } model { for i in 1..N { target += log_mix(0.3, y[i], mu); } }",
            "write its density itself",
        ),
    ];
    for (src, says) in cases {
        let f = gpmc::check("m.gpm", src)
            .err()
            .unwrap_or_else(|| panic!("accepted: {src}"));
        let help = f.diagnostics[0].help.clone().unwrap_or_default();
        assert!(help.contains(says), "{src}\n-> {}", f.render());
    }
}

/// Issue 53: brms' default `phi ~ gamma(0.01, 0.01)` kept `neg_binomial_2_log` from its
/// Pólya-Gamma augmentation ("here b is not positive"): statrs's Gamma quantile is NaN at such
/// shapes, so the certifying probe saw no value of `phi`. Every shape now augments.
#[test]
fn a_negative_binomial_with_brms_default_dispersion_prior_is_augmented() {
    for prior in [
        "gamma(0.01, 0.01)",
        "gamma(0.001, 0.001)",
        "gamma(2.0, 0.1)",
    ] {
        let src = format!(
            "data {{ N : int; x : vector[N]; y : int[N] in 0..; }}
             hyper {{ phi : real in 0.. ~ {prior}; }}
             latent {{ b : real ~ normal(0, 2); w : real ~ normal(0, 2); }}
             model {{ y ~ neg_binomial_2_log(b + x * w, phi); }}"
        );
        let c = gpmc::check("nb.gpm", &src).unwrap_or_else(|f| panic!("{}", f.render()));
        assert!(
            c.plans[0].generic.is_none(),
            "{prior}: {:?}",
            c.plans[0].generic
        );
        assert!(
            c.plans[0].form.contains("Pólya-Gamma"),
            "{prior}: {}",
            c.plans[0].form
        );
    }
}
