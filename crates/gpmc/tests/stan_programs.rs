//! Stan programs run as Stan users write them (issue 49): each program below was written for
//! this test and is compiled by the Stan front end (`gpm-stan`), its parameters decided latent or
//! hyperparameter by the compiler, and sampled by Gibbs; each is checked against an exact
//! posterior (closed form or quadrature). Together they cover every block (data, transformed
//! data, parameters, transformed parameters, model, generated quantities), both array syntaxes,
//! bounds and `<offset, multiplier>`, `~` and `target += *_lpdf(y | ...)`, vectorised statements
//! (`X * beta`, `a[county]`), loops with locals assigned entry by entry, transformed data
//! assigned in a loop, a matrix written by its columns, the GLM and `bernoulli(inv_logit(.))`
//! shorthands, a GP through `cholesky_decompose(gp_exp_quad_cov(...))` — centred, non-centred
//! and marginal — and a Laplace prior.

use crate::common;
use common::{assert_matches, four_chains_of_3000, grid_posterior, log_gaussian};
use gpm_stan::Role;
use nalgebra::{Cholesky, DMatrix, DVector};

fn run(src: &str, data: serde_json::Value, seed: u64) -> gpmc::infer::InferResult {
    let c = gpmc::check("test.stan", src).unwrap_or_else(|f| panic!("{}", f.render()));
    let data = gpmc::data::from_json_value(&c.model, &data).unwrap();
    gpmc::infer::run_gibbs(&c, &data, &four_chains_of_3000(seed), &|_, _| {}).unwrap()
}

fn roles(src: &str) -> Vec<(String, Role)> {
    let c = gpmc::check("test.stan", src).unwrap_or_else(|f| panic!("{}", f.render()));
    c.stan
        .expect("a Stan program")
        .decisions
        .into_iter()
        .map(|d| (d.name, d.role))
        .collect()
}

/// Mean and sd of θ with log-density `logp` by the midpoint rule on `m` cells of `(lo, hi)`,
/// on `log θ` (with its Jacobian) when `log_scale`.
fn grid(logp: &dyn Fn(f64) -> f64, lo: f64, hi: f64, m: usize, log_scale: bool) -> (f64, f64) {
    grid_posterior(logp, lo, hi, m, log_scale)
}

/// Posterior means and sds of two parameters on a 2-D grid.
fn grid2(
    logp: &dyn Fn(f64, f64) -> f64,
    a: (f64, f64),
    b: (f64, f64),
    m: usize,
) -> [(f64, f64); 2] {
    let (ha, hb) = ((a.1 - a.0) / m as f64, (b.1 - b.0) / m as f64);
    let mut pa = Vec::new();
    let mut pb = Vec::new();
    for i in 0..m {
        for k in 0..m {
            let (x, y) = (a.0 + (i as f64 + 0.5) * ha, b.0 + (k as f64 + 0.5) * hb);
            let lp = logp(x, y);
            pa.push((x, lp));
            pb.push((y, lp));
        }
    }
    [moments(&pa), moments(&pb)]
}

fn moments(pts: &[(f64, f64)]) -> (f64, f64) {
    let mx = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut m1, mut m2) = (0.0, 0.0, 0.0);
    for &(t, lp) in pts {
        let w = (lp - mx).exp();
        z += w;
        m1 += w * t;
        m2 += w * t * t;
    }
    (m1 / z, (m2 / z - (m1 / z).powi(2)).sqrt())
}

/// The exact posterior of a Gaussian vector: prior precision `p0` and mean `m0`, observations
/// `y ~ N(A θ, s²)`. Returns (mean, sd) per coordinate.
fn gaussian_posterior(
    p0: DMatrix<f64>,
    m0: DVector<f64>,
    a: &DMatrix<f64>,
    y: &[f64],
    s: f64,
) -> Vec<(f64, f64)> {
    let prec = &p0 + a.transpose() * a / (s * s);
    let rhs = &p0 * m0 + a.transpose() * DVector::from_column_slice(y) / (s * s);
    let ch = Cholesky::new(prec).expect("positive definite");
    let mean = ch.solve(&rhs);
    let cov = ch.inverse();
    (0..mean.len())
        .map(|k| (mean[k], cov[(k, k)].sqrt()))
        .collect()
}

