//! Models written the way Stan users write them: transformed data computed by `let`s in the
//! data block, and constant indices into a latent vector (`beta[1] + beta[2] * x[i]`). The
//! regression below is conjugate, so Gibbs must match the closed-form posterior of the weights.

use crate::common;
use common::four_chains_of_3000;
use nalgebra::{DMatrix, DVector};

fn data() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = 60;
    let x: Vec<f64> = (0..n)
        .map(|i| ((i * 37 % 60) as f64 / 30.0) - 1.0)
        .collect();
    let z: Vec<f64> = (0..n).map(|i| (i % 3 == 0) as u8 as f64).collect();
    // earn = exp(1 + 0.5 x + 0.8 x z + noise): the model is on log(earn).
    let earn: Vec<f64> = (0..n)
        .map(|i| {
            let noise = 0.4 * (((i * 7919 % 101) as f64 / 101.0) - 0.5) * 2.0;
            (1.0 + 0.5 * x[i] + 0.8 * x[i] * z[i] + noise).exp()
        })
        .collect();
    (x, z, earn)
}

/// `log_earn[i] ~ normal(beta[1] + beta[2] * x[i] + beta[3] * xz[i], 0.4)` with `beta ~
/// normal(0, 10)`, `log_earn` and `xz` computed by data `let`s: the posterior of beta is
/// `N(S Xᵀy/σ², S)`, `S = (XᵀX/σ² + I/100)⁻¹`.
#[test]
fn regression_with_transformed_data_and_constant_indices_matches_the_closed_form() {
    let (x, z, earn) = data();
    let n = x.len();
    let src = "data {
                 N : int; earn : vector[N] in 0..; x : vector[N]; z : vector[N];
                 let log_earn = log(earn);
                 let xz = x * z;               // an interaction, element-wise
               }
               latent { beta : vector[3] ~ normal(0, 10); }
               model {
                 for i in 1..N {
                   log_earn[i] ~ normal(beta[1] + beta[2] * x[i] + beta[3] * xz[i], 0.4);
                 }
               }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "earn": earn, "x": x, "z": z});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(5), &|_, _| {}).unwrap();
    let design = DMatrix::from_fn(n, 3, |i, j| match j {
        0 => 1.0,
        1 => x[i],
        _ => x[i] * z[i],
    });
    let y = DVector::from_iterator(n, earn.iter().map(|e| e.ln()));
    let s2 = 0.16;
    let prec = design.tr_mul(&design) / s2 + DMatrix::identity(3, 3) / 100.0;
    let ch = prec.cholesky().unwrap();
    let mean = ch.solve(&(design.tr_mul(&y) / s2));
    let cov = ch.inverse();
    for j in 0..3 {
        let name = format!("beta.{}", j + 1);
        let col = r.summaries.iter().position(|(n, _)| *n == name).unwrap();
        let s = &r.summaries[col].1;
        let z = (s.mean - mean[j]) / s.mcse_mean;
        eprintln!(
            "{name}: {:.4} vs {:.4} (z {z:.2}), sd {:.4} vs {:.4}",
            s.mean,
            mean[j],
            s.sd,
            cov[(j, j)].sqrt()
        );
        assert!(z.abs() < 4.5, "{name}");
        assert!((s.sd / cov[(j, j)].sqrt() - 1.0).abs() < 0.06, "{name} sd");
        assert!(s.rhat < 1.01);
    }
}

