//! The formulas a likelihood's density is written in: a small expression tree over the response
//! `y` and the likelihood's parameters, which `gpm-ir` turns into its own expressions (the CAS
//! and the recognizers read those) by putting each parameter's expression in its slot. The
//! library can evaluate a formula itself, so that every registered density is checked here
//! (it normalises; its robust power integral is the integral).

use std::ops::{Add, Div, Mul, Neg, Sub};

/// A function a formula may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `log x`.
    Log,
    /// `exp x`.
    Exp,
    /// `1 / (1 + e^{−x})`.
    Logistic,
    /// `log(1 + e^x)`.
    Softplus,
    /// `log Γ(x)`.
    Lgamma,
    /// `log(e^x E₁(x))`, the horseshoe's marginal kernel (`gpm_special::log_e1_scaled`).
    LogE1Scaled,
    /// `|x|`.
    Abs,
    /// `Σ_k k^j p_k(λ)^b` over the Poisson probabilities (`gpm_special::poisson_power_moment`),
    /// arguments `(j, λ, b)`: a count density's robust power integral.
    PoissonPowerMoment,
}

/// A formula in the response and the parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Formula {
    /// A constant.
    Num(f64),
    /// The response `y`.
    Y,
    /// The parameter at this position of [`super::Likelihood::params`].
    Param(usize),
    /// `a + b`.
    Add(Box<Formula>, Box<Formula>),
    /// `a − b`.
    Sub(Box<Formula>, Box<Formula>),
    /// `a · b`.
    Mul(Box<Formula>, Box<Formula>),
    /// `a / b`.
    Div(Box<Formula>, Box<Formula>),
    /// `a^b`.
    Pow(Box<Formula>, Box<Formula>),
    /// `−a`.
    Neg(Box<Formula>),
    /// A function call.
    Call(Func, Vec<Formula>),
}

/// The response `y`.
pub fn y() -> Formula {
    Formula::Y
}

/// Parameter `k`.
pub fn p(k: usize) -> Formula {
    Formula::Param(k)
}

/// A constant.
pub fn n(x: f64) -> Formula {
    Formula::Num(x)
}

impl Formula {
    fn call(self, f: Func) -> Formula {
        Formula::Call(f, vec![self])
    }
    /// `log self`.
    pub fn log(self) -> Formula {
        self.call(Func::Log)
    }
    /// `exp self`.
    pub fn exp(self) -> Formula {
        self.call(Func::Exp)
    }
    /// `logistic(self)`.
    pub fn logistic(self) -> Formula {
        self.call(Func::Logistic)
    }
    /// `softplus(self)`.
    pub fn softplus(self) -> Formula {
        self.call(Func::Softplus)
    }
    /// `log(e^x E₁(x))` at `self`.
    pub fn log_e1_scaled(self) -> Formula {
        self.call(Func::LogE1Scaled)
    }
    /// `lgamma(self)`.
    pub fn lgamma(self) -> Formula {
        self.call(Func::Lgamma)
    }
    /// `|self|`.
    pub fn abs(self) -> Formula {
        self.call(Func::Abs)
    }
    /// `self^e`.
    pub fn pow(self, e: Formula) -> Formula {
        Formula::Pow(Box::new(self), Box::new(e))
    }

    /// The value at response `y` and parameters `p` (NaN where a function is undefined).
    pub fn eval(&self, y: f64, p: &[f64]) -> f64 {
        let ev = |f: &Formula| f.eval(y, p);
        match self {
            Formula::Num(x) => *x,
            Formula::Y => y,
            Formula::Param(k) => p.get(*k).copied().unwrap_or(f64::NAN),
            Formula::Add(a, b) => ev(a) + ev(b),
            Formula::Sub(a, b) => ev(a) - ev(b),
            Formula::Mul(a, b) => ev(a) * ev(b),
            Formula::Div(a, b) => ev(a) / ev(b),
            Formula::Pow(a, b) => ev(a).powf(ev(b)),
            Formula::Neg(a) => -ev(a),
            Formula::Call(f, args) => {
                let v: Vec<f64> = args.iter().map(ev).collect();
                match (f, v.as_slice()) {
                    (Func::Log, [x]) => x.ln(),
                    (Func::Exp, [x]) => x.exp(),
                    (Func::Logistic, [x]) => gpm_special::logistic(*x),
                    (Func::Softplus, [x]) => gpm_special::softplus(*x),
                    (Func::Lgamma, [x]) => gpm_special::lgamma(*x),
                    (Func::LogE1Scaled, [x]) => gpm_special::log_e1_scaled(*x),
                    (Func::Abs, [x]) => x.abs(),
                    (Func::PoissonPowerMoment, [j, rate, b]) => {
                        gpm_special::poisson_power_moment(*j, *rate, *b)
                    }
                    _ => f64::NAN,
                }
            }
        }
    }
}

macro_rules! binary {
    ($($tr:ident $method:ident $variant:ident),*) => {$(
        impl $tr for Formula {
            type Output = Formula;
            fn $method(self, rhs: Formula) -> Formula {
                Formula::$variant(Box::new(self), Box::new(rhs))
            }
        }
    )*};
}

binary!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);

impl Neg for Formula {
    type Output = Formula;
    fn neg(self) -> Formula {
        Formula::Neg(Box::new(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_evaluate_as_written() {
        // (y − μ)² / σ + log Γ(3) − |−2| with μ = 1, σ = 4 at y = 3: 1 + log 2 − 2.
        let f = (y() - p(0)).pow(n(2.0)) / p(1) + n(3.0).lgamma() - (-n(2.0)).abs();
        assert!((f.eval(3.0, &[1.0, 4.0]) - (2f64.ln() - 1.0)).abs() < 1e-14);
        assert!(p(5).eval(0.0, &[1.0]).is_nan());
    }
}
