//! The registries' supports and parameter constraints (issue 51), end to end: a likelihood on
//! the positive half-line (`lognormal`, added as the worked example) runs conjugate Gibbs and
//! matches its closed-form posterior; a response outside a likelihood's support is a data
//! error naming the entry, whatever the declaration allows; a parameter a law cannot take —
//! a literal, a fixed value, a hyperparameter whose range or prior reaches outside — is refused
//! by `check`, and a bounded kernel parameter (`gamma_exponential`'s `(0, 2]`) the same way.

use crate::common;
use common::{assert_matches, four_chains_of_3000};

const LOGNORMAL: &str = r#"
data {
  N : int;
  x : vector[N];
  y : vector[N];
}
hyper {
  s : real = 0.5;
}
latent {
  b : real ~ normal(0, 1);
}
model {
  y ~ lognormal(b * x, s);
}
"#;

fn data(model: &gpm_ir::Model, x: &[f64], y: &[f64]) -> Result<gpm_runtime::data::Data, String> {
    let v = serde_json::json!({"N": x.len(), "x": x, "y": y});
    gpmc::data::from_json_value(model, &v).map_err(|e| e.message)
}

/// `log y ~ normal(b x, s)` with `b ~ normal(0, 1)`: the posterior of `b` is normal with
/// precision `1 + Σx²/s²` and mean `Σ x log y / s²` over that precision.
#[test]
fn a_lognormal_regression_is_conjugate_and_exact() {
    let c = gpmc::check("lognormal", LOGNORMAL).unwrap_or_else(|f| panic!("{}", f.render()));
    let text = gpmc::report::text(&c);
    assert!(
        text.contains("Gaussian (conjugate, no augmentation)"),
        "{text}"
    );
    let x = [0.3, -1.2, 0.8, 1.5, -0.4, 2.0];
    let y = [1.4, 0.3, 2.2, 3.9, 0.9, 6.1];
    let d = data(&c.model, &x, &y).unwrap();
    let s2 = 0.25;
    let precision = 1.0 + x.iter().map(|v| v * v).sum::<f64>() / s2;
    let mean = x.iter().zip(&y).map(|(a, b)| a * b.ln()).sum::<f64>() / s2 / precision;
    let r = gpmc::infer::run_gibbs(&c, &d, &four_chains_of_3000(3), &|_, _| {}).unwrap();
    assert_matches(&r, "lognormal", "b", mean, precision.powf(-0.5));
}

#[test]
fn a_response_outside_the_support_names_the_entry() {
    let c = gpmc::check("lognormal", LOGNORMAL).unwrap();
    let e = data(&c.model, &[0.1, 0.2, 0.3], &[1.0, 0.0, 2.0]).unwrap_err();
    assert!(e.contains("`y[2]` = 0") && e.contains("positive"), "{e}");
    // A count likelihood on `int` data declared without `in 0..`: -2 is refused by the
    // support, not left to the sampler ("Pólya-Gamma with invalid parameters").
    let counts = LOGNORMAL
        .replace("y : vector[N];", "y : int[N];")
        .replace("lognormal(b * x, s)", "poisson_log(b * x)");
    let c = gpmc::check("counts", &counts).unwrap();
    let e = data(&c.model, &[0.1, 0.2, 0.3], &[1.0, -2.0, 2.0]).unwrap_err();
    assert!(
        e.contains("`y[2]` = -2") && e.contains("whole number ≥ 0"),
        "{e}"
    );
}

/// The error `check` gives, rendered.
fn refused(src: &str) -> String {
    match gpmc::check("m", src) {
        Ok(_) => panic!("accepted:\n{src}"),
        Err(f) => f.render(),
    }
}

#[test]
fn a_parameter_outside_its_constraint_is_refused_by_check() {
    for (s, says) in [
        ("s : real = -0.5;", "`s` is fixed at -0.5"),
        (
            "s : real ~ normal(0, 1);",
            "`s` has a `normal` prior over (−∞, ∞)",
        ),
        (
            "s : real in -1..1 ~ uniform(-1, 1);",
            "`s` has a `uniform` prior over (-1, 1)",
        ),
    ] {
        let e = refused(&LOGNORMAL.replace("s : real = 0.5;", s));
        assert!(
            e.contains("gpm::bad_parameter") && e.contains(says),
            "{s}: {e}"
        );
    }
    let e = refused(&LOGNORMAL.replace("lognormal(b * x, s)", "lognormal(b * x, -1)"));
    assert!(e.contains("must be positive, not -1"), "{e}");
    // Inside the constraint: a prior on the positive half-line, a range within it.
    for s in [
        "s : real in 0.. ~ gamma(2, 2);",
        "s : real in 0.1..3 ~ uniform(0.1, 3);",
        "s : real in 0.. = learn(0.5);",
    ] {
        gpmc::check("m", &LOGNORMAL.replace("s : real = 0.5;", s))
            .unwrap_or_else(|f| panic!("{s}: {}", f.render()));
    }
}

