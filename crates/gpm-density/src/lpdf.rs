//! Stan's densities and mass functions with every normalising constant, vectorised as Stan
//! vectorises them (each argument a scalar or a container of one common size), their
//! derivatives on the tape; and the CDFs a truncation or a `_lcdf` call needs. One table:
//! a density is one entry.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::functions::log_sum_exp;
use crate::value::{Mat, Val};
use gpm_special::{digamma as psi, lgamma, log_logistic, logistic};
use std::f64::consts::{LN_2, PI};

pub(crate) const HALF_LOG_TWO_PI: f64 = 0.918_938_533_204_672_8;

/// A density bound at compile time: `args[0]` is the variate.
#[derive(Clone, Copy)]
pub struct DistImpl {
    /// Its Stan name (`normal`).
    pub name: &'static str,
    f: Density,
}

impl std::fmt::Debug for DistImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

/// A scalar log density: the variate and parameters in, the value and its partials out
/// (NaN where a parameter is outside its range: the point is rejected).
pub(crate) type Scalar = fn(&[f64]) -> (f64, [f64; 4]);

#[derive(Clone, Copy)]
enum Density {
    /// Vectorised over its arguments, which number `arity` with the variate.
    Scalar(usize, Scalar),
    /// A multivariate density on whole values.
    Whole(fn(&mut Tape, &[Val]) -> Eval<R>),
}

