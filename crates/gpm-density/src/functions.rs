//! Stan's built-in functions: one table, each entry a name and its implementation on values
//! (with derivatives on the tape). Element-wise functions of one real are a second table of
//! `x ↦ (f(x), f'(x))`, applied to every entry of a container.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::value::{size, Builtin, Mat, Val};
use gpm_special::{lgamma, normal_cdf};

/// A built-in function bound at compile time.
#[derive(Clone, Copy)]
pub struct FnImpl {
    /// Its Stan name.
    pub name: &'static str,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    Elementwise(Scalar),
    General(Builtin),
}

impl std::fmt::Debug for FnImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

type Scalar = fn(f64) -> (f64, f64);

/// Element-wise functions of one real: value and derivative.
const ELEMENTWISE: &[(&str, Scalar)] = &[
    ("exp", |x| (x.exp(), x.exp())),
    ("log", |x| (x.ln(), 1.0 / x)),
    ("log2", |x| (x.log2(), 1.0 / (x * std::f64::consts::LN_2))),
    ("log10", |x| {
        (x.log10(), 1.0 / (x * std::f64::consts::LN_10))
    }),
    ("sqrt", |x| (x.sqrt(), 0.5 / x.sqrt())),
    ("cbrt", |x| (x.cbrt(), 1.0 / (3.0 * x.cbrt() * x.cbrt()))),
    ("square", |x| (x * x, 2.0 * x)),
    ("inv", |x| (1.0 / x, -1.0 / (x * x))),
    ("inv_sqrt", |x| (1.0 / x.sqrt(), -0.5 / (x * x.sqrt()))),
    ("inv_square", |x| (1.0 / (x * x), -2.0 / (x * x * x))),
    ("inv_logit", |x| {
        let s = gpm_special::logistic(x);
        (s, s * (1.0 - s))
    }),
    ("logit", |x| ((x / (1.0 - x)).ln(), 1.0 / (x * (1.0 - x)))),
    ("log_inv_logit", |x| {
        (gpm_special::log_logistic(x), gpm_special::logistic(-x))
    }),
    ("log1m_inv_logit", |x| {
        (gpm_special::log_logistic(-x), -gpm_special::logistic(x))
    }),
    ("log1p", |x| (x.ln_1p(), 1.0 / (1.0 + x))),
    ("log1m", |x| ((-x).ln_1p(), -1.0 / (1.0 - x))),
    ("log1p_exp", |x| {
        (gpm_special::softplus(x), gpm_special::logistic(x))
    }),
    ("log1m_exp", |x| {
        // log(1 - e^x), x < 0
        let v = if x > -std::f64::consts::LN_2 {
            (-x.exp_m1()).ln()
        } else {
            (-x.exp()).ln_1p()
        };
        (v, -1.0 / (-x).exp_m1())
    }),
    ("expm1", |x| (x.exp_m1(), x.exp())),
    ("fabs", |x| (x.abs(), x.signum())),
    ("abs", |x| (x.abs(), x.signum())),
    ("sin", |x| (x.sin(), x.cos())),
    ("cos", |x| (x.cos(), -x.sin())),
    ("tan", |x| (x.tan(), 1.0 / (x.cos() * x.cos()))),
    ("tanh", |x| (x.tanh(), 1.0 - x.tanh() * x.tanh())),
    ("sinh", |x| (x.sinh(), x.cosh())),
    ("cosh", |x| (x.cosh(), x.sinh())),
    ("atan", |x| (x.atan(), 1.0 / (1.0 + x * x))),
    ("asin", |x| (x.asin(), 1.0 / (1.0 - x * x).sqrt())),
    ("acos", |x| (x.acos(), -1.0 / (1.0 - x * x).sqrt())),
    ("Phi", |x| {
        (normal_cdf(x), gpm_special::log_normal_pdf(x).exp())
    }),
    ("Phi_approx", |x| {
        // Stan: inv_logit(0.07056 x³ + 1.5976 x)
        let z = 0.07056 * x * x * x + 1.5976 * x;
        let s = gpm_special::logistic(z);
        (s, s * (1.0 - s) * (3.0 * 0.07056 * x * x + 1.5976))
    }),
    ("lgamma", |x| (lgamma(x), gpm_special::digamma(x))),
    ("tgamma", |x| {
        let g = lgamma(x).exp();
        (g, g * gpm_special::digamma(x))
    }),
    ("erf", |x| {
        let v = 2.0 * normal_cdf(x * std::f64::consts::SQRT_2) - 1.0;
        (v, 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp())
    }),
    ("erfc", |x| {
        let v = 2.0 * normal_cdf(-x * std::f64::consts::SQRT_2);
        (v, -2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp())
    }),
    ("floor", |x| (x.floor(), 0.0)),
    ("ceil", |x| (x.ceil(), 0.0)),
    ("round", |x| (x.round(), 0.0)),
    ("trunc", |x| (x.trunc(), 0.0)),
    ("step", |x| (if x < 0.0 { 0.0 } else { 1.0 }, 0.0)),
];