/// An expression of hyperparameters as a parameter is checked by its range over theirs: `s - 1`
/// with `s` learned over (0, ∞) can be negative, `2 * s` or `s + 0.1` cannot; a kernel's `1 / g`
/// reaches beyond `(0, 2]` when `g` can be below ½; an expression reading data is left to run
/// time (its range is not known here).
#[test]
fn an_expression_of_hyperparameters_is_checked_by_its_range() {
    // The rendered message, its line breaks and margins undone.
    let refused = |src: &str| {
        let e = refused(src);
        e.split_whitespace()
            .filter(|w| *w != "│")
            .collect::<Vec<_>>()
            .join(" ")
    };
    let learned = LOGNORMAL.replace("s : real = 0.5;", "s : real in 0.. = learn(0.5);");
    let e = refused(&learned.replace("lognormal(b * x, s)", "lognormal(b * x, s - 1)"));
    assert!(
        e.contains("must be positive, but `(s - 1)` can be anywhere in [-1, ∞] when `s` is learned over (0, ∞)"),
        "{e}"
    );
    let e = refused(&LOGNORMAL.replace("lognormal(b * x, s)", "lognormal(b * x, s - 0.7)"));
    assert!(e.contains("`(s - 0.7)` is -0.2"), "{e}");
    for ok in ["2 * s", "s + 0.1", "exp(s) - 1", "sqrt(s) * s"] {
        gpmc::check(
            "m",
            &learned.replace("lognormal(b * x, s)", &format!("lognormal(b * x, {ok})")),
        )
        .unwrap_or_else(|f| panic!("{ok}: {}", f.render()));
    }
    let e = refused(
        &GAMMA_EXPONENTIAL.replace("gamma_exponential(0.7, g)", "gamma_exponential(0.7, 1 / g)"),
    );
    assert!(
        e.contains("must be in (0, 2], but `1 / (g)` can be anywhere in [0.5, ∞]"),
        "{e}"
    );
    gpmc::check(
        "m",
        &GAMMA_EXPONENTIAL.replace("gamma_exponential(0.7, g)", "gamma_exponential(0.7, g / 2)"),
    )
    .unwrap_or_else(|f| panic!("g / 2: {}", f.render()));
}

/// A parameter that reads data is checked when the data are read, row by row over its
/// hyperparameters' values: `s * x[i]` as a scale is refused at the first row where it can be
/// ≤ 0, naming the row and the datum; with every `x[i] > 0` and `s` positive it is taken.
#[test]
fn a_parameter_that_reads_data_is_checked_row_by_row_when_the_data_are_read() {
    let scaled = LOGNORMAL.replace("lognormal(b * x, s)", "lognormal(b * x, s * x)");
    let c = gpmc::check("m", &scaled).unwrap_or_else(|f| panic!("{}", f.render()));
    let y = [1.4, 0.3, 2.2];
    let e = data(&c.model, &[0.3, -1.2, 0.8], &y).unwrap_err();
    assert!(
        e.contains("the `sigma` of `lognormal` must be positive, but at row 2 `s * x` is -0.6")
            && e.contains("`x[2]` = -1.2"),
        "{e}"
    );
    assert!(data(&c.model, &[0.3, 1.2, 0.8], &y).is_ok());
    // A scale hyperparameter whose prior reaches below 0 makes `s * x[i]` negative anywhere.
    let unbounded = scaled.replace("s : real = 0.5;", "s : real ~ normal(0, 1);");
    let c = gpmc::check("m", &unbounded).unwrap_or_else(|f| panic!("{}", f.render()));
    let e = data(&c.model, &[0.3, 1.2, 0.8], &y).unwrap_err();
    assert!(
        e.contains("at row 1 `s * x` can be anywhere in [−∞, ∞]"),
        "{e}"
    );
}

const GAMMA_EXPONENTIAL: &str = r#"
data {
  N : int;
  x : vector[N];
  y : vector[N];
}
hyper {
  g : real in 0..2 ~ uniform(0, 2);
}
latent {
  f : vector[N] ~ gp(x, gamma_exponential(0.7, g));
}
model {
  y ~ normal(f, 0.3);
}
"#;

/// `gamma_exponential`'s `gamma` is in `(0, 2]` (beyond 2 its Gram matrix is not positive
/// semi-definite): a literal or a hyperparameter that could leave it is refused; within it,
/// Gibbs samples `g` (its range's transform keeps each draw inside).
#[test]
fn a_bounded_kernel_parameter_is_checked_and_sampled_within_its_bound() {
    let e = refused(
        &GAMMA_EXPONENTIAL.replace("gamma_exponential(0.7, g)", "gamma_exponential(0.7, 2.5)"),
    );
    assert!(e.contains("must be in (0, 2], not 2.5"), "{e}");
    let e = refused(&GAMMA_EXPONENTIAL.replace(
        "g : real in 0..2 ~ uniform(0, 2);",
        "g : real in 0.. ~ gamma(2, 1);",
    ));
    assert!(
        e.contains("`g` has a `gamma` prior over (0, ∞)")
            && e.contains("declare `g : real in 0..2`"),
        "{e}"
    );
    let c = gpmc::check("ge", GAMMA_EXPONENTIAL).unwrap_or_else(|f| panic!("{}", f.render()));
    let x: Vec<f64> = (0..20).map(|i| i as f64 / 5.0).collect();
    let y: Vec<f64> = x.iter().map(|v| (2.0 * v).sin()).collect();
    let d = data(&c.model, &x, &y).unwrap();
    let config = common::four_chains(100, 200, 5);
    let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
    let g = &r
        .summaries
        .iter()
        .find(|(n, _)| n == "g")
        .expect("g is sampled")
        .1;
    assert!(g.mean > 0.0 && g.mean <= 2.0 && g.sd > 0.0, "{g:?}");
}
