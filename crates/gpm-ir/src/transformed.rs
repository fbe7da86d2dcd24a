//! Transformed data: a `let` in the data block is a [`DataExpr`] over the data declared before
//! it, evaluated once when the data are read (Stan's `transformed data`). Operations are
//! element-wise with scalars broadcast (`log(earn)`, `x - mean(x)`, `x * z` for an interaction,
//! `g == 2` for an indicator), plus reductions to a scalar (`mean`, `sd`, `sum`) and a matrix's
//! column (`X[, j]`). Evaluation knows nothing of files or inference: the caller hands it the
//! values of the data it reads as [`DataArray`]s.

use crate::sx::{Sx, SymRole};
/// The operation of [`DataExpr::Binary`]: the language's operators, applied element-wise
/// (`==` gives 1 or 0).
pub use gpm_syntax::BinOp as DataOp;
use serde::Serialize;

/// A reduction of a vector or matrix to a scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reduction {
    /// The mean of every entry.
    Mean,
    /// The sample standard deviation (denominator `n − 1`, as R's and Stan's `sd`).
    Sd,
    /// The sum.
    Sum,
}

/// A transformed-data expression.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "node", rename_all = "snake_case")]
pub enum DataExpr {
    /// A literal.
    Num {
        /// Value.
        value: f64,
    },
    /// A datum (given or itself transformed).
    Data {
        /// Its name.
        name: String,
    },
    /// Column `column` (0-based) of a matrix datum.
    Column {
        /// The matrix.
        name: String,
        /// The column.
        column: usize,
    },
    /// `-a`.
    Neg {
        /// The operand.
        arg: Box<DataExpr>,
    },
    /// `a op b`, element-wise.
    Binary {
        /// The operation.
        op: DataOp,
        /// Left operand.
        left: Box<DataExpr>,
        /// Right operand.
        right: Box<DataExpr>,
    },
    /// A function of the scalar language applied element-wise: `formula` reads its arguments
    /// as the data symbols `_0`, `_1` (the library's own math, `library::apply_math`).
    Func {
        /// The function as written (for messages).
        name: String,
        /// The function of its arguments.
        formula: Sx,
        /// Its arguments.
        args: Vec<DataExpr>,
    },
    /// A reduction to a scalar.
    Reduce {
        /// Which.
        how: Reduction,
        /// Of what.
        arg: Box<DataExpr>,
    },
}

/// A value during evaluation: a scalar, a vector, or a matrix stored column by column.
#[derive(Debug, Clone, PartialEq)]
pub enum DataArray {
    /// One number.
    Scalar(f64),
    /// A vector.
    Vector(Vec<f64>),
    /// A `rows × cols` matrix, column-major.
    Matrix {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// Entries, column by column.
        values: Vec<f64>,
    },
}

impl DataArray {
    fn entries(&self) -> &[f64] {
        match self {
            DataArray::Scalar(v) => std::slice::from_ref(v),
            DataArray::Vector(v) => v,
            DataArray::Matrix { values, .. } => values,
        }
    }
    fn describe(&self) -> String {
        match self {
            DataArray::Scalar(_) => "a scalar".into(),
            DataArray::Vector(v) => format!("a vector of {}", v.len()),
            DataArray::Matrix { rows, cols, .. } => format!("a {rows} × {cols} matrix"),
        }
    }
    /// The same shape as `self` (or `other` where `self` is a scalar) with `f` applied entry by
    /// entry to the pair.
    fn zip(&self, other: &DataArray, f: impl Fn(f64, f64) -> f64) -> Result<DataArray, String> {
        use DataArray::*;
        Ok(match (self, other) {
            (Scalar(a), Scalar(b)) => Scalar(f(*a, *b)),
            (Scalar(a), o) => o.map(|b| f(*a, b)),
            (s, Scalar(b)) => s.map(|a| f(a, *b)),
            (Vector(a), Vector(b)) if a.len() == b.len() => {
                Vector(a.iter().zip(b).map(|(x, y)| f(*x, *y)).collect())
            }
            (
                Matrix { rows, cols, values },
                Matrix {
                    rows: r2,
                    cols: c2,
                    values: v2,
                },
            ) if rows == r2 && cols == c2 => Matrix {
                rows: *rows,
                cols: *cols,
                values: values.iter().zip(v2).map(|(x, y)| f(*x, *y)).collect(),
            },
            (a, b) => {
                return Err(format!(
                    "an element-wise operation between {} and {}",
                    a.describe(),
                    b.describe()
                ))
            }
        })
    }
    fn map(&self, f: impl Fn(f64) -> f64) -> DataArray {
        match self {
            DataArray::Scalar(v) => DataArray::Scalar(f(*v)),
            DataArray::Vector(v) => DataArray::Vector(v.iter().map(|x| f(*x)).collect()),
            DataArray::Matrix { rows, cols, values } => DataArray::Matrix {
                rows: *rows,
                cols: *cols,
                values: values.iter().map(|x| f(*x)).collect(),
            },
        }
    }
}

