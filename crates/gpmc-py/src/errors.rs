//! The exceptions the extension module raises, one per kind of failure (registered on the module
//! by `lib.rs`; the pure-Python package re-exports them).

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};

create_exception!(
    _gpmc,
    ModelError,
    PyException,
    "A model that does not parse, type-check or augment; the message is the rendered diagnostic."
);
create_exception!(
    _gpmc,
    DataError,
    PyValueError,
    "Data that do not match the model's declarations."
);
create_exception!(
    _gpmc,
    InferenceError,
    PyRuntimeError,
    "Inference that failed (a numerical failure, an unsupported method for this model)."
);
