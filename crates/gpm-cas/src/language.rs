//! The expression language: real scalar expressions in s-expression syntax,
//! `(+ a b)`, `(* 2 x)`, `(^ x 0.5)`, `(log (logistic z))`, with constants and symbols.

use egg::{define_language, Id, Symbol};
use ordered_float::NotNan;

/// A numeric constant (never NaN, so that e-nodes can be hashed and compared).
pub type Constant = NotNan<f64>;

define_language! {
    /// Scalar expressions (operators as written in s-expressions).
    #[allow(missing_docs)]
    pub enum Math {
        "+" = Add([Id; 2]),
        "-" = Sub([Id; 2]),
        "*" = Mul([Id; 2]),
        "/" = Div([Id; 2]),
        "^" = Pow([Id; 2]),
        "neg" = Neg(Id),
        "exp" = Exp(Id),
        "log" = Log(Id),
        "log1p" = Log1p(Id),
        "sqrt" = Sqrt(Id),
        "abs" = Abs(Id),
        "cosh" = Cosh(Id),
        "sinh" = Sinh(Id),
        "tanh" = Tanh(Id),
        "logistic" = Logistic(Id),
        "softplus" = Softplus(Id),
        "lgamma" = Lgamma(Id),
        "digamma" = Digamma(Id),
        "log_e1_scaled" = LogE1Scaled(Id),
        "normal_cdf" = NormalCdf(Id),
        "max" = Max([Id; 2]),
        "min" = Min([Id; 2]),
        "poisson_power_moment" = PoissonPowerMoment([Id; 3]),
        Constant(Constant),
        Symbol(Symbol),
    }
}

/// An expression.
pub type Expr = egg::RecExpr<Math>;

/// Parse an s-expression.
pub fn parse(s: &str) -> Result<Expr, crate::error::CasError> {
    s.parse()
        .map_err(|e| crate::error::CasError::Parse(format!("{e}")))
}
