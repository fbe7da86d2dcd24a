//! Gibbs against an independent reference: for each likelihood, a model with one scalar latent
//! `b ~ normal(0, 2)` and a handful of observations. Its posterior is computed by quadrature on
//! a fine grid from the *original* (un-augmented) log-density; the Gibbs draws of the augmented
//! model must match its mean and standard deviation within Monte Carlo error (the MCSE from the
//! bulk ESS), and R̂ must be below 1.01.

use crate::common;
use common::{
    assert_matches, assert_matches_rhat, four_chains, four_chains_of_3000, log_scale_posterior,
};
use gpm_runtime::gibbs::GibbsConfig;

struct Case {
    name: &'static str,
    data_decl: &'static str,
    hyper: &'static str,
    lik: &'static str,
    data: &'static str,
    /// log p(y_i | b) for the quadrature, at one observation.
    loglik: fn(y: f64, b: f64) -> f64,
}

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn lgamma(x: f64) -> f64 {
    statrs::function::gamma::ln_gamma(x)
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "logistic ±1",
            data_decl: "N : int; y : int[N] in {-1, 1};",
            hyper: "",
            lik: "y ~ bernoulli_logit(b);",
            data: r#"{"N": 7, "y": [1, 1, -1, 1, 1, -1, 1]}"#,
            loglik: |y, b| sig(y * b).ln(),
        },
        Case {
            name: "logistic ±1, 60 obs",
            data_decl: "N : int; y : int[N] in {-1, 1};",
            hyper: "",
            lik: "y ~ bernoulli_logit(b);",
            data: r#"{"N": 60, "y": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1]}"#,
            loglik: |y, b| sig(y * b).ln(),
        },
        Case {
            name: "student-t",
            data_decl: "N : int; y : vector[N];",
            hyper: "nu : real in 0.. = 3.0; s : real in 0.. = 0.5;",
            lik: "y ~ student_t(nu, b, s);",
            data: r#"{"N": 6, "y": [0.3, 0.9, -0.2, 4.5, 0.6, 0.1]}"#,
            loglik: |y, b| -2.0 * (1.0 + ((y - b) / 0.5).powi(2) / 3.0).ln(),
        },
        Case {
            name: "laplace",
            data_decl: "N : int; y : vector[N];",
            hyper: "s : real in 0.. = 0.7;",
            lik: "for i in 1..N { target += -abs(y[i] - b) / s; }",
            data: r#"{"N": 5, "y": [0.3, 1.4, -0.2, 0.8, 2.0]}"#,
            loglik: |y, b| -(y - b).abs() / 0.7,
        },
        Case {
            name: "exponential power 1.5",
            data_decl: "N : int; y : vector[N];",
            hyper: "k : real in 0.. = 1.5;",
            lik: "for i in 1..N { target += -k * abs(y[i] - b)^1.5; }",
            data: r#"{"N": 5, "y": [0.3, 1.4, -0.2, 0.8, 2.0]}"#,
            loglik: |y, b| -1.5 * (y - b).abs().powf(1.5),
        },
        Case {
            name: "svm hinge",
            data_decl: "N : int; y : int[N] in {-1, 1};",
            hyper: "",
            lik: "for i in 1..N { factor(exp(-2 * max(1 - y[i] * b, 0))); }",
            data: r#"{"N": 6, "y": [1, 1, -1, 1, 1, 1]}"#,
            loglik: |y, b| -2.0 * (1.0 - y * b).max(0.0),
        },
        Case {
            name: "poisson scaled logistic",
            data_decl: "N : int; y : int[N] in 0..;",
            hyper: "lambda : real in 0.. = 6.0;",
            lik: "y ~ poisson(lambda * logistic(b));",
            data: r#"{"N": 5, "y": [3, 5, 2, 4, 6]}"#,
            loglik: |y, b| y * (6.0 * sig(b)).ln() - 6.0 * sig(b) - lgamma(y + 1.0),
        },
        Case {
            name: "negative binomial",
            data_decl: "N : int; y : int[N] in 0..;",
            hyper: "r : real in 0.. = 2.0;",
            lik: "y ~ neg_binomial_logit(r, b);",
            data: r#"{"N": 5, "y": [1, 4, 0, 2, 7]}"#,
            loglik: |y, b| y * sig(b).ln() + 2.0 * sig(-b).ln(),
        },
        Case {
            name: "heteroscedastic student-t (NB MGF)",
            data_decl: "N : int; y : vector[N];",
            hyper: "nu : real in 0.. = 3.0; lambda : real in 0.. = 4.0;",
            lik: "y ~ student_t(nu, 0, 1 / sqrt(lambda * logistic(b)));",
            data: r#"{"N": 6, "y": [0.3, -1.9, 0.2, 2.5, -0.6, 0.1]}"#,
            loglik: |y, b| {
                0.5 * (4.0 * sig(b)).ln() - 2.0 * (1.0 + y * y * 4.0 * sig(b) / 3.0).ln()
            },
        },
        Case {
            name: "gaussian",
            data_decl: "N : int; y : vector[N];",
            hyper: "",
            lik: "y ~ normal(b, 0.8);",
            data: r#"{"N": 4, "y": [0.5, 1.1, 0.2, 0.9]}"#,
            loglik: |y, b| -0.5 * ((y - b) / 0.8).powi(2),
        },
    ]
}

fn quadrature(case: &Case, ys: &[f64]) -> (f64, f64) {
    let (lo, hi, n) = (-12.0, 12.0, 24_001);
    let h = (hi - lo) / (n - 1) as f64;
    let logp: Vec<f64> = (0..n)
        .map(|k| {
            let b = lo + k as f64 * h;
            -0.5 * (b / 2.0).powi(2) + ys.iter().map(|&y| (case.loglik)(y, b)).sum::<f64>()
        })
        .collect();
    let m = logp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logp.iter().map(|l| (l - m).exp()).collect();
    let z: f64 = w.iter().sum();
    let mean = (0..n).map(|k| w[k] * (lo + k as f64 * h)).sum::<f64>() / z;
    let var = (0..n)
        .map(|k| w[k] * (lo + k as f64 * h - mean).powi(2))
        .sum::<f64>()
        / z;
    (mean, var.sqrt())
}

