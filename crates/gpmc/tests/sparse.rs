//! Sparse GPs and stochastic CAVI:
//! * with the inducing inputs equal to the training inputs (`M = N`), sparse CAVI reproduces the
//!   full-GP CAVI posterior and ELBO on every example likelihood with a CAVI program;
//! * SVI with the whole data as its batch converges to the CAVI fixed point, and with minibatches
//!   gets within Monte Carlo noise of it;
//! * variational prediction is exact GP regression on a Gaussian likelihood, and agrees between
//!   the full and the `M = N` sparse posteriors.

use crate::common;
use common::four_chains;
use gpm_runtime::cavi::{BlockPosterior, CaviConfig};
use gpm_runtime::data::{Data, Value};
use gpm_runtime::predict::Posterior;
use gpm_runtime::prepared::Prepared;
use gpm_runtime::svi::SviConfig;
use nalgebra::{DMatrix, DVector};
use std::path::Path;

/// Add `, inducing = <points>` to the first `gp(...)` call and fix `learn(v)` at `v`.
fn sparsify(src: &str, points: &str) -> String {
    let start = src.find("gp(").expect("a gp call");
    let mut depth = 0;
    let mut end = start;
    for (k, ch) in src[start..].char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    end = start + k;
                    break;
                }
            }
            _ => {}
        }
    }
    let out = format!("{}, inducing = {}{}", &src[..end], points, &src[end..]);
    out.replace("learn(", "(")
}

fn load(model: &str, src: &str) -> (gpmc::Checked, Data) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let c = gpmc::check(model, src).unwrap_or_else(|f| panic!("{}", f.render()));
    let d = gpmc::data::load(
        &c.model,
        &[root.join(format!("{model}.data.json")).as_path()],
    )
    .unwrap();
    (c, d)
}

fn source(model: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    std::fs::read_to_string(root.join(format!("{model}.gpm"))).unwrap()
}

/// The name of the inputs of the first GP in a model.
fn inputs_of(src: &str) -> String {
    let start = src.find("gp(").unwrap() + 3;
    src[start..].split(',').next().unwrap().trim().to_string()
}

const CAVI: CaviConfig = CaviConfig {
    tolerance: 0.0,
    max_iter: 3000,
};

#[test]
fn sparse_with_all_inputs_as_inducing_points_is_the_full_gp() {
    for m in [
        "gp_classification",
        "student_t_regression",
        "laplace_regression",
        "bayesian_svm",
        "poisson_gp",
        "negbin_gp",
    ] {
        let full_src = source(m).replace("learn(", "(");
        let x = inputs_of(&full_src);
        let sparse_src = sparsify(&source(m), &x);
        let (cf, d) = load(m, &full_src);
        let (cs, _) = load(m, &sparse_src);
        let (full, _) = gpmc::infer::run_cavi(&cf, &d, &CAVI).unwrap();
        let (sparse, _) = gpmc::infer::run_cavi(&cs, &d, &CAVI).unwrap();
        let (ef, es) = (full.elbo.last().unwrap(), sparse.elbo.last().unwrap());
        assert!(
            (ef - es).abs() < 1e-5 * ef.abs().max(1.0),
            "{m}: ELBO full {ef} vs sparse {es}"
        );
        let (_, mf, vf) = &full.latents[0];
        let (_, ms, vs) = &sparse.latents[0];
        for i in 0..mf.len() {
            let sd = vf[i].sqrt();
            assert!(
                (mf[i] - ms[i]).abs() < 1e-4 * sd.max(1e-3),
                "{m}: mean {i}: {} vs {}",
                mf[i],
                ms[i]
            );
            assert!(
                (vf[i] - vs[i]).abs() < 1e-4 * vf[i].max(1e-6),
                "{m}: var {i}: {} vs {}",
                vf[i],
                vs[i]
            );
        }
        for w in sparse.elbo.windows(2) {
            assert!(
                w[1] >= w[0] - 1e-9 * w[0].abs(),
                "{m}: sparse ELBO decreased"
            );
        }
    }
}

