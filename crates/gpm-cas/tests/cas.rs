//! The CAS: every rewrite rule is sound (both sides agree at random points of its domain),
//! derivatives agree with finite differences, complex evaluation agrees with real evaluation,
//! simplification preserves values, and the complete-monotonicity prover decides the table of
//! MATH.md (and refuses what is not completely monotone).

use gpm_cas::*;
use proptest::prelude::*;

fn strip(pattern: &str) -> String {
    pattern.replace('?', "")
}

#[test]
fn every_rule_is_sound_at_random_points() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for r in rules::RULES {
        let (l, rh) = (parse(&strip(r.lhs)).unwrap(), parse(&strip(r.rhs)).unwrap());
        let mut checked = 0;
        for _ in 0..200 {
            let vals: Vec<(String, f64)> = ["a", "b", "c", "z", "p", "q"]
                .iter()
                .map(|v| {
                    let pos = r.positive.contains(&format!("?{v}").as_str());
                    let x: f64 = if pos {
                        rng.gen_range(0.05..4.0)
                    } else {
                        rng.gen_range(-4.0..4.0)
                    };
                    (v.to_string(), x)
                })
                .collect();
            let env = |s: &str| vals.iter().find(|(k, _)| k == s).map(|x| x.1);
            let (x, y) = (eval(&l, &env).unwrap(), eval(&rh, &env).unwrap());
            if !x.is_finite() {
                continue; // outside the left side's domain
            }
            checked += 1;
            assert!(
                (x - y).abs() <= 1e-9 * (1.0 + x.abs()),
                "rule {}: {x} vs {y} at {vals:?}",
                r.name
            );
        }
        assert!(
            checked > 50,
            "rule {} was checked at only {checked} points",
            r.name
        );
    }
}

