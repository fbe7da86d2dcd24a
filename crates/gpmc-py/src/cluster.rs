//! The calls of a distributed CAVI fit (`gpmc.cluster` in Python, on Dask): the crossing only —
//! data dicts in, the state as JSON and the shards' statistics as float64 bytes out; the work is
//! `gpmc::cluster`'s.

use crate::checked::{raise, test_data, train_data};
use crate::convert::{hypers_from_json, hypers_json, rows_bytes};
use crate::InferenceError;
use gpm_runtime::cluster::GlobalState;
use gpm_runtime::shard::{InducingStats, ShardStats};
use gpmc::Checked;
use nalgebra::{DMatrix, DVector};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::Arc;

/// One block's statistics as they travel: `M`, rows summed, `Σ wφφᵀ` and `Σ rφ` as bytes.
type WireBlock<'py> = (usize, usize, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

fn state_from(json: &str) -> PyResult<GlobalState> {
    serde_json::from_str(json).map_err(|e| {
        InferenceError::new_err(format!(
            "not a distributed fit's state ({e}); pass what start or step returned"
        ))
    })
}

fn floats(b: &[u8], len: usize, what: &str) -> PyResult<Vec<f64>> {
    if b.len() != 8 * len {
        return Err(InferenceError::new_err(format!(
            "shard statistics: {what} has {} bytes, expected {}",
            b.len(),
            8 * len
        )));
    }
    Ok(b.chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// A compiled model's distributed-fit calls (`Compiled.cluster()`); picklable state stays in
/// Python as JSON and bytes, so this holds only the model.
#[pyclass(frozen, module = "gpmc._gpmc")]
pub struct Cluster {
    pub(crate) checked: Arc<Checked>,
}

#[pymethods]
impl Cluster {
    /// Start a distributed fit from a sample of the rows: (hyperparameters JSON, state JSON).
    fn start(&self, sample: &Bound<'_, PyDict>) -> PyResult<(String, String)> {
        let c = &self.checked;
        let sample = train_data(c, sample)?;
        let (hv, state) = gpmc::cluster::start(c, &sample).map_err(|e| raise(c, e))?;
        let state = serde_json::to_string(&state).expect("state JSON");
        Ok((hypers_json(&hv), state))
    }

    /// One shard's statistics at `state`, over its rows `subset` (0-based; `None`: all): (local
    /// ELBO terms, per block (M, rows, Σwφφᵀ, Σrφ)).
    #[pyo3(signature = (hypers, state, rows, subset = None))]
    fn shard<'py>(
        &self,
        py: Python<'py>,
        hypers: &str,
        state: &str,
        rows: &Bound<'_, PyDict>,
        subset: Option<Vec<usize>>,
    ) -> PyResult<(f64, Vec<WireBlock<'py>>)> {
        let c = &self.checked;
        let (hv, state) = (hypers_from_json(hypers)?, state_from(state)?);
        let rows = train_data(c, rows)?;
        let s = py
            .detach(|| gpmc::cluster::shard(c, &rows, &hv, &state, subset.as_deref()))
            .map_err(|e| raise(c, e))?;
        let blocks = s
            .blocks
            .iter()
            .map(|b| {
                (
                    b.linear.len(),
                    b.rows,
                    rows_bytes(py, std::iter::once(b.curvature.as_slice())),
                    rows_bytes(py, std::iter::once(b.linear.as_slice())),
                )
            })
            .collect();
        Ok((s.local, blocks))
    }

    /// One step from the shards' statistics (summed in the order given): CAVI with the default
    /// `scale = rho = 1`, an SVI natural-gradient step with `scale = N/|B|` and `rho` the step
    /// size. Returns (next state JSON, the ELBO (estimate) at `state`).
    #[pyo3(signature = (state, shards, scale = 1.0, rho = 1.0))]
    fn step(
        &self,
        state: &str,
        shards: Vec<(f64, Vec<(usize, usize, Vec<u8>, Vec<u8>)>)>,
        scale: f64,
        rho: f64,
    ) -> PyResult<(String, f64)> {
        let state = state_from(state)?;
        let mut stats = Vec::with_capacity(shards.len());
        for (local, blocks) in shards {
            let mut bs = Vec::with_capacity(blocks.len());
            for (m, rows, curvature, linear) in blocks {
                bs.push(InducingStats {
                    curvature: DMatrix::from_vec(m, m, floats(&curvature, m * m, "Σwφφᵀ")?),
                    linear: DVector::from_vec(floats(&linear, m, "Σrφ")?),
                    rows,
                });
            }
            stats.push(ShardStats { blocks: bs, local });
        }
        let (next, elbo) = state
            .natural_step(&stats, scale, rho)
            .map_err(|e| raise(&self.checked, e.into()))?;
        Ok((serde_json::to_string(&next).expect("state JSON"), elbo))
    }

    /// Predictions at `test` from a distributed fit's state: (predictions CSV, metrics JSON).
    fn predict(
        &self,
        hypers: &str,
        state: &str,
        sample: &Bound<'_, PyDict>,
        test: &Bound<'_, PyDict>,
    ) -> PyResult<(String, String)> {
        let c = &self.checked;
        let (hv, state) = (hypers_from_json(hypers)?, state_from(state)?);
        let sample = train_data(c, sample)?;
        let test = test_data(c, test, &sample)?;
        let (csv, metrics) =
            gpmc::cluster::predict(c, &sample, &test, &hv, &state).map_err(|e| raise(c, e))?;
        Ok((csv, metrics.to_string()))
    }
}