#[test]
fn transformed_data_are_computed_once_and_checked() {
    let src = "data { N : int; x : vector[N]; X : matrix[N, 2]; g : vector[N];
                      let xc = (x - mean(x)) / sd(x);
                      let second = X[, 2] * 2;
                      let is_two = g == 2;
                      let y = log(x); }
               latent { b : real ~ normal(0, 1); }
               model { for i in 1..N { y[i] ~ normal(b + xc[i] + second[i] + is_two[i], 1.0); } }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let ok = serde_json::json!({"N": 3, "x": [1.0, 2.0, 3.0], "X": [[0, 1], [0, 2], [0, 5]], "g": [1, 2, 2]});
    let d = gpmc::data::from_json_value(&c.model, &ok).unwrap();
    assert_eq!(d.vector("xc").unwrap(), &[-1.0, 0.0, 1.0]);
    assert_eq!(d.vector("second").unwrap(), &[2.0, 4.0, 10.0]);
    assert_eq!(d.vector("is_two").unwrap(), &[0.0, 1.0, 1.0]);
    // log(0): an error naming the datum and the entry, not a NaN passed on.
    let zero = serde_json::json!({"N": 3, "x": [1.0, 0.0, 3.0], "X": [[0, 1], [0, 2], [0, 5]], "g": [1, 2, 2]});
    let e = gpmc::data::from_json_value(&c.model, &zero)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`y`") && e.contains("entry 2"), "{e}");
    // A transformed datum given in the data too is refused (it would be silently replaced).
    let twice = serde_json::json!({"N": 3, "x": [1.0, 2.0, 3.0], "X": [[0, 1], [0, 2], [0, 5]], "g": [1, 2, 2], "xc": [0, 0, 0]});
    let e = gpmc::data::from_json_value(&c.model, &twice)
        .unwrap_err()
        .to_string();
    assert!(e.contains("computed by its `let`"), "{e}");
}

#[test]
fn transformed_data_and_constant_indices_are_checked_at_compile_time() {
    let cases = [
        // reads a datum declared after it
        (
            "data { let y2 = log(y); N : int; y : vector[N]; }",
            "gpm::unknown_name",
        ),
        (
            "data { N : int; y : vector[N]; z : vector[3]; let w = y + z; }",
            "gpm::bad_transform",
        ),
        (
            "data { N : int; y : vector[N]; let w = y[1]; }",
            "gpm::bad_transform",
        ),
        (
            "data { N : int; y : vector[N]; let w = foo(y); }",
            "gpm::bad_transform",
        ),
    ];
    for (data, code) in cases {
        let src = format!(
            "{data} latent {{ b : real ~ normal(0, 1); }} model {{ for i in 1..N {{ y[i] ~ normal(b, 1.0); }} }}"
        );
        let e = gpmc::check("m.gpm", &src).unwrap_err();
        assert_eq!(
            e.diagnostics[0].code, code,
            "{data}: {}",
            e.diagnostics[0].message
        );
    }
    let src = "data { N : int; y : vector[N]; x : vector[N]; }
               latent { beta : vector[2] ~ normal(0, 1); }
               model { for i in 1..N { y[i] ~ normal(beta[3] * x[i], 1.0); } }";
    let e = gpmc::check("m.gpm", src).unwrap_err();
    assert_eq!(e.diagnostics[0].code, "gpm::bad_index");
    assert!(e.diagnostics[0].message.contains("entry 3"));
    let src = "data { N : int; y : vector[N]; g : vector[N]; }
               latent { b : real ~ normal(0, 1); }
               model { for i in 1..N { y[i] ~ normal(b * (g[i] == 1), 1.0); } }";
    let e = gpmc::check("m.gpm", src).unwrap_err();
    assert_eq!(e.diagnostics[0].code, "gpm::bad_transform");
}

