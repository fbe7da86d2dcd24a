//! The library as the IR sees it: a likelihood's density (a `gpm_library` formula) lowered to an
//! expression, so that later stages see formulas, never names; and the scalar math functions.

use crate::sx::{Sx, SxFunc};
use gpm_library::likelihood::{Formula, Func, Labels, Likelihood};

/// Scalar math functions with their arity. `sum` (over classes) and `dot` are structural and
/// handled by the lowering itself.
pub const MATH_FUNCTIONS: &[(&str, usize)] = &[
    ("exp", 1),
    ("log", 1),
    ("log1p", 1),
    ("sqrt", 1),
    ("abs", 1),
    ("cosh", 1),
    ("sinh", 1),
    ("tanh", 1),
    ("sech", 1),
    ("logistic", 1),
    ("inv_logit", 1),
    ("softplus", 1),
    ("log1p_exp", 1),
    ("log_logistic", 1),
    ("lgamma", 1),
    ("square", 1),
    ("max", 2),
    ("min", 2),
    ("normal_cdf", 1),
    ("Phi", 1),
    ("sum", 1),
    ("dot", 2),
];

/// Apply a math function of [`MATH_FUNCTIONS`] (not `sum`/`dot`) to scalar arguments.
pub fn apply_math(name: &str, mut args: Vec<Sx>) -> Sx {
    let one = |args: &mut Vec<Sx>| args.remove(0);
    match name {
        "exp" => Sx::call(SxFunc::Exp, one(&mut args)),
        "log" => Sx::call(SxFunc::Log, one(&mut args)),
        "log1p" => Sx::call(SxFunc::Log1p, one(&mut args)),
        "sqrt" => Sx::call(SxFunc::Sqrt, one(&mut args)),
        "abs" => Sx::call(SxFunc::Abs, one(&mut args)),
        "cosh" => Sx::call(SxFunc::Cosh, one(&mut args)),
        "sinh" => Sx::call(SxFunc::Sinh, one(&mut args)),
        "tanh" => Sx::call(SxFunc::Tanh, one(&mut args)),
        "sech" => Sx::div(Sx::num(1.0), Sx::call(SxFunc::Cosh, one(&mut args))),
        "logistic" | "inv_logit" => Sx::call(SxFunc::Logistic, one(&mut args)),
        "softplus" | "log1p_exp" => Sx::call(SxFunc::Softplus, one(&mut args)),
        "log_logistic" => Sx::call(SxFunc::Log, Sx::call(SxFunc::Logistic, one(&mut args))),
        "lgamma" => Sx::call(SxFunc::Lgamma, one(&mut args)),
        "square" => Sx::pow(one(&mut args), Sx::num(2.0)),
        "max" => Sx::Call(SxFunc::Max, args),
        "min" => Sx::Call(SxFunc::Min, args),
        "normal_cdf" | "Phi" => Sx::call(SxFunc::NormalCdf, one(&mut args)),
        other => unreachable!("apply_math called with non-scalar function {other}"),
    }
}

// Formula builders shared with the robust statements (`robust.rs`).
pub(crate) fn log(x: Sx) -> Sx {
    Sx::call(SxFunc::Log, x)
}
pub(crate) fn exp(x: Sx) -> Sx {
    Sx::call(SxFunc::Exp, x)
}
pub(crate) fn n(v: f64) -> Sx {
    Sx::num(v)
}

/// A library formula as an expression: the response `y` and each parameter's expression `p[k]`
/// in their slots.
pub fn from_formula(f: &Formula, y: &Sx, p: &[Sx]) -> Sx {
    let go = |g: &Formula| from_formula(g, y, p);
    let two = |a: &Formula, b: &Formula| (go(a), go(b));
    match f {
        Formula::Num(x) => n(*x),
        Formula::Y => y.clone(),
        Formula::Param(k) => p[*k].clone(),
        Formula::Add(a, b) => {
            let (a, b) = two(a, b);
            Sx::add(a, b)
        }
        Formula::Sub(a, b) => {
            let (a, b) = two(a, b);
            Sx::sub(a, b)
        }
        Formula::Mul(a, b) => {
            let (a, b) = two(a, b);
            Sx::mul(a, b)
        }
        Formula::Div(a, b) => {
            let (a, b) = two(a, b);
            Sx::div(a, b)
        }
        Formula::Pow(a, b) => {
            let (a, b) = two(a, b);
            Sx::pow(a, b)
        }
        Formula::Neg(a) => Sx::neg(go(a)),
        Formula::Call(func, args) => {
            let f = match func {
                Func::Log => SxFunc::Log,
                Func::Exp => SxFunc::Exp,
                Func::Logistic => SxFunc::Logistic,
                Func::Softplus => SxFunc::Softplus,
                Func::Lgamma => SxFunc::Lgamma,
                Func::LogE1Scaled => SxFunc::LogE1Scaled,
                Func::Abs => SxFunc::Abs,
                Func::PoissonPowerMoment => SxFunc::PoissonPowerMoment,
            };
            Sx::Call(f, args.iter().map(go).collect())
        }
    }
}

/// The log-density of a library likelihood at response `y` with parameters `p` (in the order
/// of [`Likelihood::params`]); `None` for the structural logistic-softmax, which the caller
/// lowers.
pub fn log_density(l: &dyn Likelihood, y: Sx, p: &[Sx], labels: Labels) -> Option<Sx> {
    l.log_density(labels).map(|f| from_formula(&f, &y, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sx::SymRole;
    use gpm_library::likelihood::{ResponseKind, LIKELIHOODS};

    /// Every library density, lowered with its parameters as data symbols, evaluates as the
    /// library's own formula (whose normalisation `gpm-library` tests), and so does every power
    /// integral.
    #[test]
    fn lowered_densities_are_the_librarys_formulas() {
        for l in LIKELIHOODS {
            let ex = l.example();
            let names: Vec<String> = (0..ex.len()).map(|k| format!("p{k}")).collect();
            let params: Vec<Sx> = names.iter().map(|k| Sx::sym(SymRole::Data, k)).collect();
            let y = Sx::sym(SymRole::Data, "y");
            let labels: Option<&[i64]> = Some(&[-1, 1]);
            let ys = match l.response() {
                ResponseKind::Real => vec![-2.5, 0.0, 0.7, 4.0],
                ResponseKind::Binary => vec![-1.0, 1.0],
                ResponseKind::Positive => vec![0.2, 1.0, 3.0, 7.0],
                ResponseKind::Count | ResponseKind::Category => vec![0.0, 1.0, 3.0, 7.0],
            };
            let mut pairs: Vec<(Sx, Formula)> = Vec::new();
            if let (Some(sx), Some(f)) = (
                log_density(*l, y.clone(), &params, labels),
                l.log_density(labels),
            ) {
                pairs.push((sx, f));
            }
            if let Some(f) = l.power_integral(0.3) {
                pairs.push((from_formula(&f, &y, &params), f));
            }
            for (sx, f) in pairs {
                for &yv in &ys {
                    let v = sx
                        .eval(&|_, name| {
                            if name == "y" {
                                Some(yv)
                            } else {
                                names.iter().position(|k| k == name).map(|k| ex[k])
                            }
                        })
                        .unwrap();
                    let w = f.eval(yv, ex);
                    assert!(
                        (v - w).abs() <= 1e-12 * w.abs().max(1.0),
                        "{}: {v} vs {w}",
                        l.name()
                    );
                }
            }
        }
    }
}
