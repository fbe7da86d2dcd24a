//! The bridge to the CAS: the recognizers' trees to and from `gpm_cas` expressions (through
//! s-expressions), so that `gpm-cas` proves complete monotonicity and differentiates `log φ`.

use crate::tree::{Role, T};
use egg::Language;
use gpm_cas::{Expr, Math};
use gpm_ir::SxFunc;

/// A tree as a CAS expression.
pub fn to_cas(t: &T) -> Option<Expr> {
    gpm_cas::parse(&t.to_sexpr()).ok()
}

/// A CAS expression back as a tree; `role` gives each symbol's role.
pub fn from_cas(e: &Expr, role: &dyn Fn(&str) -> Role) -> T {
    fn go(e: &Expr, i: usize, role: &dyn Fn(&str) -> Role) -> T {
        let n = &e.as_ref()[i];
        let k = |j: usize| go(e, usize::from(n.children()[j]), role);
        let f = |func: SxFunc| T::call(func, k(0));
        match n {
            Math::Constant(c) => T::Num(c.into_inner()),
            Math::Symbol(s) => T::sym(role(s.as_str()), s.as_str()),
            Math::Add(_) => T::add(vec![k(0), k(1)]),
            Math::Sub(_) => T::sub(k(0), k(1)),
            Math::Mul(_) => T::mul(vec![k(0), k(1)]),
            Math::Div(_) => T::div(k(0), k(1)),
            Math::Pow(_) => T::pow(k(0), k(1)),
            Math::Neg(_) => T::neg(k(0)),
            Math::Exp(_) => f(SxFunc::Exp),
            Math::Log(_) => f(SxFunc::Log),
            Math::Log1p(_) => f(SxFunc::Log1p),
            Math::Sqrt(_) => f(SxFunc::Sqrt),
            Math::Abs(_) => f(SxFunc::Abs),
            Math::Cosh(_) => f(SxFunc::Cosh),
            Math::Sinh(_) => f(SxFunc::Sinh),
            Math::Tanh(_) => f(SxFunc::Tanh),
            Math::Logistic(_) => f(SxFunc::Logistic),
            Math::Softplus(_) => f(SxFunc::Softplus),
            Math::Lgamma(_) => f(SxFunc::Lgamma),
            Math::Digamma(_) => f(SxFunc::Digamma),
            Math::LogE1Scaled(_) => f(SxFunc::LogE1Scaled),
            Math::NormalCdf(_) => f(SxFunc::NormalCdf),
            Math::Max(_) => T::Call(SxFunc::Max, vec![k(0), k(1)]),
            Math::Min(_) => T::Call(SxFunc::Min, vec![k(0), k(1)]),
            Math::PoissonPowerMoment(_) => {
                T::Call(SxFunc::PoissonPowerMoment, vec![k(0), k(1), k(2)])
            }
        }
    }
    go(e, e.as_ref().len() - 1, role)
}
