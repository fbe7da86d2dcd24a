//! Numeric evaluation in f64 (numerically careful forms of σ, softplus, lgamma) and in complex
//! arithmetic (principal branches), the latter for inverse Laplace transforms of `φ`.

use crate::error::CasError;
use crate::language::{Expr, Math};
use egg::Language;
use num_complex::Complex64;
use std::ops::{Add, Div, Mul, Sub};

/// A unary function at a real argument (`None` outside its domain).
pub fn apply_unary(node: &Math, x: f64) -> Option<f64> {
    let v = match node {
        Math::Neg(_) => -x,
        Math::Exp(_) => x.exp(),
        Math::Log(_) if x > 0.0 => x.ln(),
        Math::Log1p(_) if x > -1.0 => x.ln_1p(),
        Math::Sqrt(_) if x >= 0.0 => x.sqrt(),
        Math::Abs(_) => x.abs(),
        Math::Cosh(_) => x.cosh(),
        Math::Sinh(_) => x.sinh(),
        Math::Tanh(_) => x.tanh(),
        Math::Logistic(_) => gpm_special::logistic(x),
        Math::Softplus(_) => gpm_special::softplus(x),
        Math::Lgamma(_) if x > 0.0 => gpm_special::lgamma(x),
        Math::Digamma(_) if x > 0.0 => gpm_special::digamma(x),
        Math::LogE1Scaled(_) if x > 0.0 => gpm_special::log_e1_scaled(x),
        Math::NormalCdf(_) => gpm_special::normal_cdf(x),
        _ => return None,
    };
    Some(v)
}

/// Evaluate with a value for every symbol.
pub fn eval(e: &Expr, env: &dyn Fn(&str) -> Option<f64>) -> Result<f64, CasError> {
    eval_nodes(e, &|_, s| env(s))
}

/// The evaluation both arithmetics share: the nodes in order (children before parents), the
/// constants, symbols (`sym(k, s)` for the symbol `s` at node `k`) and the four field
/// operations here, every other node by `rest` given its children's values.
fn eval_in<T>(
    e: &Expr,
    sym: &dyn Fn(usize, &str) -> Option<T>,
    rest: impl Fn(&Math, &dyn Fn(egg::Id) -> T) -> Result<T, CasError>,
) -> Result<T, CasError>
where
    T: Copy + From<f64> + Add<Output = T> + Sub<Output = T> + Mul<Output = T> + Div<Output = T>,
{
    let nodes = e.as_ref();
    let mut v: Vec<T> = Vec::with_capacity(nodes.len());
    for (k, n) in nodes.iter().enumerate() {
        let x = |i: egg::Id| v[usize::from(i)];
        let r = match n {
            Math::Constant(c) => T::from(c.into_inner()),
            Math::Symbol(s) => {
                sym(k, s.as_str()).ok_or_else(|| CasError::Unbound(s.to_string()))?
            }
            Math::Add([a, b]) => x(*a) + x(*b),
            Math::Sub([a, b]) => x(*a) - x(*b),
            Math::Mul([a, b]) => x(*a) * x(*b),
            Math::Div([a, b]) => x(*a) / x(*b),
            other => rest(other, &x)?,
        };
        v.push(r);
    }
    v.last().copied().ok_or(CasError::Empty)
}

/// Evaluate, the value of the symbol at node `k` named `s` being `sym(k, s)`.
fn eval_nodes(e: &Expr, sym: &dyn Fn(usize, &str) -> Option<f64>) -> Result<f64, CasError> {
    eval_in(e, sym, |n, x| {
        Ok(match n {
            Math::Pow([a, b]) => x(*a).powf(x(*b)),
            Math::Max([a, b]) => x(*a).max(x(*b)),
            Math::Min([a, b]) => x(*a).min(x(*b)),
            Math::PoissonPowerMoment([j, rate, b]) => {
                gpm_special::poisson_power_moment(x(*j), x(*rate), x(*b))
            }
            other => apply_unary(other, x(other.children()[0])).unwrap_or(f64::NAN),
        })
    })
}

/// Evaluate in complex arithmetic (principal branches). `abs`, `max`, `min` and `normal_cdf`
/// are not analytic and are refused.
pub fn eval_complex(
    e: &Expr,
    env: &dyn Fn(&str) -> Option<Complex64>,
) -> Result<Complex64, CasError> {
    eval_complex_nodes(e, &|_, s| env(s))
}

