//! The calls of a distributed CAVI fit (`gpmc.cluster` in Python, on Dask): the crossing only —
//! data dicts in, the state as JSON and the shards' statistics as float64 bytes out; the work is
//! `gpmc::cluster`'s.

use crate::checked::{raise, test_data, train_data};
use crate::convert::{hypers_from_json, hypers_json, rows_bytes};
use crate::errors::InferenceError;
use gpm_runtime::cluster::GlobalState;
use gpm_runtime::shard::{InducingStats, ShardStats};
use gpmc::Checked;
use nalgebra::{DMatrix, DVector};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::Arc;

/// One block's statistics as they travel: `M`, rows summed, `Σ wφφᵀ` and `Σ rφ` as bytes.
type WireBlock<'py> = (usize, usize, Bound<'py, PyBytes>, Bound<'py, PyBytes>);
/// The same, back from Python.
type FromWire = (usize, usize, Vec<u8>, Vec<u8>);

fn state_from(json: &str) -> PyResult<GlobalState> {
    serde_json::from_str(json).map_err(|e| {
        InferenceError::new_err(format!(
            "not a distributed fit's state ({e}); pass what start or step returned"
        ))
    })
}

/// The arguments every call past `start` reads: the hyperparameters and state as `start` or
/// `step` returned them, and rows of data (a shard's, or the sample the fit started from).
fn bind(
    c: &Checked,
    hypers: &str,
    state: &str,
    rows: &Bound<'_, PyDict>,
) -> PyResult<(
    gpm_runtime::kernels::HyperValues,
    GlobalState,
    gpm_runtime::data::Data,
)> {
    Ok((
        hypers_from_json(hypers)?,
        state_from(state)?,
        train_data(c, rows)?,
    ))
}

fn floats(b: &[u8], len: usize, what: &str) -> PyResult<Vec<f64>> {
    if b.len() != 8 * len {
        return Err(InferenceError::new_err(format!(
            "{what} has {} bytes, expected {}",
            b.len(),
            8 * len
        )));
    }
    Ok(b.chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// One block's statistics for the wire.
fn wire<'py>(py: Python<'py>, b: &InducingStats) -> WireBlock<'py> {
    (
        b.linear.len(),
        b.rows,
        rows_bytes(py, std::iter::once(b.curvature.as_slice())),
        rows_bytes(py, std::iter::once(b.linear.as_slice())),
    )
}

/// One block's statistics from the wire.
fn unwire(
    (m, rows, curvature, linear): (usize, usize, Vec<u8>, Vec<u8>),
) -> PyResult<InducingStats> {
    Ok(InducingStats {
        curvature: DMatrix::from_vec(m, m, floats(&curvature, m * m, "shard statistics: Σwφφᵀ")?),
        linear: DVector::from_vec(floats(&linear, m, "shard statistics: Σrφ")?),
        rows,
    })
}

/// A compiled model's distributed-fit calls (`Compiled.cluster()`); picklable state stays in
/// Python as JSON and bytes, so this holds only the model.
#[pyclass(frozen, module = "gpmc._gpmc")]
pub struct Cluster {
    pub(crate) checked: Arc<Checked>,
}

#[pymethods]
impl Cluster {
    /// Start a distributed fit from a sample of the rows: (hyperparameters JSON, state JSON,
    /// per hyperparameter (name, value, how it is set), warnings). The positive scalar
    /// `learn()` hyperparameters are learned by Adam steps of `hyper_rate` on their logarithms.
    #[pyo3(signature = (sample, hyper_rate = 0.01))]
    #[allow(clippy::type_complexity)]
    fn start(
        &self,
        sample: &Bound<'_, PyDict>,
        hyper_rate: f64,
    ) -> PyResult<(String, String, Vec<(String, f64, String)>, Vec<String>)> {
        let c = &self.checked;
        let sample = train_data(c, sample)?;
        let s = gpmc::cluster::start(c, &sample, hyper_rate).map_err(|e| raise(c, e))?;
        let state = serde_json::to_string(&s.state).expect("state JSON");
        Ok((hypers_json(&s.hypers), state, s.report, s.warnings))
    }

    /// One shard's gradient of its local ELBO terms in the logarithms of the learned
    /// hyperparameters at `state`, over its rows `subset` (0-based; `None`: all).
    #[pyo3(signature = (hypers, state, rows, subset = None))]
    fn gradient(
        &self,
        py: Python<'_>,
        hypers: &str,
        state: &str,
        rows: &Bound<'_, PyDict>,
        subset: Option<Vec<usize>>,
    ) -> PyResult<Vec<f64>> {
        let c = &self.checked;
        let (hv, state, rows) = bind(c, hypers, state, rows)?;
        py.detach(|| gpmc::cluster::gradient(c, &rows, &hv, &state, subset.as_deref()))
            .map_err(|e| raise(c, e))
    }