/// Mean and sd of `f` at the training inputs from a sparse posterior.
fn f_moments(c: &gpmc::Checked, d: &Data, post: &[BlockPosterior]) -> (Vec<f64>, Vec<f64>) {
    let schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
    let (hv, _) = gpmc::infer::hyper_values(c);
    let p = gpm_runtime::predict::predict(
        &Prepared::new(&schedule, d, &hv).unwrap(),
        &schedule,
        d,
        d,
        &hv,
        Posterior::Variational(post),
        &[],
    )
    .unwrap();
    let (_, m, v) = &p.predictors[0];
    (m.clone(), v.iter().map(|x| x.sqrt()).collect())
}

#[test]
fn svi_converges_to_the_cavi_fixed_point() {
    for m in ["gp_classification", "student_t_regression", "poisson_gp"] {
        let src = source(m);
        let x = inputs_of(&src);
        let (c, d) = load(m, &sparsify(&src, "12"));
        let schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
        let (hv, _) = gpmc::infer::hyper_values(&c);
        let (cavi, _) = gpmc::infer::run_cavi(&c, &d, &CAVI).unwrap();
        let n = d.inputs(&x).unwrap().nrows();
        let (cm, cs) = f_moments(&c, &d, &cavi.blocks);
        // Full batch: the damped fixed-point iteration reaches the CAVI optimum.
        let full = gpm_runtime::svi::run(
            &schedule,
            &d,
            &hv,
            &SviConfig {
                batch: n,
                iterations: 2000,
                ..SviConfig::default()
            },
            &mut |_, _| {},
        )
        .unwrap();
        let (sm, ss) = f_moments(&c, &d, &full.blocks);
        for i in 0..n {
            assert!(
                (cm[i] - sm[i]).abs() < 1e-3 * cs[i],
                "{m} full batch: mean {i} {} vs {}",
                cm[i],
                sm[i]
            );
            assert!((cs[i] - ss[i]).abs() < 1e-3 * cs[i], "{m}: sd {i}");
        }
        // The full-batch estimate of the ELBO is the ELBO: it matches CAVI's at the optimum.
        let e_svi = full.trace.last().unwrap().elbo;
        let e_cavi = *cavi.elbo.last().unwrap();
        assert!(
            (e_svi - e_cavi).abs() < 1e-4 * e_cavi.abs(),
            "{m}: ELBO {e_svi} vs {e_cavi}"
        );
        // Minibatches of a quarter of the data: noisy, but centred on the optimum.
        let mini = gpm_runtime::svi::run(
            &schedule,
            &d,
            &hv,
            &SviConfig {
                batch: n / 4,
                iterations: 3000,
                forgetting: 0.9,
                ..SviConfig::default()
            },
            &mut |_, _| {},
        )
        .unwrap();
        let (mm, ms) = f_moments(&c, &d, &mini.blocks);
        let worst = (0..n)
            .map(|i| (cm[i] - mm[i]).abs() / cs[i])
            .fold(0.0, f64::max);
        let avg = (0..n).map(|i| (cm[i] - mm[i]).abs() / cs[i]).sum::<f64>() / n as f64;
        eprintln!("{m}: minibatch mean error: worst {worst:.3} sd, average {avg:.3} sd");
        assert!(worst < 0.2, "{m} minibatch: worst mean error {worst} sd");
        assert!(avg < 0.05, "{m} minibatch: average mean error {avg} sd");
        let worst_sd = (0..n)
            .map(|i| (cs[i] - ms[i]).abs() / cs[i])
            .fold(0.0, f64::max);
        eprintln!("{m}: minibatch sd error: worst {worst_sd:.3}");
        assert!(worst_sd < 0.1, "{m} minibatch: worst sd error {worst_sd}");
    }
}

