//! The tape's gradients against central finite differences on programs that use every kind of
//! construct (recursions, mixtures, constrained parameters, truncation, matrices), and the
//! densities' values against closed forms.

use gpm_density::{compile_source, Model};
use std::sync::Arc;

fn model(src: &str, data: serde_json::Value) -> Model {
    let program = Arc::new(compile_source(src).expect("compiles"));
    Model::bind(program, data.as_object().expect("object")).expect("binds")
}

fn check_gradient(m: &Model, u: &[f64]) {
    let mut g = vec![0.0; m.dim()];
    let lp = m.log_density_gradient(u, &mut g).expect("evaluates");
    assert!(lp.is_finite());
    for k in 0..u.len() {
        let h = 1e-6;
        let (mut up, mut dn) = (u.to_vec(), u.to_vec());
        up[k] += h;
        dn[k] -= h;
        let mut scratch = vec![0.0; m.dim()];
        let fd = (m.log_density_gradient(&up, &mut scratch).unwrap()
            - m.log_density_gradient(&dn, &mut scratch).unwrap())
            / (2.0 * h);
        assert!(
            (fd - g[k]).abs() < 1e-5 * (1.0 + fd.abs()),
            "coordinate {k}: tape {} finite difference {fd}",
            g[k]
        );
    }
}

#[test]
fn an_arma_recursion_differentiates() {
    let src = "data { int T; vector[T] y; }
        parameters { real mu; real<lower=-1, upper=1> phi; real<lower=-1, upper=1> theta; real<lower=0> sigma; }
        model {
          vector[T] nu; vector[T] err;
          nu[1] = mu + phi * mu; err[1] = y[1] - nu[1];
          for (t in 2:T) { nu[t] = mu + phi * y[t - 1] + theta * err[t - 1]; err[t] = y[t] - nu[t]; }
          mu ~ normal(0, 10); phi ~ normal(0, 2); theta ~ normal(0, 2); sigma ~ cauchy(0, 5);
          err ~ normal(0, sigma);
        }";
    let m = model(
        src,
        serde_json::json!({"T": 5, "y": [0.1, -0.3, 0.8, 1.2, 0.4]}),
    );
    assert_eq!(m.dim(), 4);
    check_gradient(&m, &[0.2, 0.3, -0.4, -0.1]);
}

#[test]
fn a_mixture_with_ordered_means_and_a_simplex_differentiates() {
    let src = "data { int N; vector[N] y; }
        parameters { ordered[2] mu; simplex[3] w; real<lower=0> sigma; }
        model {
          mu ~ normal(0, 2); sigma ~ lognormal(0, 1); w ~ dirichlet(rep_vector(2, 3));
          for (n in 1:N) target += log_mix(w[1], normal_lpdf(y[n] | mu[1], sigma), normal_lpdf(y[n] | mu[2], sigma));
          target += log_sum_exp(log(w));
        }";
    let m = model(
        src,
        serde_json::json!({"N": 4, "y": [-1.0, -0.5, 1.2, 2.0]}),
    );
    assert_eq!(m.dim(), 2 + 2 + 1);
    check_gradient(&m, &[-0.3, 0.1, 0.2, -0.4, 0.05]);
}