fn eval_complex_nodes(
    e: &Expr,
    sym: &dyn Fn(usize, &str) -> Option<Complex64>,
) -> Result<Complex64, CasError> {
    let one = Complex64::new(1.0, 0.0);
    eval_in(e, sym, |n, x| {
        Ok(match n {
            Math::Pow([a, b]) => {
                let (a, b) = (x(*a), x(*b));
                if b.im == 0.0 && b.re.fract() == 0.0 && b.re.abs() < 64.0 {
                    a.powi(b.re as i32)
                } else {
                    (b * a.ln()).exp()
                }
            }
            Math::Neg(a) => -x(*a),
            Math::Exp(a) => x(*a).exp(),
            Math::Log(a) => x(*a).ln(),
            Math::Log1p(a) => (one + x(*a)).ln(),
            Math::Sqrt(a) => x(*a).sqrt(),
            Math::Cosh(a) => x(*a).cosh(),
            Math::Sinh(a) => x(*a).sinh(),
            Math::Tanh(a) => x(*a).tanh(),
            Math::Logistic(a) => one / (one + (-x(*a)).exp()),
            Math::Softplus(a) => (one + x(*a).exp()).ln(),
            Math::Lgamma(_)
            | Math::Digamma(_)
            | Math::LogE1Scaled(_)
            | Math::Abs(_)
            | Math::Max(_)
            | Math::Min(_)
            | Math::NormalCdf(_)
            | Math::PoissonPowerMoment(_) => return Err(CasError::NotAnalytic(format!("{n}"))),
            // Listed, not `_`: a new node must be given its complex value here.
            Math::Constant(_)
            | Math::Symbol(_)
            | Math::Add(_)
            | Math::Sub(_)
            | Math::Mul(_)
            | Math::Div(_) => unreachable!("eval_in evaluates these itself"),
        })
    })
}

/// An expression whose symbols are bound to positions: symbol `vars[k]` reads `values[k]`.
/// Binding once spares a name comparison per symbol per evaluation, which matters where an
/// expression is evaluated at every observation of every sweep (the tilted samplers).
#[derive(Debug, Clone)]
pub struct SlotExpr {
    expr: Expr,
    /// Per node: the position of its symbol (`None` for other nodes).
    slots: Vec<Option<usize>>,
}

impl SlotExpr {
    /// Bind every symbol of `e` to its position in `vars`; `Err` names one that is not there.
    pub fn bind(e: &Expr, vars: &[&str]) -> Result<SlotExpr, CasError> {
        let slots = e
            .as_ref()
            .iter()
            .map(|n| match n {
                Math::Symbol(s) => vars
                    .iter()
                    .position(|v| *v == s.as_str())
                    .map(Some)
                    .ok_or_else(|| CasError::Unbound(s.to_string())),
                _ => Ok(None),
            })
            .collect::<Result<_, _>>()?;
        Ok(SlotExpr {
            expr: e.clone(),
            slots,
        })
    }

    /// The expression.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Evaluate in f64 with the bound symbols' values.
    pub fn eval(&self, values: &[f64]) -> Result<f64, CasError> {
        eval_nodes(&self.expr, &|k, _| {
            self.slots[k].and_then(|j| values.get(j).copied())
        })
    }

    /// Evaluate in complex arithmetic with the bound symbols' values.
    pub fn eval_complex(&self, values: &[Complex64]) -> Result<Complex64, CasError> {
        eval_complex_nodes(&self.expr, &|k, _| {
            self.slots[k].and_then(|j| values.get(j).copied())
        })
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn bound_expression_evaluates_like_the_named_one() {
        let e = crate::parse("(+ (* a (exp r)) (^ b 2))").unwrap();
        let b = SlotExpr::bind(&e, &["r", "a", "b"]).unwrap();
        let named = eval(&e, &|s| match s {
            "r" => Some(0.3),
            "a" => Some(1.5),
            "b" => Some(-2.0),
            _ => None,
        })
        .unwrap();
        assert_eq!(b.eval(&[0.3, 1.5, -2.0]).unwrap(), named);
        let z = b
            .eval_complex(&[Complex64::new(0.3, 0.0), 1.5.into(), (-2.0).into()])
            .unwrap();
        assert!((z.re - named).abs() < 1e-12 && z.im == 0.0);
        assert!(SlotExpr::bind(&e, &["r", "a"]).is_err());
    }
}
