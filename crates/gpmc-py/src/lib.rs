//! # gpmc-py
//!
//! The Python bindings of gpmc: the extension module `gpmc._gpmc`, wrapped by the pure-Python
//! package in `python/gpmc` (which builds ArviZ `InferenceData` and pandas frames). This crate
//! owns only the crossing between the two languages: Python values into
//! [`gpmc::data::Given`], runs of the `gpmc` library with the GIL released (Ctrl-C and progress
//! served from the calling thread), and results back as bytes, JSON or CSV text. It must not hold
//! any math nor a second implementation of anything the `gpmc` crate does.

// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]
use pyo3::prelude::*;

/// The CLI's allocator (see `gpmc`'s `main.rs`): the extension's own allocations reuse freed
/// matrices instead of faulting pages in again.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod checked;
mod cluster;
mod convert;
mod density;
mod detached;
mod errors;
use errors::{DataError, InferenceError, ModelError};
mod model;
mod variational;

/// SVI's defaults, the ones the CLI and the Rust library use (`SviConfig::default()`): the
/// Python API reads them rather than restating them.
#[pyfunction]
fn svi_defaults(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let d = gpm_runtime::svi::SviConfig::default();
    let out = pyo3::types::PyDict::new(py);
    out.set_item("batch", d.batch)?;
    out.set_item("iterations", d.iterations)?;
    out.set_item("forgetting", d.forgetting)?;
    out.set_item("delay", d.delay)?;
    out.set_item("hyper_rate", d.hyper_rate)?;
    out.set_item("class_batch", d.class_batch)?;
    Ok(out)
}

/// The module.
#[pymodule]
fn _gpmc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // The Cargo workspace's version: the one the wheel's metadata carries (maturin reads it).
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("DataError", py.get_type::<DataError>())?;
    m.add("InferenceError", py.get_type::<InferenceError>())?;
    m.add_function(wrap_pyfunction!(model::compile, m)?)?;
    m.add_function(wrap_pyfunction!(density::compile_density, m)?)?;
    m.add_function(wrap_pyfunction!(svi_defaults, m)?)?;
    m.add_class::<model::Compiled>()?;
    m.add_class::<density::DensityCompiled>()?;
    m.add_class::<variational::VariationalFit>()?;
    m.add_class::<cluster::Cluster>()?;
    Ok(())
}