fn schools() -> ([f64; 8], [f64; 8]) {
    (
        [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0],
        [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0],
    )
}

/// `tau`'s marginal posterior in eight schools: `y ~ N(0, 25·11ᵀ + tau² I + diag(sigma²))` times
/// the half-Cauchy(0, 5).
fn tau_posterior() -> (f64, f64) {
    let (y, sigma) = schools();
    let logp = |tau: f64| {
        let c = DMatrix::from_fn(8, 8, |i, k| {
            25.0 + if i == k {
                tau * tau + sigma[i] * sigma[i]
            } else {
                0.0
            }
        });
        log_gaussian(&y, c) - (1.0 + (tau / 5.0).powi(2)).ln()
    };
    grid(&logp, (1e-4f64).ln(), (2000.0f64).ln(), 20_000, true)
}

/// 1. Eight schools, centred, as the Stan manual writes it: `theta` is the latent block, `mu`
///    (read in `theta`'s prior) and `tau` hyperparameters; a generated quantities block is
///    skipped with a note.
#[test]
fn eight_schools_centred() {
    let src = "data { int<lower=0> J; array[J] real y; array[J] real<lower=0> sigma; }
        parameters { real mu; real<lower=0> tau; vector[J] theta; }
        model { mu ~ normal(0, 5); tau ~ cauchy(0, 5); theta ~ normal(mu, tau); y ~ normal(theta, sigma); }
        generated quantities { real theta_1 = theta[1]; }";
    assert_eq!(
        roles(src),
        vec![
            ("mu".into(), Role::Hyper),
            ("tau".into(), Role::Hyper),
            ("theta".into(), Role::Latent)
        ]
    );
    let c = gpmc::check("test.stan", src).unwrap();
    let notes = &c.stan.as_ref().unwrap().notes;
    assert!(notes
        .iter()
        .any(|n| n.message.contains("generated quantities")));
    let (y, sigma) = schools();
    let r = run(src, serde_json::json!({"J": 8, "y": y, "sigma": sigma}), 5);
    let (mean, sd) = tau_posterior();
    assert_matches(&r, "eight schools (Stan, centred)", "tau", mean, sd);
}

/// 2. Eight schools non-centred, in the old array syntax, with a transformed parameter
///    `theta = mu + tau * theta_tilde` inlined into the likelihood.
#[test]
fn eight_schools_non_centred_old_syntax() {
    let src = "data { int<lower=0> J; real y[J]; real<lower=0> sigma[J]; }
        parameters { real mu; real<lower=0> tau; vector[J] theta_tilde; }
        transformed parameters { vector[J] theta = mu + tau * theta_tilde; }
        model { mu ~ normal(0, 5); tau ~ cauchy(0, 5); theta_tilde ~ normal(0, 1); y ~ normal(theta, sigma); }";
    let (y, sigma) = schools();
    let r = run(src, serde_json::json!({"J": 8, "y": y, "sigma": sigma}), 6);
    let (mean, sd) = tau_posterior();
    assert_matches(&r, "eight schools (Stan, non-centred)", "tau", mean, sd);
}

fn regression_data() -> (Vec<[f64; 2]>, Vec<f64>) {
    let n = 40;
    let x: Vec<[f64; 2]> = (0..n)
        .map(|i| {
            [
                ((i * 13 % 40) as f64 / 20.0) - 1.0,
                ((i * 7 % 11) as f64 / 5.0) - 1.0,
            ]
        })
        .collect();
    let y: Vec<f64> = (0..n)
        .map(|i| 0.7 + 1.3 * x[i][0] - 0.6 * x[i][1] + 0.5 * (((i * 31 % 17) as f64 / 8.0) - 1.0))
        .collect();
    (x, y)
}

