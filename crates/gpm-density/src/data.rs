//! Data as CmdStan's JSON gives them, bound to the program's `data` declarations: every size,
//! type and bound checked, an error naming the datum and what was expected.

use crate::ad::R;
use crate::error::{Eval, EvalError};
use crate::program::{Base, Constraint, Decl};
use crate::transform::Shape;
use crate::value::Val;
use serde_json::Value;

/// A datum's value from JSON, shaped as declared.
pub fn value(d: &Decl, shape: &Shape, json: Option<&Value>) -> Eval<Val> {
    let Some(json) = json else {
        return Err(EvalError::new(format!(
            "the datum `{}` is missing: the data file must give it ({})",
            d.name,
            describe(shape)
        )));
    };
    let mut reals = Vec::with_capacity(shape.elements() * shape.element_len());
    collect(json, shape, 0, &mut reals).map_err(|why| {
        EvalError::new(format!(
            "the datum `{}` does not fit its declaration ({}): {why}",
            d.name,
            describe(shape)
        ))
        .at(d.span)
    })?;
    if shape.base == Base::Int {
        if let Some(bad) = reals.iter().find(|x| x.fract() != 0.0 || !x.is_finite()) {
            return Err(EvalError::new(format!(
                "the datum `{}` is declared int but holds {bad}",
                d.name
            ))
            .at(d.span));
        }
    }
    shape.fill(&mut reals.into_iter().map(R::c))
}

fn describe(shape: &Shape) -> String {
    let base = match shape.base {
        Base::Int => "int".to_string(),
        Base::Real => "real".to_string(),
        Base::Vector => format!("vector[{}]", shape.sizes[0]),
        Base::RowVector => format!("row_vector[{}]", shape.sizes[0]),
        Base::Matrix => format!("matrix[{}, {}]", shape.sizes[0], shape.sizes[1]),
    };
    if shape.array.is_empty() {
        base
    } else {
        let dims: Vec<String> = shape.array.iter().map(|d| d.to_string()).collect();
        format!("array[{}] {base}", dims.join(", "))
    }
}

fn number(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n} is not a number")),
        Value::String(s) => match s.as_str() {
            "inf" | "Inf" | "Infinity" | "+inf" => Ok(f64::INFINITY),
            "-inf" | "-Inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            "NaN" | "nan" => Ok(f64::NAN),
            other => Err(format!("\"{other}\" is not a number")),
        },
        other => Err(format!("{other} is not a number")),
    }
}

fn list(v: &Value, n: usize) -> Result<&Vec<Value>, String> {
    match v {
        Value::Array(a) if a.len() == n => Ok(a),
        Value::Array(a) => Err(format!("{} entries where {n} are declared", a.len())),
        other => Err(format!("{other} where a list of {n} is declared")),
    }
}

/// Reals in Stan's order: arrays outermost, matrices column by column (JSON gives them by row).
fn collect(v: &Value, shape: &Shape, level: usize, out: &mut Vec<f64>) -> Result<(), String> {
    if let Some(&n) = shape.array.get(level) {
        for item in list(v, n)? {
            collect(item, shape, level + 1, out)?;
        }
        return Ok(());
    }
    match shape.base {
        Base::Int | Base::Real => out.push(match v {
            // A one-entry list for a scalar is how R writes it.
            Value::Array(a) if a.len() == 1 => number(&a[0])?,
            other => number(other)?,
        }),
        Base::Vector | Base::RowVector => {
            for x in list(v, shape.sizes[0])? {
                out.push(number(x)?);
            }
        }
        Base::Matrix => {
            let (r, c) = (shape.sizes[0], shape.sizes[1]);
            let rows = list(v, r)?;
            let mut m = vec![0.0; r * c];
            for (i, row) in rows.iter().enumerate() {
                for (j, x) in list(row, c)?.iter().enumerate() {
                    m[i + j * r] = number(x)?;
                }
            }
            out.extend(m);
        }
    }
    Ok(())
}

/// Check a datum against its declared bounds.
pub fn check_bounds(d: &Decl, v: &Val, lower: Option<&Val>, upper: Option<&Val>) -> Eval<()> {
    if !matches!(d.constraint, Constraint::Bounded { .. }) {
        return Ok(());
    }
    let x = v.flat();
    let bound = |b: Option<&Val>| b.map(Val::flat);
    let (lo, hi) = (bound(lower), bound(upper));
    for (i, r) in x.iter().enumerate() {
        let at = |b: &Vec<R>| b[if b.len() == 1 { 0 } else { i.min(b.len() - 1) }].v;
        if let Some(l) = &lo {
            if r.v < at(l) {
                return Err(EvalError::new(format!(
                    "the datum `{}` holds {} (entry {}), below its lower bound {}",
                    d.name,
                    r.v,
                    i + 1,
                    at(l)
                ))
                .at(d.span));
            }
        }
        if let Some(h) = &hi {
            if r.v > at(h) {
                return Err(EvalError::new(format!(
                    "the datum `{}` holds {} (entry {}), above its upper bound {}",
                    d.name,
                    r.v,
                    i + 1,
                    at(h)
                ))
                .at(d.span));
            }
        }
    }
    Ok(())
}