    /// The learned hyperparameters' Adam step from the shards' gradients (summed in the order
    /// given, each counted `scale` times): the next state JSON.
    #[pyo3(signature = (state, gradients, scale = 1.0))]
    fn hyper_step(&self, state: &str, gradients: Vec<Vec<f64>>, scale: f64) -> PyResult<String> {
        let next = state_from(state)?
            .hyper_step(&gradients, scale)
            .map_err(|e| raise(&self.checked, e.into()))?;
        Ok(serde_json::to_string(&next).expect("state JSON"))
    }

    /// The learned hyperparameters' current values, by name (empty when none are learned).
    fn learned(&self, hypers: &str, state: &str) -> PyResult<Vec<(String, f64)>> {
        let (hv, state) = (hypers_from_json(hypers)?, state_from(state)?);
        let now = state.hypers(&hv);
        Ok(state
            .learned()
            .into_iter()
            .map(|h| {
                (
                    self.checked.model.hypers[h.0].name.clone(),
                    now.scalars[h.0],
                )
            })
            .collect())
    }

    /// The hyperparameters made fixed at their current values and the state that learns no
    /// more: (hyperparameters JSON, state JSON), what sparse Gibbs over shards starts from.
    fn settle(&self, hypers: &str, state: &str) -> PyResult<(String, String)> {
        let (hv, state) = (hypers_from_json(hypers)?, state_from(state)?);
        let (hv, state) = gpmc::cluster::settle(&hv, &state);
        Ok((
            hypers_json(&hv),
            serde_json::to_string(&state).expect("state JSON"),
        ))
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
        let (hv, state, rows) = bind(c, hypers, state, rows)?;
        let s = py
            .detach(|| gpmc::cluster::shard(c, &rows, &hv, &state, subset.as_deref()))
            .map_err(|e| raise(c, e))?;
        let blocks = s.blocks.iter().map(|b| wire(py, b)).collect();
        Ok((s.local, blocks))
    }