#[test]
fn gibbs_matches_quadrature_for_every_likelihood() {
    for case in cases() {
        // `b` keeps the response in the vectorised call while the predictor is `b`.
        let src = format!(
            "data {{ {} }} hyper {{ {} }} latent {{ b : real ~ normal(0, 2); }} model {{ {} }}",
            case.data_decl, case.hyper, case.lik
        );
        let checked = gpmc::check("case.gpm", &src)
            .unwrap_or_else(|f| panic!("{}: {}", case.name, f.render()));
        let json: serde_json::Value = serde_json::from_str(case.data).unwrap();
        let data = gpmc::data::from_json_value(&checked.model, &json).unwrap();
        let ys: Vec<f64> = data.vector("y").unwrap().to_vec();
        let config = four_chains(300, 3000, 11);
        let r = gpmc::infer::run_gibbs(&checked, &data, &config, &|_, _| {}).unwrap();
        let (_, s) = r.summaries.iter().find(|(n, _)| n == "b").unwrap();
        let (mean, sd) = quadrature(&case, &ys);
        let z = (s.mean - mean) / s.mcse_mean;
        // The sd of the draws has relative standard error about 1/sqrt(2 ESS).
        let sd_z = (s.sd / sd - 1.0) / (0.5 / s.ess_bulk).sqrt();
        eprintln!("{:<24} mean {:.4} vs {:.4} (z {:+.2}), sd {:.4} vs {:.4} (z {:+.2}), ess {:.0}, rhat {:.4}", case.name, s.mean, mean, z, s.sd, sd, sd_z, s.ess_bulk, s.rhat);
        assert!(
            z.abs() < 4.5,
            "{}: mean {} vs quadrature {} (z = {z})",
            case.name,
            s.mean,
            mean
        );
        assert!(
            sd_z.abs() < 4.5,
            "{}: sd {} vs quadrature {} (z = {sd_z})",
            case.name,
            s.sd,
            sd
        );
        assert!(s.rhat < 1.01, "{}: rhat {}", case.name, s.rhat);
        // The Rao-Blackwellised mean (the average of b's conditional means given the
        // auxiliaries) estimates the same posterior mean, with its own batch-means error.
        let (_, rb) = r
            .rao_blackwell
            .iter()
            .find(|(n, _)| n == "b")
            .unwrap_or_else(|| panic!("{}: no Rao-Blackwellised mean of b", case.name));
        let z_rb = (rb.mean - mean) / rb.mcse;
        eprintln!(
            "{:<24} Rao-Blackwellised {:.4} (z {:+.2}), mcse {:.2e} vs plain {:.2e} ({:.2}x)",
            case.name,
            rb.mean,
            z_rb,
            rb.mcse,
            s.mcse_mean,
            s.mcse_mean / rb.mcse
        );
        if case.name == "gaussian" {
            // No auxiliaries: the conditional mean is the posterior mean itself.
            assert!(
                (rb.mean - mean).abs() < 1e-6 && rb.mcse < 1e-9,
                "{}: {rb:?}",
                case.name
            );
        } else {
            assert!(
                z_rb.abs() < 4.5,
                "{}: {rb:?} vs quadrature {mean}",
                case.name
            );
            assert!(
                rb.mcse < 1.1 * s.mcse_mean,
                "{}: {rb:?} vs plain mcse {}",
                case.name,
                s.mcse_mean
            );
        }
    }
}

/// Two dimensions: logistic regression with a slope and an intercept on 100 observations,
/// against quadrature on a 2-D grid — the joint (dense) Gaussian block and many Pólya-Gamma
/// variables at once.
#[test]
fn logistic_regression_in_two_dimensions_matches_grid_quadrature() {
    let n = 100;
    let x: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.731).sin() * 2.0).collect();
    // Labels from a fixed pseudo-random rule with slope 1.5 and intercept -0.5.
    let y: Vec<i64> = (0..n)
        .map(|i| {
            let u = (((i * 7919 + 13) % 1000) as f64 + 0.5) / 1000.0;
            if u < sig(1.5 * x[i] - 0.5) {
                1
            } else {
                0
            }
        })
        .collect();
    let src = "data { N : int; X : matrix[N, 1]; y : int[N] in {0, 1}; }
               latent { w : vector[1] ~ normal(0, 2); b : real ~ normal(0, 2); }
               model { y ~ bernoulli_logit(X * w + b); }";
    let c = gpmc::check("lr2.gpm", src).unwrap();
    let json =
        serde_json::json!({"N": n, "X": x.iter().map(|v| vec![*v]).collect::<Vec<_>>(), "y": y});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let seed = std::env::var("GPMC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(17);
    let draws = std::env::var("GPMC_DRAWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let config = GibbsConfig {
        first_chain: 0,
        chains: 4,
        warmup: 300,
        draws,
        thin: 1,
        seed,
        nuts: Default::default(),
    };
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    // Grid quadrature of the exact posterior.
    let (lo, hi, m) = (-4.0, 6.0, 801);
    let h = (hi - lo) / (m - 1) as f64;
    let mut logp = Vec::with_capacity(m * m);
    for a in 0..m {
        for bb in 0..m {
            let (w, b) = (lo + a as f64 * h, lo + bb as f64 * h);
            let mut l = -0.5 * (w * w + b * b) / 4.0;
            for i in 0..n {
                let eta = w * x[i] + b;
                l += if y[i] == 1 {
                    sig(eta).ln()
                } else {
                    sig(-eta).ln()
                };
            }
            logp.push(l);
        }
    }
    let mx = logp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let wts: Vec<f64> = logp.iter().map(|l| (l - mx).exp()).collect();
    let z: f64 = wts.iter().sum();
    let (mut ew, mut eb, mut ew2, mut eb2) = (0.0, 0.0, 0.0, 0.0);
    for a in 0..m {
        for bb in 0..m {
            let p = wts[a * m + bb] / z;
            let (w, b) = (lo + a as f64 * h, lo + bb as f64 * h);
            ew += p * w;
            eb += p * b;
            ew2 += p * w * w;
            eb2 += p * b * b;
        }
    }
    for (name, mean, sd) in [
        ("w.1", ew, (ew2 - ew * ew).sqrt()),
        ("b", eb, (eb2 - eb * eb).sqrt()),
    ] {
        assert_matches(&r, "logistic regression", name, mean, sd);
    }
}