const DENSITIES: &[(&str, Density)] = &[
    ("normal", Density::Scalar(3, normal)),
    (
        "std_normal",
        Density::Scalar(1, |a| {
            let (v, d) = normal(&[a[0], 0.0, 1.0]);
            (v, [d[0], 0.0, 0.0, 0.0])
        }),
    ),
    ("student_t", Density::Scalar(4, student_t)),
    (
        "cauchy",
        Density::Scalar(3, |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            let z = (y - m) / s;
            let q = 1.0 + z * z;
            let dy = -2.0 * z / (s * q);
            (
                nan_unless(s > 0.0, -PI.ln() - s.ln() - q.ln()),
                [dy, -dy, -1.0 / s + 2.0 * z * z / (s * q), 0.0],
            )
        }),
    ),
    (
        "double_exponential",
        Density::Scalar(3, |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            let dy = -(y - m).signum() / s;
            (
                nan_unless(s > 0.0, -LN_2 - s.ln() - (y - m).abs() / s),
                [dy, -dy, -1.0 / s + (y - m).abs() / (s * s), 0.0],
            )
        }),
    ),
    (
        "logistic",
        Density::Scalar(3, |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            let z = (y - m) / s;
            let dz = -1.0 + 2.0 * logistic(-z);
            (
                nan_unless(s > 0.0, -z - s.ln() + 2.0 * log_logistic(z)),
                [dz / s, -dz / s, -1.0 / s - z * dz / s, 0.0],
            )
        }),
    ),
    (
        "lognormal",
        Density::Scalar(3, |a| {
            let (y, m, s) = (a[0], a[1], a[2]);
            if y <= 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let z = (y.ln() - m) / s;
            (
                nan_unless(s > 0.0, -0.5 * z * z - s.ln() - HALF_LOG_TWO_PI - y.ln()),
                [(-z / s - 1.0) / y, z / s, (z * z - 1.0) / s, 0.0],
            )
        }),
    ),
    (
        "exponential",
        Density::Scalar(2, |a| {
            let (y, b) = (a[0], a[1]);
            if y < 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            (
                nan_unless(b > 0.0, b.ln() - b * y),
                [-b, 1.0 / b - y, 0.0, 0.0],
            )
        }),
    ),
    (
        "gamma",
        Density::Scalar(3, |a| {
            let (y, al, b) = (a[0], a[1], a[2]);
            if y <= 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let v = al * b.ln() - lgamma(al) + (al - 1.0) * y.ln() - b * y;
            (
                nan_unless(al > 0.0 && b > 0.0, v),
                [
                    (al - 1.0) / y - b,
                    b.ln() - psi(al) + y.ln(),
                    al / b - y,
                    0.0,
                ],
            )
        }),
    ),
    (
        "inv_gamma",
        Density::Scalar(3, |a| {
            let (y, al, b) = (a[0], a[1], a[2]);
            if y <= 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let v = al * b.ln() - lgamma(al) - (al + 1.0) * y.ln() - b / y;
            (
                nan_unless(al > 0.0 && b > 0.0, v),
                [
                    -(al + 1.0) / y + b / (y * y),
                    b.ln() - psi(al) - y.ln(),
                    al / b - 1.0 / y,
                    0.0,
                ],
            )
        }),
    ),
    (
        "beta",
        Density::Scalar(3, |a| {
            let (y, p, q) = (a[0], a[1], a[2]);
            if !(0.0..=1.0).contains(&y) {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let v = (p - 1.0) * y.ln() + (q - 1.0) * (-y).ln_1p()
                - (lgamma(p) + lgamma(q) - lgamma(p + q));
            let s = psi(p + q);
            (
                nan_unless(p > 0.0 && q > 0.0, v),
                [
                    (p - 1.0) / y - (q - 1.0) / (1.0 - y),
                    y.ln() - psi(p) + s,
                    (-y).ln_1p() - psi(q) + s,
                    0.0,
                ],
            )
        }),
    ),
    (
        "uniform",
        Density::Scalar(3, |a| {
            let (y, lo, hi) = (a[0], a[1], a[2]);
            if y < lo || y > hi {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let w = hi - lo;
            (nan_unless(w > 0.0, -w.ln()), [0.0, 1.0 / w, -1.0 / w, 0.0])
        }),
    ),
    (
        "weibull",
        Density::Scalar(3, |a| {
            let (y, k, s) = (a[0], a[1], a[2]);
            if y < 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let l = (y / s).ln();
            let r = (k * l).exp();
            let v = k.ln() - s.ln() + (k - 1.0) * l - r;
            (
                nan_unless(k > 0.0 && s > 0.0, v),
                [
                    (k - 1.0) / y - k * r / y,
                    1.0 / k + l - r * l,
                    -k / s + k * r / s,
                    0.0,
                ],
            )
        }),
    ),
    (
        "gumbel",
        Density::Scalar(3, |a| {
            let (y, m, b) = (a[0], a[1], a[2]);
            let z = (y - m) / b;
            let dz = -1.0 + (-z).exp();
            (
                nan_unless(b > 0.0, -b.ln() - z - (-z).exp()),
                [dz / b, -dz / b, -1.0 / b - z * dz / b, 0.0],
            )
        }),
    ),
    (
        "chi_square",
        Density::Scalar(2, |a| {
            let (y, nu) = (a[0], a[1]);
            if y <= 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let v = (nu / 2.0 - 1.0) * y.ln() - y / 2.0 - nu / 2.0 * LN_2 - lgamma(nu / 2.0);
            (
                nan_unless(nu > 0.0, v),
                [
                    (nu / 2.0 - 1.0) / y - 0.5,
                    0.5 * y.ln() - 0.5 * LN_2 - 0.5 * psi(nu / 2.0),
                    0.0,
                    0.0,
                ],
            )
        }),
    ),
    (
        "inv_chi_square",
        Density::Scalar(2, |a| {
            let (y, nu) = (a[0], a[1]);
            if y <= 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let v = -nu / 2.0 * LN_2 - lgamma(nu / 2.0) - (nu / 2.0 + 1.0) * y.ln() - 0.5 / y;
            (
                nan_unless(nu > 0.0, v),
                [
                    -(nu / 2.0 + 1.0) / y + 0.5 / (y * y),
                    -0.5 * LN_2 - 0.5 * psi(nu / 2.0) - 0.5 * y.ln(),
                    0.0,
                    0.0,
                ],
            )
        }),
    ),
    (
        "scaled_inv_chi_square",
        Density::Scalar(3, |a| {
            let (y, nu, s) = (a[0], a[1], a[2]);
            if y <= 0.0 {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let h = nu / 2.0;
            let v =
                h * h.ln() - lgamma(h) + nu * s.ln() - (h + 1.0) * y.ln() - nu * s * s / (2.0 * y);
            let dy = -(h + 1.0) / y + nu * s * s / (2.0 * y * y);
            let dnu = 0.5 * h.ln() + 0.5 - 0.5 * psi(h) + s.ln() - 0.5 * y.ln() - s * s / (2.0 * y);
            (
                nan_unless(nu > 0.0 && s > 0.0, v),
                [dy, dnu, nu / s - nu * s / y, 0.0],
            )
        }),
    ),
    (
        "pareto",
        Density::Scalar(3, |a| {
            let (y, m, al) = (a[0], a[1], a[2]);
            if y < m {
                return (f64::NEG_INFINITY, [0.0; 4]);
            }
            let v = al.ln() + al * m.ln() - (al + 1.0) * y.ln();
            (
                nan_unless(m > 0.0 && al > 0.0, v),
                [-(al + 1.0) / y, al / m, 1.0 / al + m.ln() - y.ln(), 0.0],
            )
        }),
    ),
    (
        "bernoulli",
        Density::Scalar(2, |a| {
            let (n, th) = (a[0], a[1]);
            let v = if n == 1.0 { th.ln() } else { (-th).ln_1p() };
            (
                nan_unless((0.0..=1.0).contains(&th) && (n == 0.0 || n == 1.0), v),
                [
                    0.0,
                    if n == 1.0 {
                        1.0 / th
                    } else {
                        -1.0 / (1.0 - th)
                    },
                    0.0,
                    0.0,
                ],
            )
        }),
    ),
    (
        "bernoulli_logit",
        Density::Scalar(2, |a| {
            let (n, al) = (a[0], a[1]);
            let v = if n == 1.0 {
                log_logistic(al)
            } else {
                log_logistic(-al)
            };
            (
                nan_unless(n == 0.0 || n == 1.0, v),
                [0.0, n - logistic(al), 0.0, 0.0],
            )
        }),
    ),
    (
        "binomial",
        Density::Scalar(3, |a| {
            let (n, big, th) = (a[0], a[1], a[2]);
            let v = lchoose(big, n) + xlogy(n, th) + xlogy(big - n, 1.0 - th);
            (
                nan_unless((0.0..=1.0).contains(&th) && n >= 0.0 && n <= big, v),
                [0.0, 0.0, n / th - (big - n) / (1.0 - th), 0.0],
            )
        }),
    ),
    (
        "binomial_logit",
        Density::Scalar(3, |a| {
            let (n, big, al) = (a[0], a[1], a[2]);
            let v = lchoose(big, n) + n * log_logistic(al) + (big - n) * log_logistic(-al);
            (
                nan_unless(n >= 0.0 && n <= big, v),
                [0.0, 0.0, n - big * logistic(al), 0.0],
            )
        }),
    ),
    (
        "poisson",
        Density::Scalar(2, |a| {
            let (n, l) = (a[0], a[1]);
            (
                nan_unless(l >= 0.0 && n >= 0.0, xlogy(n, l) - l - lgamma(n + 1.0)),
                [0.0, n / l - 1.0, 0.0, 0.0],
            )
        }),
    ),
    (
        "poisson_log",
        Density::Scalar(2, |a| {
            let (n, al) = (a[0], a[1]);
            (
                nan_unless(n >= 0.0, n * al - al.exp() - lgamma(n + 1.0)),
                [0.0, n - al.exp(), 0.0, 0.0],
            )
        }),
    ),
    (
        "neg_binomial_2",
        Density::Scalar(3, |a| {
            let (v, dmu, dphi) = nb2(a[0], a[1], a[2]);
            (v, [0.0, dmu, dphi, 0.0])
        }),
    ),
    (
        "neg_binomial_2_log",
        Density::Scalar(3, |a| {
            let mu = a[1].exp();
            let (v, dmu, dphi) = nb2(a[0], mu, a[2]);
            (v, [0.0, dmu * mu, dphi, 0.0])
        }),
    ),
    (
        "neg_binomial",
        Density::Scalar(3, |a| {
            let (n, al, b) = (a[0], a[1], a[2]);
            let v = lgamma(n + al) - lgamma(n + 1.0) - lgamma(al) + al * (b / (1.0 + b)).ln()
                - n * b.ln_1p();
            let da = psi(n + al) - psi(al) + (b / (1.0 + b)).ln();
            let db = al / (b * (1.0 + b)) - n / (1.0 + b);
            (
                nan_unless(al > 0.0 && b > 0.0 && n >= 0.0, v),
                [0.0, da, db, 0.0],
            )
        }),
    ),
    (
        "beta_binomial",
        Density::Scalar(4, |a| {
            let (n, big, p, q) = (a[0], a[1], a[2], a[3]);
            let lb = |x: f64, y: f64| lgamma(x) + lgamma(y) - lgamma(x + y);
            let v = lchoose(big, n) + lb(n + p, big - n + q) - lb(p, q);
            let s = psi(big + p + q) - psi(p + q);
            (
                nan_unless(p > 0.0 && q > 0.0 && n >= 0.0 && n <= big, v),
                [
                    0.0,
                    0.0,
                    psi(n + p) - psi(p) - s,
                    psi(big - n + q) - psi(q) - s,
                ],
            )
        }),
    ),
    (
        "categorical",
        Density::Whole(|t, a| categorical(t, a, false)),
    ),
    (
        "categorical_logit",
        Density::Whole(|t, a| categorical(t, a, true)),
    ),
    ("ordered_logistic", Density::Whole(ordered_logistic)),
    (
        "multi_normal",
        Density::Whole(|t, a| multi_normal(t, a, false)),
    ),
    (
        "multi_normal_cholesky",
        Density::Whole(|t, a| multi_normal(t, a, true)),
    ),
    ("dirichlet", Density::Whole(dirichlet)),
    ("lkj_corr_cholesky", Density::Whole(lkj_corr_cholesky)),
    (
        "bernoulli_logit_glm",
        Density::Whole(|t, a| glm(t, a, "bernoulli_logit")),
    ),
    (
        "poisson_log_glm",
        Density::Whole(|t, a| glm(t, a, "poisson_log")),
    ),
    ("normal_id_glm", Density::Whole(|t, a| glm(t, a, "normal"))),
];

/// `family_glm(y | x, α, β[, σ])` = `family(y | α + x β[, σ])` (Stan's GLM densities).
fn glm(t: &mut Tape, a: &[Val], family: &str) -> Eval<R> {
    match a {
        [y, x, alpha, beta, rest @ ..] => glm_parts(t, family, [y, x, alpha, beta], rest),
        _ => Err(EvalError::new(format!(
            "`{family}_glm` takes (y | x, alpha, beta...)"
        ))),
    }
}

/// The family of a GLM density (`normal` for `normal_id_glm`), for the interpreter to pass
/// a design matrix of data by reference ([`glm_parts`]) rather than copy it per gradient.
pub fn glm_family(d: DistImpl) -> Option<&'static str> {
    match d.name {
        "normal_id_glm" => Some("normal"),
        "bernoulli_logit_glm" => Some("bernoulli_logit"),
        "poisson_log_glm" => Some("poisson_log"),
        _ => None,
    }
}

/// A GLM density from its parts `[y, x, α, β]` and the family's other arguments.
pub fn glm_parts(
    t: &mut Tape,
    family: &str,
    [y, x, alpha, beta]: [&Val; 4],
    rest: &[Val],
) -> Eval<R> {
    let d = lookup(family).ok_or_else(|| EvalError::new(format!("no `{family}`")))?;
    // A design matrix of data (the common case): one fused node (glm.rs says why).
    if let (Val::Matrix(xm), Density::Scalar(arity, f)) = (x, d.f) {
        let name = format!("{family}_glm");
        if let Some(r) = crate::glm::fused(t, y, xm, alpha, beta, rest, f, arity, &name)? {
            return Ok(r);
        }
    }
    let xb = crate::ops::binary(t, gpm_stan::ast::BinOp::Mul, x, beta)?;
    let eta = crate::ops::binary(t, gpm_stan::ast::BinOp::Add, &xb, alpha)?;
    let mut args = vec![y.clone(), eta];
    args.extend(rest.iter().cloned());
    log_density(d, t, &args)
}

/// A density by its Stan name (`normal`, from `~ normal`, `normal_lpdf`, `normal_lupdf`).
pub fn lookup(name: &str) -> Option<DistImpl> {
    DENSITIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(name, f)| DistImpl { name, f })
}