/// 3. `target += normal_lpdf(y | alpha + X * beta, sigma)` with a data matrix, the noise sd as
///    data, and `target +=` priors: the closed-form posterior of `(alpha, beta)`.
#[test]
fn regression_with_target_lpdf_matches_the_closed_form() {
    let src =
        "data { int<lower=0> N; int<lower=0> K; matrix[N, K] X; vector[N] y; real<lower=0> sigma; }
        parameters { real alpha; vector[K] beta; }
        model {
          target += normal_lpdf(alpha | 0, 10);
          target += normal_lpdf(beta | 0, 2);
          target += normal_lpdf(y | alpha + X * beta, sigma);
        }";
    let (x, y) = regression_data();
    let n = y.len();
    let a = DMatrix::from_fn(n, 3, |i, k| if k == 0 { 1.0 } else { x[i][k - 1] });
    let p0 = DMatrix::from_diagonal(&DVector::from_vec(vec![0.01, 0.25, 0.25]));
    let exact = gaussian_posterior(p0, DVector::zeros(3), &a, &y, 0.5);
    let r = run(
        src,
        serde_json::json!({"N": n, "K": 2, "X": x, "y": y, "sigma": 0.5}),
        7,
    );
    for (k, name) in ["alpha", "beta.1", "beta.2"].iter().enumerate() {
        assert_matches(&r, "target += normal_lpdf", name, exact[k].0, exact[k].1);
    }
}

/// 4. Transformed data assigned entry by entry in a loop (an indicator, as brms and ARM models
///    write factors), `<offset, multiplier>` on a coefficient, and a loop whose local `mu[n]` is
///    assigned entry by entry: closed form.
#[test]
fn transformed_data_loop_and_local_entries_match_the_closed_form() {
    let src = "data { int<lower=0> N; array[N] int<lower=1, upper=3> g; vector[N] y; }
        transformed data {
          vector[N] g2;
          vector[N] g3;
          for (n in 1:N) { g2[n] = g[n] == 2; g3[n] = g[n] == 3; }
        }
        parameters { real<offset=1, multiplier=2> b0; vector[2] b; }
        model {
          vector[N] mu;
          b0 ~ normal(0, 10);
          b ~ normal(0, 3);
          for (n in 1:N) {
            mu[n] = b0 + b[1] * g2[n] + b[2] * g3[n];
            y[n] ~ normal(mu[n], 0.8);
          }
        }";
    let n = 30;
    let g: Vec<i64> = (0..n).map(|i| (i % 3) as i64 + 1).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| [0.5, 1.5, -0.7][(g[i] - 1) as usize] + 0.6 * (((i * 17 % 13) as f64 / 6.0) - 1.0))
        .collect();
    let a = DMatrix::from_fn(n, 3, |i, k| match k {
        0 => 1.0,
        1 => (g[i] == 2) as u8 as f64,
        _ => (g[i] == 3) as u8 as f64,
    });
    let p0 = DMatrix::from_diagonal(&DVector::from_vec(vec![0.01, 1.0 / 9.0, 1.0 / 9.0]));
    let exact = gaussian_posterior(p0, DVector::zeros(3), &a, &y, 0.8);
    let r = run(src, serde_json::json!({"N": n, "g": g, "y": y}), 8);
    for (k, name) in ["b0", "b.1", "b.2"].iter().enumerate() {
        assert_matches(&r, "transformed data loop", name, exact[k].0, exact[k].1);
    }
}

