//! Stan's GP covariance functions (`gp_exp_quad_cov`, `gp_matern32_cov`, `gp_matern52_cov`,
//! `gp_exponential_cov`, `gp_periodic_cov`) entry by entry on the tape, for programs NUTS runs
//! on their whole log density (a GP in the Gaussian-latent class is `gpm-stan`'s kernel
//! recognition instead).

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::value::{Mat, Val};

/// A covariance of the distance `d` between two points: `k(d², α, ρ)` with partials.
type Profile = fn(&mut Tape, R, R, R) -> R;

/// The covariance functions, by name.
pub const COVARIANCES: &[(&str, crate::value::Builtin)] = &[
    ("gp_exp_quad_cov", |t, a| covariance(t, a, exp_quad)),
    ("gp_matern32_cov", |t, a| covariance(t, a, matern32)),
    ("gp_matern52_cov", |t, a| covariance(t, a, matern52)),
    ("gp_exponential_cov", |t, a| covariance(t, a, exponential)),
];

/// Points: an array of reals (1-D) or of vectors.
fn points(v: &Val) -> Eval<Vec<Vec<R>>> {
    match v {
        Val::Array(items) => Ok(items.iter().map(Val::flat).collect()),
        Val::Vector(x) | Val::RowVector(x) => Ok(x.iter().map(|&r| vec![r]).collect()),
        other => Err(EvalError::new(format!(
            "a GP covariance takes an array of points, not a {}",
            other.kind()
        ))),
    }
}

fn squared_distance(t: &mut Tape, a: &[R], b: &[R]) -> R {
    let d: Vec<R> = a.iter().zip(b).map(|(&x, &y)| t.sub(x, y)).collect();
    t.dot(&d, &d)
}

/// `(x, α, ρ)` or `(x1, x2, α, ρ)`.
fn covariance(t: &mut Tape, a: &[Val], k: Profile) -> Eval<Val> {
    let (x1, x2, alpha, rho) = match a {
        [x, al, r] => (points(x)?, None, al.real()?, r.real()?),
        [x, y, al, r] => (points(x)?, Some(points(y)?), al.real()?, r.real()?),
        _ => {
            return Err(EvalError::new(
                "a GP covariance takes (x, alpha, rho) or (x1, x2, alpha, rho)",
            ))
        }
    };
    let symmetric = x2.is_none();
    let x2 = x2.unwrap_or_else(|| x1.clone());
    let n = x1.len();
    let mut out = Mat::filled(n, x2.len(), R::c(0.0));
    for (j, xj) in x2.iter().enumerate() {
        for (i, xi) in x1.iter().enumerate() {
            if symmetric && i < j {
                out.data[i + j * n] = out.at(j, i);
                continue;
            }
            let d2 = squared_distance(t, xi, xj);
            out.data[i + j * n] = k(t, d2, alpha, rho);
        }
    }
    Ok(Val::Matrix(out))
}

/// `α² exp(−d²/(2ρ²))`
fn exp_quad(t: &mut Tape, d2: R, alpha: R, rho: R) -> R {
    let e = (-d2.v / (2.0 * rho.v * rho.v)).exp();
    let a2 = alpha.v * alpha.v;
    let v = a2 * e;
    t.node(
        v,
        &[
            (d2, -v / (2.0 * rho.v * rho.v)),
            (alpha, 2.0 * alpha.v * e),
            (rho, v * d2.v / (rho.v * rho.v * rho.v)),
        ],
    )
}

/// `α² f(r)` of `r = d/ρ` with `f` and `f'`; at `d = 0` the value is `α² f(0)` (the
/// derivative in `d` is taken as 0 there, as the distance's own is undefined).
fn radial(t: &mut Tape, d2: R, alpha: R, rho: R, f: fn(f64) -> (f64, f64)) -> R {
    let a2 = alpha.v * alpha.v;
    if d2.v <= 0.0 {
        let (f0, _) = f(0.0);
        return t.unary(alpha, a2 * f0, 2.0 * alpha.v * f0);
    }
    let d = d2.v.sqrt();
    let r = d / rho.v;
    let (fv, fd) = f(r);
    t.node(
        a2 * fv,
        &[
            // ∂/∂d² = α² f'(r) / (2 d ρ)
            (d2, a2 * fd / (2.0 * d * rho.v)),
            (alpha, 2.0 * alpha.v * fv),
            (rho, -a2 * fd * r / rho.v),
        ],
    )
}

fn matern32(t: &mut Tape, d2: R, alpha: R, rho: R) -> R {
    radial(t, d2, alpha, rho, |r| {
        let s = 3f64.sqrt() * r;
        ((1.0 + s) * (-s).exp(), -3.0 * r * (-s).exp())
    })
}

fn matern52(t: &mut Tape, d2: R, alpha: R, rho: R) -> R {
    radial(t, d2, alpha, rho, |r| {
        let s = 5f64.sqrt() * r;
        let e = (-s).exp();
        ((1.0 + s + s * s / 3.0) * e, -5.0 / 3.0 * r * (1.0 + s) * e)
    })
}

fn exponential(t: &mut Tape, d2: R, alpha: R, rho: R) -> R {
    radial(t, d2, alpha, rho, |r| ((-r).exp(), -(-r).exp()))
}