/// The names of every density (for "did you mean").
pub fn names() -> impl Iterator<Item = &'static str> {
    DENSITIES.iter().map(|(n, _)| *n)
}

/// `Σ log p(args[0] | args[1..])`, with its partials on the tape.
pub fn log_density(d: DistImpl, t: &mut Tape, args: &[Val]) -> Eval<R> {
    match d.f {
        Density::Whole(f) => f(t, args),
        Density::Scalar(arity, f) => vectorised(t, args, arity, f, d.name),
    }
}

pub(crate) fn vectorised(
    t: &mut Tape,
    args: &[Val],
    arity: usize,
    f: Scalar,
    name: &str,
) -> Eval<R> {
    if args.len() != arity {
        return Err(EvalError::new(format!(
            "`{name}` takes {} argument{} after the variate, not {}",
            arity - 1,
            if arity == 2 { "" } else { "s" },
            args.len().saturating_sub(1)
        )));
    }
    // Scalars only (a density inside a loop): no containers built.
    if args.iter().all(Val::is_scalar) {
        let mut r = [R::c(0.0); 4];
        let mut x = [0.0; 4];
        for (k, a) in args.iter().enumerate() {
            r[k] = a.real()?;
            x[k] = r[k].v;
        }
        let (lp, d) = f(&x[..arity]);
        if lp.is_nan() {
            return Err(EvalError::out_of_range(name, &x[..arity]));
        }
        let parents: [(R, f64); 4] = std::array::from_fn(|k| (r[k], d[k]));
        return Ok(t.node(lp, &parents[..arity]));
    }
    let flat: Vec<Vec<R>> = args.iter().map(Val::flat).collect();
    let n = flat.iter().map(Vec::len).max().unwrap_or(1);
    if let Some(bad) = flat.iter().position(|v| v.len() != 1 && v.len() != n) {
        return Err(EvalError::new(format!(
            "`{name}`'s arguments differ in size: {} and {}",
            flat[bad].len(),
            n
        )));
    }
    let mut total = 0.0;
    let mut parents: Vec<(R, f64)> = Vec::new();
    let mut x = [0.0; 4];
    for i in 0..n {
        for (k, v) in flat.iter().enumerate() {
            x[k] = v[if v.len() == 1 { 0 } else { i }].v;
        }
        let (lp, d) = f(&x[..arity]);
        if lp.is_nan() {
            return Err(EvalError::out_of_range(name, &x[..arity]));
        }
        total += lp;
        for (k, v) in flat.iter().enumerate() {
            let r = v[if v.len() == 1 { 0 } else { i }];
            if !r.is_constant() && d[k] != 0.0 {
                parents.push((r, d[k]));
            }
        }
    }
    Ok(t.node(total, &parents))
}

