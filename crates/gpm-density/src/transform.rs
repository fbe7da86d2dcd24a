//! Parameter constraints as Stan defines them (reference manual, "Constraint transforms"):
//! each maps unconstrained coordinates to the declared value and adds `log |J|` to the target,
//! so that NUTS moves on ℝⁿ and the draws are of the declared parameter.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::value::{Mat, Val};

/// A declared shape with its sizes evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// The element type.
    pub base: crate::program::Base,
    /// The element's sizes.
    pub sizes: Vec<usize>,
    /// Array sizes, outermost first.
    pub array: Vec<usize>,
}

impl Shape {
    /// Reals in one element.
    pub fn element_len(&self) -> usize {
        self.sizes.iter().product()
    }

    /// Elements (the product of the array sizes).
    pub fn elements(&self) -> usize {
        self.array.iter().product()
    }

    /// A value of this shape from reals in Stan's order (arrays outermost, matrices by column).
    pub fn fill(&self, values: &mut dyn Iterator<Item = R>) -> Eval<Val> {
        self.fill_from(0, values)
    }

    fn fill_from(&self, level: usize, values: &mut dyn Iterator<Item = R>) -> Eval<Val> {
        if let Some(&n) = self.array.get(level) {
            return Ok(Val::Array(
                (0..n)
                    .map(|_| self.fill_from(level + 1, values))
                    .collect::<Eval<_>>()?,
            ));
        }
        let mut take = |n: usize| -> Eval<Vec<R>> {
            let v: Vec<R> = values.take(n).collect();
            if v.len() == n {
                Ok(v)
            } else {
                Err(EvalError::new("too few values for the declared size"))
            }
        };
        use crate::program::Base;
        Ok(match self.base {
            Base::Int => Val::Int(take(1)?[0].v as i64),
            Base::Real => Val::Real(take(1)?[0]),
            Base::Vector => Val::Vector(take(self.sizes[0])?),
            Base::RowVector => Val::RowVector(take(self.sizes[0])?),
            Base::Matrix => {
                let (rows, cols) = (self.sizes[0], self.sizes[1]);
                Val::Matrix(Mat {
                    rows,
                    cols,
                    data: take(rows * cols)?,
                })
            }
        })
    }

    /// A value of this shape before assignment: NaN reals (Stan's), ints at the smallest value.
    pub fn empty(&self) -> Val {
        let n = self.elements() * self.element_len();
        let fill = if self.base == crate::program::Base::Int {
            R::c(i64::MIN as f64)
        } else {
            R::c(f64::NAN)
        };
        let mut it = std::iter::repeat_n(fill, n);
        self.fill(&mut it).unwrap_or(Val::Real(R::c(f64::NAN)))
    }
}

/// The evaluated constraint of one parameter.
pub enum Evaluated {
    /// Bounds and an affine map, each a scalar or one value per entry.
    Bounded {
        /// `lower`
        lower: Option<Vec<R>>,
        /// `upper`
        upper: Option<Vec<R>>,
        /// `offset`
        offset: Option<Vec<R>>,
        /// `multiplier`
        multiplier: Option<Vec<R>>,
    },
    /// `ordered`
    Ordered,
    /// `positive_ordered`
    PositiveOrdered,
    /// `simplex`
    Simplex,
    /// `cholesky_factor_corr`
    CholeskyCorr,
}

/// Unconstrained coordinates of one parameter of this shape.
pub fn free_len(c: &Evaluated, shape: &Shape) -> usize {
    let k = shape.sizes.first().copied().unwrap_or(1);
    let per = match c {
        Evaluated::Bounded { .. } | Evaluated::Ordered | Evaluated::PositiveOrdered => {
            shape.element_len()
        }
        Evaluated::Simplex => k.saturating_sub(1),
        Evaluated::CholeskyCorr => k * k.saturating_sub(1) / 2,
    };
    per * shape.elements()
}

/// Entry `i` of a bound given as a scalar or one value per entry.
fn pick(v: &Option<Vec<R>>, i: usize) -> Eval<Option<R>> {
    match v {
        None => Ok(None),
        Some(x) if x.len() == 1 => Ok(Some(x[0])),
        Some(x) => x.get(i).copied().map(Some).ok_or_else(|| {
            EvalError::new(format!(
                "a bound has {} entries but the parameter more",
                x.len()
            ))
        }),
    }
}

/// The parameter's value from its coordinates `u`, `log |J|` terms pushed onto `jacobian`.
pub fn constrain(
    t: &mut Tape,
    c: &Evaluated,
    shape: &Shape,
    u: &[R],
    jacobian: &mut Vec<R>,
) -> Eval<Val> {
    let values: Vec<R> = match c {
        Evaluated::Bounded {
            lower,
            upper,
            offset,
            multiplier,
        } => {
            let mut out = Vec::with_capacity(u.len());
            for (i, &x) in u.iter().enumerate() {
                let lo = pick(lower, i)?.filter(|l| l.v > f64::NEG_INFINITY);
                let hi = pick(upper, i)?.filter(|h| h.v < f64::INFINITY);
                out.push(bounded(
                    t,
                    x,
                    lo,
                    hi,
                    (pick(offset, i)?, pick(multiplier, i)?),
                    jacobian,
                )?);
            }
            out
        }
        _ => {
            let k = shape.sizes.first().copied().unwrap_or(0);
            let per = if shape.elements() == 0 {
                0
            } else {
                u.len() / shape.elements()
            };
            let mut out = Vec::new();
            for chunk in u.chunks(per.max(1)).take(shape.elements()) {
                out.extend(match c {
                    Evaluated::Ordered => ordered(t, chunk, false, jacobian),
                    Evaluated::PositiveOrdered => ordered(t, chunk, true, jacobian),
                    Evaluated::Simplex => simplex(t, chunk, k, jacobian),
                    _ => cholesky_corr(t, chunk, k, jacobian),
                });
            }
            if per == 0 && matches!(c, Evaluated::Simplex) {
                // simplex[1] is the constant 1.
                out = vec![R::c(1.0); shape.elements()];
            }
            out
        }
    };
    shape.fill(&mut values.into_iter())
}

