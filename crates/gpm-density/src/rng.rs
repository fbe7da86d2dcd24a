//! Stan's `_rng` functions for `generated quantities` (and `transformed data`): one table,
//! vectorised as Stan vectorises them (a container argument gives an array of draws).

use crate::error::{Eval, EvalError};
use crate::value::Val;
use rand::{Rng, RngCore};
use rand_distr::{Beta, Binomial, Distribution, Gamma, Poisson, StandardNormal, StudentT};

/// A random-draw function bound at compile time.
#[derive(Clone, Copy)]
pub struct RngImpl {
    /// Its Stan name without `_rng`.
    pub name: &'static str,
    f: Draw,
}

impl std::fmt::Debug for RngImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_rng", self.name)
    }
}

/// One draw from the parameters; `is_int`: the draw is an integer.
type Scalar = fn(&mut dyn RngCore, &[f64]) -> Option<f64>;

#[derive(Clone, Copy)]
enum Draw {
    Scalar { arity: usize, int: bool, f: Scalar },
    Whole(fn(&mut dyn RngCore, &[Val]) -> Eval<Val>),
}

fn normal(r: &mut dyn RngCore) -> f64 {
    StandardNormal.sample(r)
}

fn gamma(r: &mut dyn RngCore, shape: f64, rate: f64) -> Option<f64> {
    Gamma::new(shape, 1.0 / rate).ok().map(|g| g.sample(r))
}

fn poisson(r: &mut dyn RngCore, rate: f64) -> Option<f64> {
    if rate == 0.0 {
        return Some(0.0);
    }
    Poisson::new(rate).ok().map(|p| p.sample(r))
}

fn binomial(r: &mut dyn RngCore, n: f64, p: f64) -> Option<f64> {
    if !(0.0..=1.0).contains(&p) || n < 0.0 {
        return None;
    }
    Binomial::new(n as u64, p).ok().map(|b| b.sample(r) as f64)
}

const DRAWS: &[(&str, Draw)] = &[
    (
        "normal",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| (a[1] > 0.0).then(|| a[0] + a[1] * normal(r)),
        },
    ),
    (
        "std_normal",
        Draw::Scalar {
            arity: 0,
            int: false,
            f: |r, _| Some(normal(r)),
        },
    ),
    (
        "lognormal",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| (a[1] > 0.0).then(|| (a[0] + a[1] * normal(r)).exp()),
        },
    ),
    (
        "student_t",
        Draw::Scalar {
            arity: 3,
            int: false,
            f: |r, a| StudentT::new(a[0]).ok().map(|t| a[1] + a[2] * t.sample(r)),
        },
    ),
    (
        "cauchy",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| Some(a[0] + a[1] * (std::f64::consts::PI * (r.gen::<f64>() - 0.5)).tan()),
        },
    ),
    (
        "double_exponential",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| {
                let u: f64 = r.gen::<f64>() - 0.5;
                Some(a[0] - a[1] * u.signum() * (1.0 - 2.0 * u.abs()).ln())
            },
        },
    ),
    (
        "logistic",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| {
                let u: f64 = r.gen();
                Some(a[0] + a[1] * (u / (1.0 - u)).ln())
            },
        },
    ),
    (
        "exponential",
        Draw::Scalar {
            arity: 1,
            int: false,
            f: |r, a| gamma(r, 1.0, a[0]),
        },
    ),
    (
        "gamma",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| gamma(r, a[0], a[1]),
        },
    ),
    (
        "inv_gamma",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| gamma(r, a[0], a[1]).map(|g| 1.0 / g),
        },
    ),
    (
        "beta",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| Beta::new(a[0], a[1]).ok().map(|b| b.sample(r)),
        },
    ),
    (
        "uniform",
        Draw::Scalar {
            arity: 2,
            int: false,
            f: |r, a| (a[1] > a[0]).then(|| a[0] + (a[1] - a[0]) * r.gen::<f64>()),
        },
    ),
    (
        "bernoulli",
        Draw::Scalar {
            arity: 1,
            int: true,
            f: |r, a| {
                (0.0..=1.0)
                    .contains(&a[0])
                    .then(|| f64::from(r.gen::<f64>() < a[0]))
            },
        },
    ),
    (
        "bernoulli_logit",
        Draw::Scalar {
            arity: 1,
            int: true,
            f: |r, a| Some(f64::from(r.gen::<f64>() < gpm_special::logistic(a[0]))),
        },
    ),
    (
        "binomial",
        Draw::Scalar {
            arity: 2,
            int: true,
            f: |r, a| binomial(r, a[0], a[1]),
        },
    ),
    (
        "binomial_logit",
        Draw::Scalar {
            arity: 2,
            int: true,
            f: |r, a| binomial(r, a[0], gpm_special::logistic(a[1])),
        },
    ),
    (
        "poisson",
        Draw::Scalar {
            arity: 1,
            int: true,
            f: |r, a| poisson(r, a[0]),
        },
    ),
    (
        "poisson_log",
        Draw::Scalar {
            arity: 1,
            int: true,
            f: |r, a| poisson(r, a[0].exp()),
        },
    ),
    (
        "neg_binomial_2",
        Draw::Scalar {
            arity: 2,
            int: true,
            f: |r, a| gamma(r, a[1], a[1] / a[0]).and_then(|l| poisson(r, l)),
        },
    ),
    (
        "neg_binomial_2_log",
        Draw::Scalar {
            arity: 2,
            int: true,
            f: |r, a| gamma(r, a[1], a[1] / a[0].exp()).and_then(|l| poisson(r, l)),
        },
    ),
    ("categorical", Draw::Whole(|r, a| categorical(r, a, false))),
    (
        "categorical_logit",
        Draw::Whole(|r, a| categorical(r, a, true)),
    ),
];