/// The regression of the issue as Stan users write it: flat priors (Stan's default),
/// `beta[1] + beta[2] * x[i] + beta[3] * x[i] * z[i]`, a log response from a data `let`. With
/// the noise fixed the posterior is `N((XᵀX)⁻¹Xᵀy, σ²(XᵀX)⁻¹)`; Gibbs matches it within Monte
/// Carlo error and CAVI (exact for a Gaussian likelihood) to rounding, with a monotone ELBO.
#[test]
fn flat_priors_match_least_squares() {
    let (x, z, earn) = data();
    let n = x.len();
    let src = "data { N : int; earn : vector[N] in 0..; x : vector[N]; z : vector[N];
                      let log_earn = log(earn); }
               latent { beta : vector[3] ~ flat(); }
               model { for i in 1..N {
                 log_earn[i] ~ normal(beta[1] + beta[2] * x[i] + beta[3] * x[i] * z[i], 0.4);
               } }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "earn": earn, "x": x, "z": z});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let design = DMatrix::from_fn(n, 3, |i, j| match j {
        0 => 1.0,
        1 => x[i],
        _ => x[i] * z[i],
    });
    let y = DVector::from_iterator(n, earn.iter().map(|e| e.ln()));
    let ch = design.tr_mul(&design).cholesky().unwrap();
    let mean = ch.solve(&design.tr_mul(&y));
    let cov = ch.inverse() * 0.16;
    let r = gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(8), &|_, _| {}).unwrap();
    for j in 0..3 {
        let name = format!("beta.{}", j + 1);
        let col = r.summaries.iter().position(|(n, _)| *n == name).unwrap();
        let s = &r.summaries[col].1;
        let zm = (s.mean - mean[j]) / s.mcse_mean;
        assert!(zm.abs() < 4.5, "{name}: {} vs {}", s.mean, mean[j]);
        assert!((s.sd / cov[(j, j)].sqrt() - 1.0).abs() < 0.06, "{name} sd");
    }
    let config = gpm_runtime::cavi::CaviConfig {
        tolerance: 1e-10,
        max_iter: 200,
    };
    let (q, _) = gpmc::infer::run_cavi(&c, &d, &config).unwrap();
    let (_, m, v) = q.latents.iter().find(|l| l.0 == "beta").unwrap();
    for j in 0..3 {
        assert!((m[j] - mean[j]).abs() < 1e-8, "CAVI mean {j}");
        assert!((v[j] / cov[(j, j)] - 1.0).abs() < 1e-8, "CAVI variance {j}");
    }
    assert!(
        q.elbo.windows(2).all(|w| w[1] >= w[0] - 1e-9),
        "{:?}",
        q.elbo
    );
}

/// A flat prior where the data do not inform a coefficient, or where the update cannot use
/// it, is refused with the reason and what to write.
#[test]
fn flat_priors_are_refused_where_the_posterior_is_improper() {
    let (x, z, earn) = data();
    let n = x.len();
    // z is all zeros: beta[2] * z[i] is not informed.
    let src = "data { N : int; y : vector[N]; x : vector[N]; z : vector[N]; }
               latent { beta : vector[2] ~ flat(); }
               model { for i in 1..N { y[i] ~ normal(beta[1] * x[i] + beta[2] * z[i], 0.4); } }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "y": earn, "x": x, "z": vec![0.0; n]});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let e = gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(1), &|_, _| {}).unwrap_err();
    assert!(e.to_string().contains("flat prior"), "{e}");
    let _ = z;
    // No augmentation (a Gumbel-type formula): the generic update needs a proper prior.
    let src = "data { N : int; y : vector[N]; x : vector[N]; }
               latent { b : real ~ flat(); }
               model { for i in 1..N { factor(exp(-exp(y[i] - b * x[i]))); } }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let why = c.schedule.as_ref().unwrap_err().to_string();
    assert!(
        why.contains("flat") && why.contains("normal(0, 10)"),
        "{why}"
    );
}

/// New inputs for prediction: a transformed response left out leaves out what it is computed
/// from (NaN, not computed from placeholders); a `let` reading a left-out response, or one
/// that reduces the data, is an error that says what to do.
#[test]
fn transformed_data_at_new_inputs() {
    let src = "data { N : int; earn : vector[N] in 0..; x : vector[N];
                      let log_earn = log(earn); let xc = x - mean(x); let x2 = x * 2; }
               latent { b : real ~ normal(0, 1); }
               model { for i in 1..N { log_earn[i] ~ normal(b * x2[i], 1.0); } }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let new = serde_json::json!({"N": 2, "x": [1.0, 3.0]});
    let e = gpmc::data::test_from_json_value(&c.model, &new, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`xc`") && e.contains("reduces the data"), "{e}");
    let src = src.replace("let xc = x - mean(x);", "");
    let c = gpmc::check("m.gpm", &src).unwrap();
    let d = gpmc::data::test_from_json_value(&c.model, &new, None).unwrap();
    assert_eq!(d.vector("x2").unwrap(), &[2.0, 6.0]);
    assert!(d.vector("log_earn").unwrap().iter().all(|v| v.is_nan()));
    let with_y = serde_json::json!({"N": 2, "x": [1.0, 3.0], "earn": [1.0, std::f64::consts::E]});
    let d = gpmc::data::test_from_json_value(&c.model, &with_y, None).unwrap();
    assert_eq!(d.vector("log_earn").unwrap(), &[0.0, 1.0]);
    let src = "data { N : int; y : vector[N]; x : vector[N]; z : vector[N]; let y2 = y * 2; }
               latent { b : real ~ normal(0, 1); }
               model { for i in 1..N { y[i] ~ normal(b * x[i], 1.0); z[i] ~ normal(b * y2[i], 1.0); } }";
    let c = gpmc::check("m.gpm", src).unwrap();
    let new = serde_json::json!({"N": 2, "x": [1.0, 3.0], "z": [0.5, 0.7]});
    let e = gpmc::data::test_from_json_value(&c.model, &new, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("response `y`"), "{e}");
}

