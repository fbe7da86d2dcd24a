//! Heavy-tailed priors on latents — `student_t`, `cauchy`, `laplace` (the Bayesian lasso),
//! `logistic` — found and certified as Gaussian scale mixtures by the same recognizers as likelihoods. A
//! one-coefficient regression has a posterior computable by quadrature from the prior's own
//! density; Gibbs must match it within Monte Carlo error.

use crate::common;
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
    let cases: [(&str, &dyn Fn(f64) -> f64); 4] = [
        ("laplace(0, 0.3)", &|w: f64| -w.abs() / 0.3),
        ("student_t(3, 0, 0.5)", &|w: f64| {
            -2.0 * (1.0 + (w / 0.5).powi(2) / 3.0).ln()
        }),
        ("cauchy(0.2, 0.1)", &|w: f64| {
            -(1.0 + ((w - 0.2) / 0.1).powi(2)).ln()
        }),
        // Added as the worked example of a latent prior (docs/ARCHITECTURE.md): one row of
        // `HEAVY_TAILED`; the recognizers find its Pólya-Gamma mixture, PG(2, 0).
        ("logistic(0.1, 0.2)", &|w: f64| {
            let z = (w - 0.1) / 0.2;
            -z - 2.0 * (-z).exp().ln_1p()
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

/// A brms-style approximate GP (Hilbert-space basis, Riutort-Mayol et al. 2023): weights with
/// per-basis prior scales computed from data and hyperparameters,
/// `w_j ~ normal(0, sdgp * sqrt(spd_j(lscale)))` with the basis' eigenvalues `lambda_j` a
/// transformed datum. Both `sdgp` and `lscale` are sampled (the weights integrated out); the
/// reference is 2-D quadrature over `(log sdgp, log lscale)` of
/// `p(sdgp) p(lscale) N(y | 0, Φ diag(sdgp² spd(lscale)) Φᵀ + σ² I)`.
#[test]
fn per_coordinate_prior_scales_from_data_and_hyperparameters_match_quadrature() {
    let (n, m, l_box) = (30usize, 8usize, 2.5f64);
    let x: Vec<f64> = (0..n)
        .map(|i| -1.0 + 2.0 * i as f64 / (n - 1) as f64)
        .collect();
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| (2.0 * v).sin() + 0.3 * (((i * 7919) % 11) as f64 / 11.0 - 0.5))
        .collect();
    // Basis φ_j(x) = sqrt(1/L) sin(π j (x + L) / (2L)), eigenvalues (π j / (2L))².
    let phi = |i: usize, j: usize| {
        let j = (j + 1) as f64;
        (1.0 / l_box).sqrt() * (std::f64::consts::PI * j * (x[i] + l_box) / (2.0 * l_box)).sin()
    };
    let design: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..m).map(|j| phi(i, j)).collect())
        .collect();
    let sqrt_lambda: Vec<f64> = (0..m)
        .map(|j| std::f64::consts::PI * (j + 1) as f64 / (2.0 * l_box))
        .collect();
    let src = "data { N : int; M : int; B : matrix[N, M]; y : vector[N]; sqrt_lambda : vector[M];
                      let lambda = sqrt_lambda ^ 2; }
               hyper { sdgp : real in 0.. ~ lognormal(0, 0.5); lscale : real in 0.. ~ lognormal(-0.5, 0.5); }
               latent { w : vector[M] ~ normal(0, sdgp * sqrt(sqrt(2 * 3.141592653589793) * lscale * exp(-0.5 * lscale^2 * lambda))); }
               model { y ~ normal(B * w, 0.3); }";
    let c = gpmc::check("m.gpm", src).unwrap_or_else(|e| panic!("{}", e.render()));
    let json = serde_json::json!({"N": n, "M": m, "B": design, "y": y, "sqrt_lambda": sqrt_lambda});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(31), &|_, _| {}).unwrap();
    let spd = |l: f64, j: usize| {
        (2.0 * std::f64::consts::PI).sqrt() * l * (-0.5 * l * l * sqrt_lambda[j].powi(2)).exp()
    };
    let log_evidence = |s: f64, l: f64| {
        let cov = nalgebra::DMatrix::from_fn(n, n, |a, b| {
            (0..m)
                .map(|j| design[a][j] * design[b][j] * s * s * spd(l, j))
                .sum::<f64>()
                + if a == b { 0.09 } else { 0.0 }
        });
        let ch = nalgebra::Cholesky::new(cov).unwrap();
        let u = ch
            .l()
            .solve_lower_triangular(&nalgebra::DVector::from_column_slice(&y))
            .unwrap();
        -0.5 * u.norm_squared() - ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>()
    };
    // Lognormal priors: on the log scale N(μ, 0.5²), so the grid is uniform in log s, log l.
    let (g, lo, hi) = (160, -3.0, 2.0);
    let h = (hi - lo) / g as f64;
    let mut pts = Vec::new();
    for a in 0..g {
        for b in 0..g {
            let (us, ul) = (lo + (a as f64 + 0.5) * h, lo + (b as f64 + 0.5) * h);
            let lp = -0.5 * (us / 0.5).powi(2) - 0.5 * ((ul + 0.5) / 0.5).powi(2)
                + log_evidence(us.exp(), ul.exp());
            pts.push((us.exp(), ul.exp(), lp));
        }
    }
    let mx = pts.iter().map(|p| p.2).fold(f64::NEG_INFINITY, f64::max);
    let mut mom = [[0.0; 3]; 2];
    for (s, l, lp) in pts {
        let w = (lp - mx).exp();
        for (k, v) in [s, l].into_iter().enumerate() {
            mom[k][0] += w;
            mom[k][1] += w * v;
            mom[k][2] += w * v * v;
        }
    }
    for (k, name) in ["sdgp", "lscale"].into_iter().enumerate() {
        let mean = mom[k][1] / mom[k][0];
        let sd = (mom[k][2] / mom[k][0] - mean * mean).sqrt();
        assert_matches(&r, "approximate GP", name, mean, sd);
    }
}
