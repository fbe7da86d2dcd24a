//! The IR's scalar expression: what one likelihood factor says about one observation.
//! Symbols carry their role (predictor, observed datum, hyperparameter), so that the augmentation
//! stage knows which symbols the Gaussian latents enter through.

use serde::Serialize;
use std::fmt;

/// What a symbol stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
pub enum SymRole {
    /// A linear predictor `η` at this observation (affine in the Gaussian latents).
    Predictor,
    /// A datum at this observation (`y[i]`) or a data scalar (`N`).
    Data,
    /// A hyperparameter.
    Hyper,
}

/// Functions of the scalar language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[allow(missing_docs)]
pub enum SxFunc {
    Exp,
    Log,
    Log1p,
    Sqrt,
    Abs,
    Cosh,
    Sinh,
    Tanh,
    Logistic,
    Softplus,
    Lgamma,
    /// `ψ(x)`, the derivative of `lgamma` (made by the CAS's derivatives).
    Digamma,
    /// `log(e^x E₁(x))`: the horseshoe prior's marginal kernel, made by its lowering.
    LogE1Scaled,
    Max,
    Min,
    NormalCdf,
    /// `poisson_power_moment(j, rate, b) = Σ_k k^j p_k(rate)^b`: the robust Poisson's
    /// `∫ p^(1+β)` and the moments its derivatives need (`gpm_special::poisson_power_moment`).
    /// Made by the lowering of `robust(...)` only, with constant `j` and `b`.
    PoissonPowerMoment,
}

impl SxFunc {
    /// The name as written in the language and in the CAS.
    pub fn name(self) -> &'static str {
        match self {
            SxFunc::Exp => "exp",
            SxFunc::Log => "log",
            SxFunc::Log1p => "log1p",
            SxFunc::Sqrt => "sqrt",
            SxFunc::Abs => "abs",
            SxFunc::Cosh => "cosh",
            SxFunc::Sinh => "sinh",
            SxFunc::Tanh => "tanh",
            SxFunc::Logistic => "logistic",
            SxFunc::Softplus => "softplus",
            SxFunc::Lgamma => "lgamma",
            SxFunc::Digamma => "digamma",
            SxFunc::LogE1Scaled => "log_e1_scaled",
            SxFunc::Max => "max",
            SxFunc::Min => "min",
            SxFunc::NormalCdf => "normal_cdf",
            SxFunc::PoissonPowerMoment => "poisson_power_moment",
        }
    }
    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            SxFunc::Max | SxFunc::Min => 2,
            SxFunc::PoissonPowerMoment => 3,
            _ => 1,
        }
    }
}

/// A scalar expression. `Sub` and `Div` are kept as written: the CAS normalises them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[allow(missing_docs)]
pub enum Sx {
    Num(f64),
    Sym(SymRole, String),
    Neg(Box<Sx>),
    Add(Box<Sx>, Box<Sx>),
    Sub(Box<Sx>, Box<Sx>),
    Mul(Box<Sx>, Box<Sx>),
    Div(Box<Sx>, Box<Sx>),
    Pow(Box<Sx>, Box<Sx>),
    Call(SxFunc, Vec<Sx>),
}

// Constructors of expression nodes, called by name as `Sx::add(a, b)` across the crates: the
// operator traits would need an import at every call site and hide the boxing.
#[allow(missing_docs, clippy::should_implement_trait)]
impl Sx {
    pub fn num(v: f64) -> Sx {
        Sx::Num(v)
    }
    pub fn sym(role: SymRole, name: &str) -> Sx {
        Sx::Sym(role, name.to_string())
    }
    pub fn call(f: SxFunc, x: Sx) -> Sx {
        Sx::Call(f, vec![x])
    }
    pub fn add(a: Sx, b: Sx) -> Sx {
        Sx::Add(Box::new(a), Box::new(b))
    }
    pub fn sub(a: Sx, b: Sx) -> Sx {
        Sx::Sub(Box::new(a), Box::new(b))
    }
    pub fn mul(a: Sx, b: Sx) -> Sx {
        Sx::Mul(Box::new(a), Box::new(b))
    }
    pub fn div(a: Sx, b: Sx) -> Sx {
        Sx::Div(Box::new(a), Box::new(b))
    }
    pub fn pow(a: Sx, b: Sx) -> Sx {
        Sx::Pow(Box::new(a), Box::new(b))
    }
    pub fn neg(a: Sx) -> Sx {
        Sx::Neg(Box::new(a))
    }