/// CAVI fits of example `model` as written and with `from` replaced by `to` (each checked by
/// `check_plan`): their latents' means and variances agree within `tol`. Returns both fits.
fn same_cavi_optimum(
    model: &str,
    (from, to): (&str, &str),
    tol: f64,
    check_plan: &dyn Fn(&gpmc::Checked),
) -> (
    String,
    gpm_runtime::cavi::CaviResult,
    gpm_runtime::cavi::CaviResult,
) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let src = std::fs::read_to_string(root.join(format!("{model}.gpm"))).unwrap();
    let edited = src.replace(from, to);
    assert_ne!(src, edited);
    let config = gpm_runtime::cavi::CaviConfig {
        tolerance: 1e-12,
        max_iter: 3000,
    };
    let data = root.join(format!("{model}.data.json"));
    let fit = |s: &str| {
        let c = gpmc::check("m.gpm", s).unwrap_or_else(|f| panic!("{}", f.render()));
        check_plan(&c);
        let d = gpmc::data::load(&c.model, &[data.as_path()]).unwrap();
        gpmc::infer::run_cavi(&c, &d, &config).unwrap().0
    };
    let (a, b) = (fit(&src), fit(&edited));
    for ((name, m1, v1), (_, m2, v2)) in a.latents.iter().zip(&b.latents) {
        assert!((m1 - m2).amax() < tol, "{name}: means {}", (m1 - m2).amax());
        assert!(
            (v1 - v2).amax() < tol,
            "{name}: variances {}",
            (v1 - v2).amax()
        );
    }
    (src, a, b)
}

/// Stan's `poisson_log(eta)` (the worked example of adding a likelihood): the same model as
/// `poisson(E[i] * exp(f[i] + b))`, so CAVI reaches the same optimum (generic sites on both:
/// no augmentation for `exp`). Its density, draws and moments are checked with every other
/// likelihood's in `gpm-library`.
#[test]
fn poisson_log_is_the_poisson_with_a_log_rate() {
    let (_, a, b) = same_cavi_optimum(
        "poisson_log_gp",
        (
            "y[i] ~ poisson(E[i] * exp(f[i] + b));",
            "y[i] ~ poisson_log(log(E[i]) + f[i] + b);",
        ),
        1e-5,
        &|_| {},
    );
    let (ea, eb) = (*a.elbo.last().unwrap(), *b.elbo.last().unwrap());
    assert!((ea - eb).abs() < 1e-6 * ea.abs(), "{ea} vs {eb}");
}

/// Stan's `neg_binomial_2_log(eta, phi)` is `neg_binomial_logit(phi, eta - log(phi))`: written
/// as the mean-parametrised form on the negative-binomial GP example, it gets the same
/// Pólya-Gamma augmentation and CAVI reaches the same optimum; and an unknown Stan name gets
/// what to write instead.
#[test]
fn neg_binomial_2_log_is_the_logit_form_at_log_mean() {
    let (src, _, _) = same_cavi_optimum(
        "negbin_gp",
        (
            "y ~ neg_binomial_logit(r, f);",
            "y ~ neg_binomial_2_log(f + log(r), r);",
        ),
        1e-6,
        &|c| {
            assert!(
                c.plans
                    .iter()
                    .all(|p| p.generic.is_none() && p.form.contains("Pólya-Gamma")),
                "augmented as the logit form: {:?}",
                c.plans.iter().map(|p| &p.form).collect::<Vec<_>>()
            )
        },
    );
    let bad = src.replace("neg_binomial_logit(r, f)", "neg_binomial_2(exp(f), r)");
    let err = gpmc::check("m.gpm", &bad).unwrap_err().render();
    assert!(err.contains("neg_binomial_2_log(eta, phi)"), "{err}");
}