impl DataExpr {
    /// The data it reads, each once.
    pub fn reads(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }
    fn collect(&self, out: &mut Vec<String>) {
        match self {
            DataExpr::Num { .. } => {}
            DataExpr::Data { name } | DataExpr::Column { name, .. } => {
                if !out.contains(name) {
                    out.push(name.clone())
                }
            }
            DataExpr::Neg { arg } | DataExpr::Reduce { arg, .. } => arg.collect(out),
            DataExpr::Binary { left, right, .. } => {
                left.collect(out);
                right.collect(out);
            }
            DataExpr::Func { args, .. } => args.iter().for_each(|a| a.collect(out)),
        }
    }
    /// Whether it reduces data to a scalar somewhere (`mean`, `sd`, `sum`).
    pub fn has_reduction(&self) -> bool {
        match self {
            DataExpr::Reduce { .. } => true,
            DataExpr::Num { .. } | DataExpr::Data { .. } | DataExpr::Column { .. } => false,
            DataExpr::Neg { arg } => arg.has_reduction(),
            DataExpr::Binary { left, right, .. } => left.has_reduction() || right.has_reduction(),
            DataExpr::Func { args, .. } => args.iter().any(|a| a.has_reduction()),
        }
    }
    /// Its value, given the values of the data it reads; an error says what does not fit.
    pub fn eval(&self, get: &dyn Fn(&str) -> Option<DataArray>) -> Result<DataArray, String> {
        let missing = |n: &str| format!("`{n}` has no value");
        match self {
            DataExpr::Num { value } => Ok(DataArray::Scalar(*value)),
            DataExpr::Data { name } => get(name).ok_or_else(|| missing(name)),
            DataExpr::Column { name, column } => match get(name).ok_or_else(|| missing(name))? {
                DataArray::Matrix { rows, cols, values } if *column < cols => Ok(
                    DataArray::Vector(values[column * rows..(column + 1) * rows].to_vec()),
                ),
                DataArray::Matrix { cols, .. } => Err(format!(
                    "column {} of `{name}`, which has {cols} columns",
                    column + 1
                )),
                other => Err(format!(
                    "a column of `{name}`, which is {}",
                    other.describe()
                )),
            },
            DataExpr::Neg { arg } => Ok(arg.eval(get)?.map(|x| -x)),
            DataExpr::Binary { op, left, right } => {
                let (a, b) = (left.eval(get)?, right.eval(get)?);
                a.zip(&b, |x, y| match op {
                    DataOp::Add => x + y,
                    DataOp::Sub => x - y,
                    DataOp::Mul => x * y,
                    DataOp::Div => x / y,
                    DataOp::Pow => x.powf(y),
                    DataOp::Eq => f64::from(u8::from(x == y)),
                })
            }
            DataExpr::Func {
                name,
                formula,
                args,
            } => {
                let vals: Vec<DataArray> =
                    args.iter().map(|a| a.eval(get)).collect::<Result<_, _>>()?;
                let at = |x: &[f64]| {
                    let env = |_: SymRole, s: &str| {
                        s.strip_prefix('_')?
                            .parse::<usize>()
                            .ok()
                            .and_then(|k| x.get(k).copied())
                    };
                    formula.eval(&env).unwrap_or(f64::NAN)
                };
                match vals.as_slice() {
                    [a] => Ok(a.map(|x| at(&[x]))),
                    [a, b] => a.zip(b, |x, y| at(&[x, y])),
                    _ => Err(format!("`{name}` with {} arguments", vals.len())),
                }
            }
            DataExpr::Reduce { how, arg } => {
                let v = arg.eval(get)?;
                let x = v.entries();
                let n = x.len() as f64;
                let mean = x.iter().sum::<f64>() / n;
                Ok(DataArray::Scalar(match how {
                    Reduction::Sum => x.iter().sum(),
                    Reduction::Mean => mean,
                    Reduction::Sd => {
                        (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
                    }
                }))
            }
        }
    }
}

impl std::fmt::Display for DataExpr {
    /// As it could be written (fully parenthesised).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataExpr::Num { value } => write!(f, "{value}"),
            DataExpr::Data { name } => f.write_str(name),
            DataExpr::Column { name, column } => write!(f, "{name}[, {}]", column + 1),
            DataExpr::Neg { arg } => write!(f, "-({arg})"),
            DataExpr::Binary { op, left, right } => {
                write!(f, "({left} {} {right})", op.symbol())
            }
            DataExpr::Func { name, args, .. } => {
                let a: Vec<String> = args.iter().map(|x| x.to_string()).collect();
                write!(f, "{name}({})", a.join(", "))
            }
            DataExpr::Reduce { how, arg } => {
                let n = match how {
                    Reduction::Mean => "mean",
                    Reduction::Sd => "sd",
                    Reduction::Sum => "sum",
                };
                write!(f, "{n}({arg})")
            }
        }
    }
}
