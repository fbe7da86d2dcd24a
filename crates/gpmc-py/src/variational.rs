//! A variational fit held for Python: its summary, draws from `q` in the layout of Gibbs draws,
//! and prediction at new inputs.

use crate::checked::{raise, test_data};
use crate::convert::{hypers_json, rows_bytes};
use gpmc::Checked;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::Arc;

/// A CAVI, SVI or particle-flow fit.
#[pyclass(frozen, module = "gpmc._gpmc")]
pub struct VariationalFit {
    pub(crate) checked: Arc<Checked>,
    pub(crate) data: Arc<gpm_runtime::data::Data>,
    pub(crate) fit: gpmc::variational::Fit,
}

#[pymethods]
impl VariationalFit {
    /// The run's summary (what `summary.json` holds), as JSON.
    fn summary_json(&self) -> String {
        self.fit.summary.to_string()
    }

    /// The hyperparameter values used, as JSON.
    fn hypers_json(&self) -> String {
        hypers_json(&self.fit.values)
    }

    /// One line saying what happened.
    #[getter]
    fn headline(&self) -> String {
        self.fit.headline.clone()
    }

    /// `draws` draws from `q` in the layout of Gibbs draws: (column names, rows as float64
    /// bytes).
    fn draws<'py>(
        &self,
        py: Python<'py>,
        draws: usize,
        seed: u64,
        log_lik: bool,
        ppc: bool,
    ) -> PyResult<(Vec<String>, Bound<'py, PyBytes>)> {
        let c = &self.checked;
        let sampler =
            gpmc::infer::posterior_sampler(c, &self.data, &self.fit.values, &self.fit.blocks)
                .map_err(|e| raise(c, e))?
                .with_pointwise(gpm_runtime::gibbs::Pointwise { log_lik, ppc })
                .map_err(|e| raise(c, e.into()))?;
        let chain = py
            .detach(|| sampler.draws_from_q(&self.fit.blocks, draws, seed))
            .map_err(|e| raise(c, e.into()))?;
        let columns = gpmc::infer::column_names(c, &chain.layout);
        Ok((
            columns,
            rows_bytes(py, chain.rows.iter().map(|r| r.as_slice())),
        ))
    }

    /// Predictions at `test` (responses optional): (predictions CSV, metrics JSON).
    fn predict(&self, test: &Bound<'_, PyDict>) -> PyResult<(String, String)> {
        let c = &self.checked;
        let test = test_data(c, test, &self.data)?;
        let (csv, metrics) = gpmc::infer::predict_variational(
            c,
            &self.data,
            &test,
            &self.fit.values,
            &self.fit.blocks,
        )
        .map_err(|e| raise(c, e))?;
        Ok((csv, metrics.to_string()))
    }
}