#[test]
fn variational_prediction_is_exact_gp_regression_for_gaussian_noise() {
    let src = "data { N : int; T : int; x : vector[N]; y : vector[N]; xt : vector[T]; }\n\
               latent { f : vector[N] ~ gp(x, 1.3 * sqexp(0.7)); }\n\
               model { y ~ normal(f, 0.3); }";
    let n = 25;
    let x: Vec<f64> = (0..n)
        .map(|i| -2.0 + 4.0 * i as f64 / (n - 1) as f64)
        .collect();
    let y: Vec<f64> = x.iter().map(|v| (2.0 * v).sin() + 0.1 * v).collect();
    let mut train = Data::default();
    train.values.insert("N".into(), Value::Scalar(n as f64));
    train.values.insert("T".into(), Value::Scalar(1.0));
    train.values.insert("x".into(), Value::Vector(x.clone()));
    train.values.insert("y".into(), Value::Vector(y.clone()));
    train.values.insert("xt".into(), Value::Vector(vec![0.0]));
    let xs = vec![-2.5, -0.33, 0.1, 1.7, 3.0];
    let mut test = Data::default();
    test.values
        .insert("N".into(), Value::Scalar(xs.len() as f64));
    test.values.insert("x".into(), Value::Vector(xs.clone()));
    let ys = vec![0.5, -0.2, 0.3, 0.1, -0.4];
    test.values.insert("y".into(), Value::Vector(ys.clone()));
    let k = |a: f64, b: f64| 1.3 * (-0.5 * ((a - b) / 0.7f64).powi(2)).exp();
    // Closed form: mean k*ᵀ(K + σ²I)⁻¹y, variance k** − k*ᵀ(K + σ²I)⁻¹k*.
    let kn = DMatrix::from_fn(n, n, |i, j| k(x[i], x[j]) + if i == j { 0.09 } else { 0.0 });
    let ch = kn.cholesky().unwrap();
    let alpha = ch.solve(&DVector::from_vec(y.clone()));
    for (variant, text) in [
        ("full", src.to_string()),
        (
            "sparse M = N",
            src.replace("sqexp(0.7))", "sqexp(0.7), inducing = x)"),
        ),
    ] {
        let c = gpmc::check("gauss", &text).unwrap_or_else(|f| panic!("{}", f.render()));
        let (r, _) = gpmc::infer::run_cavi(&c, &train, &CAVI).unwrap();
        let schedule = gpm_schedule::build(&c.model, &c.plans).unwrap();
        let (hv, _) = gpmc::infer::hyper_values(&c);
        let p = gpm_runtime::predict::predict(
            &Prepared::new(&schedule, &train, &hv).unwrap(),
            &schedule,
            &train,
            &test,
            &hv,
            Posterior::Variational(&r.blocks),
            &[],
        )
        .unwrap();
        let (_, m, v) = &p.predictors[0];
        for (t, xt) in xs.iter().enumerate() {
            let ks = DVector::from_fn(n, |i, _| k(x[i], *xt));
            let mean = ks.dot(&alpha);
            let var = 1.3 - ks.dot(&ch.solve(&ks));
            assert!(
                (m[t] - mean).abs() < 1e-6,
                "{variant}: mean {} vs {mean}",
                m[t]
            );
            assert!(
                (v[t] - var).abs() < 1e-6,
                "{variant}: var {} vs {var}",
                v[t]
            );
            // Predictive density N(y*; mean, var + σ²) by quadrature.
            let s2 = var + 0.09;
            let lp = -0.5 * ((ys[t] - mean).powi(2) / s2 + (2.0 * std::f64::consts::PI * s2).ln());
            let got = p.log_predictive[0][t];
            assert!((got - lp).abs() < 1e-6, "{variant}: lpd {got} vs {lp}");
        }
    }
}

#[test]
fn gauss_hermite_integrates_polynomials_exactly() {
    let (x, w) = gpm_runtime::predict::gauss_hermite(10);
    let moment = |p: i32| x.iter().zip(&w).map(|(x, w)| w * x.powi(p)).sum::<f64>();
    assert!((moment(0) - 1.0).abs() < 1e-12);
    assert!(moment(1).abs() < 1e-12);
    assert!((moment(2) - 1.0).abs() < 1e-12);
    assert!((moment(4) - 3.0).abs() < 1e-11);
    assert!((moment(8) - 105.0).abs() < 1e-9);
}

#[test]
fn kmeans_pp_is_seeded_and_spreads_the_points() {
    let x = DMatrix::from_fn(500, 2, |i, j| ((i * (j + 3)) % 97) as f64 / 10.0);
    let a = gpm_runtime::sparse::kmeans_pp(&x, 20, 7).unwrap();
    let b = gpm_runtime::sparse::kmeans_pp(&x, 20, 7).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.nrows(), 20);
    // Distinct centres.
    for i in 0..20 {
        for j in 0..i {
            let d = (a.row(i) - a.row(j)).norm();
            assert!(d > 1e-9, "centres {i} and {j} coincide");
        }
    }
}

