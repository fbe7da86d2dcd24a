//! Python's data checked against a model, and the library's errors raised as the Python
//! exceptions they are: what every entry point (the compiled model, a variational fit) shares.

use crate::convert::given;
use crate::errors::{DataError, InferenceError};
use gpmc::infer::InferError;
use gpmc::Checked;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// An inference error as the Python exception it is.
pub(crate) fn raise(c: &Checked, e: InferError) -> PyErr {
    match e {
        InferError::Data(d) => {
            // The sentence and what to do (the CLI shows the help under its diagnostic).
            let help = d
                .help
                .as_ref()
                .map_or(String::new(), |h| format!("\nhelp: {h}"));
            let r = miette::Report::new(d)
                .with_source_code(miette::NamedSource::new(c.name.clone(), c.source.clone()));
            DataError::new_err(format!("{r}{help}"))
        }
        InferError::Interrupted(m) => pyo3::exceptions::PyKeyboardInterrupt::new_err(m),
        e => InferenceError::new_err(e.to_string()),
    }
}

/// Training data checked against the model.
pub(crate) fn train_data(
    c: &Checked,
    data: &Bound<'_, PyDict>,
) -> PyResult<gpm_runtime::data::Data> {
    gpmc::data::from_given(&c.model, given(data)?).map_err(|e| raise(c, e.into()))
}

/// Test data (responses optional) checked against the model.
/// Sizes left out are the training data's.
pub(crate) fn test_data(
    c: &Checked,
    data: &Bound<'_, PyDict>,
    train: &gpm_runtime::data::Data,
) -> PyResult<gpm_runtime::data::Data> {
    gpmc::data::test_from_given(&c.model, given(data)?, Some(train)).map_err(|e| raise(c, e.into()))
}
