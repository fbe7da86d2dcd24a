//! Rewrite rules. Every rule is an identity of real functions on the domain where its left side
//! is defined (rules that only hold one way are written one way), and every rule is tested by
//! evaluating both sides at random points (`tests/rules.rs`).

use crate::analysis::ConstantFold;
use crate::language::Math;
use egg::{rewrite as rw, Rewrite};

/// A rule as text, with the domain its variables are tested on.
pub struct RuleText {
    /// Name.
    pub name: &'static str,
    /// Left side (pattern, variables `?a`).
    pub lhs: &'static str,
    /// Right side.
    pub rhs: &'static str,
    /// Variables that must be positive for the left side to be defined.
    pub positive: &'static [&'static str],
}

const fn rule(
    name: &'static str,
    lhs: &'static str,
    rhs: &'static str,
    positive: &'static [&'static str],
) -> RuleText {
    RuleText {
        name,
        lhs,
        rhs,
        positive,
    }
}

/// The rule set, as text (the source of truth for both the e-graph and the soundness tests).
pub const RULES: &[RuleText] = &[
    rule("add-comm", "(+ ?a ?b)", "(+ ?b ?a)", &[]),
    rule("mul-comm", "(* ?a ?b)", "(* ?b ?a)", &[]),
    rule("add-assoc", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)", &[]),
    rule("mul-assoc", "(* ?a (* ?b ?c))", "(* (* ?a ?b) ?c)", &[]),
    rule("sub-as-add", "(- ?a ?b)", "(+ ?a (* -1 ?b))", &[]),
    rule("neg-as-mul", "(neg ?a)", "(* -1 ?a)", &[]),
    rule("div-as-pow", "(/ ?a ?b)", "(* ?a (^ ?b -1))", &["?b"]),
    rule("add-zero", "(+ ?a 0)", "?a", &[]),
    rule("mul-one", "(* ?a 1)", "?a", &[]),
    rule("mul-zero", "(* ?a 0)", "0", &[]),
    rule("pow-one", "(^ ?a 1)", "?a", &[]),
    rule("square", "(^ ?a 2)", "(* ?a ?a)", &[]),
    rule(
        "distribute",
        "(* ?a (+ ?b ?c))",
        "(+ (* ?a ?b) (* ?a ?c))",
        &[],
    ),
    rule("factor", "(+ (* ?a ?b) (* ?a ?c))", "(* ?a (+ ?b ?c))", &[]),
    rule("exp-add", "(exp (+ ?a ?b))", "(* (exp ?a) (exp ?b))", &[]),
    rule("exp-mul", "(* (exp ?a) (exp ?b))", "(exp (+ ?a ?b))", &[]),
    rule("log-exp", "(log (exp ?a))", "?a", &[]),
    rule("exp-log", "(exp (log ?a))", "?a", &["?a"]),
    rule(
        "log-mul-exp",
        "(log (* ?a (exp ?b)))",
        "(+ (log ?a) ?b)",
        &["?a"],
    ),
    rule("abs-sqrt-square", "(abs ?a)", "(sqrt (* ?a ?a))", &[]),
    rule("sqrt-square-abs", "(sqrt (* ?a ?a))", "(abs ?a)", &[]),
    rule("sqrt-pow", "(sqrt ?a)", "(^ ?a 0.5)", &["?a"]),
    rule("pow-sqrt", "(^ ?a 0.5)", "(sqrt ?a)", &["?a"]),
    rule(
        "logistic-def",
        "(^ (+ 1 (exp (* -1 ?z))) -1)",
        "(logistic ?z)",
        &[],
    ),
    rule(
        "logistic-div",
        "(/ 1 (+ 1 (exp (* -1 ?z))))",
        "(logistic ?z)",
        &[],
    ),
    rule(
        "logistic-neg",
        "(logistic (* -1 ?z))",
        "(+ 1 (* -1 (logistic ?z)))",
        &[],
    ),
    rule(
        "one-minus-logistic",
        "(+ 1 (* -1 (logistic ?z)))",
        "(logistic (* -1 ?z))",
        &[],
    ),
    rule(
        "logistic-cosh",
        "(logistic ?z)",
        "(/ (exp (* 0.5 ?z)) (* 2 (cosh (* 0.5 ?z))))",
        &[],
    ),
    rule("softplus-def", "(log (+ 1 (exp ?a)))", "(softplus ?a)", &[]),
    rule("softplus-log1p", "(log1p (exp ?a))", "(softplus ?a)", &[]),
    rule("log1p-def", "(log1p ?a)", "(log (+ 1 ?a))", &[]),
    rule(
        "log-logistic",
        "(log (logistic ?z))",
        "(* -1 (softplus (* -1 ?z)))",
        &[],
    ),
    rule(
        "softplus-logcosh",
        "(softplus ?z)",
        "(+ (* 0.5 ?z) (+ (log 2) (log (cosh (* 0.5 ?z)))))",
        &[],
    ),
    rule("cosh-even", "(cosh (* -1 ?a))", "(cosh ?a)", &[]),
    rule(
        "cosh-def",
        "(cosh ?a)",
        "(* 0.5 (+ (exp ?a) (exp (* -1 ?a))))",
        &[],
    ),
    rule("max-zero", "(max ?a 0)", "(* 0.5 (+ ?a (abs ?a)))", &[]),
    rule("max-comm", "(max ?a ?b)", "(max ?b ?a)", &[]),
    rule(
        "pow-mul",
        "(* (^ ?a ?p) (^ ?a ?q))",
        "(^ ?a (+ ?p ?q))",
        &["?a"],
    ),
    rule("double-neg", "(* -1 (* -1 ?a))", "?a", &[]),
];

/// The rules as egg rewrites.
/// A rule whose left side needs a variable positive applies only where that variable's class
/// is not a known constant `≤ 0`: `x · x⁻¹ = x⁰ = 1` at `x = sqrt(0)` (a constant class) would
/// otherwise prove `0 = 1`, and with it anything (a scale mixture's `log C` holds `sqrt(0)`).
pub fn rewrites() -> Vec<Rewrite<Math, ConstantFold>> {
    RULES
        .iter()
        .map(|r| {
            let lhs: egg::Pattern<Math> = r.lhs.parse().expect("rule pattern");
            let rhs: egg::Pattern<Math> = r.rhs.parse().expect("rule pattern");
            if r.positive.is_empty() {
                return Rewrite::new(r.name, lhs, rhs).expect("rule");
            }
            let vars: Vec<egg::Var> = r
                .positive
                .iter()
                .map(|v| v.parse().expect("rule variable"))
                .collect();
            let condition =
                move |eg: &mut egg::EGraph<Math, ConstantFold>, _: egg::Id, s: &egg::Subst| {
                    vars.iter()
                        .all(|v| eg[s[*v]].data.is_none_or(|c| c.into_inner() > 0.0))
                };
            let applier = egg::ConditionalApplier {
                condition,
                applier: rhs,
            };
            Rewrite::new(r.name, lhs, applier).expect("rule")
        })
        .collect()
}

#[allow(unused)]
fn _macro_check() -> Rewrite<Math, ConstantFold> {
    rw!("id"; "(+ ?a 0)" => "?a")
}