/// SVI learns a kernel lengthscale: full-batch SVI with Adam steps on log ℓ reaches the
/// type-II maximum-likelihood lengthscale that CAVI finds by maximising the converged ELBO
/// (Nelder-Mead), on the same sparse model (the fixed points coincide: at the optimal `q`,
/// ∂ELBO/∂ℓ with `q` held fixed is the derivative of the maximised ELBO).
#[test]
fn svi_learns_the_lengthscale_of_type_two_maximum_likelihood() {
    let n = 300;
    let x: Vec<f64> = (0..n)
        .map(|i| -3.0 + 6.0 * ((i * 7919) % n) as f64 / n as f64)
        .collect();
    let y: Vec<i64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let u = (((i * 104_729 + 17) % 1000) as f64 + 0.5) / 1000.0;
            if u < 1.0 / (1.0 + (-3.0 * (1.5 * v).sin()).exp()) {
                1
            } else {
                -1
            }
        })
        .collect();
    let src = "data { N : int; x : vector[N]; y : int[N] in {-1, 1}; }
               hyper { lengthscale : real in 0.. = learn(0.3); }
               latent { f : vector[N] ~ gp(x, 2.0 * sqexp(lengthscale), inducing = 20); }
               model { y ~ bernoulli_logit(f); }";
    let c = gpmc::check("svi_learn.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "x": x, "y": y});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let ell_cavi = cavi_learned(&c, &d, "lengthscale");
    let (ell_svi, how) = svi_learned(&c, &d, "lengthscale");
    eprintln!("lengthscale: SVI {ell_svi:.4}, CAVI type-II ML {ell_cavi:.4} (start 0.3)");
    assert!(how.contains("learned by SVI"), "{how}");
    assert!(
        (ell_svi / ell_cavi).ln().abs() < 0.05,
        "SVI {ell_svi} vs CAVI {ell_cavi}"
    );
}

/// CAVI's type-II maximum-likelihood value of `name`.
fn cavi_learned(c: &gpmc::Checked, d: &Data, name: &str) -> f64 {
    let (_, hypers) = gpmc::infer::run_cavi(
        c,
        d,
        &CaviConfig {
            tolerance: 1e-10,
            max_iter: 2000,
        },
    )
    .unwrap();
    hypers.iter().find(|h| h.0 == name).unwrap().1
}

/// Full-batch SVI (1500 iterations, Adam step 0.03): the learned value of `name` and how the
/// summary says it was set.
fn svi_learned(c: &gpmc::Checked, d: &Data, name: &str) -> (f64, String) {
    let n = d.scalar("N").unwrap() as usize;
    let (r, hypers, _) = gpmc::infer::run_svi(
        c,
        d,
        &SviConfig {
            batch: n,
            iterations: 1500,
            hyper_rate: 0.03,
            ..SviConfig::default()
        },
        &mut |_, _| {},
    )
    .unwrap();
    let id = c.model.hypers.iter().position(|h| h.name == name).unwrap();
    let value = r.hypers.iter().find(|h| h.0 .0 == id).unwrap().1;
    let how = hypers.iter().find(|h| h.0 == name).unwrap().2.clone();
    (value, how)
}

/// The logistic-softmax under SVI: with the whole data as the batch it reaches the sparse CAVI
/// fixed point; with minibatches and one sampled non-label class per observation (weights
/// (C − 1)/K, thesis ch. 4) it stays close to it.
#[test]
fn multiclass_svi_reaches_cavi_and_class_subsampling_stays_close() {
    let m = "multiclass_gp";
    multiclass_svi_case(m, &sparsify(&source(m), "15"));
    // The bijective link (thesis §7.4.2): two columns for three classes, the last fixed.
    let bijective = sparsify(&source(m), "15")
        .replace(
            "  y : int[N] in 1..C;",
            "  y : int[N] in 1..C;\n  let J = C - 1;",
        )
        .replace("F : matrix[N, C]", "F : matrix[N, J]")
        .replace(
            "categorical_logistic_softmax(F)",
            "categorical_logistic_softmax(F, link = \"bijective\")",
        );
    assert!(bijective.contains("bijective") && bijective.contains("matrix[N, J]"));
    multiclass_svi_case(m, &bijective);
}