fn nan_unless(ok: bool, v: f64) -> f64 {
    if ok {
        v
    } else {
        f64::NAN
    }
}

fn xlogy(x: f64, y: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x * y.ln()
    }
}

fn lchoose(n: f64, k: f64) -> f64 {
    lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0)
}

fn normal(a: &[f64]) -> (f64, [f64; 4]) {
    let (y, m, s) = (a[0], a[1], a[2]);
    let z = (y - m) / s;
    let v = -0.5 * z * z - s.ln() - HALF_LOG_TWO_PI;
    (
        nan_unless(s > 0.0, v),
        [-z / s, z / s, (z * z - 1.0) / s, 0.0],
    )
}

fn student_t(a: &[f64]) -> (f64, [f64; 4]) {
    let (y, nu, m, s) = (a[0], a[1], a[2], a[3]);
    let z = (y - m) / s;
    let q = z * z / nu;
    let v = lgamma((nu + 1.0) / 2.0)
        - lgamma(nu / 2.0)
        - 0.5 * (nu * PI).ln()
        - s.ln()
        - (nu + 1.0) / 2.0 * q.ln_1p();
    let dy = -(nu + 1.0) * z / (s * nu * (1.0 + q));
    let ds = -1.0 / s + (nu + 1.0) * q / (s * (1.0 + q));
    let dnu = 0.5 * psi((nu + 1.0) / 2.0) - 0.5 * psi(nu / 2.0) - 0.5 / nu - 0.5 * q.ln_1p()
        + (nu + 1.0) / 2.0 * q / (nu * (1.0 + q));
    (nan_unless(nu > 0.0 && s > 0.0, v), [dy, dnu, -dy, ds])
}