/// 5. The radon varying-intercept model as Stan users write it: `a ~ normal(mu_a, sigma_a)`
///    with `mu_a` a parameter and `a[county]` in a vectorised statement. With the scales as data
///    the joint posterior of `(mu_a, a, b)` is Gaussian: closed form.
#[test]
fn varying_intercepts_with_multi_index_match_the_closed_form() {
    let src = "data {
          int<lower=1> N; int<lower=1> J; array[N] int<lower=1, upper=J> county;
          vector[N] x; vector[N] y; real<lower=0> sigma_a; real<lower=0> sigma_y;
        }
        parameters { real mu_a; vector[J] a; real b; }
        model {
          mu_a ~ normal(0, 10);
          a ~ normal(mu_a, sigma_a);
          b ~ normal(0, 10);
          y ~ normal(a[county] + b * x, sigma_y);
        }";
    assert_eq!(
        roles(src),
        vec![
            ("mu_a".into(), Role::Hyper),
            ("a".into(), Role::Latent),
            ("b".into(), Role::Latent)
        ]
    );
    let (n, j) = (48, 6);
    let county: Vec<usize> = (0..n).map(|i| i % j + 1).collect();
    let x: Vec<f64> = (0..n).map(|i| ((i * 5 % 7) as f64 / 3.0) - 1.0).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| {
            1.0 + 0.3 * county[i] as f64 - 0.8 * x[i] + 0.7 * (((i * 29 % 19) as f64 / 9.0) - 1.0)
        })
        .collect();
    let (sa, sy) = (0.9, 0.7);
    // θ = (mu_a, a_1..a_J, b): prior precision of mu_a, a | mu_a and b.
    let d = j + 2;
    let mut p0 = DMatrix::zeros(d, d);
    p0[(0, 0)] = 0.01 + j as f64 / (sa * sa);
    for k in 1..=j {
        p0[(k, k)] = 1.0 / (sa * sa);
        p0[(0, k)] = -1.0 / (sa * sa);
        p0[(k, 0)] = -1.0 / (sa * sa);
    }
    p0[(d - 1, d - 1)] = 0.01;
    let a = DMatrix::from_fn(n, d, |i, k| {
        if k == county[i] {
            1.0
        } else if k == d - 1 {
            x[i]
        } else {
            0.0
        }
    });
    let exact = gaussian_posterior(p0, DVector::zeros(d), &a, &y, sy);
    let data = serde_json::json!({"N": n, "J": j, "county": county, "x": x, "y": y, "sigma_a": sa, "sigma_y": sy});
    let r = run(src, data, 9);
    assert_matches(&r, "radon", "mu_a", exact[0].0, exact[0].1);
    assert_matches(&r, "radon", "a.3", exact[3].0, exact[3].1);
    assert_matches(&r, "radon", "b", exact[d - 1].0, exact[d - 1].1);
}

fn binary_data() -> (Vec<f64>, Vec<i64>) {
    let n = 60;
    let x: Vec<f64> = (0..n)
        .map(|i| ((i * 23 % 60) as f64 / 20.0) - 1.5)
        .collect();
    let y: Vec<i64> = (0..n)
        .map(|i| {
            let p = 1.0 / (1.0 + (-(0.4 + 1.5 * x[i])).exp());
            (((i * 37 % 100) as f64 / 100.0) < p) as i64
        })
        .collect();
    (x, y)
}

fn logistic_posterior(x: &[f64], y: &[i64]) -> [(f64, f64); 2] {
    let logp = |a: f64, b: f64| {
        let mut lp = -a * a / (2.0 * 25.0) - b * b / (2.0 * 25.0);
        for (xi, yi) in x.iter().zip(y) {
            let eta = a + b * xi;
            lp += if *yi == 1 {
                -(-eta).exp().ln_1p()
            } else {
                -eta.exp().ln_1p()
            };
        }
        lp
    };
    grid2(&logp, (-3.0, 4.0), (-2.0, 6.0), 300)
}

