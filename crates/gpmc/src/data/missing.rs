//! The error for a datum the data do not give, worded for what went wrong: a size is read off
//! the vectors and matrices declared with it, so a missing size usually means one of those is
//! missing (a key typo: `x` for `X`) or misshaped (a 1-D array where a matrix is declared) —
//! that datum is named, with its declaration, the keys the data do have, and a did-you-mean.

use super::{err, raw_text, DataError, Raw};
use gpm_ir::{DataVar, Elem, Model, Shape};
use std::collections::BTreeMap;

/// The error for `d`, absent from `raw` (what is left to check); `given` are all the keys the
/// data gave.
pub(super) fn missing(
    model: &Model,
    raw: &BTreeMap<String, Raw>,
    given: &[String],
    d: &DataVar,
) -> DataError {
    let uses_size = |x: &DataVar| super::shape_uses(&x.shape, &d.name);
    // The data that would have given this size, first the absent, then the misshaped.
    let givers: Vec<&DataVar> = model
        .data
        .iter()
        .filter(|x| x.derived.is_none() && uses_size(x))
        .collect();
    // A datum given in the wrong shape first: where responses are optional (prediction) an
    // absent `y` is not the mistake when `X` came as a 1-D array.
    if let Some((x, r)) = givers.iter().find_map(|x| raw.get(&x.name).map(|r| (x, r))) {
        let help = match &x.shape {
            Shape::Matrix(..) => "give a 2-D array, one row per observation — one point is a 1 × D array (numpy: `X.reshape(1, -1)`), one input column an N × 1 array (`x.reshape(-1, 1)`); a pandas DataFrame needs `columns={...}` mapping the matrix to its columns",
            _ => "give a 1-D array, or give the size",
        };
        return err(
            &x.name,
            format!(
                "`{}` is declared `{}` but the data give {}, so the size `{}` cannot be read off it",
                x.name,
                declared_type(x),
                raw_text(r),
                d.name
            ),
            Some(help),
        );
    }
    if let Some(x) = givers.iter().find(|x| !raw.contains_key(&x.name)) {
        return absent(given, x, &format!(" (it gives the size `{}`)", d.name));
    }
    absent(given, d, "")
}

/// `d` is absent: its declaration, the keys given, and the closest of them.
fn absent(given: &[String], d: &DataVar, note: &str) -> DataError {
    let keys: Vec<&str> = given.iter().map(|k| k.as_str()).collect();
    let given = if keys.is_empty() {
        "the data give nothing".to_string()
    } else {
        let shown: Vec<String> = keys.iter().take(12).map(|k| format!("`{k}`")).collect();
        let more = if keys.len() > 12 { ", …" } else { "" };
        format!("the data have {}{more}", shown.join(", "))
    };
    let help = match gpm_ir::did_you_mean(&d.name, keys.iter().copied()) {
        Some(guess) => format!("{guess} (names are case-sensitive)"),
        None => "add it to the data".into(),
    };
    err(
        &d.name,
        format!(
            "`{}` is missing{note}: the model declares `{} : {}`; {given}",
            d.name,
            d.name,
            declared_type(d)
        ),
        Some(&help),
    )
}

/// The type as the model's data block writes it: `int`, `real`, `vector[N]`, `int[N]`,
/// `matrix[N, D]`.
pub(super) fn declared_type(d: &DataVar) -> String {
    match (&d.shape, d.elem) {
        (Shape::Scalar, Elem::Int) => "int".into(),
        (Shape::Scalar, Elem::Real) => "real".into(),
        (Shape::Vector(n), Elem::Int) => format!("int[{n}]"),
        (Shape::Vector(n), Elem::Real) => format!("vector[{n}]"),
        (shape, _) => shape.to_string(),
    }
}
