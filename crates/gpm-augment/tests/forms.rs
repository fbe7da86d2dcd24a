//! Recognition is by formula, not by name: every likelihood is recognised when written in
//! several algebraically different ways, gets the same family of auxiliary variable, and its plan
//! is certified; forms that are not augmentable this way are refused with a reason.

use gpm_augment::{recognize, Plan, Refusal, Role};

fn plans(data: &str, hyper: &str, latent: &str, model: &str) -> Vec<Result<Plan, Refusal>> {
    let src =
        format!("data {{ {data} }} hyper {{ {hyper} }} latent {{ {latent} }} model {{ {model} }}");
    let p = gpm_syntax::parse(&src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    let m = gpm_ir::lower(&p).unwrap_or_else(|e| panic!("{src}: {:?}", e.0));
    recognize(&m)
}

fn family_names(p: &Plan) -> Vec<&'static str> {
    p.aux.iter().map(|a| a.conditional.name()).collect()
}

/// Each way of writing the likelihood must give a certified plan with these auxiliary families.
fn check_all(data: &str, hyper: &str, forms: &[&str], want: &[&str]) {
    let latent = "f : vector[N] ~ gp(x, sqexp(1.0));";
    for form in forms {
        let r = plans(data, hyper, latent, form);
        let p = match &r[0] {
            Ok(p) => p,
            Err(e) => panic!(
                "`{form}` refused: {} — {}\n{}",
                e.atom, e.reason, e.normal_form
            ),
        };
        assert!(
            p.certificate.passed && p.certificate.max_rel_error < 1e-8,
            "{form}: {:?}",
            p.certificate
        );
        assert_eq!(family_names(p), want, "`{form}`: {}", p.form);
    }
}

const BIN_PM: &str = "N : int; x : vector[N]; y : int[N] in {-1, 1};";
const BIN_01: &str = "N : int; x : vector[N]; y : int[N] in {0, 1};";
const REAL: &str = "N : int; x : vector[N]; y : vector[N];";
const COUNT: &str = "N : int; x : vector[N]; y : int[N] in 0..;";

#[test]
fn logistic_with_labels_plus_minus_one() {
    check_all(
        BIN_PM,
        "",
        &[
            "y ~ bernoulli_logit(f);",
            "for i in 1..N { target += log(logistic(y[i] * f[i])); }",
            "for i in 1..N { factor(1 / (1 + exp(-y[i] * f[i]))); }",
            "for i in 1..N { factor(exp(y[i] * f[i] / 2) / (2 * cosh(f[i] / 2))); }",
            "for i in 1..N { target += -log1p(exp(-y[i] * f[i])); }",
            "for i in 1..N { target += -softplus(-(y[i] * f[i])); }",
        ],
        &["Pólya-Gamma"],
    );
}

#[test]
fn logistic_with_labels_zero_one() {
    check_all(
        BIN_01,
        "",
        &[
            "y ~ bernoulli_logit(f);",
            "for i in 1..N { target += y[i] * log(logistic(f[i])) + (1 - y[i]) * log(1 - logistic(f[i])); }",
            "for i in 1..N { target += y[i] * f[i] - log1p(exp(f[i])); }",
            "for i in 1..N { factor(exp(y[i] * f[i]) / (1 + exp(f[i]))); }",
        ],
        &["Pólya-Gamma"],
    );
}

#[test]
fn binomial_and_negative_binomial() {
    check_all(
        "N : int; x : vector[N]; y : int[N] in 0..; n : int[N] in 0..;",
        "",
        &[
            "y ~ binomial_logit(n, f);",
            "for i in 1..N { target += y[i] * log(logistic(f[i])) + (n[i] - y[i]) * log(logistic(-f[i])); }",
            "for i in 1..N { target += y[i] * f[i] - n[i] * softplus(f[i]); }",
        ],
        &["Pólya-Gamma"],
    );
    check_all(
        COUNT,
        "r : real in 0.. = 3.0;",
        &[
            "y ~ neg_binomial_logit(r, f);",
            "for i in 1..N { target += lgamma(y[i] + r) - lgamma(r) + y[i] * log(logistic(f[i])) + r * log(logistic(-f[i])); }",
            "for i in 1..N { factor(logistic(f[i])^y[i] * logistic(-f[i])^r); }",
        ],
        &["Pólya-Gamma"],
    );
}