fn nb2(n: f64, mu: f64, phi: f64) -> (f64, f64, f64) {
    let v = lgamma(n + phi) - lgamma(n + 1.0) - lgamma(phi) + xlogy(n, mu) + phi * phi.ln()
        - (n + phi) * (mu + phi).ln();
    let dmu = n / mu - (n + phi) / (mu + phi);
    let dphi = psi(n + phi) - psi(phi) + phi.ln() + 1.0 - (mu + phi).ln() - (n + phi) / (mu + phi);
    (nan_unless(mu > 0.0 && phi > 0.0 && n >= 0.0, v), dmu, dphi)
}

/// The outcomes of a categorical variate: one int or an array of them (1-based).
fn outcomes(v: &Val, k: usize) -> Eval<Vec<usize>> {
    let ints = v
        .ints()
        .ok_or_else(|| EvalError::new("a categorical variate is an int or an array of ints"))?;
    ints.into_iter()
        .map(|i| {
            if i >= 1 && i as usize <= k {
                Ok(i as usize - 1)
            } else {
                Err(EvalError::new(format!("the outcome {i} is outside 1..{k}")))
            }
        })
        .collect()
}

fn categorical(t: &mut Tape, a: &[Val], logit: bool) -> Eval<R> {
    let [y, theta] = a else {
        return Err(EvalError::new("categorical takes a variate and a vector"));
    };
    let th = theta.flat();
    let ys = outcomes(y, th.len())?;
    let log_p: Vec<R> = if logit {
        let lse = log_sum_exp(t, &th);
        th.iter().map(|&x| t.sub(x, lse)).collect()
    } else {
        th.iter().map(|&x| t.log(x)).collect()
    };
    let picked: Vec<R> = ys.into_iter().map(|k| log_p[k]).collect();
    Ok(t.sum(&picked))
}