#[test]
fn a_cholesky_correlation_a_truncation_and_matrices_differentiate() {
    let src = "data { int K; array[3] vector[K] x; }
        parameters { cholesky_factor_corr[K] L; vector<lower=0>[K] tau; real<lower=0> s; }
        model {
          matrix[K, K] S = diag_pre_multiply(tau, L);
          L ~ lkj_corr_cholesky(2); tau ~ normal(0, 1); s ~ normal(0, 1) T[0, ];
          x ~ multi_normal_cholesky(rep_vector(0, K), S);
          target += -0.5 * dot_self(to_vector(S * S'));
          if (s > 10) reject(\"too big\");
        }";
    let m = model(
        src,
        serde_json::json!({"K": 3, "x": [[0.1, 0.2, -0.1], [1.0, -0.3, 0.2], [0.4, 0.5, 0.6]]}),
    );
    assert_eq!(m.dim(), 3 + 3 + 1);
    check_gradient(&m, &[0.3, -0.2, 0.5, 0.1, -0.1, 0.2, 0.4]);
}

#[test]
fn a_hidden_markov_forward_algorithm_differentiates() {
    let src = "data { int N; int K; array[N] real y; }
        parameters { array[K] simplex[K] theta; ordered[K] mu; }
        model {
          array[K] real acc; array[N, K] real gamma;
          for (k in 1:K) gamma[1, k] = normal_lpdf(y[1] | mu[k], 1);
          for (t in 2:N) {
            for (k in 1:K) {
              for (j in 1:K) acc[j] = gamma[t - 1, j] + log(theta[j, k]) + normal_lpdf(y[t] | mu[k], 1);
              gamma[t, k] = log_sum_exp(acc);
            }
          }
          mu ~ normal(0, 3);
          target += log_sum_exp(gamma[N]);
        }";
    let m = model(
        src,
        serde_json::json!({"N": 4, "K": 2, "y": [0.1, 2.0, 1.8, -0.2]}),
    );
    assert_eq!(m.dim(), 2 + 2);
    check_gradient(&m, &[0.3, -0.2, -0.5, 0.4]);
}

#[test]
fn the_normal_density_and_a_lower_bound_give_the_closed_form() {
    // log p = Σ log N(y | μ, σ) + log N(μ | 0, 1) + log σ (the Jacobian of σ = e^u).
    let src = "data { int N; vector[N] y; } parameters { real mu; real<lower=0> sigma; }
        model { mu ~ std_normal(); y ~ normal(mu, sigma); }";
    let m = model(src, serde_json::json!({"N": 2, "y": [0.5, -1.0]}));
    let (mu, u): (f64, f64) = (0.3, 0.2);
    let s = u.exp();
    let ln = |x: f64, m: f64, s: f64| {
        -0.5 * ((x - m) / s).powi(2) - s.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
    };
    let want = ln(0.5, mu, s) + ln(-1.0, mu, s) + ln(mu, 0.0, 1.0) + u;
    let mut g = vec![0.0; 2];
    let lp = m.log_density_gradient(&[mu, u], &mut g).unwrap();
    assert!((lp - want).abs() < 1e-12, "{lp} vs {want}");
}

#[test]
fn a_datum_of_the_wrong_size_is_named() {
    let program = Arc::new(
        compile_source(
            "data { int N; vector[N] y; } parameters { real mu; } model { y ~ normal(mu, 1); }",
        )
        .unwrap(),
    );
    let data = serde_json::json!({"N": 3, "y": [1.0, 2.0]});
    let e = Model::bind(program.clone(), data.as_object().unwrap()).unwrap_err();
    assert!(
        e.message.contains("`y`") && e.message.contains("2 entries where 3"),
        "{}",
        e.message
    );
    let data = serde_json::json!({"N": 2.5, "y": [1.0, 2.0]});
    let e = Model::bind(program.clone(), data.as_object().unwrap()).unwrap_err();
    assert!(e.message.contains("`N` is declared int"), "{}", e.message);
    let data = serde_json::json!({"y": [1.0, 2.0]});
    let e = Model::bind(program, data.as_object().unwrap()).unwrap_err();
    assert!(e.message.contains("`N` is missing"), "{}", e.message);
}

#[test]
fn what_cannot_be_evaluated_is_refused_naming_it() {
    let e = compile_source("parameters { real y; } model { y ~ foo_dist(1); }").unwrap_err();
    assert!(e.message.contains("foo_dist"));
    let e = compile_source(
        "data { real t; } parameters { real y; } model { target += integrate_ode_rk45(y, t); }",
    )
    .unwrap_err();
    assert!(
        e.message.contains("integrate_ode_rk45") && e.message.contains("6 or 9 more arguments"),
        "{}",
        e.message
    );
    let e = compile_source(
        "data { real t; } parameters { real y; } model { target += integrate_ode_rk45(t, {y}, 0, {1.0}, {y}, {t}, {1}); }",
    )
    .unwrap_err();
    assert!(e.message.contains("must name a function"), "{}", e.message);
    let e = compile_source("parameters { real y; } model { target += algebra_solver_newton(y); }")
        .unwrap_err();
    assert!(e.message.contains("cannot be evaluated"), "{}", e.message);
    let e = compile_source("parameters { cov_matrix[2] S; } model { }").unwrap_err();
    assert!(e.message.contains("cov_matrix"), "{}", e.message);
}

/// The fused GLM densities (a data design matrix: one tape node) equal the same densities
/// written out, value and gradient, and differentiate; with a vector intercept too.
#[test]
fn the_fused_glm_densities_equal_their_written_out_forms() {
    let data = serde_json::json!({
        "N": 4, "K": 2,
        "x": [[0.5, -1.0], [1.5, 0.2], [-0.3, 0.7], [0.9, 1.1]],
        "y": [0.3, 1.2, -0.4, 2.0], "c": [1, 3, 0, 2], "b": [1, 0, 0, 1],
    });
    let head = "data { int N; int K; matrix[N, K] x; vector[N] y; array[N] int c; array[N] int b; }
        parameters { real alpha; vector[K] beta; real<lower=0> sigma; vector[N] a; }";
    let prior =
        "a ~ normal(0, 1); beta ~ normal(0, 1); alpha ~ normal(0, 1); sigma ~ lognormal(0, 1);";
    let fused = model(
        &format!(
            "{head} model {{ {prior}
            target += normal_id_glm_lpdf(y | x, alpha, beta, sigma);
            target += poisson_log_glm_lpmf(c | x, a, beta);
            target += bernoulli_logit_glm_lpmf(b | x, alpha, beta); }}"
        ),
        data.clone(),
    );
    let written = model(
        &format!(
            "{head} model {{ {prior}
            target += normal_lpdf(y | alpha + x * beta, sigma);
            target += poisson_log_lpmf(c | a + x * beta);
            target += bernoulli_logit_lpmf(b | alpha + x * beta); }}"
        ),
        data,
    );
    let u = [0.2, -0.5, 0.8, 0.1, 0.3, -0.2, 0.4, 0.6];
    let (mut g1, mut g2) = (vec![0.0; 8], vec![0.0; 8]);
    let lp1 = fused.log_density_gradient(&u, &mut g1).unwrap();
    let lp2 = written.log_density_gradient(&u, &mut g2).unwrap();
    assert!((lp1 - lp2).abs() < 1e-12, "{lp1} vs {lp2}");
    for k in 0..8 {
        assert!(
            (g1[k] - g2[k]).abs() < 1e-12,
            "coordinate {k}: {} vs {}",
            g1[k],
            g2[k]
        );
    }
    check_gradient(&fused, &u);
}

