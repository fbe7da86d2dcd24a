//! Indexing as Stan defines it: single positions (1-based), ranges `lo:hi` and multi-indices
//! (integer arrays) over arrays, vectors and matrices, for reading and for assignment.

use crate::error::{Eval, EvalError};
use crate::value::{Mat, Val};

/// One index, evaluated.
#[derive(Debug, Clone)]
pub enum Ix {
    /// One position (1-based).
    One(i64),
    /// Several positions (1-based), from a multi-index; `None` is every position.
    Many(Option<Vec<i64>>),
    /// `lo:hi`, either end open (an end past the other is an empty range, as in Stan).
    Range(Option<i64>, Option<i64>),
}

impl Ix {
    /// A range made positions, for a container of `len` entries.
    fn resolve(&self, len: usize) -> Ix {
        match self {
            Ix::Range(lo, hi) => {
                let (lo, hi) = (lo.unwrap_or(1), hi.unwrap_or(len as i64));
                Ix::Many(Some((lo..=hi).collect()))
            }
            other => other.clone(),
        }
    }
}

fn position(i: i64, len: usize) -> Eval<usize> {
    if i >= 1 && (i as usize) <= len {
        Ok(i as usize - 1)
    } else {
        Err(EvalError::new(format!(
            "index {i} is out of range: the size is {len}"
        )))
    }
}

fn positions(ix: &Option<Vec<i64>>, len: usize) -> Eval<Vec<usize>> {
    match ix {
        None => Ok((0..len).collect()),
        Some(v) => v.iter().map(|&i| position(i, len)).collect(),
    }
}

/// `v[i, j, ...]` at single positions (1-based).
pub fn get_at(v: &Val, at: &[i64]) -> Eval<Val> {
    match (v, at) {
        (_, []) => Ok(v.clone()),
        (Val::Vector(x) | Val::RowVector(x), [i]) => Ok(Val::Real(x[position(*i, x.len())?])),
        (Val::Matrix(m), [i, j]) => Ok(Val::Real(
            m.at(position(*i, m.rows)?, position(*j, m.cols)?),
        )),
        (Val::Matrix(m), [i]) => {
            let i = position(*i, m.rows)?;
            Ok(Val::RowVector(m.row(i)))
        }
        (Val::Array(a), [i, rest @ ..]) => get_at(&a[position(*i, a.len())?], rest),
        _ => get(v, &at.iter().map(|&i| Ix::One(i)).collect::<Vec<_>>()),
    }
}

/// `v[ix...]`
pub fn get(v: &Val, ix: &[Ix]) -> Eval<Val> {
    let Some((first, rest)) = ix.split_first() else {
        return Ok(v.clone());
    };
    let first = &first.resolve(match v {
        Val::Matrix(m) => m.rows,
        other => other.len(),
    });
    match v {
        Val::Matrix(m) => {
            let row_ix = first;
            let col_ix = rest.first().map(|c| c.resolve(m.cols));
            let col_ix = col_ix.as_ref();
            let after = rest.get(1..).unwrap_or(&[]);
            if !after.is_empty() {
                return Err(EvalError::new("a matrix takes at most two indices"));
            }
            matrix_get(m, row_ix, col_ix)
        }
        Val::Vector(x) | Val::RowVector(x) => {
            if !rest.is_empty() {
                return Err(EvalError::new(format!(
                    "a {} takes one index, not {}",
                    v.kind(),
                    ix.len()
                )));
            }
            match first {
                Ix::One(i) => Ok(Val::Real(x[position(*i, x.len())?])),
                Ix::Range(..) => Err(EvalError::new("an unresolved range")),
                Ix::Many(m) => {
                    let sel = positions(m, x.len())?.into_iter().map(|k| x[k]).collect();
                    Ok(if matches!(v, Val::Vector(_)) {
                        Val::Vector(sel)
                    } else {
                        Val::RowVector(sel)
                    })
                }
            }
        }
        Val::Array(a) => match first {
            Ix::One(i) => get(&a[position(*i, a.len())?], rest),
            Ix::Range(..) => Err(EvalError::new("an unresolved range")),
            Ix::Many(m) => Ok(Val::Array(
                positions(m, a.len())?
                    .into_iter()
                    .map(|k| get(&a[k], rest))
                    .collect::<Eval<_>>()?,
            )),
        },
        other => Err(EvalError::new(format!(
            "a {} cannot be indexed",
            other.kind()
        ))),
    }
}

fn matrix_get(m: &Mat, rows: &Ix, cols: Option<&Ix>) -> Eval<Val> {
    let all_cols = Ix::Many(None);
    let cols = cols.unwrap_or(&all_cols);
    match (rows, cols) {
        (Ix::Range(..), _) | (_, Ix::Range(..)) => Err(EvalError::new("an unresolved range")),
        (Ix::One(i), Ix::One(j)) => Ok(Val::Real(
            m.at(position(*i, m.rows)?, position(*j, m.cols)?),
        )),
        (Ix::One(i), Ix::Many(c)) => {
            let i = position(*i, m.rows)?;
            Ok(Val::RowVector(
                positions(c, m.cols)?
                    .into_iter()
                    .map(|j| m.at(i, j))
                    .collect(),
            ))
        }
        (Ix::Many(r), Ix::One(j)) => {
            let j = position(*j, m.cols)?;
            Ok(Val::Vector(
                positions(r, m.rows)?
                    .into_iter()
                    .map(|i| m.at(i, j))
                    .collect(),
            ))
        }
        (Ix::Many(r), Ix::Many(c)) => {
            let (r, c) = (positions(r, m.rows)?, positions(c, m.cols)?);
            let mut data = Vec::with_capacity(r.len() * c.len());
            for &j in &c {
                for &i in &r {
                    data.push(m.at(i, j));
                }
            }
            Ok(Val::Matrix(Mat {
                rows: r.len(),
                cols: c.len(),
                data,
            }))
        }
    }
}