#[test]
fn student_t() {
    check_all(
        REAL,
        "nu : real in 0.. = 4.0; s : real in 0.. = 0.5;",
        &[
            "y ~ student_t(nu, f, s);",
            "for i in 1..N { factor((1 + ((y[i] - f[i]) / s)^2 / nu)^(-(nu + 1) / 2)); }",
            "for i in 1..N { target += -(nu + 1) / 2 * log1p(square(y[i] - f[i]) / (nu * s^2)); }",
            "for i in 1..N { target += -(nu + 1) / 2 * log(nu * s^2 + square(f[i] - y[i])); }",
        ],
        &["Gamma"],
    );
}

#[test]
fn laplace() {
    check_all(
        REAL,
        "b : real in 0.. = 0.7;",
        &[
            "for i in 1..N { y[i] ~ laplace(f[i], b); }",
            "for i in 1..N { target += -abs(y[i] - f[i]) / b; }",
            "for i in 1..N { factor(exp(-abs(f[i] - y[i]) / b) / (2 * b)); }",
            "for i in 1..N { target += -sqrt(square(y[i] - f[i])) / b - log(2 * b); }",
        ],
        &["inverse Gaussian"],
    );
}

#[test]
fn matern32_likelihood() {
    check_all(
        REAL,
        "rho : real in 0.. = 0.8;",
        &[
            "for i in 1..N { factor(sqrt(3) / (4 * rho) * (1 + sqrt(3) * abs(y[i] - f[i]) / rho) * exp(-sqrt(3) * abs(y[i] - f[i]) / rho)); }",
            "for i in 1..N { target += log1p(sqrt(3) * abs(y[i] - f[i]) / rho) - sqrt(3) * abs(y[i] - f[i]) / rho; }",
            "for i in 1..N { target += log(1 + 1.7320508075688772 * abs(f[i] - y[i]) / rho) - 1.7320508075688772 / rho * abs(f[i] - y[i]); }",
        ],
        &["generalised inverse Gaussian"],
    );
}

#[test]
fn bayesian_svm_hinge() {
    check_all(
        BIN_PM,
        "",
        &[
            "for i in 1..N { factor(exp(-2 * max(1 - y[i] * f[i], 0))); }",
            "for i in 1..N { target += -2 * max(0, 1 - y[i] * f[i]); }",
            "for i in 1..N { target += -(1 - y[i] * f[i]) - abs(1 - y[i] * f[i]); }",
        ],
        &["inverse Gaussian"],
    );
}

#[test]
fn poisson_with_scaled_logistic_link() {
    check_all(
        COUNT,
        "lambda : real in 0.. = 8.0;",
        &[
            "y ~ poisson(lambda * logistic(f));",
            "for i in 1..N { target += y[i] * log(lambda * logistic(f[i])) - lambda * logistic(f[i]) - lgamma(y[i] + 1); }",
            "for i in 1..N { factor((lambda / (1 + exp(-f[i])))^y[i] * exp(-lambda / (1 + exp(-f[i])))); }",
        ],
        &["Poisson", "Pólya-Gamma"],
    );
}

