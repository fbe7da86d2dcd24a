//! The learning phase is the schedule's (issue 51): which `learn()` hyperparameters type-II ML
//! sets before the methods run, and how — decided once in `gpm-schedule`, printed by `check`,
//! and carried out as stated (the learned values are what the run reports).

use gpm_schedule::HyperId;

fn checked(src: &str) -> gpmc::Checked {
    gpmc::check("learning", src).unwrap_or_else(|f| panic!("{}", f.render()))
}

#[test]
fn learn_hyperparameters_are_a_phase_of_the_schedule_printed_by_check() {
    let c = checked(
        "data { N : int; X : matrix[N, 1]; y : int[N] in {-1, 1}; }
         hyper { ell : real in 0.. = learn(1.0); v : real in 0.. = 2.0; s : real in 0.. = learn(0.5); }
         latent { f : vector[N] ~ gp(X, (v * s) * sqexp(ell)); }
         model { y ~ bernoulli_logit(f); }",
    );
    let s = c.schedule.as_ref().unwrap();
    assert_eq!(s.learning.by_gradient, vec![HyperId(0), HyperId(2)]);
    assert!(s.learning.class_scales.is_empty() && s.learning.unavailable.is_empty());
    let text = gpmc::schedule_report::text(&c);
    let phase = text.find("  learning phase, before Gibbs").expect(&text);
    let sweep = text.find("  Gibbs sweep").expect(&text);
    assert!(phase < sweep, "{text}");
    assert!(
        text.contains("1. type-II ML of ell, s: the converged CAVI ELBO"),
        "{text}"
    );
    let json = gpmc::schedule_report::json(&c);
    assert_eq!(
        json["learning"]["type_ii_ml"],
        serde_json::json!(["ell", "s"])
    );
    // A model with nothing to learn has no phase.
    let fixed = checked(
        "data { N : int; X : matrix[N, 1]; y : int[N] in {-1, 1}; }
         latent { f : vector[N] ~ gp(X, sqexp(1.0)); }
         model { y ~ bernoulli_logit(f); }",
    );
    assert!(fixed.schedule.as_ref().unwrap().learning.is_empty());
    assert!(!gpmc::schedule_report::text(&fixed).contains("learning phase"));
}

#[test]
fn class_scales_are_learned_in_closed_form_and_the_run_reports_it() {
    let c = checked(
        "data { N : int; C : int; X : matrix[N, 1]; y : int[N] in 1..C; }
         hyper { theta : vector[C] in 0.. = learn(1.0); }
         latent { F : matrix[N, C] ~ gp(X, sqexp(1.0)); }
         model { y ~ categorical_logistic_softmax(F, scale = theta); }",
    );
    let s = c.schedule.as_ref().unwrap();
    assert_eq!(s.learning.class_scales, vec![HyperId(0)]);
    assert!(s.learning.by_gradient.is_empty());
    assert!(
        gpmc::schedule_report::text(&c).contains("1. class scales theta: one CAVI run"),
        "{}",
        gpmc::schedule_report::text(&c)
    );
    let labels = [1, 2, 3, 1, 2, 3, 1, 1, 2, 3, 3, 2];
    let x: Vec<Vec<f64>> = (0..labels.len()).map(|i| vec![i as f64 / 4.0]).collect();
    let d = gpmc::data::from_json_value(
        &c.model,
        &serde_json::json!({"N": labels.len(), "C": 3, "X": x, "y": labels}),
    )
    .unwrap();
    let config = gpm_runtime::cavi::CaviConfig {
        tolerance: 1e-8,
        max_iter: 500,
    };
    let (_, hypers) = gpmc::infer::run_cavi(&c, &d, &config).unwrap();
    assert!(
        hypers[0].2.contains("learned by CAVI in closed form"),
        "{hypers:?}"
    );
}