/// Every other function: name and implementation.
const FUNCTIONS: &[(&str, Builtin)] = &[
    ("pi", |_, a| constant(a, std::f64::consts::PI)),
    ("e", |_, a| constant(a, std::f64::consts::E)),
    ("sqrt2", |_, a| constant(a, std::f64::consts::SQRT_2)),
    ("log2", |_, a| constant(a, std::f64::consts::LN_2)),
    ("log10", |_, a| constant(a, std::f64::consts::LN_10)),
    ("not_a_number", |_, a| constant(a, f64::NAN)),
    ("positive_infinity", |_, a| constant(a, f64::INFINITY)),
    ("negative_infinity", |_, a| constant(a, f64::NEG_INFINITY)),
    ("machine_precision", |_, a| constant(a, f64::EPSILON)),
    ("pow", |t, a| binary_real(t, a, crate::ops::pow)),
    ("fmin", |t, a| {
        binary_real(t, a, |t, x, y| {
            if x.v <= y.v {
                t.unary(x, x.v, 1.0)
            } else {
                t.unary(y, y.v, 1.0)
            }
        })
    }),
    ("fmax", |t, a| {
        binary_real(t, a, |t, x, y| {
            if x.v >= y.v {
                t.unary(x, x.v, 1.0)
            } else {
                t.unary(y, y.v, 1.0)
            }
        })
    }),
    ("fdim", |t, a| {
        binary_real(
            t,
            a,
            |t, x, y| if x.v > y.v { t.sub(x, y) } else { R::c(0.0) },
        )
    }),
    ("hypot", |t, a| {
        binary_real(t, a, |t, x, y| {
            let h = x.v.hypot(y.v);
            t.binary(x, y, h, x.v / h, y.v / h)
        })
    }),
    ("atan2", |t, a| {
        binary_real(t, a, |t, y, x| {
            let r = x.v * x.v + y.v * y.v;
            t.binary(y, x, y.v.atan2(x.v), x.v / r, -y.v / r)
        })
    }),
    ("lmultiply", |t, a| binary_real(t, a, lmultiply)),
    ("multiply_log", |t, a| binary_real(t, a, lmultiply)),
    ("log_diff_exp", |t, a| {
        binary_real(t, a, |t, x, y| {
            // log(e^x - e^y) = x + log1m_exp(y - x)
            let d = y.v - x.v;
            let v = x.v + (-d.exp()).ln_1p();
            let w = 1.0 / (1.0 - d.exp());
            t.binary(x, y, v, w, 1.0 - w)
        })
    }),
    ("lbeta", |t, a| {
        binary_real(t, a, |t, x, y| {
            let v = lgamma(x.v) + lgamma(y.v) - lgamma(x.v + y.v);
            let s = gpm_special::digamma(x.v + y.v);
            t.binary(
                x,
                y,
                v,
                gpm_special::digamma(x.v) - s,
                gpm_special::digamma(y.v) - s,
            )
        })
    }),
    ("lchoose", |t, a| binary_real(t, a, lchoose)),
    ("binomial_coefficient_log", |t, a| {
        binary_real(t, a, lchoose)
    }),
    ("fma", |t, a| {
        let [x, y, z] = args3(a)?;
        let p = t.mul(x, y);
        Ok(Val::Real(t.add(p, z)))
    }),
    ("log_sum_exp", log_sum_exp_fn),
    ("log_mix", log_mix),
    ("sum", |t, a| Ok(reduce_sum(t, one(a)?))),
    ("mean", |t, a| {
        let x = one(a)?.flat();
        let s = t.sum(&x);
        Ok(Val::Real(t.unary(
            s,
            s.v / x.len() as f64,
            1.0 / x.len() as f64,
        )))
    }),
    ("prod", |t, a| {
        let mut p = R::c(1.0);
        for x in one(a)?.flat() {
            p = t.mul(p, x);
        }
        Ok(Val::Real(p))
    }),
    ("max", |t, a| extreme(t, a, true)),
    ("min", |t, a| extreme(t, a, false)),
    ("variance", |t, a| {
        variance(t, &one(a)?.flat()).map(Val::Real)
    }),
    ("sd", |t, a| {
        let v = variance(t, &one(a)?.flat())?;
        Ok(Val::Real(t.sqrt(v)))
    }),
    ("dot_product", |t, a| {
        let (x, y) = two(a)?;
        Ok(Val::Real(t.dot(&x.flat(), &y.flat())))
    }),
    ("dot_self", |t, a| {
        let x = one(a)?.flat();
        Ok(Val::Real(t.dot(&x, &x)))
    }),
    ("squared_distance", |t, a| {
        squared_distance(t, a).map(Val::Real)
    }),
    ("distance", |t, a| {
        let d = squared_distance(t, a)?;
        Ok(Val::Real(t.sqrt(d)))
    }),
    ("num_elements", |_, a| {
        Ok(Val::Int(one(a)?.flat().len() as i64))
    }),
    ("size", |_, a| Ok(Val::Int(one(a)?.len() as i64))),
    ("rows", |_, a| {
        Ok(Val::Int(match one(a)? {
            Val::Matrix(m) => m.rows as i64,
            Val::RowVector(_) => 1,
            v => v.len() as i64,
        }))
    }),
    ("cols", |_, a| {
        Ok(Val::Int(match one(a)? {
            Val::Matrix(m) => m.cols as i64,
            Val::Vector(_) => 1,
            v => v.len() as i64,
        }))
    }),
    ("rep_vector", |_, a| {
        let (x, n) = two(a)?;
        Ok(Val::Vector(vec![x.real()?; size(n)?]))
    }),
    ("rep_row_vector", |_, a| {
        let (x, n) = two(a)?;
        Ok(Val::RowVector(vec![x.real()?; size(n)?]))
    }),
    ("rep_array", |_, a| {
        let (x, dims) = a
            .split_first()
            .ok_or_else(|| EvalError::new("rep_array takes a value and sizes"))?;
        let mut v = x.clone();
        for d in dims.iter().rev() {
            v = Val::Array(vec![v; size(d)?]);
        }
        Ok(v)
    }),
    ("rep_matrix", |_, a| match a {
        [x, r, c] => Ok(Val::Matrix(Mat::filled(size(r)?, size(c)?, x.real()?))),
        [Val::Vector(v), n] => {
            let n = size(n)?;
            Ok(Val::Matrix(Mat {
                rows: v.len(),
                cols: n,
                data: (0..n).flat_map(|_| v.iter().copied()).collect(),
            }))
        }
        [Val::RowVector(v), n] => {
            let n = size(n)?;
            let mut data = Vec::with_capacity(n * v.len());
            for &x in v {
                data.extend(std::iter::repeat_n(x, n));
            }
            Ok(Val::Matrix(Mat {
                rows: n,
                cols: v.len(),
                data,
            }))
        }
        _ => Err(EvalError::new(
            "rep_matrix takes (x, rows, cols) or (vector, n)",
        )),
    }),
    ("zeros_vector", |_, a| {
        Ok(Val::Vector(vec![R::c(0.0); size(one(a)?)?]))
    }),
    ("ones_vector", |_, a| {
        Ok(Val::Vector(vec![R::c(1.0); size(one(a)?)?]))
    }),
    ("zeros_row_vector", |_, a| {
        Ok(Val::RowVector(vec![R::c(0.0); size(one(a)?)?]))
    }),
    ("ones_row_vector", |_, a| {
        Ok(Val::RowVector(vec![R::c(1.0); size(one(a)?)?]))
    }),
    ("linspaced_vector", |_, a| {
        let [n, lo, hi] = a else {
            return Err(EvalError::new("linspaced_vector takes (n, lo, hi)"));
        };
        let (n, lo, hi) = (size(n)?, lo.real()?.v, hi.real()?.v);
        Ok(Val::Vector(
            (0..n)
                .map(|k| {
                    R::c(if n == 1 {
                        hi
                    } else {
                        lo + (hi - lo) * k as f64 / (n - 1) as f64
                    })
                })
                .collect(),
        ))
    }),
    ("to_vector", |_, a| Ok(Val::Vector(one(a)?.flat()))),
    ("to_row_vector", |_, a| Ok(Val::RowVector(one(a)?.flat()))),
    ("to_array_1d", |_, a| {
        Ok(Val::Array(match one(a)? {
            v @ Val::Array(_)
                if v.flat().len() == v.len()
                    && matches!(v, Val::Array(x) if x.iter().all(|e| matches!(e, Val::Int(_)))) =>
            {
                return Ok(v.clone())
            }
            v => v.flat().into_iter().map(Val::Real).collect(),
        }))
    }),
    ("to_int", |_, a| {
        let x = one(a)?.real()?.v;
        if x.is_finite() && x.abs() < 9.0e15 {
            Ok(Val::Int(x.trunc() as i64))
        } else {
            Err(EvalError::new(format!("to_int: {x} is not an int")))
        }
    }),
    ("append_row", |_, a| append(a, true)),
    ("append_col", |_, a| append(a, false)),
    ("head", |_, a| {
        let (v, n) = two(a)?;
        slice(v, 0, size(n)?)
    }),
    ("tail", |_, a| {
        let (v, n) = two(a)?;
        let n = size(n)?;
        let len = v.len();
        if n > len {
            return Err(EvalError::new(format!("tail: {n} of {len} entries")));
        }
        slice(v, len - n, n)
    }),
    ("segment", |_, a| {
        let [v, i, n] = a else {
            return Err(EvalError::new("segment takes (v, i, n)"));
        };
        let i = size(i)?;
        if i == 0 {
            return Err(EvalError::new("segment starts at 1"));
        }
        slice(v, i - 1, size(n)?)
    }),
    ("reverse", |_, a| {
        Ok(match one(a)? {
            Val::Vector(v) => Val::Vector(v.iter().rev().copied().collect()),
            Val::RowVector(v) => Val::RowVector(v.iter().rev().copied().collect()),
            Val::Array(v) => Val::Array(v.iter().rev().cloned().collect()),
            other => return Err(EvalError::new(format!("reverse of a {}", other.kind()))),
        })
    }),
    ("cumulative_sum", |t, a| {
        let v = one(a)?;
        let mut acc = None;
        let out = v.map_reals(&mut |x| {
            let s = match acc {
                None => x,
                Some(p) => t.add(p, x),
            };
            acc = Some(s);
            s
        });
        Ok(out)
    }),
    ("softmax", |t, a| {
        softmax(t, &one(a)?.flat(), false).map(Val::Vector)
    }),
    ("log_softmax", |t, a| {
        softmax(t, &one(a)?.flat(), true).map(Val::Vector)
    }),
    ("diag_matrix", |_, a| {
        let v = one(a)?.flat();
        let n = v.len();
        let mut m = Mat::filled(n, n, R::c(0.0));
        for (k, x) in v.into_iter().enumerate() {
            m.data[k + k * n] = x;
        }
        Ok(Val::Matrix(m))
    }),
    ("identity_matrix", |_, a| {
        let n = size(one(a)?)?;
        let mut m = Mat::filled(n, n, R::c(0.0));
        for k in 0..n {
            m.data[k + k * n] = R::c(1.0);
        }
        Ok(Val::Matrix(m))
    }),
    ("diagonal", |_, a| match one(a)? {
        Val::Matrix(m) => Ok(Val::Vector(
            (0..m.rows.min(m.cols)).map(|k| m.at(k, k)).collect(),
        )),
        other => Err(EvalError::new(format!("diagonal of a {}", other.kind()))),
    }),
    ("diag_pre_multiply", |t, a| {
        let (v, m) = two(a)?;
        let (v, Val::Matrix(m)) = (v.flat(), m) else {
            return Err(EvalError::new(
                "diag_pre_multiply takes a vector and a matrix",
            ));
        };
        if v.len() != m.rows {
            return Err(EvalError::new(
                "diag_pre_multiply: the vector and the matrix's rows differ in size",
            ));
        }
        let mut out = m.clone();
        for j in 0..m.cols {
            for (i, &vi) in v.iter().enumerate() {
                out.data[i + j * m.rows] = t.mul(vi, m.at(i, j));
            }
        }
        Ok(Val::Matrix(out))
    }),
    ("diag_post_multiply", |t, a| {
        let (m, v) = two(a)?;
        let (Val::Matrix(m), v) = (m, v.flat()) else {
            return Err(EvalError::new(
                "diag_post_multiply takes a matrix and a vector",
            ));
        };
        if v.len() != m.cols {
            return Err(EvalError::new(
                "diag_post_multiply: the vector and the matrix's columns differ in size",
            ));
        }
        let mut out = m.clone();
        for (j, &vj) in v.iter().enumerate() {
            for i in 0..m.rows {
                out.data[i + j * m.rows] = t.mul(m.at(i, j), vj);
            }
        }
        Ok(Val::Matrix(out))
    }),
    ("columns_dot_product", |t, a| {
        let (x, y) = two(a)?;
        let (x, y) = (as_matrix(x)?, as_matrix(y)?);
        Ok(Val::RowVector(
            (0..x.cols).map(|j| t.dot(&x.col(j), &y.col(j))).collect(),
        ))
    }),
    ("rows_dot_product", |t, a| {
        let (x, y) = two(a)?;
        let (x, y) = (as_matrix(x)?, as_matrix(y)?);
        Ok(Val::Vector(
            (0..x.rows).map(|i| t.dot(&x.row(i), &y.row(i))).collect(),
        ))
    }),
    ("columns_dot_self", |t, a| {
        let x = as_matrix(one(a)?)?;
        Ok(Val::RowVector(
            (0..x.cols)
                .map(|j| {
                    let c = x.col(j);
                    t.dot(&c, &c)
                })
                .collect(),
        ))
    }),
    ("rows_dot_self", |t, a| {
        let x = as_matrix(one(a)?)?;
        Ok(Val::Vector(
            (0..x.rows)
                .map(|i| {
                    let r = x.row(i);
                    t.dot(&r, &r)
                })
                .collect(),
        ))
    }),
    ("cholesky_decompose", |t, a| {
        crate::linalg::cholesky(t, &as_matrix(one(a)?)?).map(Val::Matrix)
    }),
    ("mdivide_left_tri_low", |t, a| {
        let (l, b) = two(a)?;
        crate::linalg::solve_lower(t, &as_matrix(l)?, &b.flat()).map(Val::Vector)
    }),
    ("quad_form_diag", |t, a| {
        let (m, v) = two(a)?;
        let (m, v) = (as_matrix(m)?, v.flat());
        if m.rows != v.len() || m.cols != v.len() {
            return Err(EvalError::new(
                "quad_form_diag: the matrix and the vector differ in size",
            ));
        }
        let mut out = m.clone();
        for j in 0..m.cols {
            for i in 0..m.rows {
                let p = t.mul(v[i], m.at(i, j));
                out.data[i + j * m.rows] = t.mul(p, v[j]);
            }
        }
        Ok(Val::Matrix(out))
    }),
    ("multiply_lower_tri_self_transpose", |t, a| {
        let l = as_matrix(one(a)?)?;
        let mut lower = l.clone();
        for j in 0..l.cols {
            for i in 0..j.min(l.rows) {
                lower.data[i + j * l.rows] = R::c(0.0);
            }
        }
        Ok(Val::Matrix(gram(t, &lower, true)))
    }),
    ("tcrossprod", |t, a| {
        Ok(Val::Matrix(gram(t, &as_matrix(one(a)?)?, true)))
    }),
    ("crossprod", |t, a| {
        Ok(Val::Matrix(gram(t, &as_matrix(one(a)?)?, false)))
    }),
    ("add_diag", |t, a| {
        let (m, d) = two(a)?;
        let mut m = as_matrix(m)?;
        let d = d.flat();
        for k in 0..m.rows.min(m.cols) {
            let x = d[if d.len() == 1 { 0 } else { k.min(d.len() - 1) }];
            m.data[k + k * m.rows] = t.add(m.at(k, k), x);
        }
        Ok(Val::Matrix(m))
    }),
    ("eigenvalues_sym", |_, a| {
        Ok(Val::Vector(
            crate::linalg::eigen_sym(&as_matrix(one(a)?)?)?.0,
        ))
    }),
    ("eigenvectors_sym", |_, a| {
        Ok(Val::Matrix(
            crate::linalg::eigen_sym(&as_matrix(one(a)?)?)?.1,
        ))
    }),
    ("dims", |_, a| {
        Ok(Val::Array(
            one(a)?
                .dims()
                .into_iter()
                .map(|d| Val::Int(d as i64))
                .collect(),
        ))
    }),
    ("transpose", |_, a| crate::ops::transpose(one(a)?)),
    ("is_inf", |_, a| {
        Ok(Val::Int(i64::from(one(a)?.real()?.v.is_infinite())))
    }),
    ("is_nan", |_, a| {
        Ok(Val::Int(i64::from(one(a)?.real()?.v.is_nan())))
    }),
    ("int_step", |_, a| {
        Ok(Val::Int(i64::from(one(a)?.real()?.v > 0.0)))
    }),
    ("logical_negation", |_, a| {
        Ok(Val::Int(i64::from(one(a)?.real()?.v == 0.0)))
    }),
];