    /// Every symbol with its role, each once, in first-appearance order.
    pub fn symbols(&self) -> Vec<(SymRole, String)> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let Sx::Sym(r, n) = e {
                if !out.iter().any(|(r2, n2)| r2 == r && n2 == n) {
                    out.push((*r, n.clone()));
                }
            }
        });
        out
    }

    /// The names of the hyperparameters it reads, each once, in first-appearance order.
    pub fn hypers(&self) -> Vec<String> {
        self.symbols()
            .into_iter()
            .filter(|(r, _)| *r == SymRole::Hyper)
            .map(|(_, n)| n)
            .collect()
    }

    /// Every literal number, in order (for checks of the model's constants' magnitudes).
    pub fn numbers(&self) -> Vec<f64> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let Sx::Num(v) = e {
                out.push(*v);
            }
        });
        out
    }

    /// Whether a symbol of this role occurs.
    pub fn has_role(&self, role: SymRole) -> bool {
        let mut found = false;
        self.visit(&mut |e| {
            if let Sx::Sym(r, _) = e {
                found |= *r == role;
            }
        });
        found
    }

    fn visit(&self, f: &mut dyn FnMut(&Sx)) {
        f(self);
        match self {
            Sx::Num(_) | Sx::Sym(..) => {}
            Sx::Neg(a) => a.visit(f),
            Sx::Add(a, b) | Sx::Sub(a, b) | Sx::Mul(a, b) | Sx::Div(a, b) | Sx::Pow(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Sx::Call(_, args) => args.iter().for_each(|a| a.visit(f)),
        }
    }

    /// Evaluate with a value for every symbol. Used by tests and by the data checks.
    pub fn eval(&self, env: &dyn Fn(SymRole, &str) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Sx::Num(v) => *v,
            Sx::Sym(r, n) => env(*r, n)?,
            Sx::Neg(a) => -a.eval(env)?,
            Sx::Add(a, b) => a.eval(env)? + b.eval(env)?,
            Sx::Sub(a, b) => a.eval(env)? - b.eval(env)?,
            Sx::Mul(a, b) => a.eval(env)? * b.eval(env)?,
            Sx::Div(a, b) => a.eval(env)? / b.eval(env)?,
            Sx::Pow(a, b) => a.eval(env)?.powf(b.eval(env)?),
            Sx::Call(f, args) => {
                let mut x = [0.0; 3];
                for (slot, a) in x.iter_mut().zip(args) {
                    *slot = a.eval(env)?;
                }
                f.apply_args(&x[..args.len()])
            }
        })
    }
}

impl SxFunc {
    /// The function at `x` — the one evaluation of every unary function, shared by the IR's
    /// evaluator, the recognizers' trees and the schedule's tapes (overflow-safe forms from
    /// `gpm-special`). `max` and `min` are binary: NaN here, each evaluator handles them.
    #[inline]
    pub fn apply(self, x: f64) -> f64 {
        match self {
            SxFunc::Exp => gpm_special::exp(x),
            SxFunc::Log => gpm_special::ln(x),
            SxFunc::Log1p => gpm_special::ln_1p(x),
            SxFunc::Sqrt => x.sqrt(),
            SxFunc::Abs => x.abs(),
            SxFunc::Cosh => x.cosh(),
            SxFunc::Sinh => x.sinh(),
            SxFunc::Tanh => x.tanh(),
            SxFunc::Logistic => gpm_special::logistic(x),
            SxFunc::Softplus => gpm_special::softplus(x),
            SxFunc::Lgamma => gpm_special::lgamma(x),
            SxFunc::Digamma => gpm_special::digamma(x),
            SxFunc::LogE1Scaled => gpm_special::log_e1_scaled(x),
            SxFunc::NormalCdf => gpm_special::normal_cdf(x),
            SxFunc::Max | SxFunc::Min | SxFunc::PoissonPowerMoment => f64::NAN,
        }
    }