#[test]
fn heteroscedastic_gaussian() {
    let data = REAL;
    let latent = "f : vector[N] ~ gp(x, sqexp(1.0)); g : vector[N] ~ gp(x, sqexp(1.0));";
    for form in [
        "y ~ normal(f, 1 / sqrt(lambda * logistic(g)));",
        "for i in 1..N { target += 0.5 * log(lambda * logistic(g[i])) - 0.5 * lambda * logistic(g[i]) * square(y[i] - f[i]); }",
        "for i in 1..N { factor(sqrt(lambda * logistic(g[i])) * exp(-lambda * logistic(g[i]) * (y[i] - f[i])^2 / 2)); }",
    ] {
        let r = plans(data, "lambda : real in 0.. = 10.0;", latent, form);
        let p = r[0].as_ref().unwrap_or_else(|e| panic!("{form}: {}", e.reason));
        assert_eq!(family_names(p), ["Poisson", "Pólya-Gamma"], "{form}");
        assert_eq!(p.collapsed.len(), 1, "{form}: f is sampled collapsed");
        assert_eq!(p.collapsed[0].0, "f");
        assert!(p.certificate.passed, "{form}");
    }
}

#[test]
fn multiclass_logistic_softmax_and_the_softmax_refused() {
    let data = "N : int; C : int; X : matrix[N, 2]; y : int[N] in 1..C;";
    let latent = "F : matrix[N, C] ~ gp(X, sqexp(1.0));";
    for form in [
        "y ~ categorical_logistic_softmax(F);",
        "for i in 1..N { target += log(logistic(F[i, y[i]])) - log(sum(logistic(F[i]))); }",
        "for i in 1..N { factor(logistic(F[i, y[i]]) / sum(1 / (1 + exp(-F[i])))); }",
    ] {
        let r = plans(data, "", latent, form);
        let p = r[0]
            .as_ref()
            .unwrap_or_else(|e| panic!("{form}: {}", e.reason));
        assert!(p.categorical.is_some() && p.certificate.passed, "{form}");
    }
    let r = plans(
        data,
        "",
        latent,
        "for i in 1..N { factor(exp(F[i, y[i]]) / sum(exp(F[i]))); }",
    );
    let e = r[0].as_ref().unwrap_err();
    assert!(e.reason.contains("softmax"), "{}", e.reason);
}

/// A likelihood no table lists: exponential-power noise `exp(−k|y − f|^1.5)`. The CAS proves
/// ψ(r) = k r^0.75 Bernstein (power rule), so φ is completely monotone and the mixing law is the
/// tilted inverse Laplace transform of φ.
#[test]
fn exponential_power_noise_is_recognised_by_the_cas_proof() {
    check_all(
        REAL,
        "k : real in 0.. = 1.5;",
        &[
            "for i in 1..N { target += -k * abs(y[i] - f[i])^1.5; }",
            "for i in 1..N { factor(exp(-k * sqrt(square(f[i] - y[i]))^1.5)); }",
        ],
        &["tilted inverse-Laplace"],
    );
    // exp(−|y − f|³): r^1.5 is not Bernstein, φ is not completely monotone.
    let e = refused(REAL, "", "for i in 1..N { target += -abs(y[i] - f[i])^3; }");
    assert!(e.reason.contains("could not prove"), "{}", e.reason);
}

#[test]
fn gaussian_factors_pass_through() {
    check_all(
        REAL,
        "s : real in 0.. = 0.3;",
        &[
            "y ~ normal(f, s);",
            "for i in 1..N { target += -square(y[i] - f[i]) / (2 * s^2); }",
        ],
        &[],
    );
}

