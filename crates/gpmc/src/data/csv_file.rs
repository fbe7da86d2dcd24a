//! CSV data files: a header row naming each column (`y`, or `X.1, X.2` / `X[1], X[2]` for the
//! columns of a matrix `X`), then one row per observation, streamed — the file is never held as
//! text, and each value is stored once, as f64.

use super::{err, given_twice, DataError, Raw};
use nalgebra::DMatrix;
use std::collections::BTreeMap;

/// Read the CSV file `name` from `reader` into `into`: one column per datum, `X.1, X.2` (or
/// `X[1], X[2]`) gathered into the matrix `X`.
pub(super) fn read<R: std::io::Read>(
    reader: R,
    name: &str,
    into: &mut BTreeMap<String, Raw>,
) -> Result<(), DataError> {
    let mut rdr = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(reader);
    let headers: Vec<String> = rdr
        .headers()
        .map_err(|e| {
            err(
                "",
                format!("`{name}` is not a CSV data file (its header: {e})"),
                None,
            )
        })?
        .iter()
        .map(|s| s.to_string())
        .collect();
    check_headers(&headers, name)?;
    let mut columns: Vec<Vec<f64>> = vec![vec![]; headers.len()];
    let mut rec = csv::StringRecord::new();
    for row in 0.. {
        let more = rdr
            .read_record(&mut rec)
            .map_err(|e| err("", format!("`{name}`: bad CSV row {}: {e}", row + 2), None))?;
        if !more {
            break;
        }
        for (k, field) in rec.iter().enumerate() {
            let v: f64 = field.parse().map_err(|_| {
                err(
                    headers[k].as_str(),
                    format!(
                        "`{name}` row {}, column `{}`: `{field}` is not a number",
                        row + 2,
                        headers[k]
                    ),
                    None,
                )
            })?;
            columns[k].push(v);
        }
    }
    // Group `X.1, X.2` / `X[1], X[2]` into matrix rows.
    let mut matrices: BTreeMap<String, Vec<(usize, String, Vec<f64>)>> = BTreeMap::new();
    for (h, col) in headers.iter().zip(columns) {
        match matrix_column(h, name)? {
            Some((base, k)) => {
                matrices
                    .entry(base.to_string())
                    .or_default()
                    .push((k, h.clone(), col))
            }
            None => {
                if into.contains_key(h) {
                    return Err(given_twice(h));
                }
                into.insert(h.clone(), Raw::Column(col));
            }
        }
    }
    for (base, cols) in matrices {
        let matrix = matrix_of_columns(&base, cols, name)?;
        if into.contains_key(&base) {
            return Err(given_twice(&base));
        }
        into.insert(base, matrix);
    }
    Ok(())
}

/// The matrix `base` from its CSV columns `(number, header, values)`: every column from 1 up
/// there once, stored column-major as nalgebra does.
fn matrix_of_columns(
    base: &str,
    mut cols: Vec<(usize, String, Vec<f64>)>,
    name: &str,
) -> Result<Raw, DataError> {
    cols.sort_by_key(|c| c.0);
    // `X.1, X.3` is not a matrix with two columns: every column from 1 up must be there once.
    let hint = Some("a matrix is given as columns NAME.1, NAME.2, … NAME.D (or NAME[1] …)");
    for k in 0..cols.len() {
        let (j, header) = (cols[k].0, &cols[k].1);
        if k > 0 && cols[k - 1].0 == j {
            let first = &cols[k - 1].1;
            return Err(err(
                base,
                format!("`{name}`: `{first}` and `{header}` both give column {j} of `{base}`"),
                hint,
            ));
        }
        if j != k + 1 {
            return Err(err(
                base,
                format!(
                    "`{name}`: `{base}.{}` is missing (the next column is `{header}`)",
                    k + 1
                ),
                hint,
            ));
        }
    }
    let n = cols.first().map_or(0, |c| c.2.len());
    let ncols = cols.len();
    // Column-major, as nalgebra stores it: the columns are appended and freed one by one.
    let mut buf = Vec::with_capacity(n * ncols);
    for (_, _, c) in cols {
        buf.extend_from_slice(&c);
    }
    Ok(Raw::Matrix(DMatrix::from_vec(n, ncols, buf)))
}

/// The matrix and column a CSV header `X.3` / `X[3]` names, `None` for a plain name; a column
/// number that is 0 or does not fit (`X.99999999999999999999`) is an error naming the header,
/// not a column silently taken for an unknown datum.
fn matrix_column<'h>(header: &'h str, name: &str) -> Result<Option<(&'h str, usize)>, DataError> {
    // `check_headers` has refused a column part that is not digits.
    let Some((base, k)) = split_column(header) else {
        return Ok(None);
    };
    match k.parse::<usize>() {
        Ok(j) if (1..=MAX_CSV_COLUMN).contains(&j) => Ok(Some((base, j))),
        _ => Err(err(
            base,
            format!("`{name}`: the column `{header}` names column {k} of `{base}`, which cannot be"),
            Some("columns are numbered from 1: NAME.1, NAME.2, … (a CSV file holds at most 10⁷ columns)"),
        )),
    }
}

/// A header `X.3` or `X[3]` as its name and column part (`X`, `3`); `None` for a plain name.
fn split_column(header: &str) -> Option<(&str, &str)> {
    header
        .split_once('.')
        .or_else(|| header.strip_suffix(']').and_then(|s| s.split_once('[')))
}

/// The largest column number a CSV header may give (beyond any file gpmc reads).
const MAX_CSV_COLUMN: usize = 10_000_000;

/// A CSV header must name its columns (`y`, `X.1`, `X[1]`), each once: a binary or empty file,
/// a header `y,y` or a blank column name is refused here, naming the problem.
fn check_headers(headers: &[String], name: &str) -> Result<(), DataError> {
    if headers.is_empty() || headers.iter().all(|h| h.is_empty()) {
        return Err(err(
            "",
            format!(
                "`{name}` is empty: a CSV data file starts with a header row naming its columns"
            ),
            None,
        ));
    }
    let is_name = |h: &str| {
        let base = split_column(h).map_or((h, None), |(b, k)| (b, Some(k)));
        let ident = |s: &str| {
            s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        ident(base.0)
            && base
                .1
                .is_none_or(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit()))
    };
    for (k, h) in headers.iter().enumerate() {
        if !is_name(h) {
            let shown: String = h.chars().take(40).flat_map(char::escape_debug).collect();
            return Err(err(
                "",
                format!(
                    "`{name}` is not a CSV data file: column {} of its header is `{shown}`, not a name",
                    k + 1
                ),
                Some("the header names each column: `y`, or `X.1`, `X.2` for a matrix"),
            ));
        }
        if let Some(first) = headers[..k].iter().position(|g| g == h) {
            return Err(err(
                h,
                format!(
                    "`{name}`: the header names `{h}` twice (columns {} and {})",
                    first + 1,
                    k + 1
                ),
                None,
            ));
        }
    }
    Ok(())
}
