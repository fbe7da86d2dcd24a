//! `--init FILE`: initial values of latents, as JSON in the CmdStan layout (`{"w": [0.1, 0.2],
//! "b": 0.5, "F": [[...], ...]}`, a matrix as a list of rows), checked against the declared
//! shapes with the same messages as data.

use crate::data::DataError;
use gpm_ir::{Dim, Model, Shape};
use gpm_runtime::data::Data;
use gpm_runtime::gibbs::Init;
use gpm_schedule::LatentId;
use std::path::Path;

fn bad(variable: &str, message: String, help: &str) -> DataError {
    DataError {
        variable: variable.into(),
        message,
        help: Some(help.into()),
        declared: None,
    }
}

/// The initial values in `path` for the latents of `model`, sized by `data`.
pub fn load(model: &Model, data: &Data, path: &Path) -> Result<Init, DataError> {
    // Read as the data files are: past a byte-order mark, within their limits (a FIFO that
    // never ends is an error, not a hang).
    let text = crate::data::read_json_text(path).map_err(|e| {
        bad(
            "",
            format!("cannot read the initial values `{}`: {e}", path.display()),
            "give a JSON file",
        )
    })?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(
            "",
            format!("`{}` is not JSON: {e}", path.display()),
            "write an object `{\"name\": value, ...}`",
        )
    })?;
    from_json(model, data, &json, &format!("`{}`", path.display()))
}

/// The initial values in the JSON value `json` (described as `what` in messages).
pub fn from_json(
    model: &Model,
    data: &Data,
    json: &serde_json::Value,
    what: &str,
) -> Result<Init, DataError> {
    let object = json.as_object().ok_or_else(|| {
        bad(
            "",
            format!("{what} is not a JSON object"),
            "write an object `{\"name\": value, ...}`",
        )
    })?;
    let size = |d: &Dim| match d {
        Dim::Const(n) => Some(*n),
        Dim::Var(v) => data.scalar(v).map(|x| x as usize),
    };
    let mut init = Init::default();
    for (name, value) in object {
        let Some(k) = model.latents.iter().position(|z| &z.name == name) else {
            let latents: Vec<&str> = model.latents.iter().map(|z| z.name.as_str()).collect();
            return Err(bad(
                name,
                format!("`{name}` in the initial values is not a latent of the model"),
                &format!("initial values are for the latents: {}", latents.join(", ")),
            ));
        };
        let latent = &model.latents[k];
        let number = |v: &serde_json::Value| v.as_f64().filter(|x| x.is_finite());
        let shape_error = || {
            bad(
                name,
                format!("the initial value of `{name}` does not have its declared shape, {}", latent.shape),
                "a scalar is a number, a vector a list, a matrix a list of rows; every value finite",
            )
        };
        let values: Vec<f64> = match &latent.shape {
            Shape::Scalar => vec![number(value).ok_or_else(shape_error)?],
            Shape::Vector(n) => {
                let list = value.as_array().ok_or_else(shape_error)?;
                if Some(list.len()) != size(n) {
                    return Err(shape_error());
                }
                list.iter()
                    .map(number)
                    .collect::<Option<_>>()
                    .ok_or_else(shape_error)?
            }
            Shape::Matrix(r, c) => {
                let rows = value.as_array().ok_or_else(shape_error)?;
                let (Some(nr), Some(nc)) = (size(r), size(c)) else {
                    return Err(shape_error());
                };
                if rows.len() != nr {
                    return Err(shape_error());
                }
                let mut cells = vec![0.0; nr * nc];
                for (i, row) in rows.iter().enumerate() {
                    let row = row
                        .as_array()
                        .filter(|r| r.len() == nc)
                        .ok_or_else(shape_error)?;
                    for (j, v) in row.iter().enumerate() {
                        // Stored column-major, the first index fastest.
                        cells[j * nr + i] = number(v).ok_or_else(shape_error)?;
                    }
                }
                cells
            }
        };
        init.latents.push((LatentId(k), values));
    }
    Ok(init)
}