/// `X Xᵀ` (`outer`) or `Xᵀ X`.
fn gram(t: &mut Tape, x: &Mat, outer: bool) -> Mat {
    let vecs: Vec<Vec<R>> = if outer {
        (0..x.rows).map(|i| x.row(i)).collect()
    } else {
        (0..x.cols).map(|j| x.col(j)).collect()
    };
    let n = vecs.len();
    let mut out = Mat::filled(n, n, R::c(0.0));
    for j in 0..n {
        for i in j..n {
            let v = t.dot(&vecs[i], &vecs[j]);
            out.data[i + j * n] = v;
            out.data[j + i * n] = v;
        }
    }
    out
}

/// The implementation of a function, by its Stan name and number of arguments (`log2()` is
/// a constant, `log2(x)` a function).
pub fn lookup(name: &str, arity: usize) -> Option<FnImpl> {
    let general = FUNCTIONS
        .iter()
        .chain(crate::covariances::COVARIANCES)
        .chain(crate::reshape::RESHAPING)
        .find(|(n, _)| *n == name)
        .map(|&(name, f)| FnImpl {
            name,
            kind: Kind::General(f),
        });
    if arity == 0 && general.is_some() {
        return general;
    }
    ELEMENTWISE
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(name, g)| FnImpl {
            name,
            kind: Kind::Elementwise(g),
        })
        .or(general)
}

