//! A Stan program run under NUTS on its whole log density (`gpmc::density`) from Python: the
//! same check and run as `gpmc check` / `gpmc infer` on such a program, results as bytes and
//! JSON for `python/gpmc` to build ArviZ `InferenceData`.

use crate::convert::rows_bytes;
use crate::detached::{self, Shared};
use crate::errors::{DataError, InferenceError, ModelError};
use gpmc::density::DensityChecked;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Compile a Stan program the Gaussian-latent path refuses, for NUTS on its whole log
/// density; a program neither path takes raises `ModelError` with both paths' reasons.
#[pyfunction]
pub fn compile_density(name: &str, source: &str) -> PyResult<DensityCompiled> {
    let latent = match gpmc::check(name, source) {
        Err(f) => f,
        Ok(c) => match &c.schedule {
            Err(e) => gpmc::Failure::new(
                name,
                source,
                vec![gpmc::Diagnostic::plain("gpm::schedule", e.to_string())],
            ),
            Ok(_) => {
                return Err(ModelError::new_err(
                    "this program takes the Gaussian-latent path: compile it with `compile`",
                ))
            }
        },
    };
    gpmc::density::check(name, source, &latent)
        .map(|c| DensityCompiled {
            checked: Arc::new(c),
        })
        .map_err(|f| ModelError::new_err(format!("{}{f}", f.render())))
}

/// A compiled whole-log-density program.
#[pyclass(frozen)]
pub struct DensityCompiled {
    checked: Arc<DensityChecked>,
}

#[pymethods]
impl DensityCompiled {
    /// `gpmc check --format json` for it.
    fn report_json(&self) -> String {
        gpmc::density::json(&self.checked).to_string()
    }

    /// `gpmc check` for it.
    fn report_text(&self) -> String {
        gpmc::density::text(&self.checked)
    }

    /// NUTS: (column names, draw rows as float64 bytes, chains, draws per chain, summary JSON).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[pyo3(signature = (data_json, chains, draws, warmup, thin, seed, progress = None, adapt_delta = None, max_treedepth = None, metric = None))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        data_json: &str,
        chains: usize,
        draws: usize,
        warmup: usize,
        thin: usize,
        seed: u64,
        progress: Option<Bound<'py, PyAny>>,
        adapt_delta: Option<f64>,
        max_treedepth: Option<u64>,
        metric: Option<String>,
    ) -> PyResult<(Vec<String>, Bound<'py, PyBytes>, usize, usize, String)> {
        let data: serde_json::Value = serde_json::from_str(data_json)
            .map_err(|e| DataError::new_err(format!("the data are not JSON: {e}")))?;
        let serde_json::Value::Object(data) = data else {
            return Err(DataError::new_err("the data are a dict of named values"));
        };
        let config = gpm_runtime::gibbs::GibbsConfig {
            first_chain: 0,
            chains,
            warmup,
            draws,
            thin,
            seed,
            nuts: gpm_runtime::nuts::NutsControl::new(adapt_delta, max_treedepth)
                .and_then(|c| c.with_metric(metric.as_deref()))
                .map_err(pyo3::exceptions::PyValueError::new_err)?,
        };
        let shared = Arc::new(Shared::default());
        let total = ((warmup + draws * thin) * chains) as u64;
        let work = {
            let (c, shared) = (Arc::clone(&self.checked), Arc::clone(&shared));
            move || {
                let progress = |_: usize, _: usize| {
                    shared.done.fetch_add(1, Ordering::Relaxed);
                };
                gpmc::density::run(&c, &data, &config, &progress, &shared.stop)
            }
        };
        let r =
            detached::run(py, shared, total, progress.as_ref(), work)?.map_err(|e| match e {
                gpmc::infer::InferError::Interrupted(m) => {
                    pyo3::exceptions::PyKeyboardInterrupt::new_err(m)
                }
                gpmc::infer::InferError::Runtime(gpm_runtime::RuntimeError::BadData(m)) => {
                    DataError::new_err(m)
                }
                e => InferenceError::new_err(e.to_string()),
            })?;
        let summary = gpmc::density::summary_json(&self.checked, &r, &config).to_string();
        let rows = rows_bytes(
            py,
            r.chains
                .iter()
                .flat_map(|ch| ch.iter().map(|row| row.as_slice())),
        );
        Ok((r.names.clone(), rows, r.chains.len(), r.draws, summary))
    }
}
