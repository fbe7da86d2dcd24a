//! Interval arithmetic over the scalar language: a closed interval holding every value an
//! expression takes when its symbols range over theirs. What checks a parameter written as an
//! expression against its registry's constraint — of hyperparameters when the model is
//! lowered (`nu - 5` with `nu` learned over `(0, ∞)`), of data row by row when the data are
//! read (`s * x[i]`) — and says by how far it reaches outside.

use crate::model::{Hyper, HyperKind};
use crate::sx::{Sx, SxFunc, SymRole};

/// A closed interval `(lo, hi)`.
pub type Interval = (f64, f64);

/// The values hyperparameter `h` can take, as a closed interval: its fixed value, its declared
/// range when learned, its prior's support when sampled.
pub fn hyper_range(h: &Hyper) -> Interval {
    match &h.kind {
        HyperKind::Fixed { value } => (*value, *value),
        HyperKind::Learn { .. } => (
            h.lower.unwrap_or(f64::NEG_INFINITY),
            h.upper.unwrap_or(f64::INFINITY),
        ),
        HyperKind::Prior { prior } => (prior.lower(), prior.upper()),
    }
}

/// A closed interval containing every value `e` takes when each symbol ranges over
/// `symbol(role, name)` (wider than the exact range where a symbol recurs); `None` where that
/// is not known — a symbol `symbol` does not bound, a division by an interval holding 0, a
/// function not followed here.
pub fn range(e: &Sx, symbol: &dyn Fn(SymRole, &str) -> Option<Interval>) -> Option<Interval> {
    let r = |x: &Sx| range(x, symbol);
    Some(match e {
        Sx::Num(v) => (*v, *v),
        Sx::Sym(role, name) => symbol(*role, name)?,
        Sx::Neg(a) => {
            let (lo, hi) = r(a)?;
            (-hi, -lo)
        }
        Sx::Add(a, b) => {
            let ((al, ah), (bl, bh)) = (r(a)?, r(b)?);
            (al + bl, ah + bh)
        }
        Sx::Sub(a, b) => {
            let ((al, ah), (bl, bh)) = (r(a)?, r(b)?);
            (al - bh, ah - bl)
        }
        Sx::Mul(a, b) => product(r(a)?, r(b)?),
        Sx::Div(a, b) => product(r(a)?, reciprocal(r(b)?)?),
        Sx::Pow(a, p) => match &**p {
            Sx::Num(p) => power(r(a)?, *p)?,
            _ => return None,
        },
        Sx::Call(f, args) if args.len() == 1 => monotone(*f, r(&args[0])?)?,
        Sx::Call(..) => return None,
    })
    .filter(|(lo, hi)| !lo.is_nan() && !hi.is_nan())
}

