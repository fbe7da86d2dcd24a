//! A compiled model and what Python asks of it: the derivation and schedule, the declarations
//! (for naming ArviZ dimensions), Gibbs sampling, prediction from draws, and variational fits.

use crate::checked::{raise, test_data, train_data};
use crate::convert::{hypers_from_json, hypers_json, rows, rows_bytes};
use crate::detached::{self, Shared};
use crate::errors::{DataError, InferenceError, ModelError};
use crate::variational::VariationalFit;
use gpmc::Checked;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A model that parsed, type-checked and was augmented.
#[pyclass(frozen, module = "gpmc._gpmc")]
pub struct Compiled {
    pub(crate) checked: Arc<Checked>,
}

/// Parse, check and augment a model.
#[pyfunction]
#[pyo3(signature = (name, source, generic = false))]
pub fn compile(name: &str, source: &str, generic: bool) -> PyResult<Compiled> {
    gpmc::check_with(name, source, generic)
        .map(|c| Compiled {
            checked: Arc::new(c),
        })
        .map_err(|f| ModelError::new_err(format!("{}{f}", f.render())))
}

fn dim_name(d: &gpm_ir::Dim) -> Option<String> {
    match d {
        gpm_ir::Dim::Var(v) => Some(v.clone()),
        gpm_ir::Dim::Const(_) => None,
    }
}

fn shape_dims(s: &gpm_ir::Shape) -> Vec<Option<String>> {
    match s {
        gpm_ir::Shape::Scalar => vec![],
        gpm_ir::Shape::Vector(n) => vec![dim_name(n)],
        gpm_ir::Shape::Matrix(r, c) => vec![dim_name(r), dim_name(c)],
    }
}

#[pymethods]
impl Compiled {
    /// The model's name.
    #[getter]
    fn name(&self) -> String {
        self.checked.name.clone()
    }

    /// The calls of a distributed CAVI fit of this model (`gpmc.cluster`).
    fn cluster(&self) -> crate::cluster::Cluster {
        crate::cluster::Cluster {
            checked: Arc::clone(&self.checked),
        }
    }

    /// What `gpmc check --format json` prints.
    fn report_json(&self) -> String {
        gpmc::report::json(&self.checked).to_string()
    }

    /// What `gpmc check` prints.
    fn report_text(&self) -> String {
        gpmc::report::text(&self.checked)
    }

    /// Every declared variable: (name, kind, dimension names — `None` for a constant size).
    fn declarations(&self) -> Vec<(String, &'static str, Vec<Option<String>>)> {
        let m = &self.checked.model;
        // Transformed data (`let`s of the data block) are computed, never given.
        let kind = |d: &gpm_ir::DataVar| match d.derived {
            Some(_) => "transformed",
            None => "data",
        };
        let data = m
            .data
            .iter()
            .map(|d| (d.name.clone(), kind(d), shape_dims(&d.shape)));
        let hypers = m
            .hypers
            .iter()
            .map(|h| (h.name.clone(), "hyper", shape_dims(&h.shape)));
        let latents = m
            .latents
            .iter()
            .map(|z| (z.name.clone(), "latent", shape_dims(&z.shape)));
        data.chain(hypers).chain(latents).collect()
    }

    /// The transformed data (`let`s of the data block) computed from `data`: (name, values in
    /// row-major order, shape). Internal products of covariates (`x*z`) are left out.
    fn transformed(&self, data: &Bound<'_, PyDict>) -> PyResult<Vec<TransformedDatum>> {
        let c = &self.checked;
        let d = train_data(c, data)?;
        let mut out = Vec::new();
        for v in c.model.data.iter().filter(|v| v.derived.is_some()) {
            if !v.name.chars().all(|ch| ch.is_alphanumeric() || ch == '_') {
                continue;
            }
            match d.values.get(&v.name) {
                Some(gpm_runtime::data::Value::Scalar(x)) => {
                    out.push((v.name.clone(), vec![*x], vec![]))
                }
                Some(gpm_runtime::data::Value::Vector(x)) => {
                    out.push((v.name.clone(), x.clone(), vec![x.len()]))
                }
                Some(gpm_runtime::data::Value::Matrix(m)) => out.push((
                    v.name.clone(),
                    m.transpose().as_slice().to_vec(),
                    vec![m.nrows(), m.ncols()],
                )),
                None => {}
            }
        }
        Ok(out)
    }

    /// The data declared `int` (labels, counts, sizes, indices): kept as integers in the
    /// InferenceData, so that ArviZ draws bars for them.
    fn integer_data(&self) -> Vec<String> {
        self.checked
            .model
            .data
            .iter()
            .filter(|d| d.elem == gpm_ir::Elem::Int)
            .map(|d| d.name.clone())
            .collect()
    }

