//! Stan's operators on values: integer arithmetic, real arithmetic with derivatives, the
//! element-wise and matrix products, comparisons and logic.

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::value::{Mat, Val};
use gpm_stan::ast::BinOp;

/// `a op b`.
pub fn binary(t: &mut Tape, op: BinOp, a: &Val, b: &Val) -> Eval<Val> {
    if let (Val::Int(x), Val::Int(y)) = (a, b) {
        if let Some(v) = int_binary(op, *x, *y)? {
            return Ok(v);
        }
    }
    match op {
        BinOp::Or | BinOp::And => {
            let (x, y) = (truth(a)?, truth(b)?);
            Ok(Val::Int(i64::from(if op == BinOp::Or {
                x || y
            } else {
                x && y
            })))
        }
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let (x, y) = (a.real()?.v, b.real()?.v);
            let holds = match op {
                BinOp::Eq => x == y,
                BinOp::Ne => x != y,
                BinOp::Lt => x < y,
                BinOp::Le => x <= y,
                BinOp::Gt => x > y,
                _ => x >= y,
            };
            Ok(Val::Int(i64::from(holds)))
        }
        BinOp::Add => zip(t, a, b, &Tape::add),
        BinOp::Sub => zip(t, a, b, &Tape::sub),
        BinOp::EltMul => zip(t, a, b, &Tape::mul),
        BinOp::EltDiv => zip(t, a, b, &Tape::div),
        BinOp::EltPow => zip(t, a, b, &pow),
        BinOp::Pow => zip(t, &scalar(a)?, &scalar(b)?, &pow),
        BinOp::Div if b.is_scalar() => zip(t, a, b, &Tape::div),
        BinOp::Mul => multiply(t, a, b),
        BinOp::IntDiv | BinOp::Mod => Err(EvalError::new(format!(
            "`{}` takes two integers",
            op.symbol()
        ))),
        BinOp::Div | BinOp::LeftDiv => Err(EvalError::new(format!(
            "`{}` between a {} and a {} is not evaluated yet",
            op.symbol(),
            a.kind(),
            b.kind()
        ))),
    }
}

fn scalar(v: &Val) -> Eval<Val> {
    Ok(Val::Real(v.real()?))
}

/// Integer arithmetic (`None`: the operator makes a real, `2 ^ 3`).
fn int_binary(op: BinOp, x: i64, y: i64) -> Eval<Option<Val>> {
    let checked = |r: Option<i64>| {
        r.map(|v| Some(Val::Int(v)))
            .ok_or_else(|| EvalError::new(format!("integer overflow in `{x} {} {y}`", op.symbol())))
    };
    match op {
        BinOp::Add => checked(x.checked_add(y)),
        BinOp::Sub => checked(x.checked_sub(y)),
        BinOp::Mul => checked(x.checked_mul(y)),
        // Stan's `int / int` is integer division (rounding toward zero).
        BinOp::Div | BinOp::IntDiv | BinOp::Mod if y == 0 => Err(EvalError::new(format!(
            "integer division by zero in `{x} {} 0`",
            op.symbol()
        ))),
        BinOp::Div | BinOp::IntDiv => checked(x.checked_div(y)),
        BinOp::Mod => checked(x.checked_rem(y)),
        _ => Ok(None),
    }
}

fn truth(v: &Val) -> Eval<bool> {
    Ok(v.real()?.v != 0.0)
}

/// `a ^ b` on reals (an integer power of a negative base allowed).
pub fn pow(t: &mut Tape, a: R, b: R) -> R {
    let v = a.v.powf(b.v);
    let da = if b.v == 0.0 {
        0.0
    } else {
        b.v * a.v.powf(b.v - 1.0)
    };
    let db = if a.v > 0.0 { v * a.v.ln() } else { 0.0 };
    t.binary(a, b, v, da, db)
}

