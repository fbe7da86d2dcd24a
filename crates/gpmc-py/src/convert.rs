//! Python values into the library's types, and the library's results back: data dicts into
//! [`Given`] values (checked by `gpmc::data` exactly as a file's values are), hyperparameter
//! values to and from JSON, draw rows to bytes.

use gpm_runtime::kernels::HyperValues;
use gpmc::data::Given;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// The values of an array the Python package hands over as `(address, shape)`: the address of
/// the first of `shape.iter().product()` float64s in C order.
///
/// # Safety
/// The caller (the `gpmc` Python package's `_arrays`) passes the data pointer of a C-contiguous,
/// aligned float64 numpy array of that shape, which it keeps referenced for the whole call; the
/// values are read here, with the GIL held, before any work starts. (The limited Python API
/// this abi3 module is built against has no buffer protocol before Python 3.11.)
unsafe fn array_values<'a>(address: usize, len: usize) -> &'a [f64] {
    if len == 0 {
        return &[];
    }
    std::slice::from_raw_parts(address as *const f64, len)
}

/// A dict of Python numbers and arrays (as `(address, shape)` pairs, see [`array_values`]; 0-d,
/// 1-d or 2-d, rows = observations) as given values. Each array is copied once, into the
/// runtime's layout (a matrix column-major, transposed while copied).
pub fn given(data: &Bound<'_, PyDict>) -> PyResult<Vec<(String, Given)>> {
    let mut out = Vec::with_capacity(data.len());
    for (k, v) in data.iter() {
        let name: String = k.extract()?;
        if let Ok(x) = v.extract::<f64>() {
            out.push((name, Given::Scalar(x)));
            continue;
        }
        let (address, shape): (usize, Vec<usize>) = v.extract().map_err(|_| {
            crate::errors::DataError::new_err(format!("`{name}`: expected a number or an array"))
        })?;
        // SAFETY: see `array_values`; only the package's own wrapper calls this module.
        let values = unsafe { array_values(address, shape.iter().product()) };
        let value = match shape.as_slice() {
            [] => Given::Scalar(values.first().copied().unwrap_or(f64::NAN)),
            [_] => Given::Vector(values.to_vec()),
            [r, c] => Given::Matrix(nalgebra::DMatrix::from_row_slice(*r, *c, values)),
            s => {
                return Err(crate::errors::DataError::new_err(format!(
                "`{name}`: an array of {} dimensions (a datum is a number, a vector or a matrix)",
                s.len()
            )))
            }
        };
        out.push((name, value));
    }
    Ok(out)
}

/// Rows handed over as `(address, shape)` (see [`array_values`]): a copy of their values.
pub fn rows(array: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let (address, shape): (usize, Vec<usize>) = array.extract()?;
    // SAFETY: see `array_values`.
    Ok(unsafe { array_values(address, shape.iter().product()) }.to_vec())
}

/// Hyperparameter values as JSON (every number exactly: serde_json writes the shortest
/// representation that reads back to the same double).
pub fn hypers_json(hv: &HyperValues) -> String {
    serde_json::json!({"scalars": hv.scalars, "vectors": hv.vectors}).to_string()
}

/// [`hypers_json`] read back.
pub fn hypers_from_json(text: &str) -> PyResult<HyperValues> {
    let bad = || crate::errors::InferenceError::new_err("malformed hyperparameter values");
    let v: serde_json::Value = serde_json::from_str(text).map_err(|_| bad())?;
    let numbers = |v: &serde_json::Value| -> Option<Vec<f64>> {
        v.as_array()?
            .iter()
            .map(|x| x.as_f64().or(x.is_null().then_some(f64::NAN)))
            .collect()
    };
    let scalars = numbers(&v["scalars"]).ok_or_else(bad)?;
    let vectors = v["vectors"]
        .as_array()
        .and_then(|vs| vs.iter().map(numbers).collect::<Option<Vec<_>>>())
        .ok_or_else(bad)?;
    Ok(HyperValues { scalars, vectors })
}

/// Rows of values as the bytes of native-endian float64s, row after row (numpy reads them
/// without a copy: `np.frombuffer`).
pub fn rows_bytes<'py, 'a>(
    py: Python<'py>,
    rows: impl Iterator<Item = &'a [f64]>,
) -> Bound<'py, PyBytes> {
    let mut bytes = Vec::new();
    for r in rows {
        for v in r {
            bytes.extend_from_slice(&v.to_ne_bytes());
        }
    }
    PyBytes::new(py, &bytes)
}