/// 6. Logistic regression with the GLM shorthand over a matrix written by its columns in
///    transformed data (`[x']'`, as posteriordb's wells models write it): 2-D quadrature.
#[test]
fn bernoulli_logit_glm_over_a_column_matrix_matches_quadrature() {
    let src = "data { int<lower=0> N; array[N] int<lower=0, upper=1> y; vector[N] x; }
        transformed data { matrix[N, 1] X = [x']'; }
        parameters { real alpha; vector[1] beta; }
        model { alpha ~ normal(0, 5); beta ~ normal(0, 5); y ~ bernoulli_logit_glm(X, alpha, beta); }";
    let (x, y) = binary_data();
    let [a, b] = logistic_posterior(&x, &y);
    let r = run(src, serde_json::json!({"N": x.len(), "x": x, "y": y}), 10);
    assert_matches(&r, "bernoulli_logit_glm", "alpha", a.0, a.1);
    assert_matches(&r, "bernoulli_logit_glm", "beta.1", b.0, b.1);
}

/// 7. The same posterior written `y[n] ~ bernoulli(inv_logit(alpha + beta * x[n]))` in a loop,
///    labels declared in the old syntax without bounds (the front end declares them `{0, 1}`).
#[test]
fn bernoulli_inv_logit_in_a_loop_matches_quadrature() {
    let src = "data { int N; int y[N]; vector[N] x; }
        parameters { real alpha; real beta; }
        model {
          alpha ~ normal(0, 5);
          beta ~ normal(0, 5);
          for (n in 1:N) y[n] ~ bernoulli(inv_logit(alpha + beta * x[n]));
        }";
    let (x, y) = binary_data();
    let [a, b] = logistic_posterior(&x, &y);
    let r = run(src, serde_json::json!({"N": x.len(), "x": x, "y": y}), 11);
    assert_matches(&r, "bernoulli(inv_logit)", "alpha", a.0, a.1);
    assert_matches(&r, "bernoulli(inv_logit)", "beta", b.0, b.1);
}

/// 8. Poisson counts `y ~ poisson(exp(a + b * x))` (read as `poisson_log`): 2-D quadrature.
#[test]
fn poisson_exp_matches_quadrature() {
    let src = "data { int<lower=0> N; array[N] int<lower=0> y; vector[N] x; }
        parameters { real a; real b; }
        model { a ~ normal(0, 2); b ~ normal(0, 2); y ~ poisson(exp(a + b * x)); }";
    let n = 40;
    let x: Vec<f64> = (0..n)
        .map(|i| ((i * 11 % 40) as f64 / 20.0) - 1.0)
        .collect();
    let y: Vec<i64> = (0..n)
        .map(|i| {
            ((1.0 + 0.8 * x[i]).exp() + ((i * 7 % 5) as f64 - 2.0) * 0.6)
                .round()
                .max(0.0) as i64
        })
        .collect();
    let logp = |a: f64, b: f64| {
        let mut lp = -(a * a + b * b) / 8.0;
        for (xi, yi) in x.iter().zip(&y) {
            let eta = a + b * xi;
            lp += *yi as f64 * eta - eta.exp();
        }
        lp
    };
    let [pa, pb] = grid2(&logp, (-0.5, 2.0), (-0.5, 2.0), 300);
    let r = run(src, serde_json::json!({"N": n, "x": x, "y": y}), 12);
    assert_matches(&r, "poisson(exp)", "a", pa.0, pa.1);
    assert_matches(&r, "poisson(exp)", "b", pb.0, pb.1);
}

/// 9. A Student-t likelihood and a Laplace (`double_exponential`) prior: 1-D quadrature each.
#[test]
fn student_t_likelihood_and_laplace_prior_match_quadrature() {
    let y = [0.3, -1.2, 2.5, 0.8, 9.0, 1.1, -0.4, 1.9];
    let src = "data { int N; vector[N] y; } parameters { real mu; }
        model { mu ~ normal(0, 10); y ~ student_t(4, mu, 1); }";
    let logp = |m: f64| {
        -m * m / 200.0
            - 2.5
                * y.iter()
                    .map(|v| (1.0 + (v - m).powi(2) / 4.0).ln())
                    .sum::<f64>()
    };
    let (mean, sd) = grid(&logp, -10.0, 15.0, 20_000, false);
    let r = run(src, serde_json::json!({"N": 8, "y": y}), 13);
    assert_matches(&r, "student_t", "mu", mean, sd);

    let x = [0.5, -1.0, 1.5, 2.0, -0.5, 1.0];
    let z = [0.2, -0.9, 0.4, 1.1, 0.1, 0.3];
    let src = "data { int N; vector[N] x; vector[N] z; } parameters { real beta; }
        model { beta ~ double_exponential(0, 0.5); z ~ normal(beta * x, 0.7); }";
    let logp = |b: f64| {
        -b.abs() / 0.5
            - x.iter()
                .zip(&z)
                .map(|(xi, zi)| (zi - b * xi).powi(2))
                .sum::<f64>()
                / (2.0 * 0.49)
    };
    let (mean, sd) = grid(&logp, -4.0, 4.0, 20_000, false);
    let r = run(src, serde_json::json!({"N": 6, "x": x, "z": z}), 14);
    assert_matches(&r, "double_exponential prior", "beta", mean, sd);
}

fn gp_data() -> (Vec<f64>, Vec<f64>) {
    let n = 15;
    let x: Vec<f64> = (0..n).map(|i| i as f64 / 3.0).collect();
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| v.sin() + 0.3 * (((i * 7 % 5) as f64 / 2.0) - 1.0))
        .collect();
    (x, y)
}