/// A draw function by its Stan name without `_rng`.
pub fn lookup(name: &str) -> Option<RngImpl> {
    DRAWS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(name, f)| RngImpl { name, f })
}

/// The names of every draw function (for messages).
pub fn names() -> impl Iterator<Item = &'static str> {
    DRAWS.iter().map(|(n, _)| *n)
}

/// Draw: a scalar, or an array of draws when an argument is a container.
pub fn draw(d: RngImpl, r: &mut dyn RngCore, args: &[Val]) -> Eval<Val> {
    let (arity, int, f) = match d.f {
        Draw::Whole(f) => return f(r, args),
        Draw::Scalar { arity, int, f } => (arity, int, f),
    };
    if args.len() != arity {
        return Err(EvalError::new(format!(
            "`{}_rng` takes {arity} arguments, not {}",
            d.name,
            args.len()
        )));
    }
    let flat: Vec<Vec<f64>> = args
        .iter()
        .map(|v| v.flat().iter().map(|x| x.v).collect())
        .collect();
    let vectorised = args.iter().any(|a| !a.is_scalar());
    let n = flat.iter().map(Vec::len).max().unwrap_or(1);
    let mut out = Vec::with_capacity(n);
    let mut x = [0.0; 4];
    for i in 0..n {
        for (k, v) in flat.iter().enumerate() {
            x[k] = *v.get(if v.len() == 1 { 0 } else { i }).ok_or_else(|| {
                EvalError::new(format!("`{}_rng`'s arguments differ in size", d.name))
            })?;
        }
        let y = f(r, &x[..arity]).ok_or_else(|| {
            EvalError::new(format!(
                "`{}_rng` at parameters outside their range ({})",
                d.name,
                x[..arity]
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        out.push(if int {
            Val::Int(y as i64)
        } else {
            Val::Real(crate::ad::R::c(y))
        });
    }
    Ok(if vectorised {
        Val::Array(out)
    } else {
        out.pop().unwrap_or(Val::Int(0))
    })
}

fn categorical(r: &mut dyn RngCore, a: &[Val], logit: bool) -> Eval<Val> {
    let [theta] = a else {
        return Err(EvalError::new("categorical_rng takes one vector"));
    };
    let mut p: Vec<f64> = theta.flat().iter().map(|x| x.v).collect();
    if logit {
        let m = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        p.iter_mut().for_each(|x| *x = (*x - m).exp());
    }
    let total: f64 = p.iter().sum();
    if total.is_nan() || total <= 0.0 || p.iter().any(|x| *x < 0.0) {
        return Err(EvalError::new(
            "categorical_rng: the probabilities are not a simplex",
        ));
    }
    let mut u = r.gen::<f64>() * total;
    for (k, x) in p.iter().enumerate() {
        if u < *x {
            return Ok(Val::Int(k as i64 + 1));
        }
        u -= x;
    }
    Ok(Val::Int(p.len() as i64))
}
