//! Lowering tests: predictors are lifted as documented, library distributions and formulas
//! lower to the same density, and the categorical formula form is recognised structurally.

use gpm_ir::*;

fn lower_src(src: &str) -> Model {
    let p = gpm_syntax::parse(src).unwrap();
    gpm_ir::lower(&p).unwrap_or_else(|e| panic!("{:?}", e.0))
}

fn eval(sx: &Sx, vals: &[(&str, f64)]) -> f64 {
    sx.eval(&|_, n| vals.iter().find(|(k, _)| *k == n).map(|(_, v)| *v))
        .unwrap()
}

fn log_density(f: &Factor) -> &Sx {
    match &f.form {
        FactorForm::LogDensity { log_density } => log_density,
        _ => panic!("not a log-density"),
    }
}

#[test]
fn random_effects_are_lifted_into_one_predictor() {
    let m = lower_src(
        "data { N : int; G : int; x : vector[N]; g : int[N] in 1..G; y : int[N] in {-1, 1}; }
         hyper { s : real ~ gamma(2, 2); }
         latent { f : vector[N] ~ gp(x, sqexp(1.0)); u : vector[G] ~ normal(0, s); }
         model { for i in 1..N { target += log(logistic(y[i] * (f[i] + u[g[i]]))); } }",
    );
    assert_eq!(m.predictors.len(), 1);
    let p = &m.predictors[0];
    assert_eq!(p.terms.len(), 2);
    assert_eq!(p.terms[1].design, Design::Gather { index: "g".into() });
    let f = &m.factors[0];
    assert_eq!(f.predictors, vec![p.name.clone()]);
    let v = eval(log_density(f), &[("y", -1.0), (p.name.as_str(), 0.3)]);
    assert!((v - (1.0 / (1.0 + 0.3f64.exp())).ln()).abs() < 1e-15);
}

#[test]
fn regression_predictor_with_matrix_and_intercept() {
    let m = lower_src(
        "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {0, 1}; }
         latent { w : vector[D] ~ normal(0, 1); b : real ~ normal(0, 1); }
         model { y ~ bernoulli_logit(2 * (X * w) - b + 1); }",
    );
    let p = &m.predictors[0];
    assert_eq!(p.offset, 1.0);
    assert_eq!(p.terms[0].coef, 2.0);
    assert_eq!(p.terms[0].design, Design::Matrix { data: "X".into() });
    assert_eq!(
        (p.terms[1].coef, &p.terms[1].design),
        (-1.0, &Design::Broadcast)
    );
}

/// A scalar slope times a covariate, vectorised or in a loop, is one term scaled per
/// observation: `w * x + b` is one predictor (the conjugate Gaussian), not `w·x` left in the
/// formula beside a predictor for `b`.
#[test]
fn a_scalar_slope_times_a_covariate_is_lifted() {
    for model in [
        "model { y ~ normal(w * x + b, 0.5); }",
        "model { for i in 1..N { y[i] ~ normal(x[i] * w + b, 0.5); } }",
    ] {
        let m = lower_src(&format!(
            "data {{ N : int; x : vector[N]; y : vector[N]; }}
             latent {{ w : real ~ normal(0, 1); b : real ~ normal(0, 1); }}
             {model}"
        ));
        assert_eq!(m.predictors.len(), 1, "{model}");
        let p = &m.predictors[0];
        assert_eq!(p.terms[0].scale_by.as_deref(), Some("x"), "{model}");
        assert_eq!(p.terms[1].scale_by, None, "{model}");
        assert_eq!(m.factors[0].predictors, vec![p.name.clone()]);
    }
}