/// `[a] · [b]`, with `0 · ∞ = 0` (a factor that is exactly 0 makes the product 0).
fn product((al, ah): Interval, (bl, bh): Interval) -> Interval {
    let times = |x: f64, y: f64| if x == 0.0 || y == 0.0 { 0.0 } else { x * y };
    let ends = [times(al, bl), times(al, bh), times(ah, bl), times(ah, bh)];
    let lo = ends.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// `1 / [b]` where `b` keeps one sign (an end at 0 maps to ±∞); `None` across 0.
fn reciprocal((lo, hi): Interval) -> Option<Interval> {
    if lo >= 0.0 && hi > 0.0 {
        Some((1.0 / hi, if lo == 0.0 { f64::INFINITY } else { 1.0 / lo }))
    } else if hi <= 0.0 && lo < 0.0 {
        Some((
            if hi == 0.0 {
                f64::NEG_INFINITY
            } else {
                1.0 / hi
            },
            1.0 / lo,
        ))
    } else {
        None
    }
}

/// `[a]^p` for a constant `p`: on a non-negative base (monotone in the base), or an even
/// integer power of any base.
fn power((lo, hi): Interval, p: f64) -> Option<Interval> {
    let pw = |x: f64| x.powf(p);
    if lo >= 0.0 {
        let (a, b) = (pw(lo), pw(hi));
        Some((a.min(b), a.max(b)))
    } else if p > 0.0 && p.fract() == 0.0 && (p as i64) % 2 == 0 {
        let top = pw(lo.abs().max(hi.abs()));
        Some((if hi >= 0.0 { 0.0 } else { pw(hi.abs()) }, top))
    } else {
        None
    }
}

/// A function of one argument that interval arithmetic follows: monotone on its domain (the
/// argument inside it), or `abs`.
fn monotone(f: SxFunc, (lo, hi): Interval) -> Option<Interval> {
    let up = |g: fn(f64) -> f64| Some((g(lo), g(hi)));
    match f {
        SxFunc::Exp => up(f64::exp),
        SxFunc::Log if lo >= 0.0 => up(f64::ln),
        SxFunc::Sqrt if lo >= 0.0 => up(f64::sqrt),
        SxFunc::Log1p if lo >= -1.0 => up(f64::ln_1p),
        SxFunc::Tanh => up(f64::tanh),
        SxFunc::Logistic => up(|x| 1.0 / (1.0 + (-x).exp())),
        SxFunc::Softplus => up(|x| x.max(0.0) + (-x.abs()).exp().ln_1p()),
        SxFunc::Abs if lo >= 0.0 => Some((lo, hi)),
        SxFunc::Abs if hi <= 0.0 => Some((-hi, -lo)),
        SxFunc::Abs => Some((0.0, (-lo).max(hi))),
        _ => None,
    }
}

/// What an interval says of an expression, for a message: `is -2`, `can be anywhere in
/// [-5, ∞]`.
pub fn spread((lo, hi): Interval) -> String {
    let end = |v: f64| match v {
        f64::INFINITY => "∞".to_string(),
        f64::NEG_INFINITY => "−∞".to_string(),
        // Rounded to ten decimals: interval arithmetic's last-ulp error (`0.5 − 0.7`) unshown.
        v => {
            let t = format!("{v:.10}");
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        }
    };
    if lo == hi {
        format!("is {}", end(lo))
    } else {
        format!("can be anywhere in [{}, {}]", end(lo), end(hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Expressions of literals and two hyperparameters, `a ∈ [0.5, 2]` and `b ∈ [−1, 1]`.
    fn expression() -> impl Strategy<Value = Sx> {
        let leaf = prop_oneof![
            (-3.0..3.0f64).prop_map(Sx::Num),
            Just(Sx::sym(SymRole::Hyper, "a")),
            Just(Sx::sym(SymRole::Hyper, "b")),
        ];
        let functions = [
            SxFunc::Exp,
            SxFunc::Log,
            SxFunc::Sqrt,
            SxFunc::Log1p,
            SxFunc::Tanh,
            SxFunc::Logistic,
            SxFunc::Softplus,
            SxFunc::Abs,
        ];
        leaf.prop_recursive(4, 24, 2, move |inner| {
            prop_oneof![
                inner.clone().prop_map(Sx::neg),
                (inner.clone(), inner.clone()).prop_map(|(x, y)| Sx::add(x, y)),
                (inner.clone(), inner.clone()).prop_map(|(x, y)| Sx::sub(x, y)),
                (inner.clone(), inner.clone()).prop_map(|(x, y)| Sx::mul(x, y)),
                (inner.clone(), inner.clone()).prop_map(|(x, y)| Sx::div(x, y)),
                (
                    inner.clone(),
                    prop::sample::select(vec![-1.0, 0.5, 2.0, 3.0])
                )
                    .prop_map(|(x, p)| Sx::pow(x, Sx::Num(p))),
                (inner, prop::sample::select(functions.to_vec())).prop_map(|(x, f)| Sx::call(f, x)),
            ]
        })
    }

    fn ranges(role: SymRole, name: &str) -> Option<Interval> {
        match (role, name) {
            (SymRole::Hyper, "a") => Some((0.5, 2.0)),
            (SymRole::Hyper, "b") => Some((-1.0, 1.0)),
            _ => None,
        }
    }

    proptest! {
        /// Interval arithmetic is sound: wherever the expression has a value, it lies in the
        /// range found for it.
        #[test]
        fn every_value_lies_in_the_range(e in expression(), a in 0.5..2.0f64, b in -1.0..1.0f64) {
            if let Some((lo, hi)) = range(&e, &ranges) {
                let env = |_: SymRole, name: &str| match name {
                    "a" => Some(a),
                    "b" => Some(b),
                    _ => None,
                };
                if let Some(v) = e.eval(&env).filter(|v| v.is_finite()) {
                    let tol = 1e-9 * (1.0 + v.abs());
                    prop_assert!(lo - tol <= v && v <= hi + tol, "{e} = {v} outside [{lo}, {hi}]");
                }
            }
        }
    }

    #[test]
    fn a_datum_or_a_division_across_zero_has_no_range() {
        let x = Sx::sym(SymRole::Data, "x");
        assert_eq!(range(&Sx::add(x, Sx::Num(1.0)), &ranges), None);
        let across = Sx::div(Sx::Num(1.0), Sx::sym(SymRole::Hyper, "b"));
        assert_eq!(range(&across, &ranges), None);
        let shifted = Sx::sub(Sx::sym(SymRole::Hyper, "a"), Sx::Num(5.0));
        assert_eq!(range(&shifted, &ranges), Some((-4.5, -3.0)));
        assert_eq!(spread((-0.2 + 1e-17, -0.2 + 1e-17)), "is -0.2");
        assert_eq!(spread((-5.0, f64::INFINITY)), "can be anywhere in [-5, ∞]");
    }
}