/// `target[i, j, ...] = value` at single positions (1-based).
pub fn set_at(target: &mut Val, at: &[i64], value: Val) -> Eval<()> {
    match (target, at) {
        (t, []) => assign_whole(t, value),
        (Val::Vector(x) | Val::RowVector(x), [i]) if value.is_scalar() => {
            let p = position(*i, x.len())?;
            x[p] = value.real()?;
            Ok(())
        }
        (Val::Matrix(m), [i, j]) if value.is_scalar() => {
            let (p, q) = (position(*i, m.rows)?, position(*j, m.cols)?);
            m.data[p + q * m.rows] = value.real()?;
            Ok(())
        }
        (Val::Array(a), [i, rest @ ..]) => {
            let p = position(*i, a.len())?;
            set_at(&mut a[p], rest, value)
        }
        (t, at) => set(
            t,
            &at.iter().map(|&i| Ix::One(i)).collect::<Vec<_>>(),
            value,
        ),
    }
}

/// `target[ix...] = value`.
pub fn set(target: &mut Val, ix: &[Ix], value: Val) -> Eval<()> {
    let Some((first, rest)) = ix.split_first() else {
        return assign_whole(target, value);
    };
    let first = &first.resolve(match &*target {
        Val::Matrix(m) => m.rows,
        other => other.len(),
    });
    match target {
        Val::Matrix(m) => {
            let cols = rest.first().map_or(Ix::Many(None), |c| c.resolve(m.cols));
            let cols = &cols;
            let (r, c) = (many(first, m.rows)?, many(cols, m.cols)?);
            let vals = value.flat();
            if vals.len() != r.len() * c.len() {
                return Err(size_error(r.len() * c.len(), vals.len()));
            }
            // A row vector assigned to a row runs along the columns; `flat` of a matrix value
            // is column-major, as the loops below.
            let mut k = 0;
            for &j in &c {
                for &i in &r {
                    m.data[i + j * m.rows] = vals[k];
                    k += 1;
                }
            }
            Ok(())
        }
        Val::Vector(x) | Val::RowVector(x) => {
            let pos = many(first, x.len())?;
            let vals = value.flat();
            if vals.len() != pos.len() {
                return Err(size_error(pos.len(), vals.len()));
            }
            for (p, v) in pos.into_iter().zip(vals) {
                x[p] = v;
            }
            Ok(())
        }
        Val::Array(a) => match first {
            Ix::One(i) => {
                let k = position(*i, a.len())?;
                set(&mut a[k], rest, value)
            }
            Ix::Range(..) => Err(EvalError::new("an unresolved range")),
            Ix::Many(m) => {
                let pos = positions(m, a.len())?;
                let Val::Array(items) = value else {
                    return Err(EvalError::new("an array slice takes an array"));
                };
                if items.len() != pos.len() {
                    return Err(size_error(pos.len(), items.len()));
                }
                for (p, item) in pos.into_iter().zip(items) {
                    set(&mut a[p], rest, item)?;
                }
                Ok(())
            }
        },
        other => Err(EvalError::new(format!(
            "a {} cannot be indexed",
            other.kind()
        ))),
    }
}

fn many(ix: &Ix, len: usize) -> Eval<Vec<usize>> {
    match ix.resolve(len) {
        Ix::One(i) => Ok(vec![position(i, len)?]),
        Ix::Many(m) => positions(&m, len),
        Ix::Range(..) => Err(EvalError::new("an unresolved range")),
    }
}

fn size_error(want: usize, got: usize) -> EvalError {
    EvalError::new(format!(
        "the assignment's sizes do not match: {want} places, {got} values"
    ))
}

/// `target = value` for a whole variable: the shape must match its declaration; an `int` is
/// promoted where a real is declared.
fn assign_whole(target: &mut Val, value: Val) -> Eval<()> {
    match (target, value) {
        (t, Val::Int(i)) if matches!(t, Val::Real(_)) => {
            *t = Val::Real(crate::ad::R::c(i as f64));
            Ok(())
        }
        (Val::Array(a), Val::Array(b)) if a.len() == b.len() => {
            for (x, y) in a.iter_mut().zip(b) {
                assign_whole(x, y)?;
            }
            Ok(())
        }
        (t, v) => {
            let fits = match (&*t, &v) {
                (Val::Int(_), Val::Int(_)) | (Val::Real(_), Val::Real(_)) => true,
                (Val::Vector(a), Val::Vector(b)) | (Val::RowVector(a), Val::RowVector(b)) => {
                    a.len() == b.len()
                }
                (Val::Matrix(a), Val::Matrix(b)) => a.rows == b.rows && a.cols == b.cols,
                _ => false,
            };
            if !fits {
                return Err(EvalError::new(format!(
                    "cannot assign a {} of size {:?} to a {} of size {:?}",
                    v.kind(),
                    v.dims(),
                    t.kind(),
                    t.dims()
                )));
            }
            *t = v;
            Ok(())
        }
    }
}
