//! Complete monotonicity as a small type system (RECOGNITION.md §3; Schilling, Song & Vondraček,
//! *Bernstein functions*). Two predicates on expressions in `r ≥ 0`:
//! - **BF** (Bernstein: `ψ ≥ 0`, `ψ'` completely monotone);
//! - **CM** (completely monotone).
//!
//! Decided by structural rules, and for BF also by the derivative rule (`ψ(0) ≥ 0` and `ψ'`
//! CM), using this crate's own derivative. Other symbols are parameters, positive when the
//! caller says so. A proof is a readable tree of the rules used.

use crate::diff::derivative;
use crate::eval::eval;
use crate::language::{Expr, Math};
use egg::Language;
use std::fmt;

/// A proof: the rule and its premises.
#[derive(Debug, Clone, PartialEq)]
pub struct Proof {
    /// The claim, e.g. `BF: (log1p (* (^ nu -1) r))`.
    pub claim: String,
    /// The rule that proves it.
    pub rule: &'static str,
    /// Premises.
    pub premises: Vec<Proof>,
}

impl fmt::Display for Proof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn go(p: &Proof, depth: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            writeln!(f, "{}{} — {}", "  ".repeat(depth), p.claim, p.rule)?;
            for q in &p.premises {
                go(q, depth + 1, f)?;
            }
            Ok(())
        }
        go(self, 0, f)
    }
}

struct Ctx<'a> {
    e: &'a Expr,
    r: &'a str,
    positive: &'a dyn Fn(&str) -> bool,
    depth: usize,
}

fn sub(e: &Expr, i: usize) -> Expr {
    // Copy the sub-tree rooted at i into its own RecExpr.
    let mut out = Expr::default();
    fn go(e: &Expr, i: usize, out: &mut Expr) -> egg::Id {
        let n = e.as_ref()[i].clone();
        let n = n.map_children(|c| go(e, usize::from(c), out));
        out.add(n)
    }
    go(e, i, &mut out);
    out
}

