//! The CDFs a truncation `T[lo, hi]` or a `_lcdf` / `_lccdf` / `_cdf` call needs: one table of
//! differentiable ones (`log F` and `log(1 − F)` with their partials) and one of CDFs evaluated
//! at constant arguments only (statrs), where a parameter is an error rather than a wrong
//! gradient.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::lpdf::{vectorised, Scalar};
use crate::value::Val;
use gpm_special::{log_logistic, logistic};
use std::f64::consts::PI;

/// The CDF of a distribution, for `T[lo, hi]` and `_lcdf` / `_lccdf` / `_cdf` calls.
#[derive(Clone, Copy)]
pub struct Cdf {
    /// The distribution's Stan name.
    pub name: &'static str,
    /// Which function of it the call asks for.
    pub which: Which,
    lcdf: CdfImpl,
}

#[derive(Clone, Copy)]
enum CdfImpl {
    /// With partials.
    Differentiable(Scalar),
    /// At constant arguments only (statrs' CDF): `log F` and `log(1 − F)`.
    Constant(fn(&[f64]) -> Option<f64>),
}

impl std::fmt::Debug for Cdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_{:?}", self.name, self.which)
    }
}

/// `log F`, `log(1 − F)` or `F`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// `_lcdf`
    Lcdf,
    /// `_lccdf`
    Lccdf,
    /// `_cdf`
    Cdf,
}

/// `log F(y | θ)` and its partials, then `log(1 − F)`.
const CDFS: &[(&str, Scalar, Scalar)] = &[
    (
        "normal",
        |a| normal_lcdf((a[0] - a[1]) / a[2], a[2]),
        |a| {
            let (v, d) = normal_lcdf((a[1] - a[0]) / a[2], a[2]);
            (v, [-d[0], -d[1], d[2], 0.0])
        },
    ),
    (
        "std_normal",
        |a| normal_lcdf(a[0], 1.0),
        |a| {
            let (v, d) = normal_lcdf(-a[0], 1.0);
            (v, [-d[0], 0.0, 0.0, 0.0])
        },
    ),
    (
        "exponential",
        |a| {
            let (y, b) = (a[0], a[1]);
            if y <= 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            // log(1 − e^{−by})
            let e = (-b * y).exp();
            (
                (-(-b * y).exp_m1()).ln(),
                [b * e / (1.0 - e), y * e / (1.0 - e), 0.0, 0.0],
            )
        },
        |a| {
            let (y, b) = (a[0], a[1]);
            if y <= 0.0 {
                return (0.0, [0.0; 4]);
            }
            (-b * y, [-b, -y, 0.0, 0.0])
        },
    ),
    (
        "logistic",
        |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            let z = (y - m) / s;
            let w = logistic(-z);
            (log_logistic(z), [w / s, -w / s, -z * w / s, 0.0])
        },
        |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            let z = (y - m) / s;
            let w = logistic(z);
            (log_logistic(-z), [-w / s, w / s, z * w / s, 0.0])
        },
    ),
    (
        "cauchy",
        |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            let z = (y - m) / s;
            let f = 0.5 + z.atan() / PI;
            let g = 1.0 / (PI * (1.0 + z * z) * f);
            (f.ln(), [g / s, -g / s, -z * g / s, 0.0])
        },
        |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            let z = (y - m) / s;
            let f = 0.5 - z.atan() / PI;
            let g = -1.0 / (PI * (1.0 + z * z) * f);
            (f.ln(), [g / s, -g / s, -z * g / s, 0.0])
        },
    ),
];

/// CDFs gpmc evaluates at constant arguments only (no derivatives yet): `F(y | θ)` by statrs.
/// `F(y | θ)` at constant arguments.
type ConstantCdf = fn(&[f64]) -> Option<f64>;

const CONSTANT_CDFS: &[(&str, ConstantCdf)] = &[
    ("student_t", |a| {
        use statrs::distribution::{ContinuousCDF, StudentsT};
        StudentsT::new(a[2], a[3], a[1]).ok().map(|d| d.cdf(a[0]))
    }),
    ("gamma", |a| {
        use statrs::distribution::{ContinuousCDF, Gamma};
        Gamma::new(a[1], a[2]).ok().map(|d| d.cdf(a[0]))
    }),
    ("beta", |a| {
        use statrs::distribution::{Beta, ContinuousCDF};
        Beta::new(a[1], a[2]).ok().map(|d| d.cdf(a[0]))
    }),
    ("lognormal", |a| {
        use statrs::distribution::{ContinuousCDF, LogNormal};
        LogNormal::new(a[1], a[2]).ok().map(|d| d.cdf(a[0]))
    }),
    ("weibull", |a| {
        use statrs::distribution::{ContinuousCDF, Weibull};
        Weibull::new(a[1], a[2]).ok().map(|d| d.cdf(a[0]))
    }),
    ("poisson", |a| {
        use statrs::distribution::{DiscreteCDF, Poisson};
        Poisson::new(a[1]).ok().map(|d| d.cdf(a[0].max(0.0) as u64))
    }),
];

