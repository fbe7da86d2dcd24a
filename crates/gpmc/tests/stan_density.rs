//! Stan programs outside the Gaussian-latent class (issue 49, item 3) run under NUTS on their
//! whole log density (`gpm-density` + `gpm_runtime::density_nuts`): each program below was
//! written for this test and uses what the augmentation pipeline does not take — a lag in a
//! `while` loop with `if`, a user-defined function, `ordered` and `simplex` parameters, a
//! mixture through `log_mix`, a truncated prior, generated quantities with `_rng` — and each is
//! checked against its exact posterior (conjugate closed form or quadrature) within Monte Carlo
//! error.

use crate::common;
use common::grid_posterior;
use gpm_runtime::gibbs::GibbsConfig;

fn compile(src: &str) -> gpmc::density::DensityChecked {
    let latent = match gpmc::check("test.stan", src) {
        Err(f) => f,
        Ok(c) => match &c.schedule {
            Err(e) => gpmc::Failure::new(
                "test.stan",
                src,
                vec![gpmc::Diagnostic::plain("gpm::schedule", e.to_string())],
            ),
            Ok(_) => panic!("the augmentation pipeline took this program"),
        },
    };
    gpmc::density::check("test.stan", src, &latent).unwrap_or_else(|f| panic!("{}", f.render()))
}

fn run(src: &str, data: serde_json::Value, seed: u64) -> gpmc::density::DensityRun {
    run_with(src, data, seed, Default::default())
}