fn bounded(
    t: &mut Tape,
    u: R,
    lo: Option<R>,
    hi: Option<R>,
    (offset, multiplier): (Option<R>, Option<R>),
    jacobian: &mut Vec<R>,
) -> Eval<R> {
    Ok(match (lo, hi) {
        (None, None) => {
            let mut x = u;
            if let Some(m) = multiplier {
                if m.v <= 0.0 {
                    return Err(EvalError::reject("a multiplier must be positive"));
                }
                x = t.mul(x, m);
                jacobian.push(t.log(m));
            }
            if let Some(o) = offset {
                x = t.add(x, o);
            }
            x
        }
        (Some(l), None) => {
            // x = l + e^u, log J = u
            jacobian.push(u);
            let e = t.exp(u);
            t.add(l, e)
        }
        (None, Some(h)) => {
            jacobian.push(u);
            let e = t.exp(u);
            t.sub(h, e)
        }
        (Some(l), Some(h)) => {
            if h.v <= l.v {
                return Err(EvalError::reject(format!(
                    "the upper bound {} is not above the lower bound {}",
                    h.v, l.v
                )));
            }
            // x = l + (h − l) σ(u), log J = log(h − l) + log σ(u) + log σ(−u)
            let w = t.sub(h, l);
            let s = gpm_special::logistic(u.v);
            let sig = t.unary(u, s, s * (1.0 - s));
            let lw = t.log(w);
            jacobian.push(lw);
            jacobian.push(t.unary(
                u,
                gpm_special::log_logistic(u.v) + gpm_special::log_logistic(-u.v),
                1.0 - 2.0 * s,
            ));
            let scaled = t.mul(w, sig);
            t.add(l, scaled)
        }
    })
}

/// `x_1 = u_1`, `x_k = x_{k−1} + e^{u_k}` (positive: `x_1 = e^{u_1}` too).
fn ordered(t: &mut Tape, u: &[R], positive: bool, jacobian: &mut Vec<R>) -> Vec<R> {
    let mut out = Vec::with_capacity(u.len());
    for (k, &x) in u.iter().enumerate() {
        let v = if k == 0 && !positive {
            x
        } else {
            jacobian.push(x);
            let e = t.exp(x);
            match out.last() {
                Some(&prev) => t.add(prev, e),
                None => e,
            }
        };
        out.push(v);
    }
    out
}

/// Stan's stick-breaking simplex: `z_k = σ(u_k − log(K − k))`, `x_k = (1 − Σ_{j<k} x_j) z_k`.
fn simplex(t: &mut Tape, u: &[R], k: usize, jacobian: &mut Vec<R>) -> Vec<R> {
    let mut out = Vec::with_capacity(k);
    let mut stick = R::c(1.0);
    for (i, &y) in u.iter().enumerate() {
        let shift = ((k - i - 1) as f64).ln();
        let a = t.sub(y, R::c(shift));
        let s = gpm_special::logistic(a.v);
        let z = t.unary(a, s, s * (1.0 - s));
        // log J += log z + log(1 − z) + log(stick)
        jacobian.push(t.unary(
            a,
            gpm_special::log_logistic(a.v) + gpm_special::log_logistic(-a.v),
            1.0 - 2.0 * s,
        ));
        jacobian.push(t.log(stick));
        let x = t.mul(stick, z);
        stick = t.sub(stick, x);
        out.push(x);
    }
    out.push(stick);
    out
}

/// Stan's Cholesky factor of a correlation matrix from `K(K−1)/2` coordinates through `tanh`:
/// row `i` is `(z_{i1}, z_{i2} √(1 − ℓ²_{i1}), …, √(1 − Σ ℓ²))`.
fn cholesky_corr(t: &mut Tape, u: &[R], k: usize, jacobian: &mut Vec<R>) -> Vec<R> {
    let mut l = Mat::filled(k, k, R::c(0.0));
    let mut next = u.iter();
    for i in 0..k {
        let mut sum_sq = R::c(0.0);
        for j in 0..i {
            let y = *next.next().unwrap_or(&R::c(0.0));
            let th = y.v.tanh();
            let z = t.unary(y, th, 1.0 - th * th);
            // log J: log(1 − z²) from tanh, ½ log(1 − Σ) from the scaling.
            jacobian.push(t.unary(y, (1.0 - th * th).ln(), -2.0 * th));
            let rest = t.sub(R::c(1.0), sum_sq);
            let lr = t.log(rest);
            jacobian.push(t.unary(lr, 0.5 * lr.v, 0.5));
            let r = t.sqrt(rest);
            let v = t.mul(z, r);
            let v2 = t.mul(v, v);
            sum_sq = t.add(sum_sq, v2);
            l.data[i + j * k] = v;
        }
        let rest = t.sub(R::c(1.0), sum_sq);
        l.data[i + i * k] = t.sqrt(rest);
    }
    l.data
}