#[test]
fn library_and_formula_give_the_same_density() {
    let lib = lower_src(
        "data { N : int; x : vector[N]; y : vector[N]; } hyper { nu : real = 3.0; s : real = 0.5; }
         latent { f : vector[N] ~ gp(x, sqexp(1.0)); } model { y ~ student_t(nu, f, s); }",
    );
    let formula = lower_src(
        "data { N : int; x : vector[N]; y : vector[N]; } hyper { nu : real = 3.0; s : real = 0.5; }
         latent { f : vector[N] ~ gp(x, sqexp(1.0)); }
         model { for i in 1..N {
           target += lgamma((nu + 1) / 2) - lgamma(nu / 2) - 0.5 * log(nu * 3.141592653589793)
                     - log(s) - (nu + 1) / 2 * log(1 + ((y[i] - f[i]) / s)^2 / nu);
         } }",
    );
    for (y, f) in [(0.1, -0.4), (2.0, 0.3), (-3.0, 1.0)] {
        let vals = [("y", y), ("f", f), ("nu", 3.0), ("s", 0.5)];
        let a = eval(log_density(&lib.factors[0]), &vals);
        let b = eval(log_density(&formula.factors[0]), &vals);
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn categorical_formula_is_recognised_like_the_library_form() {
    let lib = lower_src(
        "data { N : int; C : int; X : matrix[N, 2]; y : int[N] in 1..C; }
         latent { F : matrix[N, C] ~ gp(X, sqexp(1.0)); }
         model { y ~ categorical_logistic_softmax(F); }",
    );
    let formula = lower_src(
        "data { N : int; C : int; X : matrix[N, 2]; y : int[N] in 1..C; }
         latent { F : matrix[N, C] ~ gp(X, sqexp(1.0)); }
         model { for i in 1..N { target += log(logistic(F[i, y[i]])) - log(sum(logistic(F[i]))); } }",
    );
    for m in [&lib, &formula] {
        let FactorForm::Categorical {
            log_weight,
            class_predictor,
            label,
            ..
        } = &m.factors[0].form
        else {
            panic!("not categorical")
        };
        assert_eq!(label, "y");
        let w = eval(log_weight, &[(class_predictor.as_str(), 0.7)]);
        assert!((w - (1.0 / (1.0 + (-0.7f64).exp())).ln()).abs() < 1e-15);
    }
}

/// Issue 37: a softmax written by hand with `exp` (not the logistic-softmax form) reads a
/// column chosen by the data; the error says so and what to write, not "write a number".
#[test]
fn a_column_chosen_by_the_data_says_what_to_write() {
    let p = gpm_syntax::parse(
        "data { N : int; C : int; X : matrix[N, 2]; y : int[N] in 1..C; }
         latent { F : matrix[N, C] ~ gp(X, sqexp(1.0)); }
         model { for i in 1..N { target += F[i, y[i]] - log(sum(exp(F[i]))); } }",
    )
    .unwrap();
    let errs = gpm_ir::lower(&p).unwrap_err();
    let e = errs
        .0
        .iter()
        .find(|e| e.code == "gpm::bad_index")
        .expect("bad_index");
    assert!(e.message.contains("is chosen by `y[i]`"), "{}", e.message);
    assert!(
        e.help
            .as_deref()
            .unwrap()
            .contains("categorical_logistic_softmax(F)"),
        "{:?}",
        e.help
    );
    assert!(errs.0.iter().all(|e| e.code != "gpm::not_constant"));
}

#[test]
fn heteroscedastic_model_has_two_predictors_in_one_factor() {
    let m = lower_src(
        "data { N : int; x : vector[N]; y : vector[N]; } hyper { lambda : real = 10.0; }
         latent { f : vector[N] ~ gp(x, sqexp(1.0)); g : vector[N] ~ gp(x, sqexp(1.0)); }
         model { y ~ normal(f, 1 / sqrt(lambda * logistic(g))); }",
    );
    let mut p = m.factors[0].predictors.clone();
    p.sort();
    assert_eq!(p, vec!["f".to_string(), "g".to_string()]);
    assert_eq!(m.factors[0].hypers, vec!["lambda".to_string()]);
}

#[test]
fn errors_keep_going_after_the_first() {
    let p = gpm_syntax::parse(
        "data { N : int; x : vector[N]; y : vector[N]; }
         latent { f : vector[N] ~ gp(x, sqexpp(1.0)); }
         model { y ~ normall(f, 1.0); }",
    )
    .unwrap();
    let errs = gpm_ir::lower(&p).unwrap_err();
    let codes: Vec<&str> = errs.0.iter().map(|e| e.code).collect();
    assert!(
        codes.contains(&"gpm::unknown_kernel") && codes.contains(&"gpm::unknown_distribution"),
        "{codes:?}"
    );
}

/// Issue 50: a sampled hyperparameter's range one ulp wide made the slice step spin; it is
/// refused at check time with what to write, while a fixed value in such a range and a narrow
/// range far from one ulp are fine.
#[test]
fn a_range_too_narrow_to_sample_is_refused() {
    let src = |decl: &str| {
        format!(
            "data {{ N : int; x : vector[N]; y : vector[N]; }}
             hyper {{ {decl} }}
             latent {{ f : vector[N] ~ gp(x, sqexp(1.0)); }}
             model {{ y ~ normal(f, sigma); }}"
        )
    };
    let narrow = "sigma : real in 0.3..0.30000000000000004 ~ uniform(0.3, 0.30000000000000004);";
    let errs = gpm_ir::lower(&gpm_syntax::parse(&src(narrow)).unwrap()).unwrap_err();
    let e = errs
        .0
        .iter()
        .find(|e| e.code == "gpm::bad_constraint")
        .unwrap();
    assert!(
        e.message.contains("too narrow to sample or learn"),
        "{}",
        e.message
    );
    assert!(e
        .help
        .as_deref()
        .unwrap_or("")
        .contains("sigma : real = 0.3;"));
    for fine in [
        "sigma : real in 0.3..0.30000000000000004 = 0.3;",
        "sigma : real in 1e-12..2e-12 ~ uniform(1e-12, 2e-12);",
    ] {
        assert!(
            gpm_ir::lower(&gpm_syntax::parse(&src(fine)).unwrap()).is_ok(),
            "{fine}"
        );
    }
}

#[test]
fn let_predictors_can_be_indexed_in_loops() {
    let m = lower_src(
        "data { N : int; D : int; X : matrix[N, D]; y : int[N] in {0, 1}; }
         latent { w : vector[D] ~ normal(0, 1); b : real ~ normal(0, 1); }
         model { let eta = X * w + b; for i in 1..N { target += y[i] * eta[i] - softplus(eta[i]); } }",
    );
    assert_eq!(m.predictors.len(), 1);
    assert_eq!(m.predictors[0].name, "eta");
    assert_eq!(m.factors[0].predictors, vec!["eta".to_string()]);
}

#[test]
fn sums_of_latents_join_one_predictor_however_they_are_bracketed() {
    for body in [
        "y[i] - f[i] - b",
        "y[i] - (f[i] + b)",
        "(y[i] - b) - f[i]",
        "-b + y[i] - f[i]",
    ] {
        let m = lower_src(&format!(
            "data {{ N : int; x : vector[N]; y : vector[N]; }}
             latent {{ f : vector[N] ~ gp(x, sqexp(1.0)); b : real ~ normal(0, 1); }}
             model {{ for i in 1..N {{ target += -square({body}); }} }}"
        ));
        assert_eq!(m.factors[0].predictors.len(), 1, "{body}");
        let p = &m.predictors[0];
        assert_eq!(p.terms.len(), 2, "{body}");
        assert!(
            p.terms.iter().all(|t| t.coef == 1.0),
            "{body}: {:?}",
            p.terms
        );
    }
}

/// Every factor knows its response: the datum left of `~`, the label of a categorical factor,
/// the one observation-indexed datum of a formula; none for a formula reading two.
#[test]
fn factors_know_their_response() {
    let m = lower_src(
        "data { N : int; C : int; X : matrix[N, 2]; x : vector[N]; z : vector[N];
                y : vector[N]; t : int[N] in {-1, 1}; k : int[N] in 1..C; }
         latent { f : vector[N] ~ gp(X, sqexp(1.0)); F : matrix[N, C] ~ gp(X, sqexp(1.0)); }
         model {
           y ~ normal(f + x, 1.0);
           k ~ categorical_logistic_softmax(F);
           for i in 1..N { factor(exp(-2 * max(1 - t[i] * f[i], 0))); }
           for i in 1..N { target += -(x[i] - z[i] * f[i])^2; }
         }",
    );
    let responses: Vec<Option<&str>> = m.factors.iter().map(|f| f.response.as_deref()).collect();
    assert_eq!(responses, vec![Some("y"), Some("k"), Some("t"), None]);
}

/// Issue 34: the logistic-softmax written with its class sum spelled out term by term (each
/// term may spell `w` its own way) and the observed class picked by the labels is the library's
/// factor; a sum that misses a class, or whose terms differ, is refused with what to write.
#[test]
fn a_class_sum_written_out_is_the_logistic_softmax() {
    let head = "data { N : int; X : matrix[N, 2]; y : int[N] in 1..3; }
         latent { F : matrix[N, 3] ~ gp(X, sqexp(1.0)); }";
    for body in [
        "for i in 1..N { target += log(logistic(F[i, y[i]])) - log(logistic(F[i, 1]) + 1 / (1 + exp(-F[i, 2])) + logistic(F[i, 3])); }",
        "for i in 1..N { factor(logistic(F[i, y[i]]) / (logistic(F[i, 3]) + (logistic(F[i, 1]) + logistic(F[i, 2])))); }",
    ] {
        let m = lower_src(&format!("{head} model {{ {body} }}"));
        let FactorForm::Categorical {
            classes, link, ..
        } = &m.factors[0].form
        else {
            panic!("{body}: not categorical")
        };
        assert_eq!(*classes, Dim::Const(3));
        assert_eq!(*link, SoftmaxLink::default());
    }
    for (body, says) in [
        (
            "for i in 1..N { target += log(logistic(F[i, y[i]])) - log(logistic(F[i, 1]) + logistic(F[i, 2])); }",
            "has 2 terms",
        ),
        (
            "for i in 1..N { target += log(logistic(F[i, y[i]])) - log(logistic(F[i, 1]) + logistic(F[i, 2]) + exp(F[i, 3])); }",
            "different class weights",
        ),
    ] {
        let p = gpm_syntax::parse(&format!("{head} model {{ {body} }}")).unwrap();
        let errs = gpm_ir::lower(&p).unwrap_err();
        assert!(
            errs.0.iter().any(|e| e.message.contains(says)),
            "{body}: {:?}",
            errs.0.iter().map(|e| &e.message).collect::<Vec<_>>()
        );
    }
}

/// The link's options: a link that does not exist, scales that are not a positive vector of
/// one entry per class with a Gamma prior, a bijective latent with as many columns as classes,
/// and a string where a number belongs are refused with what to write.
#[test]
fn the_softmax_options_are_checked() {
    let model = |hyper: &str, columns: &str, options: &str| {
        format!(
            "data {{ N : int; X : matrix[N, 2]; y : int[N] in 1..3; }}
             hyper {{ {hyper} }}
             latent {{ F : matrix[N, {columns}] ~ gp(X, sqexp(1.0)); }}
             model {{ y ~ categorical_logistic_softmax(F{options}); }}"
        )
    };
    let ok = lower_src(&model(
        "t : vector[3] in 0.. ~ gamma(2, 2);",
        "2",
        ", link = \"bijective\", scale = t",
    ));
    let FactorForm::Categorical { link, classes, .. } = &ok.factors[0].form else {
        panic!()
    };
    assert!(link.bijective && link.scale.as_deref() == Some("t"));
    assert_eq!(*classes, Dim::Const(3));
    for (src, says) in [
        (model("", "3", ", link = \"probit\""), "not a valid `link`"),
        (model("", "3", ", scale = nothing"), "not a valid `scale`"),
        (
            model("t : vector[2] in 0.. ~ gamma(2, 2);", "3", ", scale = t"),
            "not a vector[3]",
        ),
        (
            model("t : vector[3] ~ gamma(2, 2);", "3", ", scale = t"),
            "in 0..",
        ),
        (
            model(
                "t : vector[3] in 0.. ~ lognormal(0, 1);",
                "3",
                ", scale = t",
            ),
            "gamma(a, b)",
        ),
        (
            model("", "3", ", link = \"bijective\""),
            "C = 3 + 1 classes",
        ),
        (model("", "2", ""), "C = 2 classes"),
        (
            "data { N : int; x : vector[N]; y : vector[N]; }
             latent { f : vector[N] ~ gp(x, sqexp(1.0)); }
             model { y ~ normal(f, \"one\"); }"
                .to_string(),
            "a string is only",
        ),
    ] {
        let p = gpm_syntax::parse(&src).unwrap();
        let errs = gpm_ir::lower(&p).unwrap_err();
        assert!(
            errs.0.iter().any(|e| e.message.contains(says)),
            "{says}: {:?}",
            errs.0.iter().map(|e| &e.message).collect::<Vec<_>>()
        );
    }
}

/// Issue 51: each heavy-tailed latent prior lowers to its own density — differences of the
/// prior factor's log-density against the closed forms — and a name outside the registry is an
/// error (it once lowered silently as a Laplace prior through a catch-all arm).
#[test]
fn heavy_tailed_latent_priors_lower_to_their_own_densities_and_unknown_ones_are_errors() {
    let prior_factor = |prior: &str| {
        let m = lower_src(&format!(
            "data {{ N : int; y : vector[N]; }}
             latent {{ w : real ~ {prior}; }}
             model {{ y ~ normal(w, 1); }}"
        ));
        let f = m
            .factors
            .iter()
            .find(|f| f.prior_of.as_deref() == Some("w"))
            .expect("a prior factor")
            .clone();
        let eta = f.predictors[0].clone();
        move |w: f64| eval(log_density(&f), &[(eta.as_str(), w)])
    };
    let z = |w: f64| (w - 0.5) / 2.0;
    let closed: [(&str, &dyn Fn(f64) -> f64); 5] = [
        ("student_t(4, 0.5, 2)", &|w| {
            -2.5 * (1.0 + z(w) * z(w) / 4.0).ln()
        }),
        ("cauchy(0.5, 2)", &|w| -(1.0 + z(w) * z(w)).ln()),
        ("laplace(0.5, 2)", &|w| -(w - 0.5f64).abs() / 2.0),
        ("double_exponential(0.5, 2)", &|w| -(w - 0.5f64).abs() / 2.0),
        ("logistic(0.5, 2)", &|w| -z(w) - 2.0 * (-z(w)).exp().ln_1p()),
    ];
    for (prior, exact) in closed {
        let ld = prior_factor(prior);
        for (a, b) in [(1.3, 0.2), (-3.0, 4.5), (10.0, 0.5)] {
            let (got, want) = (ld(a) - ld(b), exact(a) - exact(b));
            assert!(
                (got - want).abs() < 1e-12,
                "{prior} at {a}, {b}: {got} vs {want}"
            );
        }
    }
    // The horseshoe: symmetric about 0, and not a Laplace density in disguise.
    let hs = prior_factor("horseshoe(0.7)");
    assert!((hs(1.3) - hs(-1.3)).abs() < 1e-12);
    let laplace = prior_factor("laplace(0, 0.7)");
    assert!(((hs(0.1) - hs(5.0)) - (laplace(0.1) - laplace(5.0))).abs() > 1.0);
    // A name outside the registry is an error that lists the registry's priors.
    let p = gpm_syntax::parse(
        "data { N : int; y : vector[N]; }
         latent { w : real ~ gumbel(0, 1); }
         model { y ~ normal(w, 1); }",
    )
    .unwrap();
    let errors = gpm_ir::lower(&p).expect_err("an unknown latent prior").0;
    assert_eq!(errors[0].code, "gpm::unknown_distribution", "{errors:?}");
    let help = format!("{errors:?}");
    assert!(
        help.contains("horseshoe(tau)") && help.contains("laplace(mu, b)"),
        "{help}"
    );
}