fn ordered_logistic(t: &mut Tape, a: &[Val]) -> Eval<R> {
    let [y, eta, c] = a else {
        return Err(EvalError::new(
            "ordered_logistic takes a variate, a predictor and cut points",
        ));
    };
    let cuts = c.flat();
    if cuts.is_empty() {
        return Err(EvalError::new(
            "ordered_logistic needs at least one cut point",
        ));
    }
    let k = cuts.len() + 1;
    let ys = outcomes(y, k)?;
    let etas = eta.flat();
    if etas.len() != 1 && etas.len() != ys.len() {
        return Err(EvalError::new(
            "ordered_logistic: the predictor and the outcomes differ in size",
        ));
    }
    let mut terms = Vec::with_capacity(ys.len());
    for (i, &yi) in ys.iter().enumerate() {
        let e = etas[if etas.len() == 1 { 0 } else { i }];
        let term = if yi == 0 {
            let d = t.sub(e, cuts[0]);
            t.unary(d, log_logistic(-d.v), -logistic(d.v))
        } else if yi == k - 1 {
            let d = t.sub(e, cuts[k - 2]);
            t.unary(d, log_logistic(d.v), logistic(-d.v))
        } else {
            // log(σ(e − c_{y−1}) − σ(e − c_y))
            let (hi, lo) = (t.sub(e, cuts[yi - 1]), t.sub(e, cuts[yi]));
            let (sh, sl) = (logistic(hi.v), logistic(lo.v));
            let p = sh - sl;
            t.binary(hi, lo, p.ln(), sh * (1.0 - sh) / p, -sl * (1.0 - sl) / p)
        };
        terms.push(term);
    }
    Ok(t.sum(&terms))
}

fn matrix(v: &Val) -> Eval<&Mat> {
    match v {
        Val::Matrix(m) => Ok(m),
        other => Err(EvalError::new(format!(
            "a matrix was expected, not a {}",
            other.kind()
        ))),
    }
}