/// The names of every function (for "did you mean").
pub fn names() -> impl Iterator<Item = &'static str> {
    ELEMENTWISE.iter().map(|(n, _)| *n).chain(
        FUNCTIONS
            .iter()
            .chain(crate::covariances::COVARIANCES)
            .chain(crate::reshape::RESHAPING)
            .map(|(n, _)| *n),
    )
}

/// Call a bound function.
pub fn call(f: FnImpl, t: &mut Tape, args: &[Val]) -> Eval<Val> {
    match f.kind {
        Kind::Elementwise(g) => apply_elementwise(t, g, args, f.name),
        Kind::General(g) => g(t, args),
    }
}

fn apply_elementwise(t: &mut Tape, g: Scalar, args: &[Val], name: &str) -> Eval<Val> {
    let [x] = args else {
        return Err(EvalError::new(format!(
            "`{name}` takes one argument, not {}",
            args.len()
        )));
    };
    Ok(x.map_reals(&mut |r| {
        let (v, d) = g(r.v);
        t.unary(r, v, d)
    }))
}

fn constant(a: &[Val], v: f64) -> Eval<Val> {
    if a.is_empty() {
        Ok(Val::Real(R::c(v)))
    } else {
        Err(EvalError::new("this constant takes no arguments"))
    }
}

