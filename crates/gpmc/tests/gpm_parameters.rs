//! `.gpm` models that leave out the `latent`/`hyper` split (issue 49, item 2): a `parameters`
//! block whose roles the compiler decides with the rule of Stan programs, printed by `check`;
//! the same model with the split written out gives bit-identical draws.

use crate::common;
use common::four_chains;

fn roles(src: &str) -> Vec<(String, gpm_stan::Role, String)> {
    let c = gpmc::check("m.gpm", src).unwrap_or_else(|f| panic!("{}", f.render()));
    c.stan
        .expect("the decisions")
        .decisions
        .into_iter()
        .map(|d| (d.name, d.role, d.why))
        .collect()
}

#[test]
fn a_regression_without_the_split_runs_as_the_one_with_it() {
    let without = "
        data { N : int; x : vector[N]; y : vector[N]; }
        parameters {
          sigma : real in 0.. ~ cauchy(0, 2.5);
          alpha : real ~ normal(0, 10);
          beta : real;
        }
        model { for i in 1..N { y[i] ~ normal(alpha + beta * x[i], sigma); } }";
    let with = "
        data { N : int; x : vector[N]; y : vector[N]; }
        hyper { sigma : real in 0.. ~ cauchy(0, 2.5); }
        latent { alpha : real ~ normal(0, 10); beta : real ~ flat(); }
        model { for i in 1..N { y[i] ~ normal(alpha + beta * x[i], sigma); } }";
    use gpm_stan::Role::{Hyper, Latent};
    let r = roles(without);
    assert_eq!(
        r.iter()
            .map(|(n, role, _)| (n.as_str(), *role))
            .collect::<Vec<_>>(),
        [("sigma", Hyper), ("alpha", Latent), ("beta", Latent)]
    );
    let data =
        serde_json::json!({"N": 5, "x": [0.1, 0.5, 0.9, 1.3, 2.0], "y": [0.3, 0.8, 1.9, 2.2, 3.8]});
    let run = |src: &str| {
        let c = gpmc::check("m.gpm", src).unwrap();
        let d = gpmc::data::from_json_value(&c.model, &data).unwrap();
        gpmc::infer::run_gibbs(&c, &d, &four_chains(100, 200, 3), &|_, _| {}).unwrap()
    };
    let (a, b) = (run(without), run(with));
    let col = |r: &gpmc::infer::InferResult, n: &str| {
        let j = r.summaries.iter().position(|(m, _)| m == n).unwrap();
        r.chains
            .iter()
            .flat_map(|c| c.rows.iter().map(move |row| row[j]))
            .collect::<Vec<f64>>()
    };
    for n in ["alpha", "beta", "sigma"] {
        assert_eq!(col(&a, n), col(&b, n), "{n}");
    }
}

#[test]
fn the_rule_names_each_hyperparameter_s_reason() {
    let src = "
        data { J : int; y : vector[J]; s : vector[J]; x : vector[J]; }
        parameters {
          mu : real ~ normal(0, 5);
          tau : real in 0.. ~ cauchy(0, 5);
          theta : vector[J] ~ normal(mu, tau);
          nu : real ~ gamma(2, 0.1);
          g : real ~ normal(0, 1);
          z : real ~ normal(0, 1);
        }
        model { for j in 1..J { y[j] ~ student_t(nu, theta[j] + g * z * x[j], s[j]); } }";
    let r = roles(src);
    let find = |n: &str| r.iter().find(|(m, _, _)| m == n).unwrap().clone();
    use gpm_stan::Role::{Hyper, Latent};
    assert_eq!(find("theta").1, Latent);
    assert_eq!(find("mu").1, Hyper);
    assert!(
        find("mu").2.contains("prior of `theta`"),
        "{}",
        find("mu").2
    );
    assert!(find("tau").2.contains("range"));
    assert!(find("nu").2.contains("`gamma` is not Gaussian"));
    assert!(find("g").2.contains("multiplies"), "{}", find("g").2);
    assert!(find("z").2.contains("multiplies"));
    let text = gpmc::report::text(&gpmc::check("m.gpm", src).unwrap());
    assert!(
        text.contains("decided by the compiler") && text.contains("theta          latent"),
        "{text}"
    );
}