/// Non-conjugate likelihood hyperparameters with priors: Student-t regression on one scalar
/// latent with `s ~ gamma(4, 8)` (scale) and `nu ~ gamma(6, 1)` (degrees of freedom), both
/// slice-sampled within Gibbs. Reference: quadrature of the exact posterior on a 3-D grid over
/// `(b, s, nu)`, from the Student-t density with its normalising terms in `s` and `nu`.
#[test]
fn slice_sampled_likelihood_hyperparameters_match_grid_quadrature() {
    let ys = [0.3, 0.9, -0.2, 4.5, 0.6, 0.1, 1.2, -0.7];
    let src = "data { N : int; y : vector[N]; }
               hyper { nu : real in 0.. ~ gamma(6, 1); s : real in 0.. ~ gamma(4, 8); }
               latent { b : real ~ normal(0, 2); }
               model { y ~ student_t(nu, b, s); }";
    let c = gpmc::check("t.gpm", src).unwrap();
    let json = serde_json::json!({"N": ys.len(), "y": ys});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let config = four_chains(300, 4000, 5);
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    for name in ["nu", "s"] {
        let how = &r.hypers.iter().find(|h| h.0 == name).unwrap().2;
        assert!(how.contains("slice"), "{name}: {how}");
    }
    // Grid: midpoints of cells, weights ∝ exact posterior density.
    let grid = |lo: f64, hi: f64, n: usize| -> Vec<f64> {
        (0..n)
            .map(|k| lo + (k as f64 + 0.5) * (hi - lo) / n as f64)
            .collect()
    };
    let (bs, ss, nus) = (
        grid(-3.0, 5.0, 160),
        grid(0.0, 3.0, 150),
        grid(0.0, 30.0, 150),
    );
    let mut logp = Vec::with_capacity(bs.len() * ss.len() * nus.len());
    for &nu in &nus {
        let norm = lgamma((nu + 1.0) / 2.0) - lgamma(nu / 2.0) - 0.5 * nu.ln();
        let prior_nu = 5.0 * nu.ln() - nu;
        for &s in &ss {
            let prior_s = 3.0 * s.ln() - 8.0 * s;
            for &b in &bs {
                let mut l = prior_nu + prior_s - b * b / 8.0;
                for &y in &ys {
                    l += norm - s.ln() - (nu + 1.0) / 2.0 * (((y - b) / s).powi(2) / nu).ln_1p();
                }
                logp.push(l);
            }
        }
    }
    let mx = logp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut m = [[0.0; 2]; 3];
    let mut z = 0.0;
    let mut k = 0;
    for &nu in &nus {
        for &s in &ss {
            for &b in &bs {
                let w = (logp[k] - mx).exp();
                k += 1;
                z += w;
                for (j, v) in [b, s, nu].into_iter().enumerate() {
                    m[j][0] += w * v;
                    m[j][1] += w * v * v;
                }
            }
        }
    }
    for (j, name) in ["b", "s", "nu"].into_iter().enumerate() {
        let mean = m[j][0] / z;
        let sd = (m[j][1] / z - mean * mean).sqrt();
        assert_matches(&r, "", name, mean, sd);
    }
}

/// The lengthscales' prior is `lognormal(0, 0.5)`; ℓ ∈ [0.05, 8].
fn posterior_over_lengthscale(log_evidence: &dyn Fn(f64) -> f64) -> (f64, f64) {
    log_scale_posterior(log_evidence, 0.5, (0.05f64.ln(), 8.0f64.ln(), 2000))
}

/// Posterior mean and sd of a lengthscale with a `lognormal(0, 0.5)` prior shared by GPs with
/// Gaussian noise 0.3, one per data vector in `ys`, all on inputs `x`: quadrature over ℓ of
/// `p(ℓ) Π_j N(y_j | 0, k_scale·K_ℓ + σ²I)`, each evidence by a dense Cholesky.
fn lengthscale_posterior(x: &[f64], ys: &[Vec<f64>], k_scale: f64) -> (f64, f64) {
    let n = x.len();
    let log_evidence = |l: f64| {
        let k = nalgebra::DMatrix::from_fn(n, n, |i, j| {
            k_scale * (-(x[i] - x[j]).powi(2) / (2.0 * l * l)).exp()
                + if i == j { 0.09 } else { 0.0 }
        });
        let ch = nalgebra::Cholesky::new(k).unwrap();
        ys.iter()
            .map(|y| {
                let yv = nalgebra::DVector::from_vec(y.clone());
                let a = ch.l().solve_lower_triangular(&yv).unwrap();
                -0.5 * a.norm_squared() - ch.l().diagonal().iter().map(|d| d.ln()).sum::<f64>()
            })
            .sum::<f64>()
    };
    posterior_over_lengthscale(&log_evidence)
}

/// The same for `y ~ N(f₁ + f₂, σ²)`, `y₂ ~ N(f₂, σ²)`: `(y, y₂)` is Gaussian with covariance
/// `[[2K + σ²I, K], [K, K + σ²I]]`.
fn coupled_lengthscale_posterior(x: &[f64], y: &[f64], y2: &[f64]) -> (f64, f64) {
    let n = x.len();
    let log_evidence = |l: f64| {
        let k = |i: usize, j: usize| (-(x[i % n] - x[j % n]).powi(2) / (2.0 * l * l)).exp();
        let c = nalgebra::DMatrix::from_fn(2 * n, 2 * n, |i, j| {
            let scale = if i < n && j < n { 2.0 } else { 1.0 };
            scale * k(i, j) + if i == j { 0.09 } else { 0.0 }
        });
        let ch = nalgebra::Cholesky::new(c).unwrap();
        let yv = nalgebra::DVector::from_iterator(2 * n, y.iter().chain(y2).cloned());
        let a = ch.l().solve_lower_triangular(&yv).unwrap();
        -0.5 * a.norm_squared() - ch.l().diagonal().iter().map(|d| d.ln()).sum::<f64>()
    };
    posterior_over_lengthscale(&log_evidence)
}