fn sqexp(x: &[f64], alpha: f64, rho: f64) -> DMatrix<f64> {
    let n = x.len();
    DMatrix::from_fn(n, n, |i, k| {
        alpha * alpha * (-(x[i] - x[k]).powi(2) / (2.0 * rho * rho)).exp()
    })
}

/// 10. The marginal GP regression `y ~ multi_normal_cholesky(0, cholesky_decompose(K))`,
///     `K = add_diag(gp_exp_quad_cov(x, 1, 0.8), square(sigma))`, built in the model block:
///     quadrature of `sigma`'s marginal posterior.
#[test]
fn marginal_gp_matches_quadrature() {
    let src = "data { int<lower=1> N; array[N] real x; vector[N] y; }
        parameters { real<lower=0> sigma; }
        model {
          matrix[N, N] K = add_diag(gp_exp_quad_cov(x, 1.0, 0.8), square(sigma));
          matrix[N, N] L_K = cholesky_decompose(K);
          sigma ~ normal(0, 1);
          y ~ multi_normal_cholesky(rep_vector(0, N), L_K);
        }";
    let (x, y) = gp_data();
    let k = sqexp(&x, 1.0, 0.8);
    let logp =
        |s: f64| log_gaussian(&y, &k + DMatrix::identity(x.len(), x.len()) * (s * s)) - s * s / 2.0;
    let (mean, sd) = grid(&logp, (1e-3f64).ln(), (5.0f64).ln(), 20_000, true);
    let r = run(src, serde_json::json!({"N": x.len(), "x": x, "y": y}), 15);
    assert_matches(&r, "marginal GP", "sigma", mean, sd);
}

/// 11. The non-centred GP `f = L * eta`, `eta ~ std_normal()`, in transformed parameters with
///     a jitter diagonal: `f` is sampled in `eta`'s place with its GP prior and matches the
///     closed-form GP posterior.
#[test]
fn non_centred_gp_matches_the_closed_form() {
    let src = "data { int<lower=1> N; array[N] real x; vector[N] y; }
        parameters { vector[N] eta; }
        transformed parameters {
          vector[N] f;
          {
            matrix[N, N] K = gp_exp_quad_cov(x, 1.0, 0.8) + diag_matrix(rep_vector(1e-9, N));
            f = cholesky_decompose(K) * eta;
          }
        }
        model { eta ~ std_normal(); y ~ normal(f, 0.3); }";
    assert_eq!(roles(src), vec![("f".into(), Role::Latent)]);
    let (x, y) = gp_data();
    let n = x.len();
    let k = sqexp(&x, 1.0, 0.8);
    let c = Cholesky::new(&k + DMatrix::identity(n, n) * 0.09).unwrap();
    let mean = &k * c.solve(&DVector::from_column_slice(&y));
    let cov = &k - &k * c.solve(&k);
    let r = run(src, serde_json::json!({"N": n, "x": x, "y": y}), 16);
    for i in [0, 7, n - 1] {
        assert_matches(
            &r,
            "non-centred GP",
            &format!("f.{}", i + 1),
            mean[i],
            cov[(i, i)].sqrt(),
        );
    }
}

