//! A few sound normalising rewrites applied before atoms are read, so that `((y−f)/σ)²` shows
//! its factors and `|u|`, `max(u, 0)` show the square they hide:
//! `(a·b)^n = a^n·b^n`; `(a^p)^q = a^(pq)` for `a > 0` or integer `q`... restricted to the cases
//! below; `sqrt(a)^2 = a`; `sqrt(a) = a^(1/2)` for `a > 0`; `abs(u)^2 = u^2`;
//! `log(1 + exp z) = softplus(z)`; `1/(1 + exp(−z)) = logistic(z)`.

use crate::atoms::Signs;
use crate::tree::T;
use gpm_ir::SxFunc;

/// Normalise bottom-up until nothing changes (bounded).
pub fn normalize(t: &T, s: &Signs) -> T {
    let mut cur = t.clone();
    for _ in 0..8 {
        let next = step(&cur, s);
        if next == cur {
            break;
        }
        cur = next;
    }
    cur
}

fn is_exp_neg(t: &T) -> Option<T> {
    // exp(−z) → z
    if let T::Call(SxFunc::Exp, v) = t {
        return Some(T::neg(v[0].clone()));
    }
    None
}

fn step(t: &T, s: &Signs) -> T {
    let t = match t {
        T::Add(v) => T::add(v.iter().map(|u| step(u, s)).collect()),
        T::Mul(v) => T::mul(v.iter().map(|u| step(u, s)).collect()),
        T::Pow(a, b) => T::pow(step(a, s), step(b, s)),
        T::Call(f, v) => T::Call(*f, v.iter().map(|u| step(u, s)).collect()),
        other => other.clone(),
    };
    match &t {
        T::Pow(a, e) => {
            let e = (**e).clone();
            match (&**a, &e) {
                // (a·b)^n = a^n b^n for integer n (any signs), or any n when all factors are positive.
                (T::Mul(v), T::Num(n)) if n.fract() == 0.0 || v.iter().all(|u| s.positive(u)) => {
                    T::mul(v.iter().map(|u| T::pow(u.clone(), e.clone())).collect())
                }
                (T::Pow(b, p), T::Num(q)) => {
                    if let T::Num(p) = **p {
                        // (b^p)^q = b^(pq) when b > 0, or p, q integers with q·p keeping the sign.
                        if s.positive(b) || (p.fract() == 0.0 && q.fract() == 0.0) {
                            return T::pow((**b).clone(), T::Num(p * q));
                        }
                    }
                    t.clone()
                }
                (T::Call(SxFunc::Sqrt, v), T::Num(q)) if *q == 2.0 => v[0].clone(),
                (T::Call(SxFunc::Sqrt, v), T::Num(q)) if s.positive(&v[0]) => {
                    T::pow(v[0].clone(), T::Num(0.5 * q))
                }
                (T::Call(SxFunc::Abs, v), T::Num(q)) if *q == 2.0 => {
                    T::pow(v[0].clone(), T::Num(2.0))
                }
                // 1/(1 + exp(−z)) = logistic(z)
                (T::Add(v), T::Num(q)) if *q == -1.0 && v.len() == 2 => {
                    let (one, other) = match (&v[0], &v[1]) {
                        (T::Num(c), o) | (o, T::Num(c)) if *c == 1.0 => (true, o),
                        _ => (false, &v[0]),
                    };
                    if one {
                        if let Some(z) = is_exp_neg(other) {
                            return T::call(SxFunc::Logistic, z);
                        }
                    }
                    t.clone()
                }
                _ => t.clone(),
            }
        }
        // sqrt of a positive expression as a power, so that powers combine.
        T::Call(SxFunc::Sqrt, v) if s.positive(&v[0]) && !matches!(v[0], T::Num(_)) => {
            T::pow(v[0].clone(), T::Num(0.5))
        }
        // 1 − σ(z) = σ(−z)
        T::Add(v) if v.len() == 2 => {
            let lone = |a: &T, b: &T| -> Option<T> {
                match (a, b) {
                    (T::Num(c), T::Mul(m)) if *c == 1.0 && m.len() == 2 => match (&m[0], &m[1]) {
                        (T::Num(k), T::Call(SxFunc::Logistic, z)) if *k == -1.0 => {
                            Some(T::call(SxFunc::Logistic, T::neg(z[0].clone())))
                        }
                        _ => None,
                    },
                    _ => None,
                }
            };
            lone(&v[0], &v[1])
                .or_else(|| lone(&v[1], &v[0]))
                .unwrap_or_else(|| t.clone())
        }
        // log(1 + exp z) = softplus(z)
        T::Call(SxFunc::Log, v) => match &v[0] {
            T::Add(w) if w.len() == 2 => match (&w[0], &w[1]) {
                (T::Num(c), T::Call(SxFunc::Exp, z)) | (T::Call(SxFunc::Exp, z), T::Num(c))
                    if *c == 1.0 =>
                {
                    T::call(SxFunc::Softplus, z[0].clone())
                }
                _ => t.clone(),
            },
            _ => t.clone(),
        },
        T::Call(SxFunc::Log1p, v) => match &v[0] {
            T::Call(SxFunc::Exp, z) => T::call(SxFunc::Softplus, z[0].clone()),
            _ => T::log(T::add(vec![T::Num(1.0), v[0].clone()])),
        },
        _ => t,
    }
}