impl Ctx<'_> {
    fn node(&self, i: usize) -> &Math {
        &self.e.as_ref()[i]
    }
    fn mentions_r(&self, i: usize) -> bool {
        match self.node(i) {
            Math::Symbol(s) => s.as_str() == self.r,
            Math::Constant(_) => false,
            n => n
                .children()
                .iter()
                .any(|c| self.mentions_r(usize::from(*c))),
        }
    }
    fn constant(&self, i: usize) -> Option<f64> {
        if self.mentions_r(i) {
            return None;
        }
        match self.node(i) {
            Math::Constant(c) => Some(c.into_inner()),
            _ => None,
        }
    }
    /// Free of r and provably ≥ 0 (or > 0 when `strict`).
    fn nonneg_param(&self, i: usize, strict: bool) -> bool {
        if self.mentions_r(i) {
            return false;
        }
        let ok = |v: f64| if strict { v > 0.0 } else { v >= 0.0 };
        match self.node(i) {
            Math::Constant(c) => ok(c.into_inner()),
            Math::Symbol(s) => (self.positive)(s.as_str()),
            Math::Mul([a, b]) | Math::Add([a, b]) => {
                self.nonneg_param(usize::from(*a), strict)
                    && self.nonneg_param(usize::from(*b), strict)
            }
            Math::Div([a, b]) => {
                self.nonneg_param(usize::from(*a), strict)
                    && self.nonneg_param(usize::from(*b), true)
            }
            Math::Pow([a, _]) => self.nonneg_param(usize::from(*a), true),
            Math::Exp(_) | Math::Cosh(_) | Math::Logistic(_) | Math::Softplus(_) => true,
            Math::Sqrt(a) | Math::Abs(a) => !strict || self.nonneg_param(usize::from(*a), true),
            _ => false,
        }
    }
    fn proof(&self, i: usize, what: &str, rule: &'static str, premises: Vec<Proof>) -> Proof {
        Proof {
            claim: format!("{what}: {}", sub(self.e, i)),
            rule,
            premises,
        }
    }

    fn bf(&self, i: usize) -> Option<Proof> {
        if self.depth > 12 {
            return None;
        }
        let n = self.node(i).clone();
        if !self.mentions_r(i) {
            return self
                .nonneg_param(i, false)
                .then(|| self.proof(i, "BF", "non-negative constant", vec![]));
        }
        match &n {
            Math::Symbol(_) => return Some(self.proof(i, "BF", "r", vec![])),
            Math::Add([a, b]) => {
                if let (Some(p), Some(q)) = (self.bf(usize::from(*a)), self.bf(usize::from(*b))) {
                    return Some(self.proof(i, "BF", "sum of Bernstein functions", vec![p, q]));
                }
            }
            Math::Mul([a, b]) => {
                for (c, f) in [(*a, *b), (*b, *a)] {
                    if self.nonneg_param(usize::from(c), false) {
                        if let Some(p) = self.bf(usize::from(f)) {
                            return Some(self.proof(i, "BF", "non-negative multiple", vec![p]));
                        }
                    }
                }
            }
            Math::Div([a, b]) if self.nonneg_param(usize::from(*b), true) => {
                if let Some(p) = self.bf(usize::from(*a)) {
                    return Some(self.proof(i, "BF", "division by a positive constant", vec![p]));
                }
            }
            Math::Pow([a, p]) => {
                if let Some(alpha) = self.constant(usize::from(*p)) {
                    if alpha > 0.0 && alpha <= 1.0 {
                        if let Some(q) = self.bf(usize::from(*a)) {
                            return Some(self.proof(
                                i,
                                "BF",
                                "ψ^α, 0 < α ≤ 1, of a Bernstein ψ",
                                vec![q],
                            ));
                        }
                    }
                }
            }
            Math::Sqrt(a) => {
                if let Some(q) = self.bf(usize::from(*a)) {
                    return Some(self.proof(i, "BF", "√ψ of a Bernstein ψ", vec![q]));
                }
            }
            Math::Log1p(a) => {
                if let Some(q) = self.bf(usize::from(*a)) {
                    return Some(self.proof(i, "BF", "log(1 + ψ) of a Bernstein ψ", vec![q]));
                }
            }
            Math::Log(a) => {
                if let Some(p) = self.bf_log(i, usize::from(*a)) {
                    return Some(p);
                }
            }
            _ => {}
        }
        self.bf_by_derivative(i)
    }

    /// `log(1 + ψ)` and `log cosh(√ψ)` of a Bernstein `ψ` (node `a` is the log's argument).
    fn bf_log(&self, i: usize, a: usize) -> Option<Proof> {
        // log(c + ψ) − log c is Bernstein for c ≥ 1 ... accept log(1 + ψ) exactly.
        if let Math::Add([x, y]) = self.node(a).clone() {
            for (one, rest) in [(x, y), (y, x)] {
                if self.constant(usize::from(one)) == Some(1.0) {
                    if let Some(q) = self.bf(usize::from(rest)) {
                        return Some(self.proof(i, "BF", "log(1 + ψ) of a Bernstein ψ", vec![q]));
                    }
                }
            }
        }
        // log cosh(√ψ) is Bernstein (its derivative tanh(√x)/(2√x) is CM).
        if let Math::Cosh(c) = self.node(a).clone() {
            if let Math::Sqrt(s) = self.node(usize::from(c)).clone() {
                if let Some(q) = self.bf(usize::from(s)) {
                    return Some(self.proof(i, "BF", "log cosh(√ψ) of a Bernstein ψ", vec![q]));
                }
            }
        }
        None
    }

    /// The derivative rule: `ψ(0) ≥ 0` and `ψ'` completely monotone.
    fn bf_by_derivative(&self, i: usize) -> Option<Proof> {
        let psi = sub(self.e, i);
        let at0 = eval(&psi, &|s| if s == self.r { Some(0.0) } else { Some(1.0) }).ok()?;
        let at0_small = eval(&psi, &|s| if s == self.r { Some(0.0) } else { Some(0.37) }).ok()?;
        if !(at0 >= -1e-12 && at0_small >= -1e-12) {
            return None;
        }
        let d = derivative(&psi, self.r);
        let inner = Ctx {
            e: &d,
            r: self.r,
            positive: self.positive,
            depth: self.depth + 1,
        };
        let p = inner.cm(d.as_ref().len() - 1)?;
        Some(self.proof(i, "BF", "ψ(0) ≥ 0 and ψ' completely monotone", vec![p]))
    }

    fn cm(&self, i: usize) -> Option<Proof> {
        if self.depth > 12 {
            return None;
        }
        let n = self.node(i).clone();
        if !self.mentions_r(i) {
            return self
                .nonneg_param(i, true)
                .then(|| self.proof(i, "CM", "positive constant", vec![]));
        }
        match &n {
            Math::Exp(a) => {
                // exp(−ψ), ψ Bernstein: the argument is −ψ, written (* -1 ψ) or (neg ψ).
                let a = usize::from(*a);
                let neg = match self.node(a).clone() {
                    Math::Neg(x) => Some(usize::from(x)),
                    Math::Mul([x, y]) => {
                        if self.constant(usize::from(x)).is_some_and(|c| c < 0.0) {
                            Some(usize::from(y))
                        } else if self.constant(usize::from(y)).is_some_and(|c| c < 0.0) {
                            Some(usize::from(x))
                        } else {
                            None
                        }
                    }
                    _ => None,
                };
                if let Some(x) = neg {
                    if let Some(p) = self.bf(x) {
                        return Some(self.proof(i, "CM", "exp(−c·ψ) of a Bernstein ψ", vec![p]));
                    }
                }
            }
            // ψ^(−p) is CM on (0, ∞) for a Bernstein ψ (it may be infinite at 0, as the
            // derivative of a Bernstein function may; φ(0) < ∞ is checked by the caller).
            Math::Pow([a, p]) => {
                if let Some(e) = self.constant(usize::from(*p)) {
                    if e < 0.0 {
                        if let Some(q) = self.bf(usize::from(*a)) {
                            return Some(self.proof(
                                i,
                                "CM",
                                "ψ^(−p), p > 0, ψ Bernstein",
                                vec![q],
                            ));
                        }
                    }
                }
            }
            Math::Div([a, b]) => {
                if let (Some(p), Some(q)) = (self.cm(usize::from(*a)), self.bf(usize::from(*b))) {
                    let base = sub(self.e, usize::from(*b));
                    let b0 =
                        eval(&base, &|s| if s == self.r { Some(0.0) } else { Some(1.0) }).ok()?;
                    if b0 > 0.0 {
                        return Some(self.proof(
                            i,
                            "CM",
                            "CM / (c + ψ): product of CM functions",
                            vec![p, q],
                        ));
                    }
                }
            }
            Math::Mul([a, b]) => {
                if let (Some(p), Some(q)) = (self.cm(usize::from(*a)), self.cm(usize::from(*b))) {
                    return Some(self.proof(i, "CM", "product of CM functions", vec![p, q]));
                }
            }
            Math::Add([a, b]) => {
                if let (Some(p), Some(q)) = (self.cm(usize::from(*a)), self.cm(usize::from(*b))) {
                    return Some(self.proof(i, "CM", "sum of CM functions", vec![p, q]));
                }
            }
            _ => {}
        }
        None
    }
}

/// Prove `ψ` a Bernstein function of `r` (other symbols positive when `positive` says so).
pub fn is_bernstein(psi: &Expr, r: &str, positive: &dyn Fn(&str) -> bool) -> Option<Proof> {
    Ctx {
        e: psi,
        r,
        positive,
        depth: 0,
    }
    .bf(psi.as_ref().len() - 1)
}

/// Prove `φ` completely monotone on `[0, ∞)` in `r`: CM on `(0, ∞)` and finite at 0.
pub fn is_completely_monotone(
    phi: &Expr,
    r: &str,
    positive: &dyn Fn(&str) -> bool,
) -> Option<Proof> {
    let at0 = eval(phi, &|s| if s == r { Some(0.0) } else { Some(1.0) }).ok()?;
    if !at0.is_finite() {
        return None;
    }
    Ctx {
        e: phi,
        r,
        positive,
        depth: 0,
    }
    .cm(phi.as_ref().len() - 1)
}
