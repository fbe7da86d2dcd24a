//! The library: distributions (lowered here to log-density expressions, so that later stages see
//! formulas, never names), kernels and scalar math functions.

use crate::sx::{Sx, SxFunc};
use serde::Serialize;

/// What values a likelihood's response takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    /// Any real.
    Real,
    /// Binary labels, `{0, 1}` or `{-1, 1}` (declared with `in {...}`).
    Binary,
    /// Non-negative integers.
    Count,
    /// Class labels `1..C`.
    Category,
}

/// A likelihood distribution of the library.
pub struct Distribution {
    /// Name as written.
    pub name: &'static str,
    /// Parameter names, in order.
    pub params: &'static [&'static str],
    /// What `y` must be.
    pub response: ResponseKind,
    /// Formula shown in docs and `gpmc check`.
    pub formula: &'static str,
}

/// The most classes a logistic-softmax likelihood takes (each class is a predictor, certified
/// and lowered one by one: about 17 ms each).
pub const MAX_CLASSES: usize = 1000;

/// All likelihood distributions.
pub const DISTRIBUTIONS: &[Distribution] = &[
    Distribution {
        name: "normal",
        params: &["mu", "sigma"],
        response: ResponseKind::Real,
        formula: "-log(sigma) - log(2 pi)/2 - ((y - mu)/sigma)^2 / 2",
    },
    Distribution {
        name: "student_t",
        params: &["nu", "mu", "sigma"],
        response: ResponseKind::Real,
        formula: "lgamma((nu+1)/2) - lgamma(nu/2) - log(nu pi)/2 - log(sigma) - (nu+1)/2 log(1 + ((y-mu)/sigma)^2/nu)",
    },
    Distribution {
        name: "laplace",
        params: &["mu", "b"],
        response: ResponseKind::Real,
        formula: "-log(2 b) - abs(y - mu)/b",
    },
    Distribution {
        name: "logistic",
        params: &["mu", "s"],
        response: ResponseKind::Real,
        formula: "-log(s) - z - 2 softplus(-z),  z = (y - mu)/s",
    },
    Distribution {
        name: "bernoulli_logit",
        params: &["eta"],
        response: ResponseKind::Binary,
        formula: "y log logistic(eta) + (1-y) log logistic(-eta)  (labels {0,1});  log logistic(y eta)  (labels {-1,1})",
    },
    Distribution {
        name: "binomial_logit",
        params: &["n", "eta"],
        response: ResponseKind::Count,
        formula: "log C(n, y) + y log logistic(eta) + (n-y) log logistic(-eta)",
    },
    Distribution {
        name: "poisson",
        params: &["rate"],
        response: ResponseKind::Count,
        formula: "y log(rate) - rate - lgamma(y+1)",
    },
    Distribution {
        name: "neg_binomial_logit",
        params: &["r", "eta"],
        response: ResponseKind::Count,
        formula: "lgamma(y+r) - lgamma(r) - lgamma(y+1) + y log logistic(eta) + r log logistic(-eta)",
    },
    Distribution {
        name: "categorical_logistic_softmax",
        params: &["F"],
        response: ResponseKind::Category,
        formula: "log logistic(F[y]) - log sum_c logistic(F[c])",
    },
];

/// A library distribution a response can be drawn from, resolved once from its name. Binary
/// labels carry the declared label set (`{0, 1}` or `{-1, 1}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Family {
    Normal,
    StudentT,
    Laplace,
    Logistic,
    /// Labels: the value drawn for "success" and for "failure".
    BernoulliLogit {
        one: i64,
        zero: i64,
    },
    BinomialLogit,
    Poisson,
    NegBinomialLogit,
}

impl Family {
    /// The family of a library distribution (not the structural categorical one).
    pub fn of(name: &str, labels: Option<&[i64]>) -> Option<Family> {
        Some(match name {
            "normal" => Family::Normal,
            "student_t" => Family::StudentT,
            "laplace" => Family::Laplace,
            "logistic" => Family::Logistic,
            "bernoulli_logit" => Family::BernoulliLogit {
                one: 1,
                zero: if labels.is_some_and(|l| l.contains(&-1)) {
                    -1
                } else {
                    0
                },
            },
            "binomial_logit" => Family::BinomialLogit,
            "poisson" => Family::Poisson,
            "neg_binomial_logit" => Family::NegBinomialLogit,
            _ => return None,
        })
    }
}

