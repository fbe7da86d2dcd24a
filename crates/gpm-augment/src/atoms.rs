//! Splitting a log-density into a sum of atoms by sound rewrites (RECOGNITION.md §1):
//! `log(a·b) = log a + log b` and `log(a^p) = p log a` for positive `a, b`, `log(exp x) = x`,
//! distribution of predictor-free coefficients over sums. Positivity comes from a small sign
//! analysis (exp, cosh, logistic, positive constants, hyperparameters declared `in 0..`).

use crate::tree::{Role, T};
use gpm_ir::SxFunc;
use std::collections::BTreeSet;

/// What is known to be positive.
#[derive(Debug, Clone, Default)]
pub struct Signs {
    /// Hyperparameters with a non-negative lower bound (treated as positive).
    pub positive_hypers: BTreeSet<String>,
    /// Data known positive (e.g. counts are non-negative; unused for now).
    pub positive_data: BTreeSet<String>,
}

impl Signs {
    /// Known to be > 0.
    pub fn positive(&self, t: &T) -> bool {
        match t {
            T::Num(v) => *v > 0.0,
            T::Sym(Role::Hyper, n) => self.positive_hypers.contains(n),
            T::Sym(Role::Data, n) => self.positive_data.contains(n),
            T::Sym(..) => false,
            T::Add(v) => v.iter().all(|u| self.nonneg(u)) && v.iter().any(|u| self.positive(u)),
            T::Mul(v) => v.iter().all(|u| self.positive(u)),
            T::Pow(a, _) => self.positive(a),
            T::Call(f, v) => match f {
                SxFunc::Exp | SxFunc::Cosh | SxFunc::Logistic | SxFunc::Softplus => true,
                SxFunc::Sqrt => self.positive(&v[0]),
                SxFunc::Log1p => self.positive(&v[0]),
                _ => false,
            },
        }
    }
    /// Known to be ≥ 0.
    pub fn nonneg(&self, t: &T) -> bool {
        if self.positive(t) {
            return true;
        }
        match t {
            T::Num(v) => *v >= 0.0,
            T::Call(SxFunc::Abs, _) | T::Call(SxFunc::Sqrt, _) => true,
            T::Call(SxFunc::Max, v) => v.iter().any(|u| self.nonneg(u)),
            T::Pow(_, e) => matches!(**e, T::Num(x) if x == 2.0),
            T::Mul(v) => v.iter().all(|u| self.nonneg(u)),
            T::Add(v) => v.iter().all(|u| self.nonneg(u)),
            _ => false,
        }
    }
}

/// The atoms of a log-density: `ℓ = Σ atoms`.
pub fn atomize(t: &T, s: &Signs) -> Vec<T> {
    let mut out = Vec::new();
    push(t, s, &mut out);
    out.retain(|a| !matches!(a, T::Num(v) if *v == 0.0));
    out
}

fn push(t: &T, s: &Signs, out: &mut Vec<T>) {
    match t {
        T::Add(v) => v.iter().for_each(|u| push(u, s, out)),
        T::Mul(v) => {
            // c · (a + b) → c·a + c·b when the coefficient is free of predictors and there is
            // exactly one sum or log among the factors (so the split terminates).
            let (mut coef, mut rest): (Vec<&T>, Vec<&T>) =
                v.iter().partition(|u| !u.has_predictor());
            if rest.is_empty() {
                // A predictor-free atom: still split its one log or sum, so that hyperparameters
                // show their `k·log θ` and `θ·q` structure (conjugate updates).
                if let Some(k) = coef
                    .iter()
                    .position(|u| matches!(u, T::Call(SxFunc::Log, _)))
                {
                    rest.push(coef.remove(k));
                }
            }
            if rest.len() == 1 {
                let coef = T::mul(coef.into_iter().cloned().collect());
                let inner = atomize(rest[0], s);
                if inner.len() > 1 || inner.first() != Some(rest[0]) {
                    for a in inner {
                        out.push(T::mul(vec![coef.clone(), a]));
                    }
                    return;
                }
            }
            out.push(t.clone());
        }
        T::Call(SxFunc::Log, v) => log_of(&v[0], s, out),
        T::Call(SxFunc::Log1p, v) => log_of(&T::add(vec![T::Num(1.0), v[0].clone()]), s, out),
        _ => out.push(t.clone()),
    }
}

fn log_of(x: &T, s: &Signs, out: &mut Vec<T>) {
    match x {
        T::Num(v) if *v > 0.0 => out.push(T::Num(v.ln())),
        T::Call(SxFunc::Exp, v) => push(&v[0], s, out),
        T::Call(SxFunc::Sqrt, v) if s.positive(&v[0]) || v[0].has_predictor() => {
            for a in atomize(&T::log(v[0].clone()), s) {
                out.push(T::mul(vec![T::Num(0.5), a]));
            }
        }
        T::Pow(a, p) if s.positive(a) && !p.has_predictor() => {
            for u in atomize(&T::log((**a).clone()), s) {
                out.push(T::mul(vec![(**p).clone(), u]));
            }
        }
        T::Mul(v)
            if v.iter()
                .all(|u| s.positive(u) || matches!(u, T::Num(c) if *c > 0.0)) =>
        {
            for u in v {
                log_of(u, s, out);
            }
        }
        _ => out.push(T::log(x.clone())),
    }
}