fn one(a: &[Val]) -> Eval<&Val> {
    match a {
        [x] => Ok(x),
        _ => Err(EvalError::new(format!(
            "one argument expected, not {}",
            a.len()
        ))),
    }
}

fn two(a: &[Val]) -> Eval<(&Val, &Val)> {
    match a {
        [x, y] => Ok((x, y)),
        _ => Err(EvalError::new(format!(
            "two arguments expected, not {}",
            a.len()
        ))),
    }
}

fn args3(a: &[Val]) -> Eval<[R; 3]> {
    match a {
        [x, y, z] => Ok([x.real()?, y.real()?, z.real()?]),
        _ => Err(EvalError::new(format!(
            "three arguments expected, not {}",
            a.len()
        ))),
    }
}

fn binary_real(t: &mut Tape, a: &[Val], f: fn(&mut Tape, R, R) -> R) -> Eval<Val> {
    let (x, y) = two(a)?;
    crate::ops::zip(t, x, y, &f)
}

fn lmultiply(t: &mut Tape, x: R, y: R) -> R {
    if x.v == 0.0 && y.v == 0.0 {
        return R::c(0.0);
    }
    t.binary(x, y, x.v * y.v.ln(), y.v.ln(), x.v / y.v)
}

fn lchoose(t: &mut Tape, n: R, k: R) -> R {
    let v = lgamma(n.v + 1.0) - lgamma(k.v + 1.0) - lgamma(n.v - k.v + 1.0);
    let dn = gpm_special::digamma(n.v + 1.0) - gpm_special::digamma(n.v - k.v + 1.0);
    let dk = -gpm_special::digamma(k.v + 1.0) + gpm_special::digamma(n.v - k.v + 1.0);
    t.binary(n, k, v, dn, dk)
}

