//! Heavy-tailed priors on latents — `student_t`, `cauchy`, `laplace` (the Bayesian lasso) —
//! found and certified as Gaussian scale mixtures by the same recognizers as likelihoods. A
//! one-coefficient regression has a posterior computable by quadrature from the prior's own
//! density; Gibbs must match it within Monte Carlo error.

mod common;
use common::{assert_matches, four_chains_of_3000};

fn data() -> (Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..12).map(|i| (i as f64 - 5.5) / 4.0).collect();
    // A weak signal, so that the prior's tails and peak matter.
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, xi)| 0.4 * xi + (((i * 7919) % 13) as f64 / 13.0 - 0.5) * 2.0)
        .collect();
    (x, y)
}

/// Mean and sd of `w` under `exp(log_prior(w)) Π N(y | w x, 1)` on a fine grid.
fn quadrature(x: &[f64], y: &[f64], log_prior: &dyn Fn(f64) -> f64) -> (f64, f64) {
    let (lo, hi, m) = (-15.0, 15.0, 60_000);
    let h = (hi - lo) / m as f64;
    let lp: Vec<(f64, f64)> = (0..m)
        .map(|k| {
            let w = lo + (k as f64 + 0.5) * h;
            let ll: f64 = x
                .iter()
                .zip(y)
                .map(|(a, b)| -0.5 * (b - w * a).powi(2))
                .sum();
            (w, ll + log_prior(w))
        })
        .collect();
    let mx = lp.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut m1, mut m2) = (0.0, 0.0, 0.0);
    for (w, l) in lp {
        let p = (l - mx).exp();
        z += p;
        m1 += p * w;
        m2 += p * w * w;
    }
    (m1 / z, (m2 / z - (m1 / z).powi(2)).sqrt())
}

#[test]
fn heavy_tailed_latent_priors_match_quadrature() {
    let (x, y) = data();
    let cases: [(&str, &dyn Fn(f64) -> f64); 3] = [
        ("laplace(0, 0.3)", &|w: f64| -w.abs() / 0.3),
        ("student_t(3, 0, 0.5)", &|w: f64| {
            -2.0 * (1.0 + (w / 0.5).powi(2) / 3.0).ln()
        }),
        ("cauchy(0.2, 0.1)", &|w: f64| {
            -(1.0 + ((w - 0.2) / 0.1).powi(2)).ln()
        }),
    ];
    for (k, (prior, log_prior)) in cases.into_iter().enumerate() {
        let src = format!(
            "data {{ N : int; x : vector[N]; y : vector[N]; }}
             latent {{ w : real ~ {prior}; }}
             model {{ for i in 1..N {{ y[i] ~ normal(w * x[i], 1.0); }} }}"
        );
        let c = gpmc::check("m.gpm", &src).unwrap();
        let plan = &c.plans[0];
        assert!(
            plan.certificate.passed && !plan.aux.is_empty(),
            "{prior}: {}",
            plan.form
        );
        let json = serde_json::json!({"N": x.len(), "x": x, "y": y});
        let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
        let r = gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(20 + k as u64), &|_, _| {})
            .unwrap();
        let (mean, sd) = quadrature(&x, &y, log_prior);
        assert_matches(&r, prior, "w", mean, sd);
    }
}

/// The prior factor is not an observation: `log_lik` and `y_rep` cover the likelihood's
/// observations only; CAVI runs with a monotone ELBO.
#[test]
fn a_prior_factor_observes_nothing() {
    let (x, y) = data();
    let n = x.len();
    let src = "data { N : int; x : vector[N]; y : vector[N]; }
               hyper { lambda : real in 0.. ~ gamma(2, 2); }
               latent { b0 : real ~ flat(); w : vector[3] ~ laplace(0, 1 / lambda); }
               model { for i in 1..N { y[i] ~ normal(b0 + w[1] * x[i] + w[2] * x[i] * x[i] + w[3], 1.0); } }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "x": x, "y": y});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let extras = gpmc::infer::GibbsExtras {
        pointwise: gpm_runtime::gibbs::Pointwise {
            log_lik: true,
            ppc: true,
        },
        ..Default::default()
    };
    let mut config = four_chains_of_3000(3);
    config.draws = 200;
    let r = gpmc::infer::run_gibbs_with(&c, &d, &config, extras, &|_, _| {}).unwrap();
    let names = gpmc::infer::column_names(&c, &r.chains[0].layout);
    assert_eq!(names.len(), r.chains[0].rows[0].len());
    let log_lik = names.iter().filter(|n| n.starts_with("log_lik")).count();
    let y_rep = names.iter().filter(|n| n.starts_with("y_rep")).count();
    assert_eq!((log_lik, y_rep), (n, n), "{names:?}");
    let config = gpm_runtime::cavi::CaviConfig {
        tolerance: 1e-8,
        max_iter: 500,
    };
    let (q, _) = gpmc::infer::run_cavi(&c, &d, &config).unwrap();
    assert!(
        q.elbo.windows(2).all(|w| w[1] >= w[0] - 1e-8),
        "{:?}",
        q.elbo
    );
}
