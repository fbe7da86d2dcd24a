//! The recognizers' working form of an expression: n-ary sums and products, so that atoms,
//! coefficients and polynomial structure are easy to read off. Converted from the IR's `Sx` and
//! to the CAS's s-expressions.

use gpm_ir::{Sx, SxFunc, SymRole};
use std::fmt;

/// Symbol roles, extended with the auxiliary variables the augmentations introduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Role {
    /// A linear predictor.
    Predictor,
    /// An observed datum.
    Data,
    /// A hyperparameter.
    Hyper,
    /// An auxiliary variable introduced by a rule.
    Aux,
}

/// An expression tree with n-ary `Add` and `Mul`.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum T {
    Num(f64),
    Sym(Role, String),
    Add(Vec<T>),
    Mul(Vec<T>),
    Pow(Box<T>, Box<T>),
    Call(SxFunc, Vec<T>),
}

// Constructors that normalise as they build (`T::div` by a number multiplies), called by name:
// operator traits would need an import at every call site.
#[allow(missing_docs, clippy::should_implement_trait)]
impl T {
    pub fn num(v: f64) -> T {
        T::Num(v)
    }
    pub fn sym(r: Role, n: &str) -> T {
        T::Sym(r, n.to_string())
    }
    pub fn call(f: SxFunc, x: T) -> T {
        T::Call(f, vec![x])
    }
    pub fn add(v: Vec<T>) -> T {
        let mut out = Vec::new();
        let mut c = 0.0;
        for t in v {
            match t {
                T::Add(inner) => out.extend(inner),
                T::Num(x) => c += x,
                t => out.push(t),
            }
        }
        if c != 0.0 || out.is_empty() {
            out.push(T::Num(c));
        }
        if out.len() == 1 {
            out.pop().expect("one term: checked above")
        } else {
            T::Add(out)
        }
    }
    pub fn mul(v: Vec<T>) -> T {
        let mut out = Vec::new();
        let mut c = 1.0;
        for t in v {
            match t {
                T::Mul(inner) => {
                    for u in inner {
                        match u {
                            T::Num(x) => c *= x,
                            u => out.push(u),
                        }
                    }
                }
                T::Num(x) => c *= x,
                t => out.push(t),
            }
        }
        if c == 0.0 {
            return T::Num(0.0);
        }
        if c != 1.0 || out.is_empty() {
            out.insert(0, T::Num(c));
        }
        if out.len() == 1 {
            out.pop().expect("one term: checked above")
        } else {
            T::Mul(out)
        }
    }
    pub fn neg(a: T) -> T {
        T::mul(vec![T::Num(-1.0), a])
    }
    pub fn sub(a: T, b: T) -> T {
        T::add(vec![a, T::neg(b)])
    }
    pub fn pow(a: T, p: T) -> T {
        match (&a, &p) {
            (_, T::Num(e)) if *e == 1.0 => a,
            (T::Num(x), T::Num(e)) => T::Num(x.powf(*e)),
            _ => T::Pow(Box::new(a), Box::new(p)),
        }
    }
    pub fn div(a: T, b: T) -> T {
        match b {
            T::Num(x) => T::mul(vec![T::Num(1.0 / x), a]),
            b => T::mul(vec![a, T::pow(b, T::Num(-1.0))]),
        }
    }
    pub fn log(a: T) -> T {
        T::call(SxFunc::Log, a)
    }
    pub fn exp(a: T) -> T {
        T::call(SxFunc::Exp, a)
    }
    pub fn sqrt(a: T) -> T {
        T::call(SxFunc::Sqrt, a)
    }

    /// From the IR's expression.
    pub fn from_sx(s: &Sx) -> T {
        match s {
            Sx::Num(v) => T::Num(*v),
            Sx::Sym(r, n) => T::Sym(
                match r {
                    SymRole::Predictor => Role::Predictor,
                    SymRole::Data => Role::Data,
                    SymRole::Hyper => Role::Hyper,
                },
                n.clone(),
            ),
            Sx::Neg(a) => T::neg(T::from_sx(a)),
            Sx::Add(a, b) => T::add(vec![T::from_sx(a), T::from_sx(b)]),
            Sx::Sub(a, b) => T::sub(T::from_sx(a), T::from_sx(b)),
            Sx::Mul(a, b) => T::mul(vec![T::from_sx(a), T::from_sx(b)]),
            Sx::Div(a, b) => T::div(T::from_sx(a), T::from_sx(b)),
            Sx::Pow(a, b) => T::pow(T::from_sx(a), T::from_sx(b)),
            Sx::Call(f, args) => T::Call(*f, args.iter().map(T::from_sx).collect()),
        }
    }

    /// Whether a symbol of this role (and name, if given) occurs.
    pub fn mentions(&self, role: Role, name: Option<&str>) -> bool {
        match self {
            T::Num(_) => false,
            T::Sym(r, n) => *r == role && name.is_none_or(|x| x == n),
            T::Add(v) | T::Mul(v) | T::Call(_, v) => v.iter().any(|t| t.mentions(role, name)),
            T::Pow(a, b) => a.mentions(role, name) || b.mentions(role, name),
        }
    }