fn regression_inputs(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| -3.0 + 6.0 * i as f64 / (n - 1) as f64)
        .collect()
}

/// `n` evenly spaced inputs on [−3, 3] and `amplitude · sin(1.3 x)` plus fixed noise within ±0.3.
fn regression_data(n: usize, amplitude: f64) -> (Vec<f64>, Vec<f64>) {
    let x = regression_inputs(n);
    let y = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            amplitude * (1.3 * v).sin() + 0.3 * (((i * 7919) % 101) as f64 / 101.0 - 0.5) * 2.0
        })
        .collect();
    (x, y)
}

/// Gibbs on a regression model over `(x, y)`: 4 chains, 200 warm-up sweeps, 2500 draws.
fn run_regression(src: &str, x: &[f64], y: &[f64], seed: u64) -> gpmc::infer::InferResult {
    let c = gpmc::check("gpr.gpm", src).unwrap();
    let json = serde_json::json!({"N": x.len(), "x": x, "y": y});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let config = four_chains(200, 2500, seed);
    gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap()
}

/// A kernel hyperparameter with a prior: GP regression (Gaussian noise 0.3) with
/// `lengthscale ~ lognormal(0, 0.5)`, sampled within Gibbs with the GP integrated out.
/// Reference: quadrature over the lengthscale of `p(ℓ) N(y | 0, K_ℓ + σ²I)`. (The marginal for
/// non-constant curvatures, as Pólya-Gamma gives, is checked against the pseudo-observation form
/// in `gpm-runtime`'s unit tests.)
#[test]
fn slice_sampled_kernel_lengthscale_matches_quadrature() {
    let (x, y) = regression_data(25, 1.0);
    let src = "data { N : int; x : vector[N]; y : vector[N]; }
               hyper { lengthscale : real in 0.. ~ lognormal(0, 0.5); }
               latent { f : vector[N] ~ gp(x, sqexp(lengthscale)); }
               model { y ~ normal(f, 0.3); }";
    let r = run_regression(src, &x, &y, 8);
    let how = &r.hypers.iter().find(|h| h.0 == "lengthscale").unwrap().2;
    assert!(how.contains("slice"), "{how}");
    let (mean, sd) = lengthscale_posterior(&x, &[y], 1.0);
    assert_matches(&r, "one GP", "lengthscale", mean, sd);
}

/// A kernel's lengthscale and variance sampled together (the schedule's joint move: elliptical
/// slice sampling about a Gaussian fitted in warm-up, both coordinates at once) on GP
/// regression with priors `lognormal(0, 0.5)` on both. Reference: quadrature on a 2-D grid of
/// `(log ℓ, log v)` of `p(ℓ) p(v) N(y | 0, v K_ℓ + σ²I)`.
#[test]
fn jointly_sampled_lengthscale_and_variance_match_two_dimensional_quadrature() {
    let (x, y) = regression_data(25, 1.5);
    let n = x.len();
    let src = "data { N : int; x : vector[N]; y : vector[N]; }
               hyper { lengthscale : real in 0.. ~ lognormal(0, 0.5);
                       variance : real in 0.. ~ lognormal(0, 0.5); }
               latent { f : vector[N] ~ gp(x, variance * sqexp(lengthscale)); }
               model { y ~ normal(f, 0.3); }";
    let r = run_regression(src, &x, &y, 11);
    // The grid: log ℓ and log v each over [−2.5, 2.5] (five prior sds), 160 midpoints each.
    let m = 160;
    let (lo, hi) = (-2.5f64, 2.5f64);
    let h = (hi - lo) / m as f64;
    let yv = nalgebra::DVector::from_vec(y.clone());
    let mut points = Vec::with_capacity(m * m);
    for a in 0..m {
        let ul = lo + (a as f64 + 0.5) * h;
        for b in 0..m {
            let uv = lo + (b as f64 + 0.5) * h;
            let (l, v) = (ul.exp(), uv.exp());
            let k = nalgebra::DMatrix::from_fn(n, n, |i, j| {
                v * (-(x[i] - x[j]).powi(2) / (2.0 * l * l)).exp() + if i == j { 0.09 } else { 0.0 }
            });
            let ch = nalgebra::Cholesky::new(k).unwrap();
            let w = ch.l().solve_lower_triangular(&yv).unwrap();
            let evidence =
                -0.5 * w.norm_squared() - ch.l().diagonal().iter().map(|d| d.ln()).sum::<f64>();
            let prior = -0.5 * (ul / 0.5).powi(2) - 0.5 * (uv / 0.5).powi(2);
            points.push((l, v, prior + evidence));
        }
    }
    let mx = points.iter().map(|p| p.2).fold(f64::NEG_INFINITY, f64::max);
    let mut z = 0.0;
    let mut moments = [0.0; 4];
    for &(l, v, lp) in &points {
        let w = (lp - mx).exp();
        z += w;
        moments[0] += w * l;
        moments[1] += w * l * l;
        moments[2] += w * v;
        moments[3] += w * v * v;
    }
    let (ml, mv) = (moments[0] / z, moments[2] / z);
    let sl = (moments[1] / z - ml * ml).sqrt();
    let sv = (moments[3] / z - mv * mv).sqrt();
    assert_matches(&r, "joint", "lengthscale", ml, sl);
    assert_matches(&r, "joint", "variance", mv, sv);
}