/// The heteroscedastic Student-t (thesis §7.2.2) with a known location: the negative-binomial
/// MGF, `(1 + κσ(g))^(−α) = Σ_k NB(k | α, κ/(1+κ)) σ(−g)^k`, then Pólya-Gamma; written four
/// ways. With a latent location `f` the rate depends on `f` and the factor is refused with the
/// reason (the second augmentation it needs for `f` is not implemented).
#[test]
fn heteroscedastic_student_t_by_the_negative_binomial_mgf() {
    let latent = "g : vector[N] ~ gp(x, sqexp(1.0));";
    let hyper = "nu : real in 0.. = 4.0; lambda : real in 0.. = 10.0;";
    for form in [
        "y ~ student_t(nu, 0, 1 / sqrt(lambda * logistic(g)));",
        "for i in 1..N { target += 0.5 * log(logistic(g[i])) - (nu + 1) / 2 * log(1 + lambda * logistic(g[i]) * y[i]^2 / nu); }",
        "for i in 1..N { target += 0.5 * log(lambda * logistic(g[i])) - (nu + 1) / 2 * log1p(square(y[i]) * lambda * logistic(g[i]) / nu); }",
        "for i in 1..N { factor(sqrt(logistic(g[i])) * (1 + lambda / nu * y[i]^2 * logistic(g[i]))^(-(nu + 1) / 2)); }",
    ] {
        let r = plans(REAL, hyper, latent, form);
        let p = r[0].as_ref().unwrap_or_else(|e| panic!("{form}: {} — {}", e.atom, e.reason));
        assert_eq!(family_names(p), ["negative binomial", "Pólya-Gamma"], "{form}");
        assert!(
            p.certificate.passed && p.certificate.max_rel_error < 1e-8,
            "{form}: {:?}",
            p.certificate
        );
    }
}

/// The heteroscedastic Student-t with a latent location (thesis §7.2.2, eq. 7.7): κ = λ(y−f)²/ν
/// reads `f`, so the factor is first a Gamma scale mixture in τ, then the Poisson MGF on
/// `e^(−τκσ(g))` and Pólya-Gamma; `f` is collapsed and its conditional (given τ and g) is the
/// Gaussian `−τλσ(g)(y − f)²/ν`. Written four ways; every plan certified by a quadrature over τ
/// outside the Poisson sum.
#[test]
fn heteroscedastic_student_t_with_a_latent_location() {
    let latent = "f : vector[N] ~ gp(x, sqexp(1.0)); g : vector[N] ~ gp(x, sqexp(1.0));";
    let hyper = "nu : real in 0.. = 4.0; lambda : real in 0.. = 10.0;";
    for form in [
        "y ~ student_t(nu, f, 1 / sqrt(lambda * logistic(g)));",
        "for i in 1..N { target += 0.5 * log(logistic(g[i])) - (nu + 1) / 2 * log(1 + lambda * logistic(g[i]) * (y[i] - f[i])^2 / nu); }",
        "for i in 1..N { target += lgamma((nu + 1) / 2) - lgamma(nu / 2) + 0.5 * log(lambda * logistic(g[i]) / (3.141592653589793 * nu)) - (nu + 1) / 2 * log1p(square(f[i] - y[i]) * lambda * logistic(g[i]) / nu); }",
        "for i in 1..N { factor(sqrt(logistic(g[i])) * (1 + lambda / nu * (f[i] - y[i])^2 * logistic(g[i]))^(-(nu + 1) / 2)); }",
    ] {
        let r = plans(REAL, hyper, latent, form);
        let p = r[0].as_ref().unwrap_or_else(|e| panic!("{form}: {} — {}", e.atom, e.reason));
        assert_eq!(family_names(p), ["Gamma", "Poisson", "Pólya-Gamma"], "{form}");
        assert!(
            p.certificate.passed && p.certificate.max_rel_error < 1e-8,
            "{form}: {:?}",
            p.certificate
        );
        let collapsed: Vec<&str> = p.collapsed.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(collapsed, ["f"], "{form}");
        // f's conditional given τ and g: precision 2τλσ(g)/ν, centred at y.
        let (_, poly) = &p.collapsed[0];
        let env = |r: Role, n: &str| -> Option<f64> {
            Some(match (r, n) {
                (Role::Aux, "τ") => 0.7,
                (Role::Predictor, "g") => 0.3,
                (Role::Hyper, "nu") => 4.0,
                (Role::Hyper, "lambda") => 10.0,
                (Role::Data, _) => 1.25,
                _ => return None,
            })
        };
        let sig = 1.0 / (1.0 + (-0.3f64).exp());
        let quad = poly.quad[&("f".to_string(), "f".to_string())].eval(&env).unwrap();
        let lin = poly.lin["f"].eval(&env).unwrap();
        let want = -0.7 * 10.0 * sig / 4.0;
        assert!((quad - want).abs() < 1e-12, "{form}: {quad} vs {want}");
        assert!((lin + 2.0 * want * 1.25).abs() < 1e-12, "{form}: {lin}");
    }
}