    /// Whether the expression depends on any predictor.
    pub fn has_predictor(&self) -> bool {
        self.mentions(Role::Predictor, None)
    }

    /// Substitute every occurrence of an equal sub-tree.
    pub fn replace(&self, from: &T, to: &T) -> T {
        if self == from {
            return to.clone();
        }
        match self {
            T::Num(_) | T::Sym(..) => self.clone(),
            T::Add(v) => T::add(v.iter().map(|t| t.replace(from, to)).collect()),
            T::Mul(v) => T::mul(v.iter().map(|t| t.replace(from, to)).collect()),
            T::Pow(a, b) => T::pow(a.replace(from, to), b.replace(from, to)),
            T::Call(f, v) => T::Call(*f, v.iter().map(|t| t.replace(from, to)).collect()),
        }
    }

    /// Evaluate numerically (independently of the CAS: certification compares the two).
    pub fn eval(&self, env: &dyn Fn(Role, &str) -> Option<f64>) -> Option<f64> {
        Some(match self {
            T::Num(v) => *v,
            T::Sym(r, n) => env(*r, n)?,
            T::Add(v) => {
                let mut s = 0.0;
                for t in v {
                    s += t.eval(env)?;
                }
                s
            }
            T::Mul(v) => {
                let mut s = 1.0;
                for t in v {
                    s *= t.eval(env)?;
                }
                s
            }
            T::Pow(a, b) => {
                let (a, b) = (a.eval(env)?, b.eval(env)?);
                if b == 2.0 {
                    a * a
                } else if b == -1.0 {
                    1.0 / a
                } else {
                    a.powf(b)
                }
            }
            T::Call(f, v) => {
                let mut x = [0.0; 3];
                for (slot, a) in x.iter_mut().zip(v) {
                    *slot = a.eval(env)?;
                }
                f.apply_args(&x[..v.len()])
            }
        })
    }

    /// The CAS's s-expression syntax.
    pub fn to_sexpr(&self) -> String {
        match self {
            T::Num(v) => {
                if *v < 0.0 {
                    format!("(neg {})", fmt_num(-v))
                } else {
                    fmt_num(*v)
                }
            }
            T::Sym(_, n) => n.clone(),
            T::Add(v) => fold("+", v),
            T::Mul(v) => fold("*", v),
            T::Pow(a, b) => format!("(^ {} {})", a.to_sexpr(), b.to_sexpr()),
            T::Call(f, v) => format!(
                "({} {})",
                f.name(),
                v.iter().map(|t| t.to_sexpr()).collect::<Vec<_>>().join(" ")
            ),
        }
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}

fn fold(op: &str, v: &[T]) -> String {
    let mut it = v.iter().rev();
    let mut acc = it.next().map(|t| t.to_sexpr()).unwrap_or_default();
    for t in it {
        acc = format!("({op} {} {acc})", t.to_sexpr());
    }
    acc
}

impl fmt::Display for T {
    /// Infix, for people.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            T::Num(v) => {
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    write!(f, "{}", *v as i64)
                } else {
                    write!(f, "{}", (v * 1e6).round() / 1e6)
                }
            }
            T::Sym(_, n) => write!(f, "{n}"),
            T::Add(v) => {
                write!(f, "(")?;
                for (k, t) in v.iter().enumerate() {
                    if k > 0 {
                        write!(f, " + ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
            T::Mul(v) => {
                let mut first = true;
                for t in v {
                    if !first {
                        write!(f, "·")?;
                    }
                    first = false;
                    match t {
                        T::Num(x) if *x == -1.0 && v.len() > 1 => {
                            write!(f, "-")?;
                            first = true;
                        }
                        _ => write!(f, "{t}")?,
                    }
                }
                Ok(())
            }
            T::Pow(a, b) => {
                // A product, power or negative number as the base needs parentheses:
                // `1/(2·x)`, not `1/2·x`.
                let base = match &**a {
                    T::Mul(_) | T::Pow(..) => format!("({a})"),
                    T::Num(x) if *x < 0.0 => format!("({a})"),
                    _ => format!("{a}"),
                };
                match &**b {
                    T::Num(x) if *x == -1.0 => write!(f, "1/{base}"),
                    T::Num(x) if *x == 0.5 => write!(f, "√{base}"),
                    _ => write!(f, "{base}^{b}"),
                }
            }
            T::Call(func, v) => {
                write!(f, "{}(", func.name())?;
                for (k, t) in v.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Printed expressions keep their grouping: a product, power or negative number under a
    /// power is parenthesised.
    #[test]
    fn powers_of_products_print_with_parentheses() {
        let x = T::sym(Role::Predictor, "x");
        let two_x = T::mul(vec![T::Num(2.0), x.clone()]);
        assert_eq!(T::pow(two_x.clone(), T::Num(-1.0)).to_string(), "1/(2·x)");
        assert_eq!(T::pow(two_x, T::Num(0.5)).to_string(), "√(2·x)");
        assert_eq!(T::pow(x.clone(), T::Num(-1.0)).to_string(), "1/x");
        assert_eq!(
            T::Pow(Box::new(T::Num(-2.0)), Box::new(x)).to_string(),
            "(-2)^x"
        );
    }
}
