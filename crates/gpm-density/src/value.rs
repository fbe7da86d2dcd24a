//! The values a Stan program computes with: integers, reals (with their tape nodes), vectors,
//! row vectors, matrices (column-major, as Stan stores them) and arrays of any of these.

use crate::ad::R;
use crate::error::EvalError;

/// A built-in function on whole values (the functions' and covariances' tables).
pub type Builtin = fn(&mut crate::ad::Tape, &[Val]) -> crate::error::Eval<Val>;

/// A value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// `int`
    Int(i64),
    /// `real`
    Real(R),
    /// `vector` (a column).
    Vector(Vec<R>),
    /// `row_vector`
    RowVector(Vec<R>),
    /// `matrix`, column-major.
    Matrix(Mat),
    /// `array[...] T`
    Array(Vec<Val>),
}

/// An int that is a size (not negative).
pub fn size(v: &Val) -> Result<usize, EvalError> {
    let n = v.int()?;
    usize::try_from(n).map_err(|_| EvalError::new(format!("a size cannot be negative ({n})")))
}

/// A matrix: `rows × cols` entries, column-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Mat {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Entries, column by column.
    pub data: Vec<R>,
}

impl Mat {
    /// A matrix from its rows (`[r1, r2]`, `to_matrix(array[,] real)`); `None` when the rows
    /// differ in size.
    pub fn from_rows(rows: &[Vec<R>]) -> Option<Mat> {
        let cols = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|r| r.len() != cols) {
            return None;
        }
        let mut data = Vec::with_capacity(rows.len() * cols);
        for j in 0..cols {
            data.extend(rows.iter().map(|r| r[j]));
        }
        Some(Mat {
            rows: rows.len(),
            cols,
            data,
        })
    }

    /// Entry `(i, j)`, 0-based.
    pub fn at(&self, i: usize, j: usize) -> R {
        self.data[i + j * self.rows]
    }

    /// A matrix of one value.
    pub fn filled(rows: usize, cols: usize, v: R) -> Mat {
        Mat {
            rows,
            cols,
            data: vec![v; rows * cols],
        }
    }

    /// Row `i` (0-based).
    pub fn row(&self, i: usize) -> Vec<R> {
        (0..self.cols).map(|j| self.at(i, j)).collect()
    }

    /// Column `j` (0-based).
    pub fn col(&self, j: usize) -> Vec<R> {
        self.data[j * self.rows..(j + 1) * self.rows].to_vec()
    }
}

impl Val {
    /// The type's name, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Val::Int(_) => "int",
            Val::Real(_) => "real",
            Val::Vector(_) => "vector",
            Val::RowVector(_) => "row_vector",
            Val::Matrix(_) => "matrix",
            Val::Array(_) => "array",
        }
    }

    /// The value as a real scalar (an `int` promoted).
    pub fn real(&self) -> Result<R, EvalError> {
        match self {
            Val::Int(i) => Ok(R::c(*i as f64)),
            Val::Real(r) => Ok(*r),
            other => Err(EvalError::new(format!(
                "a real was expected here, not a {}",
                other.kind()
            ))),
        }
    }

    /// The value as an integer.
    pub fn int(&self) -> Result<i64, EvalError> {
        match self {
            Val::Int(i) => Ok(*i),
            other => Err(EvalError::new(format!(
                "an int was expected here, not a {}",
                other.kind()
            ))),
        }
    }

    /// Every real entry in Stan's order (a matrix column by column, an array element by
    /// element): what a vectorised density or a reduction reads.
    pub fn flat(&self) -> Vec<R> {
        let mut out = Vec::new();
        self.flat_into(&mut out);
        out
    }

    fn flat_into(&self, out: &mut Vec<R>) {
        match self {
            Val::Int(i) => out.push(R::c(*i as f64)),
            Val::Real(r) => out.push(*r),
            Val::Vector(v) | Val::RowVector(v) => out.extend_from_slice(v),
            Val::Matrix(m) => out.extend_from_slice(&m.data),
            Val::Array(a) => a.iter().for_each(|x| x.flat_into(out)),
        }
    }

    /// Entries of a scalar or a one-level container.
    pub fn len(&self) -> usize {
        match self {
            Val::Int(_) | Val::Real(_) => 1,
            Val::Vector(v) | Val::RowVector(v) => v.len(),
            Val::Matrix(m) => m.data.len(),
            Val::Array(a) => a.len(),
        }
    }

    /// Whether it holds one value.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Val::Int(_) | Val::Real(_))
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same shape with every real entry from `f` (ints stay ints unless `f` is applied
    /// to them as reals by the caller).
    pub fn map_reals(&self, f: &mut dyn FnMut(R) -> R) -> Val {
        match self {
            Val::Int(i) => Val::Real(f(R::c(*i as f64))),
            Val::Real(r) => Val::Real(f(*r)),
            Val::Vector(v) => Val::Vector(v.iter().map(|&x| f(x)).collect()),
            Val::RowVector(v) => Val::RowVector(v.iter().map(|&x| f(x)).collect()),
            Val::Matrix(m) => Val::Matrix(Mat {
                rows: m.rows,
                cols: m.cols,
                data: m.data.iter().map(|&x| f(x)).collect(),
            }),
            Val::Array(a) => Val::Array(a.iter().map(|x| x.map_reals(f)).collect()),
        }
    }

    /// Integer entries (an `int` or an array of them): a multi-index.
    pub fn ints(&self) -> Option<Vec<i64>> {
        match self {
            Val::Int(i) => Some(vec![*i]),
            Val::Array(a) => a.iter().map(|x| x.int().ok()).collect(),
            _ => None,
        }
    }

    /// The shape's sizes, outermost first (`array[2] vector[3]`: `[2, 3]`).
    pub fn dims(&self) -> Vec<usize> {
        match self {
            Val::Int(_) | Val::Real(_) => vec![],
            Val::Vector(v) | Val::RowVector(v) => vec![v.len()],
            Val::Matrix(m) => vec![m.rows, m.cols],
            Val::Array(a) => {
                let mut d = vec![a.len()];
                if let Some(first) = a.first() {
                    d.extend(first.dims());
                }
                d
            }
        }
    }

    /// Every real entry in CmdStan's column order (the first index running fastest), with
    /// the 1-based index suffix of each (`.2.1`).
    pub fn columns(&self) -> Vec<(String, f64)> {
        let dims = self.dims();
        let n: usize = dims.iter().product();
        let mut out = Vec::with_capacity(n);
        for k in 0..n {
            let mut rest = k;
            let mut idx = Vec::with_capacity(dims.len());
            for &d in &dims {
                idx.push(rest % d);
                rest /= d;
            }
            let v = self.entry(&idx).unwrap_or(f64::NAN);
            let suffix: String = idx.iter().map(|i| format!(".{}", i + 1)).collect();
            out.push((suffix, v));
        }
        out
    }

    fn entry(&self, idx: &[usize]) -> Option<f64> {
        match (self, idx) {
            (Val::Int(i), []) => Some(*i as f64),
            (Val::Real(r), []) => Some(r.v),
            (Val::Vector(v) | Val::RowVector(v), [i]) => v.get(*i).map(|r| r.v),
            (Val::Matrix(m), [i, j]) => (*i < m.rows && *j < m.cols).then(|| m.at(*i, *j).v),
            (Val::Array(a), [i, rest @ ..]) => a.get(*i).and_then(|x| x.entry(rest)),
            _ => None,
        }
    }
}