fn multiclass_svi_case(m: &str, src: &str) {
    let (c, d) = load(m, src);
    let (cavi, _) = gpmc::infer::run_cavi(&c, &d, &CAVI).unwrap();
    let n = d.inputs("X").unwrap().nrows();
    let means = |blocks: &[BlockPosterior]| -> Vec<f64> {
        blocks
            .iter()
            .flat_map(|b| match b {
                BlockPosterior::Sparse(q) => q.mean.iter().copied().collect::<Vec<_>>(),
                _ => panic!("sparse blocks expected"),
            })
            .collect()
    };
    let reference = means(&cavi.blocks);
    let run = |config: SviConfig| {
        let (r, _, _) = gpmc::infer::run_svi(&c, &d, &config, &mut |_, _| {}).unwrap();
        let got = means(&r.blocks);
        let diffs: Vec<f64> = got
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .collect();
        let worst = diffs.iter().cloned().fold(0.0, f64::max);
        (worst, diffs.iter().sum::<f64>() / diffs.len() as f64)
    };
    let (worst, _) = run(SviConfig {
        batch: n,
        iterations: 1500,
        ..SviConfig::default()
    });
    assert!(
        worst < 1e-3,
        "full batch: worst whitened-mean error {worst}"
    );
    let (worst, avg) = run(SviConfig {
        batch: n / 3,
        iterations: 4000,
        forgetting: 0.9,
        class_batch: 1,
        ..SviConfig::default()
    });
    eprintln!("class subsampling (K = 1 of 2), B = N/3: whitened-mean error worst {worst:.3}, average {avg:.3}");
    assert!(
        worst < 0.3 && avg < 0.08,
        "subsampled: worst {worst}, average {avg}"
    );
}

/// A likelihood hyperparameter learned by SVI: the Student-t scale, against CAVI's type-II ML on
/// the same sparse model (its ELBO reads `sigma` through the local terms only).
#[test]
fn svi_learns_a_likelihood_scale_like_type_two_maximum_likelihood() {
    let m = "student_t_regression";
    let src = "data { N : int; x : vector[N]; y : vector[N]; }
               hyper { sigma : real in 0.. = learn(0.15); }
               latent { f : vector[N] ~ gp(x, sqexp(1.0), inducing = 15); }
               model { y ~ student_t(4.0, f, sigma); }";
    let (c, d) = load(m, src);
    let s_cavi = cavi_learned(&c, &d, "sigma");
    let (s_svi, _) = svi_learned(&c, &d, "sigma");
    eprintln!("sigma: SVI {s_svi:.4}, CAVI type-II ML {s_cavi:.4} (start 0.15)");
    assert!(
        (s_svi / s_cavi).ln().abs() < 0.05,
        "SVI {s_svi} vs CAVI {s_cavi}"
    );
}

/// The heteroscedastic double bounds under SVI: with the whole data as the batch, SVI reaches
/// the sparse CAVI fixed point (both latent GPs sparse) — the Gaussian, and the Student-t with a
/// latent location (the Gamma τ scaling the Poisson rate).
#[test]
fn heteroscedastic_svi_reaches_the_cavi_fixed_point() {
    for (m, lik) in [
        (
            "heteroscedastic_gp",
            "y ~ normal(f, 1 / sqrt(lambda * logistic(g)));",
        ),
        (
            "heteroscedastic_student_t",
            "y ~ student_t(4.0, f, 1 / sqrt(lambda * logistic(g)));",
        ),
    ] {
        heteroscedastic_svi_case(m, lik);
    }
}