/// `log Σ e^{x_k}`, stably; its derivative is the softmax.
pub fn log_sum_exp(t: &mut Tape, x: &[R]) -> R {
    let m = x.iter().map(|r| r.v).fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return R::c(f64::NEG_INFINITY);
    }
    let s: f64 = x.iter().map(|r| (r.v - m).exp()).sum();
    let parents: Vec<(R, f64)> = x.iter().map(|&r| (r, (r.v - m).exp() / s)).collect();
    t.node(m + s.ln(), &parents)
}

fn log_sum_exp_fn(t: &mut Tape, a: &[Val]) -> Eval<Val> {
    let x: Vec<R> = match a {
        [v] => v.flat(),
        [x, y] => vec![x.real()?, y.real()?],
        _ => return Err(EvalError::new("log_sum_exp takes a container or two reals")),
    };
    Ok(Val::Real(log_sum_exp(t, &x)))
}

/// `log_mix(θ, a, b) = log(θ e^a + (1 − θ) e^b)`, and `log_mix(θ_vec, lps)`.
fn log_mix(t: &mut Tape, a: &[Val]) -> Eval<Val> {
    let terms: Vec<R> = match a {
        [theta, x, y] if theta.is_scalar() => {
            let th = theta.real()?;
            let one_minus = t.sub(R::c(1.0), th);
            let (lt, lm) = (t.log(th), t.log(one_minus));
            vec![t.add(lt, x.real()?), t.add(lm, y.real()?)]
        }
        [theta, lps] => {
            let (th, lp) = (theta.flat(), lps.flat());
            if th.len() != lp.len() {
                return Err(EvalError::new(
                    "log_mix: the weights and the densities differ in size",
                ));
            }
            th.iter()
                .zip(&lp)
                .map(|(&w, &l)| {
                    let lw = t.log(w);
                    t.add(lw, l)
                })
                .collect()
        }
        _ => {
            return Err(EvalError::new(
                "log_mix takes (theta, lp1, lp2) or (weights, lps)",
            ))
        }
    };
    Ok(Val::Real(log_sum_exp(t, &terms)))
}