/// An element-wise operation: two values of one shape, or a scalar with anything.
pub fn zip(t: &mut Tape, a: &Val, b: &Val, f: &dyn Fn(&mut Tape, R, R) -> R) -> Eval<Val> {
    match (a, b) {
        (x, y) if x.is_scalar() && y.is_scalar() => Ok(Val::Real(f(t, x.real()?, y.real()?))),
        (x, y) if y.is_scalar() => {
            let s = y.real()?;
            Ok(x.map_reals(&mut |e| f(t, e, s)))
        }
        (x, y) if x.is_scalar() => {
            let s = x.real()?;
            Ok(y.map_reals(&mut |e| f(t, s, e)))
        }
        (Val::Vector(x), Val::Vector(y)) if x.len() == y.len() => Ok(Val::Vector(
            x.iter().zip(y).map(|(&p, &q)| f(t, p, q)).collect(),
        )),
        (Val::RowVector(x), Val::RowVector(y)) if x.len() == y.len() => Ok(Val::RowVector(
            x.iter().zip(y).map(|(&p, &q)| f(t, p, q)).collect(),
        )),
        (Val::Matrix(x), Val::Matrix(y)) if x.rows == y.rows && x.cols == y.cols => {
            Ok(Val::Matrix(Mat {
                rows: x.rows,
                cols: x.cols,
                data: x
                    .data
                    .iter()
                    .zip(&y.data)
                    .map(|(&p, &q)| f(t, p, q))
                    .collect(),
            }))
        }
        (Val::Array(x), Val::Array(y)) if x.len() == y.len() => Ok(Val::Array(
            x.iter()
                .zip(y)
                .map(|(p, q)| zip(t, p, q, f))
                .collect::<Eval<_>>()?,
        )),
        _ => Err(EvalError::new(format!(
            "the sizes or types do not match: a {} of size {:?} and a {} of size {:?}",
            a.kind(),
            a.dims(),
            b.kind(),
            b.dims()
        ))),
    }
}

/// `a * b`: scaling, the dot product, matrix-vector and matrix-matrix products.
fn multiply(t: &mut Tape, a: &Val, b: &Val) -> Eval<Val> {
    if a.is_scalar() || b.is_scalar() {
        return zip(t, a, b, &Tape::mul);
    }
    let mismatch = || {
        EvalError::new(format!(
            "cannot multiply a {} of size {:?} by a {} of size {:?}",
            a.kind(),
            a.dims(),
            b.kind(),
            b.dims()
        ))
    };
    match (a, b) {
        (Val::RowVector(x), Val::Vector(y)) if x.len() == y.len() => Ok(Val::Real(t.dot(x, y))),
        (Val::Vector(x), Val::RowVector(y)) => {
            let mut data = Vec::with_capacity(x.len() * y.len());
            for &q in y {
                for &p in x {
                    data.push(t.mul(p, q));
                }
            }
            Ok(Val::Matrix(Mat {
                rows: x.len(),
                cols: y.len(),
                data,
            }))
        }
        (Val::Matrix(m), Val::Vector(y)) if m.cols == y.len() => Ok(Val::Vector(
            (0..m.rows).map(|i| t.dot(&m.row(i), y)).collect(),
        )),
        (Val::RowVector(x), Val::Matrix(m)) if m.rows == x.len() => Ok(Val::RowVector(
            (0..m.cols).map(|j| t.dot(x, &m.col(j))).collect(),
        )),
        (Val::Matrix(p), Val::Matrix(q)) if p.cols == q.rows => {
            let mut data = Vec::with_capacity(p.rows * q.cols);
            for j in 0..q.cols {
                let col = q.col(j);
                for i in 0..p.rows {
                    data.push(t.dot(&p.row(i), &col));
                }
            }
            Ok(Val::Matrix(Mat {
                rows: p.rows,
                cols: q.cols,
                data,
            }))
        }
        _ => Err(mismatch()),
    }
}

/// `e'`
pub fn transpose(v: &Val) -> Eval<Val> {
    match v {
        Val::Vector(x) => Ok(Val::RowVector(x.clone())),
        Val::RowVector(x) => Ok(Val::Vector(x.clone())),
        Val::Matrix(m) => {
            let mut data = Vec::with_capacity(m.data.len());
            for i in 0..m.rows {
                data.extend(m.row(i));
            }
            Ok(Val::Matrix(Mat {
                rows: m.cols,
                cols: m.rows,
                data,
            }))
        }
        other => Err(EvalError::new(format!(
            "cannot transpose a {}",
            other.kind()
        ))),
    }
}

/// `-e`
pub fn negate(t: &mut Tape, v: &Val) -> Val {
    match v {
        Val::Int(i) => Val::Int(-i),
        other => other.map_reals(&mut |x| t.neg(x)),
    }
}