/// A lengthscale shared by two GPs (two regressions on the same inputs): sampled given both
/// GPs' values (they cannot be integrated out together within a sweep). Reference: quadrature
/// over ℓ of `p(ℓ) N(y₁ | 0, K_ℓ + σ²I) N(y₂ | 0, K_ℓ + σ²I)`.
#[test]
fn shared_kernel_lengthscale_matches_quadrature() {
    let n = 25;
    let x = regression_inputs(n);
    let wiggle = |i: usize, k: usize| 0.3 * ((((i + k) * 7919) % 101) as f64 / 101.0 - 0.5) * 2.0;
    let y1: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| (1.3 * v).sin() + wiggle(i, 0))
        .collect();
    let y2: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| (0.9 * v).cos() + wiggle(i, 37))
        .collect();
    let src = "data { N : int; x : vector[N]; y1 : vector[N]; y2 : vector[N]; }
               hyper { lengthscale : real in 0.. ~ lognormal(0, 0.5); }
               latent { f1 : vector[N] ~ gp(x, sqexp(lengthscale));
                        f2 : vector[N] ~ gp(x, sqexp(lengthscale)); }
               model { y1 ~ normal(f1, 0.3); y2 ~ normal(f2, 0.3); }";
    let c = gpmc::check("shared.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "x": x, "y1": y1, "y2": y2});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let config = four_chains(300, 5000, 9);
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    let how = &r.hypers.iter().find(|h| h.0 == "lengthscale").unwrap().2;
    assert!(how.contains("slice"), "{how}");
    let (mean, sd) = lengthscale_posterior(&x, &[y1, y2], 1.0);
    assert_matches(&r, "shared by two GPs", "lengthscale", mean, sd);
}

/// A variance read by one GP's kernel next to a lengthscale both GPs share: both are sampled
/// (the variance with the shared group, not left behind by it), and the variance's posterior
/// agrees with the same model where the lengthscale is fixed at its posterior mean only
/// loosely — so this checks that it moves and stays finite.
#[test]
fn own_hyperparameter_of_a_shared_group_block_is_sampled() {
    let n = 25;
    let x = regression_inputs(n);
    let y1: Vec<f64> = x.iter().map(|&v| 2.0 * (1.3 * v).sin()).collect();
    let y2: Vec<f64> = x.iter().map(|&v| (0.9 * v).cos()).collect();
    let src = "data { N : int; x : vector[N]; y1 : vector[N]; y2 : vector[N]; }
               hyper { lengthscale : real in 0.. ~ lognormal(0, 0.5);
                       variance : real in 0.. ~ lognormal(0, 1); }
               latent { f1 : vector[N] ~ gp(x, variance * sqexp(lengthscale));
                        f2 : vector[N] ~ gp(x, sqexp(lengthscale)); }
               model { y1 ~ normal(f1, 0.3); y2 ~ normal(f2, 0.3); }";
    let c = gpmc::check("own.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "x": x, "y1": y1, "y2": y2});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let config = GibbsConfig {
        first_chain: 0,
        chains: 2,
        warmup: 100,
        draws: 500,
        thin: 1,
        seed: 3,
        nuts: Default::default(),
    };
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    for name in ["lengthscale", "variance"] {
        let how = &r.hypers.iter().find(|h| h.0 == name).unwrap().2;
        assert!(how.contains("integrated out"), "{name}: {how}");
        let s = &r.summaries.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(
            s.sd > 0.01 && s.mean.is_finite() && s.rhat < 1.05,
            "{name}: {s:?}"
        );
    }
    // The data's amplitude is 2 for f1: the variance's posterior leaves the prior median 1.
    let v = &r.summaries.iter().find(|(n, _)| n == "variance").unwrap().1;
    assert!(v.mean > 1.5, "variance {}", v.mean);
}

/// A lengthscale shared by two GPs that one likelihood couples, `y ~ normal(f1 + f2, 0.3)`:
/// the blocks cannot be integrated out together, so ℓ is drawn given both GPs' values (a slower
/// Gibbs step). Reference: `y ~ N(0, 2K_ℓ + σ²I)`, quadrature over ℓ.
#[test]
fn coupled_shared_kernel_lengthscale_matches_quadrature() {
    let n = 25;
    let x = regression_inputs(n);
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| 1.4 * (1.1 * v).sin() + 0.3 * (((i * 7919) % 101) as f64 / 101.0 - 0.5))
        .collect();
    let y2: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| (0.7 * v).cos() + 0.3 * (((i * 104729) % 97) as f64 / 97.0 - 0.5))
        .collect();
    let src = "data { N : int; x : vector[N]; y : vector[N]; y2 : vector[N]; }
               hyper { lengthscale : real in 0.. ~ lognormal(0, 0.5); }
               latent { f1 : vector[N] ~ gp(x, sqexp(lengthscale));
                        f2 : vector[N] ~ gp(x, sqexp(lengthscale)); }
               model { y ~ normal(f1 + f2, 0.3); y2 ~ normal(f2, 0.3); }";
    let c = gpmc::check("coupled.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "x": x, "y": y, "y2": y2});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let config = four_chains(500, 10000, 10);
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    let how = &r.hypers.iter().find(|h| h.0 == "lengthscale").unwrap().2;
    assert!(how.contains("slice"), "{how}");
    let (mean, sd) = coupled_lengthscale_posterior(&x, &y, &y2);
    // ℓ | f₁, f₂ mixes slowly (bulk ESS ~150 of 40 000 draws here): R̂ is looser.
    assert_matches_rhat(&r, "coupled", "lengthscale", mean, sd, 1.05);
}