fn reduce_sum(t: &mut Tape, v: &Val) -> Val {
    match v {
        Val::Int(i) => Val::Int(*i),
        Val::Array(a) if a.iter().all(|x| matches!(x, Val::Int(_))) => {
            Val::Int(a.iter().filter_map(|x| x.int().ok()).sum())
        }
        other => Val::Real(t.sum(&other.flat())),
    }
}

fn extreme(t: &mut Tape, a: &[Val], max: bool) -> Eval<Val> {
    let pick = |x: f64, y: f64| if max { x > y } else { x < y };
    if let [x, y] = a {
        if let (Val::Int(p), Val::Int(q)) = (x, y) {
            return Ok(Val::Int(if pick(*p as f64, *q as f64) { *p } else { *q }));
        }
        let (p, q) = (x.real()?, y.real()?);
        let w = if pick(p.v, q.v) || p.v == q.v { p } else { q };
        return Ok(Val::Real(t.unary(w, w.v, 1.0)));
    }
    let v = one(a)?;
    if let Some(ints) = v.ints() {
        let best = if max {
            ints.iter().max()
        } else {
            ints.iter().min()
        };
        return best
            .map(|&b| Val::Int(b))
            .ok_or_else(|| EvalError::new("max/min of nothing"));
    }
    let x = v.flat();
    let mut best = *x
        .first()
        .ok_or_else(|| EvalError::new("max/min of nothing"))?;
    for &r in &x[1..] {
        if pick(r.v, best.v) {
            best = r;
        }
    }
    Ok(Val::Real(best))
}

