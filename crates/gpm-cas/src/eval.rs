//! Numeric evaluation in f64 (numerically careful forms of σ, softplus, lgamma) and in complex
//! arithmetic (principal branches), the latter for inverse Laplace transforms of `φ`.

use crate::language::{Expr, Math};
use crate::CasError;
use egg::Language;
use num_complex::Complex64;

/// log Γ(x) for real x > 0 (Lanczos, g = 7), reflection below 1/2.
pub fn lgamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin())
            .abs()
            .ln()
            - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let mut a = C[0];
    for (k, c) in C.iter().enumerate().skip(1) {
        a += c / (x + k as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The standard normal CDF by erfc (Numerical Recipes' Chebyshev fit, relative error < 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = -x / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z.abs());
    let y = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    0.5 * if z >= 0.0 { y } else { 2.0 - y }
}

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
        Math::Logistic(_) => {
            if x >= 0.0 {
                1.0 / (1.0 + (-x).exp())
            } else {
                let e = x.exp();
                e / (1.0 + e)
            }
        }
        Math::Softplus(_) => x.max(0.0) + (-x.abs()).exp().ln_1p(),
        Math::Lgamma(_) if x > 0.0 => lgamma(x),
        Math::NormalCdf(_) => normal_cdf(x),
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