/// Heteroscedastic likelihoods with a latent location, scalar latents `a` (location) and `b`
/// (log-odds of the precision λσ(b)), both `normal(0, 2)` — so `a` and `b` would share the
/// dense block, while Gibbs must draw `a` from its collapsed conditional on its own.
/// - Gaussian (thesis §7.2.1): Poisson MGF and Pólya-Gamma, `a` collapsed.
/// - Student-t (thesis §7.2.2): a Gamma scale mixture τ, then the Poisson MGF and Pólya-Gamma;
///   `a` is drawn given τ and `b` with the counts and ω integrated out (partially collapsed).
///
/// Reference: quadrature of the exact posterior on a 2-D grid.
#[test]
fn heteroscedastic_likelihoods_with_a_latent_location_match_grid_quadrature() {
    let ys = [0.4, 1.9, 0.2, 1.1, -2.6, 0.8, 1.3, 0.5];
    let (nu, lambda) = (3.0, 4.0);
    type LogLik = Box<dyn Fn(f64, f64, f64) -> f64>;
    let cases: [(&str, &str, LogLik); 2] = [
        (
            "gaussian",
            "y ~ normal(a, 1 / sqrt(lambda * logistic(b)));",
            Box::new(|y: f64, a: f64, prec: f64| 0.5 * prec.ln() - 0.5 * prec * (y - a).powi(2)),
        ),
        (
            "student-t",
            "y ~ student_t(nu, a, 1 / sqrt(lambda * logistic(b)));",
            Box::new(move |y: f64, a: f64, prec: f64| {
                0.5 * prec.ln() - (nu + 1.0) / 2.0 * (prec * (y - a).powi(2) / nu).ln_1p()
            }),
        ),
    ];
    for (case, lik, loglik) in cases {
        let src = format!(
            "data {{ N : int; y : vector[N]; }}
             hyper {{ nu : real in 0.. = 3.0; lambda : real in 0.. = 4.0; }}
             latent {{ a : real ~ normal(0, 2); b : real ~ normal(0, 2); }}
             model {{ {lik} }}"
        );
        let c = gpmc::check("ht.gpm", &src).unwrap();
        let json = serde_json::json!({"N": ys.len(), "y": ys});
        let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
        let config = four_chains(300, 4000, 23);
        let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
        let (lo, hi, m) = (-8.0, 8.0, 801);
        let h = (hi - lo) / (m - 1) as f64;
        let mut logp = Vec::with_capacity(m * m);
        for ia in 0..m {
            for ib in 0..m {
                let (a, b) = (lo + ia as f64 * h, lo + ib as f64 * h);
                let prec = lambda * sig(b);
                let mut l = -(a * a + b * b) / 8.0;
                for &y in &ys {
                    l += loglik(y, a, prec);
                }
                logp.push(l);
            }
        }
        let mx = logp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let (mut z, mut m1, mut m2) = (0.0, [0.0; 2], [0.0; 2]);
        for ia in 0..m {
            for ib in 0..m {
                let w = (logp[ia * m + ib] - mx).exp();
                let v = [lo + ia as f64 * h, lo + ib as f64 * h];
                z += w;
                for j in 0..2 {
                    m1[j] += w * v[j];
                    m2[j] += w * v[j] * v[j];
                }
            }
        }
        for (j, name) in ["a", "b"].into_iter().enumerate() {
            let mean = m1[j] / z;
            let sd = (m2[j] / z - mean * mean).sqrt();
            assert_matches(&r, case, name, mean, sd);
        }
    }
}

/// The scale of a `normal` prior on regression weights with its own prior (shrinkage),
/// `w ~ normal(0, s)`, `s ~ lognormal(0, 1)`, Gaussian noise 0.5: sampled with the weights
/// integrated out. Reference: quadrature over `s` of `p(s) N(y | 0, s² X Xᵀ + σ² I)`.
#[test]
fn normal_prior_scale_matches_quadrature() {
    let (n, d) = (30, 4);
    let x: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..d)
                .map(|j| (((i * 7 + j * 13) % 17) as f64 / 8.5 - 1.0) * (1.0 + j as f64 * 0.3))
                .collect()
        })
        .collect();
    let w_true = [0.8, -0.5, 0.0, 0.3];
    let y: Vec<f64> = (0..n)
        .map(|i| {
            (0..d).map(|j| x[i][j] * w_true[j]).sum::<f64>()
                + 0.5 * ((((i * 7919) % 101) as f64 / 101.0) - 0.5) * 2.0
        })
        .collect();
    let src = "data { N : int; D : int; X : matrix[N, D]; y : vector[N]; }
               hyper { s : real in 0.. ~ lognormal(0, 1); }
               latent { w : vector[D] ~ normal(0, s); }
               model { y ~ normal(X * w, 0.5); }";
    let c = gpmc::check("shrink.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "D": d, "X": x, "y": y});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let config = four_chains_of_3000(4);
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    let how = &r.hypers.iter().find(|h| h.0 == "s").unwrap().2;
    assert!(
        how.contains("weights of its normal prior integrated out"),
        "{how}"
    );
    let log_evidence = |s: f64| {
        let cov = nalgebra::DMatrix::from_fn(n, n, |i, k| {
            s * s * (0..d).map(|j| x[i][j] * x[k][j]).sum::<f64>() + if i == k { 0.25 } else { 0.0 }
        });
        let ch = nalgebra::Cholesky::new(cov).unwrap();
        let a = ch
            .l()
            .solve_lower_triangular(&nalgebra::DVector::from_vec(y.clone()))
            .unwrap();
        -0.5 * a.norm_squared() - ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>()
    };
    // log s ~ N(0, 1): quadrature on the log scale.
    let (mean, sd) = log_scale_posterior(&log_evidence, 1.0, (-6.0, 4.0, 4000));
    assert_matches(&r, "normal prior", "s", mean, sd);
}

/// The Rao-Blackwellised means of a GP block: with Gaussian noise and fixed hyperparameters the
/// conditional mean of `f` is the posterior mean `K (K + σ²I)⁻¹ y` at every draw (exactly, with
/// no Monte Carlo error), which checks the mean that Matheron's rule draws about.
#[test]
fn rao_blackwellised_gp_means_are_the_closed_form() {
    let (x, y) = regression_data(30, 1.0);
    let src = "data { N : int; x : vector[N]; y : vector[N]; }
               latent { f : vector[N] ~ gp(x, 1.5 * sqexp(0.8)); }
               model { y ~ normal(f, 0.3); }";
    let r = run_regression(src, &x, &y, 5);
    let n = x.len();
    let k = nalgebra::DMatrix::from_fn(n, n, |i, j| {
        1.5 * (-(x[i] - x[j]).powi(2) / (2.0 * 0.8 * 0.8)).exp()
    });
    let mut ks = k.clone();
    for i in 0..n {
        ks[(i, i)] += 0.09;
    }
    let want = &k
        * ks.cholesky()
            .unwrap()
            .solve(&nalgebra::DVector::from_vec(y.clone()));
    for i in 0..n {
        let name = format!("f.{}", i + 1);
        let (_, rb) = r.rao_blackwell.iter().find(|(m, _)| *m == name).unwrap();
        assert!(
            (rb.mean - want[i]).abs() < 1e-7,
            "{name}: {rb:?} vs {}",
            want[i]
        );
        assert!(rb.mcse < 1e-9, "{name}: {rb:?}");
        // The plain average agrees within its own error.
        let (_, s) = r.summaries.iter().find(|(m, _)| *m == name).unwrap();
        assert!(
            ((s.mean - want[i]) / s.mcse_mean).abs() < 4.5,
            "{name}: {} vs {}",
            s.mean,
            want[i]
        );
    }
}