fn variance(t: &mut Tape, x: &[R]) -> Eval<R> {
    if x.len() < 2 {
        return Err(EvalError::new("variance of fewer than two values"));
    }
    let n = x.len() as f64;
    let m = x.iter().map(|r| r.v).sum::<f64>() / n;
    let v = x.iter().map(|r| (r.v - m).powi(2)).sum::<f64>() / (n - 1.0);
    let parents: Vec<(R, f64)> = x
        .iter()
        .map(|&r| (r, 2.0 * (r.v - m) / (n - 1.0)))
        .collect();
    Ok(t.node(v, &parents))
}

fn squared_distance(t: &mut Tape, a: &[Val]) -> Eval<R> {
    let (x, y) = two(a)?;
    let (x, y) = (x.flat(), y.flat());
    if x.len() != y.len() {
        return Err(EvalError::new(
            "squared_distance of vectors of different sizes",
        ));
    }
    let d: Vec<R> = x.iter().zip(&y).map(|(&p, &q)| t.sub(p, q)).collect();
    Ok(t.dot(&d, &d))
}

fn softmax(t: &mut Tape, x: &[R], log: bool) -> Eval<Vec<R>> {
    let lse = log_sum_exp(t, x);
    Ok(x.iter()
        .map(|&r| {
            let l = t.sub(r, lse);
            if log {
                l
            } else {
                t.exp(l)
            }
        })
        .collect())
}

fn slice(v: &Val, start: usize, n: usize) -> Eval<Val> {
    if start + n > v.len() {
        return Err(EvalError::new(format!(
            "{n} entries from position {} of {} entries",
            start + 1,
            v.len()
        )));
    }
    Ok(match v {
        Val::Vector(x) => Val::Vector(x[start..start + n].to_vec()),
        Val::RowVector(x) => Val::RowVector(x[start..start + n].to_vec()),
        Val::Array(x) => Val::Array(x[start..start + n].to_vec()),
        other => return Err(EvalError::new(format!("a slice of a {}", other.kind()))),
    })
}

fn as_matrix(v: &Val) -> Eval<Mat> {
    match v {
        Val::Matrix(m) => Ok(m.clone()),
        Val::Vector(x) => Ok(Mat {
            rows: x.len(),
            cols: 1,
            data: x.clone(),
        }),
        Val::RowVector(x) => Ok(Mat {
            rows: 1,
            cols: x.len(),
            data: x.clone(),
        }),
        other => Err(EvalError::new(format!(
            "a matrix was expected, not a {}",
            other.kind()
        ))),
    }
}

fn append(a: &[Val], rows: bool) -> Eval<Val> {
    let (x, y) = two(a)?;
    match (x, y, rows) {
        (
            Val::Vector(_) | Val::Real(_) | Val::Int(_),
            Val::Vector(_) | Val::Real(_) | Val::Int(_),
            true,
        )
        | (
            Val::RowVector(_) | Val::Real(_) | Val::Int(_),
            Val::RowVector(_) | Val::Real(_) | Val::Int(_),
            false,
        ) if !(x.is_scalar() && y.is_scalar()) => {
            let mut v = x.flat();
            v.extend(y.flat());
            Ok(if rows {
                Val::Vector(v)
            } else {
                Val::RowVector(v)
            })
        }
        _ => {
            let (p, q) = (as_matrix(x)?, as_matrix(y)?);
            if rows {
                if p.cols != q.cols {
                    return Err(EvalError::new("append_row: the column counts differ"));
                }
                let mut data = Vec::with_capacity(p.data.len() + q.data.len());
                for j in 0..p.cols {
                    data.extend(p.col(j));
                    data.extend(q.col(j));
                }
                Ok(Val::Matrix(Mat {
                    rows: p.rows + q.rows,
                    cols: p.cols,
                    data,
                }))
            } else {
                if p.rows != q.rows {
                    return Err(EvalError::new("append_col: the row counts differ"));
                }
                let mut data = p.data.clone();
                data.extend(q.data.iter().copied());
                Ok(Val::Matrix(Mat {
                    rows: p.rows,
                    cols: p.cols + q.cols,
                    data,
                }))
            }
        }
    }
}