    /// Two shards' statistics added (a step of the tree reduction `gpmc.cluster` runs on the
    /// workers): (local ELBO terms, per block (M, rows, Σwφφᵀ, Σrφ)).
    #[allow(clippy::type_complexity)]
    fn add_shards<'py>(
        &self,
        py: Python<'py>,
        a: (f64, Vec<FromWire>),
        b: (f64, Vec<FromWire>),
    ) -> PyResult<(f64, Vec<WireBlock<'py>>)> {
        let of = |(local, blocks): (f64, Vec<FromWire>)| -> PyResult<ShardStats> {
            let blocks = blocks.into_iter().map(unwire).collect::<PyResult<_>>()?;
            Ok(ShardStats { blocks, local })
        };
        let mut sum = of(a)?;
        sum.add(&of(b)?)
            .map_err(|e| raise(&self.checked, e.into()))?;
        Ok((sum.local, sum.blocks.iter().map(|b| wire(py, b)).collect()))
    }

    /// Two shards' statistics of one sparse Gibbs round added: (M, rows, Σwφφᵀ, Σrφ).
    fn add_blocks<'py>(
        &self,
        py: Python<'py>,
        a: FromWire,
        b: FromWire,
    ) -> PyResult<WireBlock<'py>> {
        let mut sum = unwire(a)?;
        sum.add_checked(&unwire(b)?)
            .map_err(|e| raise(&self.checked, e.into()))?;
        Ok(wire(py, &sum))
    }

    /// One step from the shards' statistics (summed in the order given): CAVI with the default
    /// `scale = rho = 1`, an SVI natural-gradient step with `scale = N/|B|` and `rho` the step
    /// size. Returns (next state JSON, the ELBO (estimate) at `state`).
    #[pyo3(signature = (state, shards, scale = 1.0, rho = 1.0))]
    fn step(
        &self,
        state: &str,
        shards: Vec<(f64, Vec<FromWire>)>,
        scale: f64,
        rho: f64,
    ) -> PyResult<(String, f64)> {
        let state = state_from(state)?;
        let mut stats = Vec::with_capacity(shards.len());
        for (local, blocks) in shards {
            let blocks = blocks.into_iter().map(unwire).collect::<PyResult<_>>()?;
            stats.push(ShardStats { blocks, local });
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
        let (hv, state, sample) = bind(c, hypers, state, sample)?;
        let test = test_data(c, test, &sample)?;
        let (csv, metrics) =
            gpmc::cluster::predict(c, &sample, &test, &hv, &state).map_err(|e| raise(c, e))?;
        Ok((csv, metrics.to_string()))
    }

    /// `draws` draws from `q(v)` at `state` (seeded): (column names, rows as float64 bytes).
    fn q_draws<'py>(
        &self,
        py: Python<'py>,
        hypers: &str,
        state: &str,
        sample: &Bound<'_, PyDict>,
        draws: usize,
        seed: u64,
    ) -> PyResult<(Vec<String>, Bound<'py, PyBytes>)> {
        let c = &self.checked;
        let (hv, state, sample) = bind(c, hypers, state, sample)?;
        let (columns, rows) = gpmc::cluster::q_draws(c, &sample, &hv, &state, draws, seed)
            .map_err(|e| raise(c, e))?;
        Ok((columns, rows_bytes(py, rows.iter().map(|r| r.as_slice()))))
    }

    /// What a distributed sparse Gibbs sweep draws: per round, the size `M` of its block and
    /// the offset of its `v` in a draw row, and the row's column names; an error saying what to
    /// do for a model whose sweep does not split into rounds.
    #[allow(clippy::type_complexity)]
    fn gibbs_rounds(
        &self,
        hypers: &str,
        state: &str,
        sample: &Bound<'_, PyDict>,
    ) -> PyResult<(Vec<usize>, Vec<usize>, Vec<String>)> {
        let c = &self.checked;
        let (hv, state, sample) = bind(c, hypers, state, sample)?;
        let r = gpmc::cluster::gibbs_rounds(c, &sample, &hv, &state).map_err(|e| raise(c, e))?;
        Ok((r.sizes, r.at, r.columns))
    }

    /// One shard's part of a round of sparse Gibbs: (the block's statistics, the shard's chain
    /// to pass to its next round). `chain` and `inducing` are `None` before the first round;
    /// `key` is (seed, chain, sweep, round); `first_row` the global position of the shard's
    /// first row (its rows' random streams are keyed by their positions).
    #[allow(clippy::too_many_arguments)]
    fn gibbs_round<'py>(
        &self,
        py: Python<'py>,
        hypers: &str,
        state: &str,
        rows: &Bound<'_, PyDict>,
        chain: Option<&[u8]>,
        inducing: Option<Vec<f64>>,
        key: (u64, usize, usize, usize),
        first_row: usize,
    ) -> PyResult<(WireBlock<'py>, Bound<'py, PyBytes>)> {
        let c = &self.checked;
        let (hv, state, rows) = bind(c, hypers, state, rows)?;
        let key = round_key(key);
        let previous =
            match (chain, inducing.as_deref()) {
                (Some(chain), Some(inducing)) => Some(gpmc::cluster::Previous { chain, inducing }),
                (None, None) => None,
                _ => return Err(InferenceError::new_err(
                    "a round needs both the shard's chain and the driver's inducing values, or \
                     neither (the first round)",
                )),
            };
        let (stats, next) = py
            .detach(|| gpmc::cluster::gibbs_round(c, &rows, &hv, &state, previous, key, first_row))
            .map_err(|e| raise(c, e))?;
        Ok((wire(py, &stats), PyBytes::new(py, &next)))
    }

    /// The driver's part of a round: the shards' statistics (in shard order) summed and the
    /// block's whitened inducing values drawn from them.
    fn gibbs_draw(
        &self,
        shards: Vec<FromWire>,
        key: (u64, usize, usize, usize),
    ) -> PyResult<Vec<f64>> {
        let stats = shards
            .into_iter()
            .map(unwire)
            .collect::<PyResult<Vec<_>>>()?;
        gpmc::cluster::gibbs_draw(&stats, round_key(key)).map_err(|e| raise(&self.checked, e))
    }

    /// A distributed sparse Gibbs run's summary JSON (`variables`, `warnings`) from its draws:
    /// `columns` names, `rows` float64 bytes of (chain, draw, column).
    fn gibbs_summary(
        &self,
        columns: Vec<String>,
        rows: Vec<u8>,
        chains: usize,
        draws: usize,
    ) -> PyResult<String> {
        let values = floats(
            &rows,
            chains * draws * columns.len(),
            "the distributed Gibbs draws",
        )?;
        gpmc::cluster::gibbs_summary(&columns, &values, chains, draws)
            .map(|v| v.to_string())
            .map_err(|e| raise(&self.checked, e))
    }

    /// Predictions at `test` from a distributed sparse Gibbs run's draws (per chain, per kept
    /// sweep, a row laid out as `gibbs_rounds` says): (predictions CSV, metrics JSON).
    fn predict_draws(
        &self,
        hypers: &str,
        state: &str,
        sample: &Bound<'_, PyDict>,
        test: &Bound<'_, PyDict>,
        draws: Vec<Vec<Vec<f64>>>,
        seed: u64,
    ) -> PyResult<(String, String)> {
        let c = &self.checked;
        let (hv, state, sample) = bind(c, hypers, state, sample)?;
        let test = test_data(c, test, &sample)?;
        let (csv, metrics) =
            gpmc::cluster::predict_draws(c, &sample, &test, &hv, &state, draws, seed)
                .map_err(|e| raise(c, e))?;
        Ok((csv, metrics.to_string()))
    }
}

fn round_key((seed, chain, sweep, round): (u64, usize, usize, usize)) -> gpmc::cluster::RoundKey {
    gpmc::cluster::RoundKey {
        seed,
        chain,
        sweep,
        round,
    }
}