/// The inputs and labels of the two-point GP classifier `f ~ gp(x, 2 sqexp(0.8))`.
const TWO_POINTS: ([f64; 2], [f64; 2]) = ([0.0, 0.6], [1.0, -1.0]);

/// The two-point GP classifier, checked, with its data.
fn two_point_model() -> (gpmc::Checked, gpm_runtime::data::Data) {
    let src = "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
               latent { f : vector[N] ~ gp(x, 2.0 * sqexp(0.8)); }
               model { y ~ bernoulli_logit(f); }";
    let (x, y) = TWO_POINTS;
    let c = gpmc::check("gpc.gpm", src).unwrap();
    let json = serde_json::json!({"N": 2, "x": x, "y": y});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    (c, data)
}

/// Its posterior means and sds of `f₁`, `f₂` by quadrature of `N(f | 0, K) σ(y₁f₁) σ(y₂f₂)` on a
/// 601 × 601 grid over ±6 prior sds.
fn two_point_posterior() -> (f64, f64, f64, f64) {
    let (x, y) = TWO_POINTS;
    let r2 = (x[1] - x[0]) * (x[1] - x[0]);
    let (k11, k12) = (2.0, 2.0 * (-r2 / (2.0 * 0.64)).exp());
    let det = k11 * k11 - k12 * k12;
    let (n, half) = (601usize, 6.0 * 2f64.sqrt());
    let h = 2.0 * half / (n - 1) as f64;
    let mut moments = [0.0; 5];
    for a in 0..n {
        for b in 0..n {
            let (f1, f2) = (-half + a as f64 * h, -half + b as f64 * h);
            let quad = (k11 * f1 * f1 - 2.0 * k12 * f1 * f2 + k11 * f2 * f2) / det;
            let w = (-0.5 * quad).exp() * sig(y[0] * f1) * sig(y[1] * f2);
            for (m, v) in moments.iter_mut().zip([1.0, f1, f2, f1 * f1, f2 * f2]) {
                *m += w * v;
            }
        }
    }
    let (m1, m2) = (moments[1] / moments[0], moments[2] / moments[0]);
    let sd1 = (moments[3] / moments[0] - m1 * m1).sqrt();
    let sd2 = (moments[4] / moments[0] - m2 * m2).sqrt();
    (m1, m2, sd1, sd2)
}

/// The marginal elliptical steps (`GibbsStep::MarginalElliptical`) on a GP classifier of two
/// points, against quadrature on a 2-D grid of `N(f | 0, K) σ(y₁f₁) σ(y₂f₂)`: the schedule's
/// sweep (Pólya-Gamma block draw, then the steps) and a chain of the steps alone (each followed
/// by the auxiliaries' redraw) must both match the posterior means and sds of `f₁` and `f₂`.
#[test]
fn marginal_elliptical_steps_match_grid_quadrature() {
    use gpm_schedule::GibbsStep;
    let (mut c, data) = two_point_model();
    let (m1, m2, sd1, sd2) = two_point_posterior();
    let config = four_chains_of_3000(21);
    let step = c
        .schedule
        .as_ref()
        .unwrap()
        .gibbs
        .iter()
        .find(|s| matches!(s, GibbsStep::MarginalElliptical { .. }))
        .cloned()
        .expect("the GP classifier's sweep has marginal elliptical steps");
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    assert_matches(&r, "sweep", "f.1", m1, sd1);
    assert_matches(&r, "sweep", "f.2", m2, sd2);
    // The steps alone, one per sweep, each redrawing the auxiliaries.
    let GibbsStep::MarginalElliptical { block, factors, .. } = step else {
        unreachable!()
    };
    // Under the prior: the steps alone draw no block, so no reference is ever fitted.
    c.schedule.as_mut().unwrap().gibbs = vec![GibbsStep::MarginalElliptical {
        block,
        factors,
        steps: 1,
        redraw: true,
        reference: gpm_schedule::EllipseReference::Prior,
    }];
    let r = gpmc::infer::run_gibbs(&c, &data, &config, &|_, _| {}).unwrap();
    assert_matches(&r, "steps alone", "f.1", m1, sd1);
    assert_matches(&r, "steps alone", "f.2", m2, sd2);
}