/// 12. The centred GP `f ~ multi_normal(rep_vector(0, N), K)` with `K` a local of the model
///     block: the same closed form.
#[test]
fn centred_gp_matches_the_closed_form() {
    let src = "data { int<lower=1> N; array[N] real x; vector[N] y; }
        parameters { vector[N] f; }
        model {
          matrix[N, N] K = gp_exp_quad_cov(x, 1.0, 0.8);
          f ~ multi_normal(rep_vector(0, N), K);
          y ~ normal(f, 0.3);
        }";
    let (x, y) = gp_data();
    let n = x.len();
    let k = sqexp(&x, 1.0, 0.8);
    let c = Cholesky::new(&k + DMatrix::identity(n, n) * 0.09).unwrap();
    let mean = &k * c.solve(&DVector::from_column_slice(&y));
    let cov = &k - &k * c.solve(&k);
    let r = run(src, serde_json::json!({"N": n, "x": x, "y": y}), 17);
    for i in [0, n / 2] {
        assert_matches(
            &r,
            "centred GP",
            &format!("f.{}", i + 1),
            mean[i],
            cov[(i, i)].sqrt(),
        );
    }
}

/// What gpmc cannot translate is refused before anything runs, naming the construct and what
/// to write; never approximated.
#[test]
fn constructs_outside_the_translation_are_refused_by_name() {
    let cases = [
        (
            "functions { real f(real x) { return x; } } data { int N; vector[N] y; } parameters { real mu; } model { y ~ normal(mu, 1); }",
            "user-defined functions",
        ),
        (
            "data { int N; vector[N] y; } parameters { real mu; } model { while (1) { } y ~ normal(mu, 1); }",
            "`while`",
        ),
        (
            "data { int N; vector[N] y; } parameters { simplex[3] theta; } model { y ~ normal(theta[1], 1); }",
            "simplex",
        ),
        (
            "data { int N; vector[N] y; } parameters { real mu; } model { for (t in 2:N) y[t] ~ normal(mu + y[t - 1], 1); }",
            "does not start at 1",
        ),
        (
            "data { int N; vector[N] y; } parameters { real mu; } model { y ~ normal(mu, 1) T[0, ]; }",
            "truncated likelihood",
        ),
        (
            "data { int N; vector[N] y; } parameters { real mu; } model { y ~ frechet(mu, 1); }",
            "`frechet`",
        ),
        (
            "data { int N; vector[N] y; } parameters { real mu; real<lower=0> s; } model { s ~ normal(0, 1) T[1, ]; y ~ normal(mu, s); }",
            "truncation other than",
        ),
        (
            "data { int N; vector[N] y; } parameters { real mu } model { y ~ normal(mu, 1); }",
            "syntax error",
        ),
        (
            // `eta` is read beside `f = L * eta`: not the non-centred GP, and the Cholesky
            // factor is not a function gpmc evaluates.
            "data { int N; array[N] real x; vector[N] y; } parameters { vector[N] eta; }
             model { vector[N] f = cholesky_decompose(gp_exp_quad_cov(x, 1.0, 1.0)) * eta;
                     eta ~ std_normal(); y ~ normal(f + eta, 1); }",
            "`cholesky_decompose`",
        ),
        (
            "data { int N; array[N] int<lower=0> y; vector[N] x; } parameters { real<lower=-10, upper=10> b; } model { y ~ poisson_log(b * x); }",
            "no parameter of this program is a Gaussian latent",
        ),
    ];
    for (src, says) in cases {
        let f = gpmc::check("bad.stan", src)
            .err()
            .unwrap_or_else(|| panic!("accepted: {src}"));
        let text = f.render();
        assert!(text.contains(says), "{src}\n-> {text}");
        assert!(f.diagnostics.iter().all(|d| d.help.is_some()), "{text}");
    }
}