/// Look a distribution up by name.
pub fn distribution(name: &str) -> Option<&'static Distribution> {
    DISTRIBUTIONS.iter().find(|d| d.name == name)
}

/// Kernel names with (min, max) number of arguments.
pub const KERNELS: &[(&str, usize, usize)] = &[
    ("sqexp", 1, 1),
    ("rbf", 1, 1),
    ("matern12", 1, 1),
    ("matern32", 1, 1),
    ("matern52", 1, 1),
    ("linear", 0, 1),
    ("periodic", 2, 2),
    ("constant", 0, 0),
    ("white", 0, 0),
];

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
pub(crate) fn logistic(x: Sx) -> Sx {
    Sx::call(SxFunc::Logistic, x)
}
pub(crate) fn lgamma(x: Sx) -> Sx {
    Sx::call(SxFunc::Lgamma, x)
}
pub(crate) fn n(v: f64) -> Sx {
    Sx::num(v)
}

/// The log-density of a library distribution at response `y` with parameters `p` (in the order
/// of [`Distribution::params`]). `labels` is the declared label set for binary responses.
/// The categorical distribution is structural and lowered by the caller.
pub fn log_density(name: &str, y: Sx, mut p: Vec<Sx>, labels: Option<&[i64]>) -> Sx {
    let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    match name {
        "normal" => {
            let (mu, sigma) = (p.remove(0), p.remove(0));
            let z = Sx::div(Sx::sub(y, mu), sigma.clone());
            Sx::sub(
                Sx::sub(Sx::neg(log(sigma)), n(half_log_2pi)),
                Sx::div(Sx::pow(z, n(2.0)), n(2.0)),
            )
        }
        "student_t" => {
            let (nu, mu, sigma) = (p.remove(0), p.remove(0), p.remove(0));
            let z = Sx::div(Sx::sub(y, mu), sigma.clone());
            let nu1 = Sx::div(Sx::add(nu.clone(), n(1.0)), n(2.0));
            let norm = Sx::sub(
                Sx::sub(
                    Sx::sub(lgamma(nu1.clone()), lgamma(Sx::div(nu.clone(), n(2.0)))),
                    Sx::div(log(Sx::mul(nu.clone(), n(std::f64::consts::PI))), n(2.0)),
                ),
                log(sigma),
            );
            let kernel = Sx::mul(nu1, log(Sx::add(n(1.0), Sx::div(Sx::pow(z, n(2.0)), nu))));
            Sx::sub(norm, kernel)
        }
        "laplace" => {
            let (mu, b) = (p.remove(0), p.remove(0));
            Sx::sub(
                Sx::neg(log(Sx::mul(n(2.0), b.clone()))),
                Sx::div(Sx::call(SxFunc::Abs, Sx::sub(y, mu)), b),
            )
        }
        "logistic" => {
            let (mu, s) = (p.remove(0), p.remove(0));
            let z = Sx::div(Sx::sub(y, mu), s.clone());
            Sx::sub(
                Sx::sub(Sx::neg(log(s)), z.clone()),
                Sx::mul(n(2.0), Sx::call(SxFunc::Softplus, Sx::neg(z))),
            )
        }
        "bernoulli_logit" => {
            let eta = p.remove(0);
            if labels.is_some_and(|l| l.contains(&-1)) {
                // Labels ±1: p(y | η) = σ(y η).
                log(logistic(Sx::mul(y, eta)))
            } else {
                Sx::add(
                    Sx::mul(y.clone(), log(logistic(eta.clone()))),
                    Sx::mul(Sx::sub(n(1.0), y), log(logistic(Sx::neg(eta)))),
                )
            }
        }
        "binomial_logit" => {
            let (trials, eta) = (p.remove(0), p.remove(0));
            let choose = Sx::sub(
                Sx::sub(
                    lgamma(Sx::add(trials.clone(), n(1.0))),
                    lgamma(Sx::add(y.clone(), n(1.0))),
                ),
                lgamma(Sx::add(Sx::sub(trials.clone(), y.clone()), n(1.0))),
            );
            Sx::add(
                choose,
                Sx::add(
                    Sx::mul(y.clone(), log(logistic(eta.clone()))),
                    Sx::mul(Sx::sub(trials, y), log(logistic(Sx::neg(eta)))),
                ),
            )
        }
        "poisson" => {
            let rate = p.remove(0);
            Sx::sub(
                Sx::sub(Sx::mul(y.clone(), log(rate.clone())), rate),
                lgamma(Sx::add(y, n(1.0))),
            )
        }
        "neg_binomial_logit" => {
            let (r, eta) = (p.remove(0), p.remove(0));
            let norm = Sx::sub(
                Sx::sub(lgamma(Sx::add(y.clone(), r.clone())), lgamma(r.clone())),
                lgamma(Sx::add(y.clone(), n(1.0))),
            );
            Sx::add(
                norm,
                Sx::add(
                    Sx::mul(y, log(logistic(eta.clone()))),
                    Sx::mul(r, log(logistic(Sx::neg(eta)))),
                ),
            )
        }
        other => unreachable!("log_density called for structural distribution {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sx::SymRole;

    fn eval_at(e: &Sx, y: f64) -> f64 {
        e.eval(&|_, name| match name {
            "y" => Some(y),
            _ => None,
        })
        .unwrap()
    }

    /// Every real-valued library density integrates to one: its normalising constant is right.
    #[test]
    fn real_densities_integrate_to_one() {
        let y = Sx::sym(SymRole::Data, "y");
        let cases = vec![
            log_density("normal", y.clone(), vec![n(0.3), n(1.7)], None),
            log_density("student_t", y.clone(), vec![n(3.5), n(-0.2), n(0.8)], None),
            log_density("laplace", y.clone(), vec![n(0.5), n(1.3)], None),
            log_density("logistic", y.clone(), vec![n(0.1), n(0.6)], None),
        ];
        for c in cases {
            // Trapezoid rule on a wide grid; tails beyond ±400 are negligible for all four.
            let (a, b, m) = (-400.0, 400.0, 800_000);
            let h = (b - a) / m as f64;
            let mut s = 0.0;
            for k in 0..=m {
                let w = if k == 0 || k == m { 0.5 } else { 1.0 };
                s += w * eval_at(&c, a + k as f64 * h).exp();
            }
            assert!((s * h - 1.0).abs() < 2e-4, "{c}: integral {}", s * h);
        }
    }

    /// Discrete densities sum to one.
    #[test]
    fn count_densities_sum_to_one() {
        let y = Sx::sym(SymRole::Data, "y");
        // (density, largest value of the support to sum to)
        let cases = vec![
            (log_density("poisson", y.clone(), vec![n(3.2)], None), 400),
            (
                log_density("neg_binomial_logit", y.clone(), vec![n(2.5), n(0.7)], None),
                400,
            ),
            (
                log_density("binomial_logit", y.clone(), vec![n(7.0), n(-0.4)], None),
                7,
            ),
        ];
        for (c, top) in cases {
            let s: f64 = (0..=top).map(|k| eval_at(&c, k as f64).exp()).sum();
            assert!((s - 1.0).abs() < 1e-10, "{c}: sum {s}");
        }
        let b01 = log_density("bernoulli_logit", y.clone(), vec![n(0.9)], Some(&[0, 1]));
        let s = eval_at(&b01, 0.0).exp() + eval_at(&b01, 1.0).exp();
        assert!((s - 1.0).abs() < 1e-14);
        let bpm = log_density("bernoulli_logit", y, vec![n(0.9)], Some(&[-1, 1]));
        let s = eval_at(&bpm, -1.0).exp() + eval_at(&bpm, 1.0).exp();
        assert!((s - 1.0).abs() < 1e-14);
    }
}
