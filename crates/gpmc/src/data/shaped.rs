//! A datum's raw value read as the shape it is declared with: a vector from a column, an array
//! of numbers or a one-column matrix; a matrix from CSV columns or an array of rows; a scalar
//! from a number. Every mismatch names the datum, what the data give and what to write.

use super::{err, missing, raw_text, DataError, Raw};
use gpm_ir::{DataVar, Dim, Shape};
use gpm_runtime::data::Value;
use nalgebra::DMatrix;

/// A size read from the data already checked.
pub(super) type SizeOf<'a> = &'a dyn Fn(&Dim) -> Result<usize, DataError>;

/// `r` as the value of the datum `d` (errors without the declaration's span: the caller adds it).
pub(super) fn shaped(d: &DataVar, r: Raw, dim: SizeOf) -> Result<Value, DataError> {
    let count_mismatch = |what: &str, got: usize, want: usize| {
        err(
            &d.name,
            format!(
                "`{}` has {got} {what} but is declared {} with {want}",
                d.name, d.shape,
            ),
            None,
        )
    };
    Ok(match (&d.shape, r) {
        (Shape::Vector(n), Raw::Column(v)) => {
            let n = dim(n)?;
            if v.len() != n {
                return Err(count_mismatch("entries", v.len(), n));
            }
            Value::Vector(v)
        }
        (Shape::Matrix(rows, cols), Raw::Matrix(m)) => {
            let (nr, nc) = (dim(rows)?, dim(cols)?);
            if m.nrows() != nr {
                return Err(count_mismatch("rows", m.nrows(), nr));
            }
            if m.ncols() != nc {
                return Err(count_mismatch("columns", m.ncols(), nc));
            }
            Value::Matrix(std::sync::Arc::new(m))
        }
        (Shape::Scalar, Raw::Num(x)) => Value::Scalar(x),
        (Shape::Vector(n), Raw::Array(items)) => Value::Vector(vector_of(d, &items, dim(n)?)?),
        (Shape::Matrix(r, c), Raw::Array(rows)) => {
            let m = matrix_of(d, &rows, dim(r)?, dim(c)?)?;
            Value::Matrix(std::sync::Arc::new(m))
        }
        // A flat list where rows are declared (`"X": [0.1, 0.2]`).
        (Shape::Matrix(..), Raw::Column(v)) => {
            return Err(err(
                &d.name,
                format!(
                    "`{}` is declared {} but the data give a flat list of {} numbers: row 1 of the matrix `{}` is not an array",
                    d.name,
                    d.shape,
                    v.len(),
                    d.name
                ),
                Some("write a matrix as an array of rows: [[1, 2], [3, 4]]"),
            ))
        }
        // A one-column matrix where a vector is declared (numpy's `y[:, None]`, a one-column
        // frame): its column, as scikit-learn reads it.
        (Shape::Vector(n), Raw::Matrix(m)) if m.ncols() == 1 => {
            let n = dim(n)?;
            if m.nrows() != n {
                return Err(count_mismatch("rows", m.nrows(), n));
            }
            Value::Vector(m.column(0).iter().copied().collect())
        }
        (s, r) => {
            let help = match s {
                Shape::Vector(_) => Some("give a 1-D array, one entry per observation"),
                Shape::Matrix(..) => Some("give a 2-D array, one row per observation"),
                Shape::Scalar => Some("give one number"),
            };
            return Err(err(
                &d.name,
                format!(
                    "`{}` is declared `{}` but the data give {}",
                    d.name,
                    missing::declared_type(d),
                    raw_text(&r)
                ),
                help,
            ));
        }
    })
}

/// A vector of `n` entries from a JSON array, each a number.
fn vector_of(d: &DataVar, items: &[Raw], n: usize) -> Result<Vec<f64>, DataError> {
    if items.len() != n {
        return Err(err(
            &d.name,
            format!(
                "`{}` has {} entries but is declared {} with {} = {n}",
                d.name,
                items.len(),
                d.shape,
                dim_name(&d.shape)
            ),
            None,
        ));
    }
    let mut v = Vec::with_capacity(n);
    for (k, it) in items.iter().enumerate() {
        match it {
            Raw::Num(x) => v.push(*x),
            other => {
                return Err(err(
                    &d.name,
                    format!(
                        "entry {} of `{}` is {}, not a number",
                        k + 1,
                        d.name,
                        raw_text(other)
                    ),
                    None,
                ))
            }
        }
    }
    Ok(v)
}

/// An `nr × nc` matrix from a JSON array of rows, each of `nc` numbers.
fn matrix_of(d: &DataVar, rows: &[Raw], nr: usize, nc: usize) -> Result<DMatrix<f64>, DataError> {
    if rows.len() != nr {
        return Err(err(
            &d.name,
            format!(
                "`{}` has {} rows but is declared {} with {} rows",
                d.name,
                rows.len(),
                d.shape,
                nr
            ),
            None,
        ));
    }
    // Every row's length first: `nc` comes from the data and may be anything
    // (a size of 3·10⁵⁸ once reached the allocation below: a fuzzer's find).
    if let Some((i, len)) = rows.iter().enumerate().find_map(|(i, row)| match row {
        Raw::Array(cells) if cells.len() != nc => Some((i, cells.len())),
        Raw::Column(cells) if cells.len() != nc => Some((i, cells.len())),
        _ => None,
    }) {
        return Err(err(
            &d.name,
            format!(
                "row {} of `{}` has {len} columns but the declaration says {nc}",
                i + 1,
                d.name,
            ),
            None,
        ));
    }
    let mut m = DMatrix::zeros(nr, nc);
    for (i, row) in rows.iter().enumerate() {
        if let Raw::Column(cells) = row {
            // A numeric row (JSON arrays of numbers are read as columns).
            for (j, x) in cells.iter().enumerate() {
                m[(i, j)] = *x;
            }
            continue;
        }
        let Raw::Array(cells) = row else {
            return Err(err(
                &d.name,
                format!("row {} of the matrix `{}` is not an array", i + 1, d.name),
                Some("write a matrix as an array of rows: [[1, 2], [3, 4]]"),
            ));
        };
        for (j, c) in cells.iter().enumerate() {
            match c {
                Raw::Num(x) => m[(i, j)] = *x,
                other => {
                    return Err(err(
                        &d.name,
                        format!(
                            "entry [{}, {}] of `{}` is {}, not a number",
                            i + 1,
                            j + 1,
                            d.name,
                            raw_text(other)
                        ),
                        None,
                    ))
                }
            }
        }
    }
    Ok(m)
}

fn dim_name(s: &Shape) -> String {
    match s {
        Shape::Vector(n) => n.to_string(),
        _ => "?".into(),
    }
}