/// `multi_normal(y | μ, Σ)` (factored here) or `multi_normal_cholesky(y | μ, L)`; `y` and `μ`
/// vectors or arrays of them.
fn multi_normal(t: &mut Tape, a: &[Val], cholesky: bool) -> Eval<R> {
    let [y, mu, s] = a else {
        return Err(EvalError::new(
            "multi_normal takes a variate, a mean and a matrix",
        ));
    };
    let l = if cholesky {
        matrix(s)?.clone()
    } else {
        crate::linalg::cholesky(t, matrix(s)?)?
    };
    let rows = |v: &Val| -> Vec<Vec<R>> {
        match v {
            Val::Array(items) => items.iter().map(Val::flat).collect(),
            other => vec![other.flat()],
        }
    };
    let (ys, mus) = (rows(y), rows(mu));
    let n = ys.len().max(mus.len());
    if (ys.len() != 1 && ys.len() != n) || (mus.len() != 1 && mus.len() != n) {
        return Err(EvalError::new(
            "multi_normal: the variates and the means differ in number",
        ));
    }
    let log_det: Vec<R> = (0..l.rows).map(|k| t.log(l.at(k, k))).collect();
    let log_det = t.sum(&log_det);
    let mut terms = Vec::with_capacity(2 * n);
    for i in 0..n {
        let yi = &ys[if ys.len() == 1 { 0 } else { i }];
        let mi = &mus[if mus.len() == 1 { 0 } else { i }];
        if yi.len() != l.rows || mi.len() != l.rows {
            return Err(EvalError::new(
                "multi_normal: the variate, mean and matrix differ in size",
            ));
        }
        let d: Vec<R> = yi.iter().zip(mi).map(|(&p, &q)| t.sub(p, q)).collect();
        let z = crate::linalg::solve_lower(t, &l, &d)?;
        let q = t.dot(&z, &z);
        terms.push(t.unary(q, -0.5 * q.v, -0.5));
        terms.push(t.unary(log_det, -log_det.v, -1.0));
    }
    let c = R::c(-((n * l.rows) as f64) * HALF_LOG_TWO_PI);
    terms.push(c);
    Ok(t.sum(&terms))
}

fn dirichlet(t: &mut Tape, a: &[Val]) -> Eval<R> {
    let [theta, alpha] = a else {
        return Err(EvalError::new("dirichlet takes a simplex and a vector"));
    };
    let (th, al) = (theta.flat(), alpha.flat());
    if th.len() != al.len() {
        return Err(EvalError::new(
            "dirichlet: the simplex and the concentrations differ in size",
        ));
    }
    let sum_al = t.sum(&al);
    let mut terms = vec![t.unary(sum_al, lgamma(sum_al.v), psi(sum_al.v))];
    for (&x, &a) in th.iter().zip(&al) {
        terms.push(t.unary(a, -lgamma(a.v), -psi(a.v)));
        let am1 = t.sub(a, R::c(1.0));
        let lx = t.log(x);
        terms.push(t.mul(am1, lx));
    }
    Ok(t.sum(&terms))
}