fn run_with(
    src: &str,
    data: serde_json::Value,
    seed: u64,
    nuts: gpm_runtime::nuts::NutsControl,
) -> gpmc::density::DensityRun {
    let dc = compile(src);
    let config = GibbsConfig {
        first_chain: 0,
        chains: 4,
        warmup: 1000,
        draws: 2000,
        thin: 1,
        seed,
        nuts,
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    gpmc::density::run(&dc, data.as_object().unwrap(), &config, &|_, _| {}, &stop)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The draws of `name` match a reference mean and sd: z of the mean from its MCSE, the sd's
/// relative error against 1/√(2 ESS) (a Gaussian's), both under 4.5; R̂ < 1.01. The sd's ESS
/// is the tail ESS, at most the draws: NUTS's antithetic draws (bulk ESS above the draws' count)
/// help a mean, not a second moment.
fn assert_matches(r: &gpmc::density::DensityRun, case: &str, name: &str, mean: f64, sd: f64) {
    let s = &r
        .summaries
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .1;
    let zm = (s.mean - mean) / s.mcse_mean;
    let draws = (r.draws * r.chains.len()) as f64;
    let ess_sd = s.ess_bulk.min(s.ess_tail).min(draws);
    let zs = (s.sd / sd - 1.0) / (1.5 / (2.0 * ess_sd).sqrt());
    eprintln!(
        "{case} {name}: NUTS {:.4} (sd {:.4}) vs exact {mean:.4} (sd {sd:.4}); z {zm:.2}, sd z {zs:.2}, ess {:.0}, rhat {:.4}",
        s.mean, s.sd, s.ess_bulk, s.rhat
    );
    assert!(zm.abs() < 4.5 && zs.abs() < 4.5, "{case} {name}");
    assert!(s.rhat < 1.01, "{case} {name}: rhat {}", s.rhat);
}

/// The posterior mean of one output column.
fn mean_of(r: &gpmc::density::DensityRun, name: &str) -> f64 {
    let s = r.summaries.iter().find(|(n, _)| n == name);
    s.unwrap_or_else(|| panic!("no column {name}")).1.mean
}

fn log_normal(x: f64, m: f64, s: f64) -> f64 {
    -0.5 * ((x - m) / s).powi(2) - s.ln()
}

#[test]
fn an_autoregression_in_a_while_loop_with_a_user_function_matches_quadrature() {
    let src = "
        functions {
          real ar_mean(real phi, real prev) { return phi * prev; }
        }
        data { int<lower=2> T; vector[T] y; real<lower=0> sigma; }
        parameters { real<lower=-1, upper=1> phi; }
        model {
          int t = 1;
          while (t < T) {
            t += 1;
            if (t == 1) reject(\"never\");
            y[t] ~ normal(ar_mean(phi, y[t - 1]), sigma);
          }
        }
        generated quantities { real phi_sq = square(phi); }";
    let y = [0.3, 0.9, 0.4, 1.1, 0.2, -0.5, -0.1, 0.6, 0.8, 0.1];
    let sigma = 0.7;
    let logp = |phi: f64| -> f64 {
        (1..y.len())
            .map(|t| log_normal(y[t], phi * y[t - 1], sigma))
            .sum()
    };
    let (m, s) = grid_posterior(&logp, -1.0, 1.0, 4000, false);
    let r = run(
        src,
        serde_json::json!({"T": y.len(), "y": y, "sigma": sigma}),
        11,
    );
    assert_matches(&r, "ar1", "phi", m, s);
    // E[φ²] = sd² + mean²
    let phi_sq = mean_of(&r, "phi_sq");
    assert!((phi_sq - (s * s + m * m)).abs() < 0.02, "phi_sq {phi_sq}");
}

/// A collinear regression with a known noise scale: b | y ~ N(A⁻¹Xᵀy/s², A⁻¹), A = XᵀX/s² + I.
/// Returns (X as rows, y, posterior means, posterior sds).
#[allow(clippy::type_complexity)]
fn collinear_regression() -> (Vec<[f64; 3]>, Vec<f64>, [f64; 3], [f64; 3]) {
    use nalgebra::{DMatrix, DVector};
    let n = 40;
    let x: Vec<[f64; 3]> = (0..n)
        .map(|i| {
            let t = i as f64 / n as f64 - 0.5;
            // the second column is the first up to a wiggle: corr(b1, b2) ≈ −0.99
            [t, t + 0.02 * (7.0 * i as f64).sin(), (3.0 * i as f64).cos()]
        })
        .collect();
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, r)| 1.0 * r[0] - 0.5 * r[1] + 0.3 * r[2] + 0.1 * (11.0 * i as f64).sin())
        .collect();
    let s2 = 0.1f64 * 0.1;
    let xm = DMatrix::from_fn(n, 3, |i, j| x[i][j]);
    let a = xm.transpose() * &xm / s2 + DMatrix::identity(3, 3);
    let chol = a.clone().cholesky().unwrap();
    let mean = chol.solve(&(xm.transpose() * DVector::from_vec(y.clone()) / s2));
    let cov = chol.inverse();
    let sd = [cov[(0, 0)].sqrt(), cov[(1, 1)].sqrt(), cov[(2, 2)].sqrt()];
    (x, y, [mean[0], mean[1], mean[2]], sd)
}

#[test]
fn the_low_rank_metric_learns_a_collinear_regression_and_matches_its_posterior() {
    // `if` on a datum keeps the program on its whole log density (brms writes it so).
    let src = "
        data { int N; matrix[N, 3] X; vector[N] y; int prior_only; }
        parameters { vector[3] b; }
        model {
          b ~ normal(0, 1);
          if (!prior_only) target += normal_id_glm_lpdf(y | X, 0, b, 0.1);
        }";
    let (x, y, mean, sd) = collinear_regression();
    let data = serde_json::json!({"N": y.len(), "X": x, "y": y, "prior_only": 0});
    let low_rank = gpm_runtime::nuts::NutsControl::default()
        .with_metric(Some("low-rank"))
        .unwrap();
    let r = run_with(src, data.clone(), 21, low_rank);
    for k in 0..3 {
        assert_matches(&r, "low-rank", &format!("b.{}", k + 1), mean[k], sd[k]);
    }
    // The diagonal metric cannot undo the correlation: its trajectories are longer.
    let diag = run_with(src, data, 21, Default::default());
    for k in 0..3 {
        assert_matches(&diag, "diag", &format!("b.{}", k + 1), mean[k], sd[k]);
    }
    let steps = |r: &gpmc::density::DensityRun| {
        r.stats.iter().map(|s| s.mean_steps).sum::<f64>() / r.stats.len() as f64
    };
    let (lr, dg) = (steps(&r), steps(&diag));
    eprintln!("mean leapfrog steps a draw: low-rank {lr:.1}, diagonal {dg:.1}");
    assert!(lr * 2.0 < dg, "low-rank {lr} vs diagonal {dg}");
}

#[test]
fn a_dirichlet_simplex_matches_its_conjugate_posterior() {
    // w ~ Dirichlet(α), y ~ categorical(w): w | y ~ Dirichlet(α + counts).
    let src = "
        data { int N; array[N] int<lower=1, upper=3> y; vector<lower=0>[3] alpha; }
        parameters { simplex[3] w; }
        model { w ~ dirichlet(alpha); y ~ categorical(w); }
        generated quantities { int y_new = categorical_rng(w); }";
    let y = [1, 1, 2, 3, 3, 3, 3, 2, 1, 3];
    let alpha = [1.0, 2.0, 0.5];
    let counts = [3.0, 2.0, 5.0];
    let post: Vec<f64> = alpha.iter().zip(&counts).map(|(a, c)| a + c).collect();
    let total: f64 = post.iter().sum();
    let r = run(
        src,
        serde_json::json!({"N": y.len(), "y": y, "alpha": alpha}),
        12,
    );
    for k in 0..3 {
        let m = post[k] / total;
        let s = (m * (1.0 - m) / (total + 1.0)).sqrt();
        assert_matches(&r, "dirichlet", &format!("w.{}", k + 1), m, s);
    }
    // The predictive draw's mean: Σ k E[w_k].
    let want: f64 = (0..3).map(|k| (k + 1) as f64 * post[k] / total).sum();
    let got = mean_of(&r, "y_new");
    assert!((got - want).abs() < 0.06, "y_new mean {got} vs {want}");
}

#[test]
fn a_mixture_with_ordered_means_matches_quadrature() {
    let src = "
        data { int N; vector[N] y; real<lower=0, upper=1> theta; }
        parameters { ordered[2] mu; }
        model {
          mu ~ normal(0, 3);
          for (n in 1:N)
            target += log_mix(theta, normal_lpdf(y[n] | mu[1], 1), normal_lpdf(y[n] | mu[2], 1));
        }";
    let y = [-2.1, -1.4, -2.8, 1.9, 2.5, 1.2, 2.2, -1.0];
    let theta: f64 = 0.4;
    let logp = |a: f64, b: f64| -> f64 {
        if a >= b {
            return f64::NEG_INFINITY;
        }
        let lik: f64 = y
            .iter()
            .map(|&x| {
                (theta * log_normal(x, a, 1.0).exp() + (1.0 - theta) * log_normal(x, b, 1.0).exp())
                    .ln()
            })
            .sum();
        lik + log_normal(a, 0.0, 3.0) + log_normal(b, 0.0, 3.0)
    };
    // The 2-D posterior by the midpoint rule on [-6, 6]².
    let m = 600;
    let h = 12.0 / m as f64;
    let mut pts = Vec::new();
    for i in 0..m {
        for k in 0..m {
            let (a, b) = (-6.0 + (i as f64 + 0.5) * h, -6.0 + (k as f64 + 0.5) * h);
            pts.push((a, b, logp(a, b)));
        }
    }
    let mx = pts.iter().map(|p| p.2).fold(f64::NEG_INFINITY, f64::max);
    let (mut z, mut s1, mut s2, mut t1, mut t2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(a, b, lp) in &pts {
        let w = (lp - mx).exp();
        z += w;
        s1 += w * a;
        s2 += w * a * a;
        t1 += w * b;
        t2 += w * b * b;
    }
    let (ma, mb) = (s1 / z, t1 / z);
    let (sa, sb) = ((s2 / z - ma * ma).sqrt(), (t2 / z - mb * mb).sqrt());
    let r = run(
        src,
        serde_json::json!({"N": y.len(), "y": y, "theta": theta}),
        13,
    );
    assert_matches(&r, "mixture", "mu.1", ma, sa);
    assert_matches(&r, "mixture", "mu.2", mb, sb);
}

#[test]
fn a_truncated_prior_on_a_poisson_rate_matches_quadrature() {
    // `lambda ~ normal(2, 1) T[0, ]` with lambda declared `<lower=0>`: a prior whose mass
    // below 0 is cut and renormalised (constant here, but through the CDF on the tape).
    let src = "
        data { int N; array[N] int y; real m; }
        parameters { real<lower=0> lambda; }
        model { lambda ~ normal(m, 1) T[0, ]; y ~ poisson(lambda); }";
    let y = [0, 2, 1, 4, 3, 1];
    let logp = |l: f64| -> f64 {
        log_normal(l, 0.5, 1.0) + y.iter().map(|&k| k as f64 * l.ln() - l).sum::<f64>()
    };
    let (mean, sd) = grid_posterior(&logp, 0.0, 12.0, 20000, false);
    let r = run(src, serde_json::json!({"N": y.len(), "y": y, "m": 0.5}), 14);
    assert_matches(&r, "truncated", "lambda", mean, sd);
}

#[test]
fn a_program_gpmc_cannot_evaluate_is_refused_naming_the_construct() {
    let src = "
        functions {
          vector f(vector y, vector theta, array[] real x_r, array[] int x_i) { return y - theta; }
        }
        data { int T; }
        parameters { real<lower=0> k; }
        model {
          vector[1] z = algebra_solver(f, [1.0]', [k]', rep_array(0.0, 0), rep_array(0, 0));
          k ~ normal(0, 1);
        }";
    let latent = gpmc::check("solver.stan", src).unwrap_err();
    let f = gpmc::density::check("solver.stan", src, &latent).unwrap_err();
    let d = &f.diagnostics[0];
    assert!(
        d.message.contains("algebra_solver") && d.message.contains("cannot be evaluated"),
        "{}",
        d.message
    );
    assert_eq!(d.location.line, 8, "{:?}", d.location);
}

#[test]
fn a_decay_rate_through_both_ode_interfaces_matches_quadrature() {
    // y1' = -k y1, y2' = k y1 from (y0, 0): y1 = y0 e^{-kt}, y2 = y0 (1 - e^{-kt}). The first
    // state is read from `integrate_ode_rk45` (arrays, theta), the second from `ode_bdf_tol`
    // (vectors, a variadic argument), so the posterior of k is known by quadrature.
    let src = "
        functions {
          array[] real decay(real t, array[] real y, array[] real theta, array[] real x_r, array[] int x_i) {
            return {-theta[1] * y[1], theta[1] * y[1]};
          }
          vector decay_v(real t, vector y, real k) { return [-k * y[1], k * y[1]]'; }
        }
        data { int T; array[T] real ts; array[T] real a; array[T] real b; real y0; real sigma; }
        parameters { real<lower=0> k; }
        transformed parameters {
          array[T, 2] real z = integrate_ode_rk45(decay, {y0, 0.0}, 0, ts, {k}, rep_array(0.0, 0), rep_array(0, 0));
        }
        model {
          array[T] vector[2] w = ode_bdf_tol(decay_v, [y0, 0]', 0, ts, 1e-8, 1e-8, 10000, k);
          k ~ lognormal(0, 1);
          a ~ normal(z[:, 1], sigma);
          for (t in 1:T) b[t] ~ normal(w[t][2], sigma);
        }";
    let ts = [0.25, 0.5, 1.0, 1.5, 2.5, 4.0];
    let (y0, sigma, k_true): (f64, f64, f64) = (3.0, 0.15, 0.8);
    let noise = [0.1, -0.2, 0.05, 0.15, -0.1, 0.02];
    let a: Vec<f64> = ts
        .iter()
        .zip(&noise)
        .map(|(t, e)| y0 * (-k_true * t).exp() + e)
        .collect();
    let b: Vec<f64> = ts
        .iter()
        .zip(noise.iter().rev())
        .map(|(t, e)| y0 * (1.0 - (-k_true * t).exp()) + e)
        .collect();
    let logp = |k: f64| -> f64 {
        let prior = -0.5 * k.ln().powi(2) - k.ln();
        prior
            + ts.iter()
                .enumerate()
                .map(|(i, t)| {
                    let e = (-k * t).exp();
                    log_normal(a[i], y0 * e, sigma) + log_normal(b[i], y0 * (1.0 - e), sigma)
                })
                .sum::<f64>()
    };
    let (m, s) = grid_posterior(&logp, 1e-6, 4.0, 20000, false);
    let r = run(
        src,
        serde_json::json!({"T": ts.len(), "ts": ts, "a": a, "b": b, "y0": y0, "sigma": sigma}),
        15,
    );
    assert_matches(&r, "ode", "k", m, s);
    // The transformed parameter `z` is the solution at each draw: its mean at t = 1 is
    // E[y0 e^{-k}] within Monte Carlo error of the draws of k.
    let z31 = mean_of(&r, "z.3.1");
    let exact: f64 = {
        let (mut num, mut den) = (0.0, 0.0);
        for i in 1..20000 {
            let k = 4.0 * i as f64 / 20000.0;
            let w = logp(k).exp();
            num += w * y0 * (-k).exp();
            den += w;
        }
        num / den
    };
    assert!((z31 - exact).abs() < 0.01, "z.3.1 {z31} vs {exact}");
}

#[test]
fn the_cli_checks_and_runs_a_program_on_its_log_density() {
    let dir = std::env::temp_dir().join(format!("gpmc-density-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("garch.stan");
    std::fs::write(
        &model,
        "data { int T; vector[T] r; real<lower=0> s1; }
         parameters { real mu; real<lower=0> a0; real<lower=0, upper=1> a1; real<lower=0, upper=(1 - a1)> b1; }
         model {
           array[T] real sigma;
           sigma[1] = s1;
           for (t in 2:T) sigma[t] = sqrt(a0 + a1 * pow(r[t - 1] - mu, 2) + b1 * pow(sigma[t - 1], 2));
           r ~ normal(mu, sigma);
         }",
    )
    .unwrap();
    let data = dir.join("data.json");
    std::fs::write(
        &data,
        r#"{"T": 8, "r": [0.1, -0.3, 0.5, 0.2, -0.8, 0.4, 0.1, -0.2], "s1": 0.5}"#,
    )
    .unwrap();
    let gpmc = env!("CARGO_BIN_EXE_gpmc");
    let check = std::process::Command::new(gpmc)
        .arg("check")
        .arg(&model)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{text}");
    assert!(
        text.contains("NUTS on the whole log density")
            && text.contains("b1: real (lower and upper bounds"),
        "{text}"
    );
    let out = dir.join("out");
    let infer = std::process::Command::new(gpmc)
        .args([
            "infer",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--draws",
            "300",
            "--warmup",
            "300",
            "--chains",
            "2",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        infer.status.success(),
        "{}",
        String::from_utf8_lossy(&infer.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["method"], "nuts");
    let names: Vec<&str> = summary["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lp__", "mu", "a0", "a1", "b1"]);
    let chain = std::fs::read_to_string(out.join("chain-1.csv")).unwrap();
    // Every draw respects the bounds, the upper one a parameter's: b1 < 1 - a1.
    let header: Vec<&str> = chain
        .lines()
        .find(|l| !l.starts_with('#'))
        .unwrap()
        .split(',')
        .collect();
    let (ia, ib) = (
        header.iter().position(|h| *h == "a1").unwrap(),
        header.iter().position(|h| *h == "b1").unwrap(),
    );
    for line in chain.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let v: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        assert!(v[ib] > 0.0 && v[ib] < 1.0 - v[ia], "{line}");
    }
    // `gpmc summary` reads the chain files back (as for every NUTS run); prediction says it
    // is not available for this path yet.
    let summary = std::process::Command::new(gpmc)
        .arg("summary")
        .arg(&out)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&summary.stdout);
    assert!(
        summary.status.success() && table.contains("b1") && table.contains("2 chains"),
        "{table}"
    );
    let predict = std::process::Command::new(gpmc)
        .args([
            "predict",
            out.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(predict.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&predict.stderr).contains("not available yet"));
    // Another method is refused with what to use, and bad data names the datum.
    let cavi = std::process::Command::new(gpmc)
        .args([
            "infer",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--method",
            "cavi",
            "--output",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(cavi.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&cavi.stderr).contains("--method nuts"));
    std::fs::write(&data, r#"{"T": 8, "r": [0.1, -0.3], "s1": 0.5}"#).unwrap();
    let bad = std::process::Command::new(gpmc)
        .args([
            "infer",
            model.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
            "--output",
            dir.join("bad").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("`r`") && err.contains("2 entries where 8"),
        "{err}"
    );
    assert!(!dir.join("bad").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_program_that_rejects_the_origin_still_names_its_columns_and_runs() {
    // At the unconstrained origin `m = 1` violates its bound: the columns come from the
    // declared sizes, not from evaluating there. mu ~ N(2, 0.5) truncated to mu > log 1.5
    // (3.2 sd below the mean: the truncation moves the mean by 0.001).
    let src = "
        parameters { real mu; }
        transformed parameters { real<lower=1.5> m = exp(mu); }
        model { mu ~ normal(2, 0.5); }
        generated quantities { array[2] int flips = {bernoulli_rng(0.5), 1}; }";
    let r = run(src, serde_json::json!({}), 15);
    assert_eq!(
        r.names,
        ["lp__", "mu", "m", "flips.1", "flips.2"].map(String::from)
    );
    assert_matches(&r, "origin", "mu", 2.0012, 0.498);
}