    /// Each integer datum's declared label or value set as `check` prints it (`{-1, 1}`,
    /// `1..C`): what text labels given from Python are mapped onto.
    fn label_sets(&self) -> Vec<(String, String)> {
        self.checked
            .model
            .data
            .iter()
            .filter(|d| d.elem == gpm_ir::Elem::Int)
            .filter_map(|d| Some((d.name.clone(), gpmc::report::value_set(&d.constraint)?)))
            .collect()
    }

    /// Each likelihood factor's response datum (`None` for a density formula).
    fn responses(&self) -> Vec<Option<String>> {
        self.checked
            .model
            .factors
            .iter()
            .map(|f| f.response.clone())
            .collect()
    }

    /// Gibbs sampling. Returns (column names, draw rows as float64 bytes — chain after chain,
    /// draw after draw —, chains kept, draws per chain, summary JSON, hyperparameter values
    /// JSON, interrupted).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    #[pyo3(signature = (data, chains, draws, warmup, thin, seed, log_lik, ppc, init = None, progress = None, first_chain = 0, nuts = false, augmented = false, adapt_delta = None, max_treedepth = None, metric = None))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyDict>,
        chains: usize,
        draws: usize,
        warmup: usize,
        thin: usize,
        seed: u64,
        log_lik: bool,
        ppc: bool,
        init: Option<String>,
        progress: Option<Bound<'py, PyAny>>,
        first_chain: usize,
        nuts: bool,
        augmented: bool,
        adapt_delta: Option<f64>,
        max_treedepth: Option<u64>,
        metric: Option<String>,
    ) -> PyResult<(
        Vec<String>,
        Bound<'py, PyBytes>,
        usize,
        usize,
        String,
        String,
    )> {
        let c = Arc::clone(&self.checked);
        let d = train_data(&c, data)?;
        let init = match init {
            Some(text) => {
                let json: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| DataError::new_err(format!("init is not JSON: {e}")))?;
                gpmc::init::from_json(&c.model, &d, &json, "init")
                    .map_err(|e| raise(&c, e.into()))?
            }
            None => Default::default(),
        };
        let config = gpm_runtime::gibbs::GibbsConfig {
            first_chain,
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
        let extras = gpmc::infer::GibbsExtras {
            pointwise: gpm_runtime::gibbs::Pointwise { log_lik, ppc },
            init,
            stop: Some(Arc::clone(&shared.stop)),
            nuts,
            augmented,
        };
        let total = ((warmup + draws * thin) * chains) as u64;
        let work = {
            let (c, shared) = (Arc::clone(&c), Arc::clone(&shared));
            move || {
                let progress = |_: usize, _: usize| {
                    shared.done.fetch_add(1, Ordering::Relaxed);
                };
                gpmc::infer::run_gibbs_with(&c, &d, &config, extras, &progress)
            }
        };
        let r =
            detached::run(py, shared, total, progress.as_ref(), work)?.map_err(|e| raise(&c, e))?;
        let layout = &r.chains[0].layout;
        let columns = gpmc::infer::column_names(&c, layout);
        let summary = gpmc::infer::summary_json(&c, &r, &config).to_string();
        let rows = rows_bytes(
            py,
            r.chains
                .iter()
                .flat_map(|ch| ch.rows.iter().map(|r| r.as_slice())),
        );
        Ok((
            columns,
            rows,
            r.chains.len(),
            r.draws,
            summary,
            hypers_json(&r.values),
        ))
    }

    /// Runs of a few chains each (what `sample` returned, with `first_chain` set so that the
    /// chains follow on) joined into the run of all of them: (draw rows as float64 bytes,
    /// chains, draws per chain, summary JSON).
    #[allow(clippy::type_complexity)]
    fn merge_samples<'py>(
        &self,
        py: Python<'py>,
        columns: Vec<String>,
        parts: Vec<(Bound<'py, PyBytes>, usize, usize, String)>,
    ) -> PyResult<(Bound<'py, PyBytes>, usize, usize, String)> {
        let c = &self.checked;
        let mut runs = Vec::with_capacity(parts.len());
        for (rows, chains, draws, summary) in &parts {
            let bytes = rows.as_bytes();
            if bytes.len() % 8 != 0 {
                return Err(InferenceError::new_err(
                    "a run's rows are not float64 bytes",
                ));
            }
            runs.push(gpmc::infer::RunPart {
                summary: serde_json::from_str(summary).map_err(|e| {
                    InferenceError::new_err(format!("a run's summary is not JSON: {e}"))
                })?,
                rows: bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_ne_bytes(b.try_into().expect("8 bytes")))
                    .collect(),
                chains: *chains,
                draws: *draws,
            });
        }
        let (rows, chains, draws, summary) =
            gpmc::infer::merge_runs(c, &columns, &runs).map_err(|e| raise(c, e))?;
        Ok((
            rows_bytes(py, std::iter::once(rows.as_slice())),
            chains,
            draws,
            summary.to_string(),
        ))
    }

    /// Predictions at `test` (responses optional) from Gibbs draws: `rows` holds the draws'
    /// parameter columns (the columns of a run without log_lik / y_rep; `(address, shape)` of a
    /// C-contiguous float64 array), `chains` chains of
    /// equal length. Returns (predictions CSV, metrics JSON).
    fn predict_draws(
        &self,
        data: &Bound<'_, PyDict>,
        test: &Bound<'_, PyDict>,
        draws: &Bound<'_, PyAny>,
        chains: usize,
        hypers: &str,
        seed: u64,
    ) -> PyResult<(String, String)> {
        let c = &self.checked;
        let train = train_data(c, data)?;
        let test = test_data(c, test, &train)?;
        let values = hypers_from_json(hypers)?;
        let schedule = gpmc::infer::schedule(c).map_err(|e| raise(c, e))?;
        let layout = gpm_runtime::gibbs::Sampler::new(schedule, &train, &values)
            .map_err(|e| raise(c, e.into()))?
            .layout();
        let flat = rows(draws)?;
        let width = layout.width();
        if chains == 0 || flat.len() % (width * chains) != 0 {
            return Err(InferenceError::new_err(format!(
                "{} values are not {chains} chains of rows of {width} (the model's draws)",
                flat.len()
            )));
        }
        let per_chain = flat.len() / (width * chains);
        let chains: Vec<_> = flat
            .chunks(per_chain * width)
            .map(|chunk| {
                gpm_runtime::gibbs::Chain::new(
                    layout.clone(),
                    chunk.chunks(width).map(|r| r.to_vec()).collect(),
                    Default::default(),
                )
            })
            .collect();
        let r = gpmc::infer::InferResult::from_draws(chains, values);
        let (csv, metrics) =
            gpmc::infer::predict(c, &train, &test, &r, seed).map_err(|e| raise(c, e))?;
        Ok((csv, metrics.to_string()))
    }

    /// A variational fit: `method` is "cavi", "svi" or "gpf".
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (method, data, iterations, seed, batch = None, forgetting = None, delay = None, hyper_rate = None, class_batch = None, particles = None, progress = None, precondition = false, particle_map = None))]
    fn variational<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        data: &Bound<'py, PyDict>,
        iterations: usize,
        seed: u64,
        batch: Option<usize>,
        forgetting: Option<f64>,
        delay: Option<f64>,
        hyper_rate: Option<f64>,
        class_batch: Option<usize>,
        particles: Option<usize>,
        progress: Option<Bound<'py, PyAny>>,
        precondition: bool,
        particle_map: Option<&str>,
    ) -> PyResult<VariationalFit> {
        let value_error = pyo3::exceptions::PyValueError::new_err;
        let parsed: gpmc::method::Method = method.parse().map_err(value_error)?;
        let particle_map = particle_map
            .map(str::parse::<gpmc::method::ParticleMap>)
            .transpose()
            .map_err(value_error)?;
        // Unset options take the runtime configs' defaults, as the CLI's do (one builder).
        let options = gpmc::method::VariationalOptions {
            iterations,
            seed,
            svi: gpm_runtime::svi::SviOptions {
                batch,
                forgetting,
                delay,
                hyper_rate,
                class_batch,
            },
            svi_reports: 100,
            particles,
            precondition,
            particle_map,
        };
        let Some(method) = parsed.variational(&options) else {
            return Err(value_error(format!(
                "`{method}` is a sampler, not a variational method: use Model.sample"
            )));
        };
        let c = Arc::clone(&self.checked);
        let d = Arc::new(train_data(&c, data)?);
        let shared = Arc::new(Shared::default());
        let work = {
            let (c, d, shared) = (Arc::clone(&c), Arc::clone(&d), Arc::clone(&shared));
            move || {
                gpmc::variational::fit(&c, &d, &method, &mut |p, _| {
                    shared.done.store(p.iteration as u64, Ordering::Relaxed);
                })
            }
        };
        let total = iterations as u64;
        let fit =
            detached::run(py, shared, total, progress.as_ref(), work)?.map_err(|e| raise(&c, e))?;
        Ok(VariationalFit {
            checked: c,
            data: d,
            fit,
        })
    }
}

/// A transformed datum: its name, values in row-major order and shape.
type TransformedDatum = (String, Vec<f64>, Vec<usize>);
