//! Numeric evaluation in f64 (numerically careful forms of σ, softplus, lgamma) and in complex
//! arithmetic (principal branches), the latter for inverse Laplace transforms of `φ`.

use crate::language::{Expr, Math};
use crate::CasError;
use egg::Language;
use num_complex::Complex64;

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
        Math::NormalCdf(_) => gpm_special::normal_cdf(x),
        _ => return None,
    };
    Some(v)
}

/// Evaluate with a value for every symbol.
pub fn eval(e: &Expr, env: &dyn Fn(&str) -> Option<f64>) -> Result<f64, CasError> {
    let nodes = e.as_ref();
    let mut v: Vec<f64> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let x = |i: egg::Id| v[usize::from(i)];
        let r = match n {
            Math::Constant(c) => c.into_inner(),
            Math::Symbol(s) => env(s.as_str()).ok_or_else(|| CasError::Unbound(s.to_string()))?,
            Math::Add([a, b]) => x(*a) + x(*b),
            Math::Sub([a, b]) => x(*a) - x(*b),
            Math::Mul([a, b]) => x(*a) * x(*b),
            Math::Div([a, b]) => x(*a) / x(*b),
            Math::Pow([a, b]) => x(*a).powf(x(*b)),
            Math::Max([a, b]) => x(*a).max(x(*b)),
            Math::Min([a, b]) => x(*a).min(x(*b)),
            other => apply_unary(other, x(other.children()[0])).unwrap_or(f64::NAN),
        };
        v.push(r);
    }
    v.last().copied().ok_or(CasError::Empty)
}

/// Evaluate in complex arithmetic (principal branches). `abs`, `max`, `min` and `normal_cdf`
/// are not analytic and are refused.
pub fn eval_complex(
    e: &Expr,
    env: &dyn Fn(&str) -> Option<Complex64>,
) -> Result<Complex64, CasError> {
    let nodes = e.as_ref();
    let mut v: Vec<Complex64> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let x = |i: egg::Id| v[usize::from(i)];
        let one = Complex64::new(1.0, 0.0);
        let r = match n {
            Math::Constant(c) => Complex64::new(c.into_inner(), 0.0),
            Math::Symbol(s) => env(s.as_str()).ok_or_else(|| CasError::Unbound(s.to_string()))?,
            Math::Add([a, b]) => x(*a) + x(*b),
            Math::Sub([a, b]) => x(*a) - x(*b),
            Math::Mul([a, b]) => x(*a) * x(*b),
            Math::Div([a, b]) => x(*a) / x(*b),
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
            Math::Lgamma(_) | Math::Abs(_) | Math::Max(_) | Math::Min(_) | Math::NormalCdf(_) => {
                return Err(CasError::NotAnalytic(format!("{n}")))
            }
        };
        v.push(r);
    }
    v.last().copied().ok_or(CasError::Empty)
}