fn arb_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("x".to_string()),
        Just("y".to_string()),
        (1u32..5).prop_map(|n| format!("{}", n as f64 * 0.5))
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(+ {a} {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(* {a} {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(- {a} {b})")),
            inner.clone().prop_map(|a| format!("(exp (* 0.3 {a}))")),
            inner.clone().prop_map(|a| format!("(logistic {a})")),
            inner.clone().prop_map(|a| format!("(softplus {a})")),
            inner.clone().prop_map(|a| format!("(cosh (* 0.2 {a}))")),
            inner
                .clone()
                .prop_map(|a| format!("(log (+ 2 (* {a} {a})))")),
            inner
                .clone()
                .prop_map(|a| format!("(sqrt (+ 1 (* {a} {a})))")),
            inner.clone().prop_map(|a| format!("(tanh {a})")),
            inner.prop_map(|a| format!("(^ (+ 1 (* {a} {a})) -0.5)")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn derivative_agrees_with_finite_differences(s in arb_expr(), x in -2.0f64..2.0, y in -2.0f64..2.0) {
        let e = parse(&s).unwrap();
        let d = derivative(&e, "x");
        let f = |xv: f64| eval(&e, &|n| match n { "x" => Some(xv), "y" => Some(y), _ => None }).unwrap();
        let h = 1e-5 * (1.0 + x.abs());
        let fd = (f(x + h) - f(x - h)) / (2.0 * h);
        let an = eval(&d, &|n| match n { "x" => Some(x), "y" => Some(y), _ => None }).unwrap();
        prop_assert!((fd - an).abs() <= 1e-5 * (1.0 + an.abs()), "{s}: d/dx {an} vs fd {fd}");
    }

    #[test]
    fn simplification_preserves_values(s in arb_expr(), x in -2.0f64..2.0, y in -2.0f64..2.0) {
        let e = parse(&s).unwrap();
        let t = simplify_with(&e, &Limits { nodes: 3_000, iterations: 5, time: std::time::Duration::from_millis(50) });
        let env = |n: &str| match n { "x" => Some(x), "y" => Some(y), _ => None };
        let (a, b) = (eval(&e, &env).unwrap(), eval(&t, &env).unwrap());
        prop_assert!((a - b).abs() <= 1e-8 * (1.0 + a.abs()), "{s} → {t}: {a} vs {b}");
    }

    #[test]
    fn complex_evaluation_agrees_on_the_real_line(s in arb_expr(), x in -2.0f64..2.0, y in -2.0f64..2.0) {
        let e = parse(&s).unwrap();
        let a = eval(&e, &|n| match n { "x" => Some(x), "y" => Some(y), _ => None }).unwrap();
        let b = eval_complex(&e, &|n| match n {
            "x" => Some(num_complex::Complex64::new(x, 0.0)),
            "y" => Some(num_complex::Complex64::new(y, 0.0)),
            _ => None,
        }).unwrap();
        prop_assert!((a - b.re).abs() <= 1e-9 * (1.0 + a.abs()) && b.im.abs() < 1e-9, "{s}");
    }
}

#[test]
fn equivalent_forms_of_the_logistic_are_proved_equal() {
    let sig = parse("(logistic z)").unwrap();
    for s in [
        "(/ 1 (+ 1 (exp (* -1 z))))",
        "(/ (exp (* 0.5 z)) (* 2 (cosh (* 0.5 z))))",
        "(+ 1 (* -1 (logistic (* -1 z))))",
    ] {
        assert!(equivalent(&parse(s).unwrap(), &sig), "{s}");
    }
    assert!(equivalent(
        &parse("(log (+ 1 (exp z)))").unwrap(),
        &parse("(softplus z)").unwrap()
    ));
    assert!(!equivalent(&parse("(exp z)").unwrap(), &sig));
}

fn positive(s: &str) -> bool {
    ["nu", "b", "a", "rho", "k"].contains(&s)
}

#[test]
fn complete_monotonicity_table() {
    // φ completely monotone (MATH.md §1), as −log φ Bernstein or φ directly.
    let bernstein = [
        ("Student-t", "(* (* 0.5 (+ nu 1)) (log1p (/ r nu)))"),
        ("Laplace", "(/ (sqrt r) b)"),
        ("logistic", "(log (cosh (sqrt (* 0.25 r))))"),
        ("exponential power", "(^ r 0.75)"),
    ];
    for (name, psi) in bernstein {
        let p = is_bernstein(&parse(psi).unwrap(), "r", &positive);
        assert!(p.is_some(), "{name}: {psi} should be Bernstein");
    }
    let cm = [
        ("Student-t", "(^ (+ 1 (/ r nu)) (* -0.5 (+ nu 1)))"),
        ("Student-t (numeric)", "(^ (+ 1 (/ r 3)) -2)"),
        ("Laplace", "(exp (* -1 (/ (sqrt r) b)))"),
        ("exponential power", "(exp (* -1 (^ r 0.75)))"),
    ];
    for (name, phi) in cm {
        let e = parse(phi).unwrap();
        // Shapes given as parameters need a numeric exponent; the numeric ones must pass.
        if name.contains("numeric") || !phi.contains("nu") {
            assert!(
                is_completely_monotone(&e, "r", &positive).is_some(),
                "{name}: {phi}"
            );
        }
    }
    // Known limit: Matérn-3/2's ψ = a√r − log(1 + a√r) is Bernstein (ψ' = a²/(2(1 + a√r)) is
    // CM), but the derivative this CAS produces is not brought to that form, so the generic
    // prover does not prove it; `gpm-augment` names it structurally (inverse Gamma mixture).
    assert!(is_bernstein(
        &parse("(- (* a (sqrt r)) (log1p (* a (sqrt r))))").unwrap(),
        "r",
        &positive
    )
    .is_none());
    // Refused: increasing, not CM, infinite at 0, a square beyond the power rule.
    for psi in [
        "(* -1 r)",
        "(^ r 2)",
        "(^ r 1.5)",
        "(log r)",
        "(* -1 (sqrt r))",
    ] {
        assert!(
            is_bernstein(&parse(psi).unwrap(), "r", &positive).is_none(),
            "{psi} is not Bernstein"
        );
    }
    for phi in ["(exp r)", "(exp (* -1 (^ r 2)))", "(^ r -1)"] {
        assert!(
            is_completely_monotone(&parse(phi).unwrap(), "r", &positive).is_none(),
            "{phi} is not CM"
        );
    }
}

/// First and second derivatives in `x` of an expression (its other symbol `y` = 0.7) against
/// central differences with step `h`, at each point, within `tol1` and `tol2` relative.
fn derivatives_agree(src: &str, points: &[f64], h: f64, (tol1, tol2): (f64, f64)) {
    let e = parse(src).unwrap();
    let d1 = derivative(&e, "x");
    let d2 = derivative(&d1, "x");
    let at = |e: &gpm_cas::Expr, x: f64| {
        eval(e, &|n| match n {
            "x" => Some(x),
            "y" => Some(0.7),
            _ => None,
        })
        .unwrap()
    };
    for &x in points {
        let fd1 = (at(&e, x + h) - at(&e, x - h)) / (2.0 * h);
        let fd2 = (at(&d1, x + h) - at(&d1, x - h)) / (2.0 * h);
        let (a1, a2) = (at(&d1, x), at(&d2, x));
        assert!(
            (fd1 - a1).abs() <= tol1 * (1.0 + a1.abs()),
            "{src} at x={x}: {a1} vs {fd1}"
        );
        assert!(
            (fd2 - a2).abs() <= tol2 * (1.0 + a2.abs()),
            "{src} at x={x}: {a2} vs {fd2}"
        );
    }
}

/// The robust Poisson's power sum: first and second derivatives through the rate `exp(x)`
/// (what CAVI's sites need) against finite differences, and a non-constant power refused.
#[test]
fn poisson_power_moment_derivatives_agree_with_finite_differences() {
    derivatives_agree(
        "(* y (poisson_power_moment 0 (exp x) 1.3))",
        &[-3.0, 0.4, 2.5, 9.5],
        1e-4,
        (1e-6, 1e-5),
    );
    let free = parse("(poisson_power_moment 0 x y)").unwrap();
    assert!(eval(&derivative(&free, "x"), &|n| match n {
        "x" => Some(2.0),
        "y" => Some(1.2),
        _ => None,
    })
    .is_err());
}

/// The horseshoe's kernel `log(e^u E₁(u))` at `u = x²/2`: first and second derivatives
/// (`d/du = 1 − e^(−log(e^u E₁(u)))/u`) against finite differences, near the pole and in the tail.
#[test]
fn log_e1_scaled_derivatives_agree_with_finite_differences() {
    derivatives_agree(
        "(log_e1_scaled (* 0.5 (* x x)))",
        &[0.05, 0.7, 1.9, 6.0],
        1e-5,
        (1e-6, 1e-4),
    );
}

/// `d lgamma(u)/dx = ψ(u) u'` (a Student-t's log-density in its degrees of freedom) against
/// finite differences; ψ's own derivative (trigamma) is refused, not approximated.
#[test]
fn lgamma_derivative_is_digamma_and_trigamma_is_refused() {
    let e = parse("(lgamma (* 0.5 (+ x 1)))").unwrap();
    let d1 = derivative(&e, "x");
    let at = |e: &gpm_cas::Expr, x: f64| eval(e, &|n| (n == "x").then_some(x));
    for x in [0.3, 2.0, 7.5, 40.0] {
        let h = 1e-5;
        let fd = (at(&e, x + h).unwrap() - at(&e, x - h).unwrap()) / (2.0 * h);
        let a = at(&d1, x).unwrap();
        assert!(
            (fd - a).abs() <= 1e-7 * (1.0 + a.abs()),
            "at {x}: {a} vs {fd}"
        );
    }
    assert!(at(&derivative(&d1, "x"), 2.0).is_err());
}

/// A constant that is `0` inside a root (`sqrt(0)`, as a scale mixture's `log C` holds):
/// differentiating beside it must not collapse the derivative.
#[test]
fn a_zero_under_a_root_does_not_collapse_a_derivative() {
    let e = parse("(+ (* (sqrt 0) y) (* x x))").unwrap();
    let d = derivative(&e, "x");
    let v = eval(&d, &|n| match n {
        "x" => Some(1.5),
        "y" => Some(2.0),
        _ => None,
    });
    assert!(matches!(v, Ok(v) if (v - 3.0).abs() < 1e-12), "{v:?}");
}

/// `x · x⁻¹ = x⁰` needs `x > 0`: at the constant `sqrt(0)` the rule must not fire, or the
/// e-graph proves `0 = 1` and simplifies `0/(2 sqrt 0) · y + 2x` (the chain rule's raw
/// derivative of `sqrt(0) · y + x²`) into a wrong number (it gave −1 at x = 1.5).
#[test]
fn power_rules_do_not_fire_at_a_zero_constant() {
    let e = parse("(+ (+ (* (/ 0 (* 2 (sqrt 0))) y) (* (sqrt 0) 0)) (+ (* 1 x) (* x 1)))").unwrap();
    // The limits `derivative` simplifies with.
    let s = gpm_cas::simplify_with(
        &e,
        &gpm_cas::Limits {
            nodes: 5_000,
            iterations: 4,
            time: std::time::Duration::from_millis(100),
        },
    );
    let v = eval(&s, &|n| match n {
        "x" => Some(1.5),
        "y" => Some(2.0),
        _ => None,
    });
    // 0/0 · y is undefined (NaN) or, read as 0 · y, gives 3; nothing else is right.
    assert!(
        !matches!(v, Ok(v) if v.is_finite() && (v - 3.0).abs() > 1e-9),
        "{s} = {v:?}"
    );
}