/// `reduce_sum(f, x, grainsize, ...)` is the partial sum over the whole of `x`: the same value
/// and gradient as the density written out.
#[test]
fn reduce_sum_equals_the_density_written_out() {
    let data = serde_json::json!({"N": 3, "y": [0.3, -1.2, 2.0]});
    let partial = model(
        "functions {
           real partial_sum_lpdf(array[] real slice, int start, int end, vector mu, real sigma) {
             return normal_lpdf(slice | mu[start:end], sigma);
           }
         }
         data { int N; array[N] real y; }
         parameters { vector[N] mu; real<lower=0> sigma; }
         model { mu ~ normal(0, 1); target += reduce_sum(partial_sum_lupdf, y, 1, mu, sigma); }",
        data.clone(),
    );
    let written = model(
        "data { int N; array[N] real y; }
         parameters { vector[N] mu; real<lower=0> sigma; }
         model { mu ~ normal(0, 1); y ~ normal(mu, sigma); }",
        data,
    );
    let u = [0.1, -0.4, 0.9, 0.2];
    let (mut g1, mut g2) = (vec![0.0; 4], vec![0.0; 4]);
    let lp1 = partial.log_density_gradient(&u, &mut g1).unwrap();
    let lp2 = written.log_density_gradient(&u, &mut g2).unwrap();
    assert!((lp1 - lp2).abs() < 1e-12, "{lp1} vs {lp2}");
    assert!(
        g1.iter().zip(&g2).all(|(a, b)| (a - b).abs() < 1e-12),
        "{g1:?} vs {g2:?}"
    );
    let e = compile_source(
        "data { array[2] real y; } parameters { real m; } model { target += reduce_sum(m, y, 1); }",
    )
    .unwrap_err();
    assert!(e.message.contains("partial-sum function"), "{}", e.message);
}