fn heteroscedastic_svi_case(m: &str, lik: &str) {
    let src = format!(
        "data {{ N : int; x : vector[N]; y : vector[N]; }}
         hyper {{ lambda : real in 0.. = 20.0; }}
         latent {{ f : vector[N] ~ gp(x, sqexp(1.0), inducing = 12);
                  g : vector[N] ~ gp(x, sqexp(1.0), inducing = 12); }}
         model {{ {lik} }}"
    );
    let (c, d) = load(m, &src);
    let (cavi, _) = gpmc::infer::run_cavi(&c, &d, &CAVI).unwrap();
    let n = d.vector("y").unwrap().len();
    let (r, _, _) = gpmc::infer::run_svi(
        &c,
        &d,
        &SviConfig {
            batch: n,
            iterations: 3000,
            ..SviConfig::default()
        },
        &mut |_, _| {},
    )
    .unwrap();
    for (b_cavi, b_svi) in cavi.blocks.iter().zip(&r.blocks) {
        let (BlockPosterior::Sparse(qc), BlockPosterior::Sparse(qs)) = (b_cavi, b_svi) else {
            panic!("sparse blocks expected")
        };
        let worst = (&qc.mean - &qs.mean).amax();
        assert!(worst < 1e-3, "{m}: whitened mean differs by {worst}");
    }
    let (e_svi, e_cavi) = (r.trace.last().unwrap().elbo, *cavi.elbo.last().unwrap());
    assert!(
        (e_svi - e_cavi).abs() < 1e-4 * e_cavi.abs(),
        "{m}: ELBO {e_svi} vs {e_cavi}"
    );
}

/// Sparse Gibbs: with a Gaussian likelihood the posterior under the sparse (FITC) prior
/// `f = Φᵀv + ε`, `Cov f = K_fu K_uu⁻¹ K_uf + diag(k̃)`, is Gaussian in closed form; the Gibbs
/// draws (v and ε jointly given the curvature) must match its means and sds within Monte Carlo
/// error, with 8 inducing points for 40 observations.
#[test]
fn sparse_gibbs_matches_the_closed_form_fitc_posterior() {
    let n = 40;
    let x: Vec<f64> = (0..n)
        .map(|i| -3.0 + 6.0 * i as f64 / (n - 1) as f64)
        .collect();
    let y: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| (1.2 * v).sin() + 0.3 * (((i * 7919) % 97) as f64 / 97.0 - 0.5))
        .collect();
    let z: Vec<Vec<f64>> = (0..8).map(|k| vec![-3.0 + 6.0 * k as f64 / 7.0]).collect();
    let src = "data { N : int; M : int; x : vector[N]; Z : matrix[M, 1]; y : vector[N]; }
               latent { f : vector[N] ~ gp(x, sqexp(1.0), inducing = Z); }
               model { y ~ normal(f, 0.3); }";
    let c = gpmc::check("fitc.gpm", src).unwrap();
    let json = serde_json::json!({"N": n, "M": 8, "x": x, "Z": z, "y": y});
    let d = gpmc::data::from_json_value(&c.model, &json).unwrap();
    let r = gpmc::infer::run_gibbs(&c, &d, &four_chains(100, 2000, 3), &|_, _| {}).unwrap();
    let k = |a: f64, b: f64| (-(a - b) * (a - b) / 2.0).exp();
    let m = z.len();
    let kuu = DMatrix::from_fn(m, m, |i, j| {
        k(z[i][0], z[j][0]) + if i == j { 1e-10 } else { 0.0 }
    });
    let kfu = DMatrix::from_fn(n, m, |i, j| k(x[i], z[j][0]));
    let q = &kfu * kuu.clone().cholesky().unwrap().solve(&kfu.transpose());
    let mut prior = q.clone();
    for i in 0..n {
        prior[(i, i)] = 1.0;
    }
    let mut cy = prior.clone();
    for i in 0..n {
        cy[(i, i)] += 0.09;
    }
    let ch = cy.cholesky().unwrap();
    let yv = DVector::from_vec(y.clone());
    let mean = &prior * ch.solve(&yv);
    let cov = &prior - &prior * ch.solve(&prior);
    let mut worst: f64 = 0.0;
    for i in 0..n {
        let s = &r
            .summaries
            .iter()
            .find(|(c, _)| *c == format!("f.{}", i + 1))
            .unwrap()
            .1;
        let sd = cov[(i, i)].sqrt();
        let zm = (s.mean - mean[i]) / s.mcse_mean;
        let zs = (s.sd / sd - 1.0) / (0.5 / s.ess_bulk).sqrt();
        worst = worst.max(zm.abs()).max(zs.abs());
        assert!(
            zm.abs() < 4.5 && zs.abs() < 4.5,
            "f.{}: Gibbs {} (sd {}) vs {} (sd {sd})",
            i + 1,
            s.mean,
            s.sd,
            mean[i]
        );
    }
    eprintln!(
        "sparse Gibbs vs closed-form FITC posterior: worst |z| {worst:.2} over {n} coordinates"
    );
}