fn normal_lcdf(z: f64, s: f64) -> (f64, [f64; 4]) {
    let v = gpm_special::log_normal_cdf(z);
    // d log Φ(z)/dz = φ(z)/Φ(z), in log space for the far tail.
    let h = (gpm_special::log_normal_pdf(z) - v).exp();
    (v, [h / s, -h / s, -z * h / s, 0.0])
}

/// The CDF function `which` of a distribution, when gpmc has it.
pub fn cdf(name: &str, which: Which) -> Option<Cdf> {
    if let Some(&(name, l, c)) = CDFS.iter().find(|(n, _, _)| *n == name) {
        return Some(Cdf {
            name,
            which,
            lcdf: CdfImpl::Differentiable(if which == Which::Lccdf { c } else { l }),
        });
    }
    CONSTANT_CDFS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(name, f)| Cdf {
            name,
            which,
            lcdf: CdfImpl::Constant(f),
        })
}

/// The distributions with a CDF (for messages).
pub fn cdf_names() -> impl Iterator<Item = &'static str> {
    CDFS.iter()
        .map(|(n, _, _)| *n)
        .chain(CONSTANT_CDFS.iter().map(|(n, _)| *n))
}

/// `Σ log F(y | θ)` (or `log(1 − F)`, or `F` for one value), vectorised.
pub fn eval_cdf(c: Cdf, t: &mut Tape, args: &[Val]) -> Eval<R> {
    let arity = args.len();
    if !(1..=4).contains(&arity) {
        return Err(EvalError::new(format!(
            "`{}`'s CDF takes 1 to 4 arguments",
            c.name
        )));
    }
    let lp = match c.lcdf {
        CdfImpl::Differentiable(f) => vectorised(t, args, arity, f, c.name)?,
        CdfImpl::Constant(f) => constant_cdf(c, f, args)?,
    };
    Ok(if c.which == Which::Cdf { t.exp(lp) } else { lp })
}

fn constant_cdf(c: Cdf, f: fn(&[f64]) -> Option<f64>, args: &[Val]) -> Eval<R> {
    let flat: Vec<Vec<R>> = args.iter().map(Val::flat).collect();
    if flat.iter().flatten().any(|r| !r.is_constant()) {
        return Err(EvalError::new(format!(
            "the CDF of `{}` is evaluated at data and constants only (no derivative yet), and here an argument is a parameter",
            c.name
        )));
    }
    let n = flat.iter().map(Vec::len).max().unwrap_or(1);
    let mut total = 0.0;
    let mut x = [0.0; 4];
    for i in 0..n {
        for (k, v) in flat.iter().enumerate() {
            x[k] = v[if v.len() == 1 { 0 } else { i.min(v.len() - 1) }].v;
        }
        let p = f(&x[..args.len()]).ok_or_else(|| {
            EvalError::reject(format!(
                "the CDF of `{}` at arguments outside its range",
                c.name
            ))
        })?;
        total += if c.which == Which::Lccdf {
            (-p).ln_1p()
        } else {
            p.ln()
        };
    }
    Ok(R::c(total))
}

/// `log(F(hi) − F(lo))` of a truncation, the bounds optional; `args` are the distribution's
/// parameters (without the variate).
pub fn log_truncation_mass(
    c: Cdf,
    t: &mut Tape,
    lo: Option<R>,
    hi: Option<R>,
    params: &[Val],
) -> Eval<R> {
    let with = |y: R| {
        let mut a = vec![Val::Real(y)];
        a.extend(params.iter().cloned());
        a
    };
    let lower = cdf(c.name, Which::Lcdf).ok_or_else(|| EvalError::new("no CDF"))?;
    let upper = cdf(c.name, Which::Lccdf).ok_or_else(|| EvalError::new("no CDF"))?;
    match (lo, hi) {
        (None, None) => Ok(R::c(0.0)),
        (Some(l), None) => eval_cdf(upper, t, &with(l)),
        (None, Some(h)) => eval_cdf(lower, t, &with(h)),
        (Some(l), Some(h)) => {
            // log(F(h) − F(l)) = log F(h) + log1m_exp(log F(l) − log F(h))
            let fh = eval_cdf(lower, t, &with(h))?;
            let fl = eval_cdf(lower, t, &with(l))?;
            let d = t.sub(fl, fh);
            let e = d.v.exp();
            let w = t.unary(d, (-e).ln_1p(), -e / (1.0 - e));
            Ok(t.add(fh, w))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The differentiable CDFs' partials, both tails.
    #[test]
    fn every_cdf_has_the_partials_of_its_value() {
        for (name, l, c) in CDFS {
            for g in [l, c] {
                let x = match *name {
                    "std_normal" => vec![0.3],
                    "exponential" => vec![0.7, 1.3],
                    _ => vec![0.4, -0.2, 1.3],
                };
                let (_, d0) = g(&x);
                for k in 0..x.len() {
                    let h = 1e-6;
                    let (mut up, mut dn) = (x.clone(), x.clone());
                    up[k] += h;
                    dn[k] -= h;
                    let fd = (g(&up).0 - g(&dn).0) / (2.0 * h);
                    assert!(
                        (fd - d0[k]).abs() < 1e-5 * (1.0 + fd.abs()),
                        "{name} cdf: ∂/∂x{k} {} vs {fd}",
                        d0[k]
                    );
                }
            }
        }
    }
}