/// `lkj_corr_cholesky(L | η)`: `Σ_{k≥2} (K − k + 2η − 2) log L_kk` (Stan's kernel; its
/// normalising constant depends only on η, which must then be data).
fn lkj_corr_cholesky(t: &mut Tape, a: &[Val]) -> Eval<R> {
    let [l, eta] = a else {
        return Err(EvalError::new(
            "lkj_corr_cholesky takes a Cholesky factor and a shape",
        ));
    };
    let (l, eta) = (matrix(l)?, eta.real()?);
    if !eta.is_constant() {
        return Err(EvalError::new(
            "lkj_corr_cholesky with a shape that is a parameter is not evaluated yet: give the shape as data",
        ));
    }
    let k = l.rows;
    let mut terms = Vec::with_capacity(k);
    for i in 1..k {
        let w = (k - i - 1) as f64 + 2.0 * eta.v - 2.0;
        let ll = t.log(l.at(i, i));
        terms.push(t.unary(ll, w * ll.v, w));
    }
    Ok(t.sum(&terms))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scalar density's partials against central differences of its value, at a point
    /// inside every support (a count variate is not differentiated).
    #[test]
    fn every_scalar_density_has_the_partials_of_its_value() {
        for (name, d) in DENSITIES {
            let Density::Scalar(arity, f) = *d else {
                continue;
            };
            let discrete = [
                "bernoulli",
                "bernoulli_logit",
                "binomial",
                "binomial_logit",
                "poisson",
                "poisson_log",
                "neg_binomial",
                "neg_binomial_2",
                "neg_binomial_2_log",
                "beta_binomial",
            ]
            .contains(name);
            let mut x = match *name {
                "bernoulli" => vec![1.0, 0.3],
                "bernoulli_logit" => vec![1.0, 0.4],
                "binomial" => vec![3.0, 7.0, 0.35],
                "binomial_logit" => vec![3.0, 7.0, -0.2],
                "beta_binomial" => vec![3.0, 7.0, 1.5, 2.5],
                "beta" => vec![0.3, 1.7, 2.4],
                "uniform" => vec![0.3, -1.2, 2.1],
                "pareto" => vec![2.5, 1.1, 1.9],
                "student_t" => vec![0.4, 4.5, -0.3, 1.3],
                _ => {
                    let mut v = vec![1.3, 0.8, 1.7, 0.9];
                    v.truncate(arity);
                    v
                }
            };
            x.truncate(arity);
            let (v0, d0) = f(&x);
            assert!(v0.is_finite(), "{name} at {x:?}");
            for k in usize::from(discrete)..arity {
                if (*name == "binomial" || *name == "binomial_logit" || *name == "beta_binomial")
                    && k == 1
                {
                    continue; // the number of trials
                }
                let h = 1e-6 * (1.0 + x[k].abs());
                let (mut up, mut dn) = (x.clone(), x.clone());
                up[k] += h;
                dn[k] -= h;
                let fd = (f(&up).0 - f(&dn).0) / (2.0 * h);
                assert!(
                    (fd - d0[k]).abs() < 1e-5 * (1.0 + fd.abs()),
                    "{name}: ∂/∂x{k} {} vs finite difference {fd}",
                    d0[k]
                );
            }
        }
    }

    /// Every scalar density is normalised: it integrates (sums) to 1 over its support, so no
    /// term that depends on a parameter is missing (a partial consistent with a wrong value
    /// would pass the test above).
    #[test]
    fn every_scalar_density_integrates_to_one() {
        let mid = |n: usize, g: &dyn Fn(f64) -> f64| -> f64 {
            (0..n).map(|k| g((k as f64 + 0.5) / n as f64)).sum::<f64>() / n as f64
        };
        for (name, d) in DENSITIES {
            let Density::Scalar(arity, f) = *d else {
                continue;
            };
            let theta: Vec<f64> = match *name {
                "student_t" => vec![4.5, -0.3, 1.3],
                "binomial" | "binomial_logit" => vec![7.0, 0.35],
                "beta_binomial" => vec![7.0, 1.5, 2.5],
                "uniform" => vec![-1.2, 2.1],
                "pareto" => vec![1.1, 1.9],
                "bernoulli" => vec![0.3],
                // A shape below 2 is a pole at 0 the midpoint rule does not resolve.
                "chi_square" | "inv_chi_square" => vec![2.5],
                "scaled_inv_chi_square" => vec![4.5, 1.7],
                _ => vec![0.8, 1.7, 0.9][..arity - 1].to_vec(),
            };
            let p = |y: f64| {
                let mut a = vec![y];
                a.extend(&theta);
                f(&a).0.exp()
            };
            let total = match *name {
                "bernoulli" | "bernoulli_logit" => p(0.0) + p(1.0),
                "binomial" | "binomial_logit" | "beta_binomial" => {
                    (0..=7).map(|k| p(k as f64)).sum()
                }
                "poisson" | "poisson_log" | "neg_binomial" | "neg_binomial_2"
                | "neg_binomial_2_log" => (0..2000).map(|k| p(k as f64)).sum(),
                "beta" => mid(200_000, &|u| p(u)),
                "uniform" => 3.3 * mid(1000, &|u| p(-1.2 + 3.3 * u)),
                "pareto" => mid(400_000, &|u| p(1.1 + u / (1.0 - u)) / (1.0 - u).powi(2)),
                "lognormal"
                | "exponential"
                | "gamma"
                | "inv_gamma"
                | "weibull"
                | "chi_square"
                | "inv_chi_square"
                | "scaled_inv_chi_square" => {
                    mid(400_000, &|u| p(u / (1.0 - u)) / (1.0 - u).powi(2))
                }
                _ => mid(400_000, &|u| {
                    let y = (std::f64::consts::PI * (u - 0.5)).tan();
                    p(y) * std::f64::consts::PI * (1.0 + y * y)
                }),
            };
            assert!((total - 1.0).abs() < 2e-4, "{name}: integrates to {total}");
        }
    }
}