/// The marginal elliptical steps along a fitted reference (`EllipseReference::Adapted`,
/// generalised elliptical slice sampling) are exact whatever the reference: on the two-point GP
/// classifier of the test above, a chain of the steps alone (one per sweep, the auxiliaries
/// redrawn) about a Gaussian placed off the posterior on purpose — mean (0.8, −0.3) against the
/// posterior's (0.22, −0.22), sds 0.7 and 1.3 against 1.12, correlated the other way — must
/// match the grid's posterior means and second moments. (Sliced without the
/// prior-over-reference ratio the chain samples the reference times the likelihood instead:
/// mean of f₁ 1.07 ± 0.002, and the test fails.)
#[test]
fn referenced_elliptical_steps_are_exact_for_any_reference() {
    use gpm_schedule::{EllipseReference, GibbsStep};
    use rand::SeedableRng;
    let (mut c, data) = two_point_model();
    let (m1, m2, sd1, sd2) = two_point_posterior();

    let schedule = c.schedule.as_mut().unwrap();
    let Some(GibbsStep::MarginalElliptical {
        block,
        factors,
        reference,
        ..
    }) = schedule
        .gibbs
        .iter()
        .find(|s| matches!(s, GibbsStep::MarginalElliptical { .. }))
        .cloned()
    else {
        panic!("the GP classifier's sweep has marginal elliptical steps")
    };
    assert!(
        matches!(reference, EllipseReference::Adapted { .. }),
        "a fixed-prior GP classifier's steps follow a fitted reference: {reference:?}"
    );
    schedule.gibbs = vec![GibbsStep::MarginalElliptical {
        block,
        factors,
        steps: 1,
        redraw: true,
        reference,
    }];
    let (hv, _) = gpmc::infer::hyper_values(&c);
    let sampler =
        gpm_runtime::gibbs::Sampler::new(c.schedule.as_ref().unwrap(), &data, &hv).unwrap();
    let mut state = sampler.init();
    state.ellipse_references[0] = Some(std::sync::Arc::new(gpm_runtime::gibbs::EllipseReference {
        mean: nalgebra::DVector::from_vec(vec![0.8, -0.3]),
        factor: nalgebra::DMatrix::from_row_slice(2, 2, &[0.7, 0.0, -0.6, 1.15]),
    }));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let (batches, per) = (200usize, 1000usize);
    let mut batch = vec![[0.0f64; 4]; batches];
    for _ in 0..500 {
        sampler.sweep(&mut state, &mut rng).unwrap();
    }
    for b in batch.iter_mut() {
        for _ in 0..per {
            sampler.sweep(&mut state, &mut rng).unwrap();
            let f = &state.latents[0];
            for (acc, v) in b.iter_mut().zip([f[0], f[1], f[0] * f[0], f[1] * f[1]]) {
                *acc += v / per as f64;
            }
        }
    }
    // Batch means: each moment's estimate and its Monte Carlo standard error.
    let est = |k: usize| -> (f64, f64) {
        let mean = batch.iter().map(|b| b[k]).sum::<f64>() / batches as f64;
        let var = batch.iter().map(|b| (b[k] - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
        (mean, (var / batches as f64).sqrt())
    };
    for (k, (name, want)) in [("f1", m1), ("f2", m2)].into_iter().enumerate() {
        let (got, se) = est(k);
        eprintln!("{name}: mean {got:.4} ± {se:.4} vs quadrature {want:.4}");
        assert!(
            ((got - want) / se).abs() < 4.5,
            "{name}: {got} vs {want} (se {se})"
        );
    }
    for (k, (name, m, sd)) in [("f1", m1, sd1), ("f2", m2, sd2)].into_iter().enumerate() {
        let (second, se) = est(k + 2);
        let want = sd * sd + m * m;
        eprintln!("{name}: E[f²] {second:.4} ± {se:.4} vs quadrature {want:.4}");
        assert!(
            ((second - want) / se).abs() < 4.5,
            "{name}: E[f²] {second} vs {want} (se {se})"
        );
    }
}

/// The non-centred move of a kernel's variance alone (`GpKernelUpdate::interweave_variance_only`:
/// `f − μ₀` and the prior's factor rescaled, no factorisation) on the two-point GP classifier
/// with `variance ~ gamma(2, 1)`: the sweep (Pólya-Gamma block draw after the marginal move of the
/// variance, then the non-centred move, then the marginal elliptical steps) must match the
/// posterior means and sds of the variance and of `f₁` by quadrature of
/// `p(v) N(f | 0, v K₁) σ(y₁f₁) σ(y₂f₂)` on a 3-D grid (f in units of √v).
#[test]
fn the_variance_alone_non_centred_move_matches_grid_quadrature() {
    let src = "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
               hyper { variance : real in 0.. ~ gamma(2.0, 1.0); }
               latent { f : vector[N] ~ gp(x, variance * sqexp(0.8)); }
               model { y ~ bernoulli_logit(f); }";
    let (x, y) = TWO_POINTS;
    let c = gpmc::check("gpc.gpm", src).unwrap();
    let schedule = c.schedule.as_ref().unwrap();
    assert!(
        schedule
            .kernel_updates
            .iter()
            .any(|k| k.interweave_variance_only),
        "the schedule moves the variance alone non-centred"
    );
    let json = serde_json::json!({"N": 2, "x": x, "y": y});
    let data = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &data, &four_chains_of_3000(5), &|_, _| {}).unwrap();
    // The grid: log v over [−6, 4] (the Gamma(2, 1) prior's mass), g = f/√v over ±7 prior sds.
    let r2 = (x[1] - x[0]) * (x[1] - x[0]);
    let (k11, k12) = (1.0, (-r2 / (2.0 * 0.64)).exp());
    let det = k11 * k11 - k12 * k12;
    let (nv, ng, half) = (240usize, 201usize, 7.0);
    let (hv, hg) = (10.0 / nv as f64, 2.0 * half / (ng - 1) as f64);
    let mut m = [0.0; 5];
    for a in 0..nv {
        let u = -6.0 + (a as f64 + 0.5) * hv;
        let v = u.exp();
        // Gamma(2, 1) on log v (Jacobian v): v² e^(−v); the f-grid's Jacobian v cancels with
        // N(f | 0, vK₁)'s normaliser 1/v.
        let prior = v * v * (-v).exp();
        let s = v.sqrt();
        for i in 0..ng {
            for j in 0..ng {
                let (g1, g2) = (-half + i as f64 * hg, -half + j as f64 * hg);
                let quad = (k11 * g1 * g1 - 2.0 * k12 * g1 * g2 + k11 * g2 * g2) / det;
                let (f1, f2) = (s * g1, s * g2);
                let w = prior * (-0.5 * quad).exp() * sig(y[0] * f1) * sig(y[1] * f2);
                for (mk, t) in m.iter_mut().zip([1.0, v, v * v, f1, f1 * f1]) {
                    *mk += w * t;
                }
            }
        }
    }
    let (mv, mf) = (m[1] / m[0], m[3] / m[0]);
    let sv = (m[2] / m[0] - mv * mv).sqrt();
    let sf = (m[4] / m[0] - mf * mf).sqrt();
    assert_matches(&r, "variance alone", "variance", mv, sv);
    assert_matches(&r, "variance alone", "f.1", mf, sf);
}
