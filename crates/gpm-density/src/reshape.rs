//! Stan's functions that cut a matrix or reshape values without arithmetic: `to_matrix`,
//! `col`, `row`, `sub_col`, `sub_row` (entries keep their tape nodes).

use crate::error::EvalError;
use crate::value::{size, Mat, Val};

/// The reshaping functions, by name.
pub const RESHAPING: &[(&str, crate::value::Builtin)] = &[
    ("to_matrix", |_, a| match a {
        [v, r, c] => {
            let (r, c, data) = (size(r)?, size(c)?, v.flat());
            if r * c != data.len() {
                return Err(EvalError::new(format!(
                    "to_matrix: {} values do not fill {r} × {c}",
                    data.len()
                )));
            }
            Ok(Val::Matrix(Mat {
                rows: r,
                cols: c,
                data,
            }))
        }
        [m @ Val::Matrix(_)] => Ok(m.clone()),
        // `to_matrix(array[,] real)`: the outer array gives the rows.
        [Val::Array(rows)] if rows.first().is_some_and(|r| matches!(r, Val::Array(_))) => {
            array_rows(rows)
        }
        [Val::Vector(v)] => Ok(Val::Matrix(Mat {
            rows: v.len(),
            cols: 1,
            data: v.clone(),
        })),
        [Val::RowVector(v)] => Ok(Val::Matrix(Mat {
            rows: 1,
            cols: v.len(),
            data: v.clone(),
        })),
        _ => Err(EvalError::new(
            "to_matrix takes (values, rows, cols), a vector, a row vector or a 2-d array",
        )),
    }),
    ("col", |_, a| match a {
        [Val::Matrix(m), j] => {
            let j = size(j)?;
            if j == 0 || j > m.cols {
                return Err(EvalError::new(format!(
                    "col: column {j} of a matrix with {}",
                    m.cols
                )));
            }
            Ok(Val::Vector(m.col(j - 1)))
        }
        _ => Err(EvalError::new("col takes (matrix, column)")),
    }),
    ("row", |_, a| match a {
        [Val::Matrix(m), i] => {
            let i = size(i)?;
            if i == 0 || i > m.rows {
                return Err(EvalError::new(format!(
                    "row: row {i} of a matrix with {}",
                    m.rows
                )));
            }
            Ok(Val::RowVector(m.row(i - 1)))
        }
        _ => Err(EvalError::new("row takes (matrix, row)")),
    }),
    ("sub_col", |_, a| match a {
        [Val::Matrix(m), i, j, n] => {
            let (i, j, n) = (size(i)?, size(j)?, size(n)?);
            if i == 0 || j == 0 || j > m.cols || i - 1 + n > m.rows {
                return Err(EvalError::new("sub_col: out of range"));
            }
            Ok(Val::Vector(
                (0..n).map(|k| m.at(i - 1 + k, j - 1)).collect(),
            ))
        }
        _ => Err(EvalError::new("sub_col takes (matrix, i, j, rows)")),
    }),
    ("sub_row", |_, a| match a {
        [Val::Matrix(m), i, j, n] => {
            let (i, j, n) = (size(i)?, size(j)?, size(n)?);
            if i == 0 || j == 0 || i > m.rows || j - 1 + n > m.cols {
                return Err(EvalError::new("sub_row: out of range"));
            }
            Ok(Val::RowVector(
                (0..n).map(|k| m.at(i - 1, j - 1 + k)).collect(),
            ))
        }
        _ => Err(EvalError::new("sub_row takes (matrix, i, j, cols)")),
    }),
];

/// A matrix from an array of rows (each an array of reals).
fn array_rows(rows: &[Val]) -> crate::error::Eval<Val> {
    let flat: Vec<Vec<crate::ad::R>> = rows.iter().map(Val::flat).collect();
    Mat::from_rows(&flat)
        .map(Val::Matrix)
        .ok_or_else(|| EvalError::new("to_matrix: the rows of the array differ in size"))
}