/// The probit in any written form: a truncated-normal variable per `Φ` (Albert & Chib 1993),
/// certified to 1e-8 (the truncated normal integrates back to `Φ`).
#[test]
fn probit_in_every_form() {
    check_all(
        BIN_01,
        "",
        &[
            "for i in 1..N { target += y[i] * log(normal_cdf(f[i])) + (1 - y[i]) * log(normal_cdf(-f[i])); }",
            "for i in 1..N { target += y[i] * log(Phi(f[i])) + (1 - y[i]) * log(1 - Phi(f[i])); }",
        ],
        &["truncated normal", "truncated normal"],
    );
    check_all(
        BIN_PM,
        "",
        &[
            "for i in 1..N { target += log(Phi(y[i] * f[i])); }",
            "for i in 1..N { factor(Phi(y[i] * f[i])); }",
            "for i in 1..N { target += log(1 - Phi(-y[i] * f[i])); }",
        ],
        &["truncated normal"],
    );
}

/// An exposure `E[i]` scales the rate when the data declare it non-negative; without the
/// declaration the refusal says which declaration is missing.
#[test]
fn poisson_with_an_exposure_declared_non_negative() {
    let data = "N : int; x : vector[N]; E : vector[N] in 0..; y : int[N] in 0..;";
    check_all(
        data,
        "lambda : real in 0.. = 8.0;",
        &[
            "for i in 1..N { y[i] ~ poisson(E[i] * lambda * logistic(f[i])); }",
            "for i in 1..N { target += y[i] * log(E[i] * lambda * logistic(f[i])) - E[i] * lambda * logistic(f[i]); }",
        ],
        &["Poisson", "Pólya-Gamma"],
    );
    let undeclared = refused(
        "N : int; x : vector[N]; E : vector[N]; y : int[N] in 0..;",
        "lambda : real in 0.. = 8.0;",
        "for i in 1..N { y[i] ~ poisson(E[i] * lambda * logistic(f[i])); }",
    );
    assert!(
        undeclared.reason.contains("declare `E in 0..`"),
        "{}",
        undeclared.reason
    );
    let unbounded_rate = refused(
        "N : int; x : vector[N]; E : vector[N] in 0..; y : int[N] in 0..;",
        "lambda : real = 8.0;",
        "for i in 1..N { y[i] ~ poisson(E[i] * lambda * logistic(f[i])); }",
    );
    assert!(
        unbounded_rate.reason.contains("declare `lambda in 0..`"),
        "{}",
        unbounded_rate.reason
    );
}

fn refused(data: &str, hyper: &str, form: &str) -> Refusal {
    let r = plans(data, hyper, "f : vector[N] ~ gp(x, sqexp(1.0));", form);
    match r.into_iter().next().unwrap() {
        Ok(p) => panic!("`{form}` should be refused, got {}", p.form),
        Err(e) => e,
    }
}