/// The shipped Stan example through the command line: `check` prints the decision, `infer`
/// saves the program beside its fit as `model.stan`, and `predict` rebuilds the model from it.
#[test]
fn the_stan_example_runs_and_predicts_through_the_cli() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let gpmc = env!("CARGO_BIN_EXE_gpmc");
    let check = std::process::Command::new(gpmc)
        .arg("check")
        .arg(root.join("eight_schools.stan"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{text}");
    assert!(
        text.contains("theta          latent: a normal prior"),
        "{text}"
    );
    let tmp = std::env::temp_dir().join(format!("gpmc-stan-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let out = tmp.join("fit");
    let infer = std::process::Command::new(gpmc)
        .arg("infer")
        .arg(root.join("eight_schools.stan"))
        .arg("--data")
        .arg(root.join("eight_schools.data.json"))
        .args([
            "--chains", "2", "--draws", "200", "--warmup", "100", "--quiet", "--output",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        infer.status.success(),
        "{}",
        String::from_utf8_lossy(&infer.stderr)
    );
    assert!(out.join("model.stan").exists() && !out.join("model.gpm").exists());
    std::fs::write(tmp.join("new.json"), r#"{"J": 2, "sigma": [10, 12]}"#).unwrap();
    let predict = std::process::Command::new(gpmc)
        .arg("predict")
        .arg(&out)
        .arg("--data")
        .arg(tmp.join("new.json"))
        .arg("--output")
        .arg(tmp.join("pred"))
        .output()
        .unwrap();
    assert!(
        predict.status.success(),
        "{}",
        String::from_utf8_lossy(&predict.stderr)
    );
    let csv = std::fs::read_to_string(tmp.join("pred/predictions.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    let _ = std::fs::remove_dir_all(&tmp);
}

fn rows(src: &str, data: &serde_json::Value) -> Vec<Vec<f64>> {
    let c = gpmc::check("test.stan", src).unwrap_or_else(|f| panic!("{}", f.render()));
    let d = gpmc::data::from_json_value(&c.model, data).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &d, &common::four_chains(50, 100, 2), &|_, _| {}).unwrap();
    r.chains.into_iter().flat_map(|c| c.rows).collect()
}

/// Forms that are the same model give the same draws: a prior truncated at the declared bound
/// (`T[0, ]` on `<lower=0>`), a prior written entry by entry in a loop over the parameter (its
/// arguments indexed by the loop), and the vectorised prior.
#[test]
fn equivalent_stan_forms_give_the_same_draws() {
    let (y, sigma) = schools();
    let data = serde_json::json!({"J": 8, "y": y, "sigma": sigma, "m": vec![0.0; 8]});
    let head =
        "data { int<lower=0> J; array[J] real y; array[J] real<lower=0> sigma; vector[J] m; }
        parameters { real<lower=0> tau; vector[J] theta; }";
    let plain = format!(
        "{head} model {{ tau ~ cauchy(0, 5); theta ~ normal(m, tau); y ~ normal(theta, sigma); }}"
    );
    let truncated = format!("{head} model {{ tau ~ cauchy(0, 5) T[0, ]; theta ~ normal(m, tau); y ~ normal(theta, sigma); }}");
    let looped = format!("{head} model {{ tau ~ cauchy(0, 5); for (j in 1:J) {{ theta[j] ~ normal(m[j], tau); y[j] ~ normal(theta[j], sigma[j]); }} }}");
    let reference = rows(&plain, &data);
    assert!(reference.len() == 400 && reference.iter().flatten().all(|v| v.is_finite()));
    assert_eq!(rows(&truncated, &data), reference);
    assert_eq!(rows(&looped, &data), reference);
}
