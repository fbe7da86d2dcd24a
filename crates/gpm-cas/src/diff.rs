//! Symbolic differentiation by the chain rule, one rule per operator, followed by a light
//! simplification (constant folding and the identities of the rule set).

use crate::language::{parse, Expr, Math};
use crate::simplify::{simplify_with, Limits};
use egg::Language;

fn text(e: &Expr, i: usize) -> String {
    // The sub-expression rooted at node i, as an s-expression.
    let nodes = e.as_ref();
    let n = &nodes[i];
    let kids: Vec<String> = n
        .children()
        .iter()
        .map(|c| text(e, usize::from(*c)))
        .collect();
    match n {
        Math::Constant(c) => {
            let v = c.into_inner();
            if v < 0.0 {
                format!("(neg {})", -v)
            } else {
                format!("{v}")
            }
        }
        Math::Symbol(s) => s.to_string(),
        other => {
            let op = format!("{other}");
            format!("({op} {})", kids.join(" "))
        }
    }
}

/// Whether the sub-expression rooted at node `i` reads the symbol `x`.
fn reads(e: &Expr, i: usize, x: &str) -> bool {
    match &e.as_ref()[i] {
        Math::Symbol(s) => s.as_str() == x,
        n => n.children().iter().any(|c| reads(e, usize::from(*c), x)),
    }
}

fn d(e: &Expr, i: usize, x: &str) -> String {
    let nodes = e.as_ref();
    let n = &nodes[i];
    // Free of x: 0, not the chain rule's `0 · f'(u)` — which at a constant `u` where `f'` is
    // not finite (`sqrt(0)`) would be `0/0`.
    if !reads(e, i, x) {
        return "0".into();
    }
    let c = |k: usize| usize::from(n.children()[k]);
    let t = |k: usize| text(e, c(k));
    let dk = |k: usize| d(e, c(k), x);
    match n {
        Math::Constant(_) => "0".into(),
        Math::Symbol(s) => {
            if s.as_str() == x {
                "1".into()
            } else {
                "0".into()
            }
        }
        Math::Add(_) => format!("(+ {} {})", dk(0), dk(1)),
        Math::Sub(_) => format!("(- {} {})", dk(0), dk(1)),
        Math::Mul(_) => format!("(+ (* {} {}) (* {} {}))", dk(0), t(1), t(0), dk(1)),
        Math::Div(_) => format!(
            "(/ (- (* {} {}) (* {} {})) (* {} {}))",
            dk(0),
            t(1),
            t(0),
            dk(1),
            t(1),
            t(1)
        ),
        // d(a^b) = b a^(b−1) a' + a^b log(a) b'; the second term vanishes for constant b.
        Math::Pow(_) => {
            let first = format!("(* (* {} (^ {} (- {} 1))) {})", t(1), t(0), t(1), dk(0));
            if text_is_const(e, c(1)) {
                first
            } else {
                format!(
                    "(+ {first} (* (* (^ {} {}) (log {})) {}))",
                    t(0),
                    t(1),
                    t(0),
                    dk(1)
                )
            }
        }
        Math::Neg(_) => format!("(neg {})", dk(0)),
        Math::Exp(_) => format!("(* (exp {}) {})", t(0), dk(0)),
        Math::Log(_) => format!("(/ {} {})", dk(0), t(0)),
        Math::Log1p(_) => format!("(/ {} (+ 1 {}))", dk(0), t(0)),
        Math::Sqrt(_) => format!("(/ {} (* 2 (sqrt {})))", dk(0), t(0)),
        Math::Abs(_) => format!("(* (/ {} (abs {})) {})", t(0), t(0), dk(0)),
        Math::Cosh(_) => format!("(* (sinh {}) {})", t(0), dk(0)),
        Math::Sinh(_) => format!("(* (cosh {}) {})", t(0), dk(0)),
        Math::Tanh(_) => format!("(* (- 1 (* (tanh {0}) (tanh {0}))) {1})", t(0), dk(0)),
        Math::Logistic(_) => format!(
            "(* (* (logistic {0}) (- 1 (logistic {0}))) {1})",
            t(0),
            dk(0)
        ),
        Math::Softplus(_) => format!("(* (logistic {}) {})", t(0), dk(0)),
        // d log Γ(x)/dx = ψ(x).
        Math::Lgamma(_) => format!("(* (digamma {}) {})", t(0), dk(0)),
        // ψ'(x) (trigamma) is not a function of this language; refuse by a symbol that
        // evaluation rejects.
        Math::Digamma(_) => format!("(* trigamma_of_{} {})", i, dk(0)),
        // d/dx log(e^x E₁(x)) = 1 − 1/(x e^x E₁(x)) (from d/dx E₁(x) = −e^(−x)/x).
        Math::LogE1Scaled(_) => format!(
            "(* (- 1 (/ (exp (neg (log_e1_scaled {0}))) {0})) {1})",
            t(0),
            dk(0)
        ),
        Math::NormalCdf(_) => format!(
            "(* (* 0.3989422804014327 (exp (* -0.5 (* {0} {0})))) {1})",
            t(0),
            dk(0)
        ),
        // d/dλ S_j(λ, b) = b (S_{j+1}/λ − S_j) (gpm_special::poisson_power_moment); `j` and
        // `b` are constants wherever the lowering makes this function.
        Math::PoissonPowerMoment(_) if !(text_is_const(e, c(0)) && text_is_const(e, c(2))) => {
            format!("(* no_derivative_of_{} 1)", i)
        }
        Math::PoissonPowerMoment(_) => format!(
            "(* (* {b} (- (/ (poisson_power_moment (+ {j} 1) {r} {b}) {r}) (poisson_power_moment {j} {r} {b}))) {dr})",
            j = t(0),
            r = t(1),
            b = t(2),
            dr = dk(1)
        ),
        // max(a, b) = (a + b + |a − b|)/2, min(a, b) = (a + b − |a − b|)/2: the derivative
        // takes the branch's sign.
        Math::Max(_) | Math::Min(_) => {
            let op = if matches!(n, Math::Max(_)) { "+" } else { "-" };
            let (a, b, da, db) = (t(0), t(1), dk(0), dk(1));
            format!("(* 0.5 ({op} (+ {da} {db}) (* (/ (- {a} {b}) (abs (- {a} {b}))) (- {da} {db}))))")
        }
    }
}

fn text_is_const(e: &Expr, i: usize) -> bool {
    let nodes = e.as_ref();
    match &nodes[i] {
        Math::Constant(_) => true,
        Math::Symbol(_) => false,
        n => n
            .children()
            .iter()
            .all(|c| text_is_const(e, usize::from(*c))),
    }
}

/// `d e / d x`, lightly simplified.
pub fn derivative(e: &Expr, x: &str) -> Expr {
    let raw = parse(&d(e, e.as_ref().len() - 1, x)).expect("derivative is well formed");
    simplify_with(
        &raw,
        &Limits {
            nodes: 5_000,
            iterations: 4,
            time: std::time::Duration::from_millis(100),
        },
    )
}