#[test]
fn non_augmentable_forms_are_refused_with_a_reason() {
    let probit_power = refused(
        BIN_01,
        "",
        "for i in 1..N { target += 2 * log(normal_cdf(f[i])); }",
    );
    assert!(
        probit_power.reason.contains("not 0 or 1"),
        "{}",
        probit_power.reason
    );
    let exp_link = refused(COUNT, "", "y ~ poisson(exp(f));");
    assert!(exp_link.atom.contains("exp(f)"), "{}", exp_link.atom);
    let mixture = refused(
        REAL,
        "",
        "for i in 1..N { factor(0.5 * exp(-square(y[i] - f[i]) / 2) + 0.5 * exp(-square(y[i] - f[i] - 3) / 2)); }",
    );
    assert!(
        mixture.reason.contains("nonlinearly") || mixture.reason.contains("no rule"),
        "{}",
        mixture.reason
    );
    let increasing = refused(REAL, "", "for i in 1..N { target += abs(y[i] - f[i]); }");
    assert!(
        increasing.reason.contains("increasing"),
        "{}",
        increasing.reason
    );
    let infinite = refused(
        REAL,
        "",
        "for i in 1..N { target += -0.5 * log(abs(y[i] - f[i])) - abs(y[i] - f[i]); }",
    );
    assert!(
        infinite.reason.contains("φ(0) is not finite"),
        "{}",
        infinite.reason
    );
    let convex = refused(REAL, "", "for i in 1..N { target += square(y[i] - f[i]); }");
    assert!(convex.reason.contains("not concave"), "{}", convex.reason);
    let negative_b = refused(
        BIN_PM,
        "",
        "for i in 1..N { target += -log(logistic(y[i] * f[i])); }",
    );
    assert!(negative_b.reason.contains("b > 0"), "{}", negative_b.reason);
}

/// The logistic-softmax chain is certified for the model's own number of classes: a literal
/// `C` is certified for that `C`; a datum for 2 and 3 classes (and again for its value when
/// the data are read); the check passes for more classes too.
#[test]
fn softmax_is_certified_for_the_models_number_of_classes() {
    let latent = "F : matrix[N, 5] ~ gp(X, sqexp(1.0));";
    let r = plans(
        "N : int; X : matrix[N, 2]; y : int[N] in 1..5;",
        "",
        latent,
        "y ~ categorical_logistic_softmax(F);",
    );
    let c = &r[0].as_ref().expect("recognised").certificate;
    assert!(c.passed && c.method.contains("5 classes"), "{c:?}");
    let r = plans(
        "N : int; C : int; X : matrix[N, 2]; y : int[N] in 1..C;",
        "",
        "F : matrix[N, C] ~ gp(X, sqexp(1.0));",
        "y ~ categorical_logistic_softmax(F);",
    );
    let c = &r[0].as_ref().expect("recognised").certificate;
    assert!(c.passed && c.method.contains("2 and 3 classes"), "{c:?}");
    for classes in [2, 7, 12] {
        let c = gpm_augment::certify::certify_categorical(classes, &gpm_ir::SoftmaxLink::default());
        assert!(c.passed, "{classes} classes: {c:?}");
        assert!(c.max_rel_error < 1e-10, "{classes}: {}", c.max_rel_error);
    }
}

/// Thesis §7.4.2-7.4.3: the bijective link (K − 1 columns, the last class of weight σ(0), λ
/// under a proper Gamma(1, θ_K D) prior) and the scaled link (random class scales) integrate
/// back to their likelihoods to 1e-8 for 2 to 12 classes, and a model written with them is
/// recognised and certified for its own number of classes.
#[test]
fn the_bijective_and_scaled_links_are_certified() {
    for bijective in [false, true] {
        for scaled in [false, true] {
            let link = gpm_ir::SoftmaxLink {
                bijective,
                scale: scaled.then(|| "theta".to_string()),
            };
            for classes in [2, 5, 12] {
                let c = gpm_augment::certify::certify_categorical(classes, &link);
                assert!(c.max_rel_error < 1e-8, "{link:?}, {classes} classes: {c:?}");
                assert!(c.passed);
            }
        }
    }
    let r = plans(
        "N : int; X : matrix[N, 2]; y : int[N] in 1..5;",
        "theta : vector[5] in 0.. ~ gamma(2, 2);",
        "F : matrix[N, 4] ~ gp(X, sqexp(1.0));",
        "y ~ categorical_logistic_softmax(F, link = \"bijective\", scale = theta);",
    );
    let p = r[0].as_ref().expect("recognised");
    assert!(p.form.contains("scaled bijective"), "{}", p.form);
    assert!(
        p.certificate.passed && p.certificate.method.contains("5 classes, bijective"),
        "{:?}",
        p.certificate
    );
}