    /// [`SxFunc::apply`] to every element of `v` in place, to the bit: the elementary
    /// functions a likelihood is made of as vectorised maps over the slice (a tape's chunk of
    /// observations), the others element by element.
    pub fn apply_in_place(self, v: &mut [f64]) {
        match self {
            SxFunc::Exp => gpm_special::exp_slice(v),
            SxFunc::Log => gpm_special::ln_slice(v),
            SxFunc::Log1p => gpm_special::ln_1p_slice(v),
            SxFunc::Logistic => gpm_special::logistic_slice(v),
            SxFunc::Softplus => gpm_special::softplus_slice(v),
            _ => v.iter_mut().for_each(|x| *x = self.apply(*x)),
        }
    }

    /// The function at its arguments, whatever its arity (the one evaluation of the binary and
    /// ternary functions, shared like [`SxFunc::apply`]); NaN for a wrong number of arguments.
    #[inline]
    pub fn apply_args(self, x: &[f64]) -> f64 {
        match (self, x) {
            (SxFunc::Max, [a, b]) => a.max(*b),
            (SxFunc::Min, [a, b]) => a.min(*b),
            (SxFunc::PoissonPowerMoment, [j, rate, b]) => {
                gpm_special::poisson_power_moment(*j, *rate, *b)
            }
            (unary, [a]) if unary.arity() == 1 => unary.apply(*a),
            _ => f64::NAN,
        }
    }
}

impl fmt::Display for Sx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sx::Num(v) => {
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    write!(f, "{}", *v as i64)
                } else {
                    write!(f, "{v}")
                }
            }
            Sx::Sym(_, n) => write!(f, "{n}"),
            Sx::Neg(a) => write!(f, "-({a})"),
            Sx::Add(a, b) => write!(f, "({a} + {b})"),
            Sx::Sub(a, b) => write!(f, "({a} - {b})"),
            Sx::Mul(a, b) => write!(f, "{a} * {b}"),
            Sx::Div(a, b) => write!(f, "{a} / ({b})"),
            Sx::Pow(a, b) => write!(f, "({a})^({b})"),
            Sx::Call(func, args) => {
                write!(f, "{}(", func.name())?;
                for (k, a) in args.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evaluator uses the shared overflow-safe σ: `log σ(−720)` is −720, where the naive
    /// `1/(1 + e^720)` gives `1/∞ = 0` and a log-density of −∞.
    #[test]
    fn logistic_does_not_overflow() {
        let e = Sx::call(SxFunc::Log, Sx::call(SxFunc::Logistic, Sx::Num(-720.0)));
        let v = e.eval(&|_, _| None).unwrap();
        assert!((v + 720.0).abs() < 1e-9, "{v}");
        let g = Sx::call(SxFunc::Lgamma, Sx::Num(0.1))
            .eval(&|_, _| None)
            .unwrap();
        assert!((g - 2.252_712_651_734_206).abs() < 1e-12);
    }
}

/// The symbol of column `column` (1-based, as written) of a data matrix: `X[,2]`. The one
/// place this spelling is made; [`parse_data_column`] is the one place it is read.
pub fn data_column_symbol(matrix: &str, column: usize) -> String {
    format!("{matrix}[,{column}]")
}

/// A data symbol split into its datum and, for a matrix column `X[,2]`, the 0-based column.
pub fn parse_data_column(symbol: &str) -> (&str, Option<usize>) {
    match symbol
        .strip_suffix(']')
        .and_then(|s| s.split_once("[,"))
        .and_then(|(base, col)| Some((base, col.parse::<usize>().ok()?)))
    {
        Some((base, c)) if c >= 1 => (base, Some(c - 1)),
        _ => (symbol, None),
    }
}

#[cfg(test)]
mod data_symbol_tests {
    use super::*;

    #[test]
    fn column_symbols_round_trip() {
        assert_eq!(
            parse_data_column(&data_column_symbol("X", 3)),
            ("X", Some(2))
        );
        assert_eq!(parse_data_column("y"), ("y", None));
        assert_eq!(parse_data_column("X[,0]"), ("X[,0]", None));
    }
}
