//! A saved fit: what `gpmc predict OUT_DIR` needs to predict from a run without rerunning it —
//! the model text (`model.gpm`), and in `fit.json` the training data files with a fingerprint
//! of their values (the GP conditionals at new inputs need the training inputs; a file changed
//! since is refused), the hyperparameter values the run used, its seed and options, and for a
//! variational run its `q` (every number exactly). A Gibbs run's draws are its chain files.

use crate::Checked;
use gpm_runtime::cavi::BlockPosterior;
use gpm_runtime::data::{Data, Value};
use gpm_runtime::gibbs::Pointwise;
use gpm_runtime::kernels::HyperValues;
use nalgebra::{DMatrix, DVector};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The file that describes a fit.
pub const FIT_FILE: &str = "fit.json";
/// The model's text, as the fit saw it.
pub const MODEL_FILE: &str = "model.gpm";

/// The file a Stan program's text is saved in beside its fit.
pub const STAN_MODEL_FILE: &str = "model.stan";

/// The file the model's text is saved in: `model.stan` for a Stan program.
pub fn model_file(name: &str) -> &'static str {
    if crate::is_stan(name) {
        STAN_MODEL_FILE
    } else {
        MODEL_FILE
    }
}

/// Why a fit cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct FitError(pub String);

/// A fit read back.
#[derive(Debug, Clone)]
pub struct SavedFit {
    /// The model's name (its file, as given to `gpmc infer`).
    pub name: String,
    /// The model's text.
    pub source: String,
    /// The training data files, absolute.
    pub data_files: Vec<PathBuf>,
    /// Their values' fingerprint.
    pub fingerprint: String,
    /// The run's seed.
    pub seed: u64,
    /// Whether every factor took the generic update (`--generic`).
    pub generic: bool,
    /// Whether the Gibbs sweep could take NUTS steps (`false`: `--no-nuts-step`).
    pub nuts_step: bool,
    /// The hyperparameter values the run used.
    pub values: HyperValues,
    /// The method that made the fit.
    pub method: String,
    /// Its posterior.
    pub posterior: Stored,
}

/// A 64-bit FNV-1a fingerprint of a text (the model's source).
pub fn text_fingerprint(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A 64-bit FNV-1a fingerprint of every datum's name, shape and values (their bits).
pub fn fingerprint(data: &Data) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, value) in &data.values {
        eat(name.as_bytes());
        match value {
            Value::Scalar(x) => eat(&x.to_bits().to_le_bytes()),
            Value::Vector(v) => v.iter().for_each(|x| eat(&x.to_bits().to_le_bytes())),
            Value::Matrix(m) => {
                eat(&(m.nrows() as u64).to_le_bytes());
                m.iter().for_each(|x| eat(&x.to_bits().to_le_bytes()));
            }
        }
    }
    format!("{h:016x}")
}

/// What a fit's posterior is saved as: Gibbs draws (the chain files beside, with these pointwise
/// columns) or a variational `q` (written into `fit.json`, every number exactly).
pub enum SavedPosterior<'a> {
    /// Gibbs draws.
    Draws(Pointwise),
    /// A variational posterior, one entry per block, from `method`.
    Q {
        /// `cavi`, `svi` or `gpf`.
        method: &'a str,
        /// Its blocks.
        blocks: &'a [BlockPosterior],
    },
}

/// A posterior as saved and read back.
#[derive(Debug, Clone)]
pub enum Stored {
    /// Gibbs draws in the chain files, with these pointwise columns.
    Draws(Pointwise),
    /// A variational posterior.
    Q(Vec<BlockPosterior>),
}

fn rows(m: &DMatrix<f64>) -> Vec<Vec<f64>> {
    (0..m.nrows())
        .map(|i| m.row(i).iter().copied().collect())
        .collect()
}

fn q_to_json(b: &BlockPosterior) -> serde_json::Value {
    match b {
        BlockPosterior::Gp { a, b } => json!({"kind": "gp", "a": a, "b": b}),
        BlockPosterior::Sparse(q) => match &q.inputs {
            None => json!({"kind": "sparse", "prec": rows(&q.prec), "h": q.h.as_slice()}),
            Some(z) => json!({"kind": "sparse", "prec": rows(&q.prec), "h": q.h.as_slice(),
                              "inducing_inputs": rows(z)}),
        },
        BlockPosterior::Particles { mean, spread } => {
            json!({"kind": "particles", "mean": mean.as_slice(), "spread": rows(spread)})
        }
        BlockPosterior::Dense { mean, cov } => {
            json!({"kind": "dense", "mean": mean.as_slice(), "cov": rows(cov)})
        }
    }
}

fn q_from_json(v: &serde_json::Value) -> Option<BlockPosterior> {
    let vector = |v: &serde_json::Value| -> Option<Vec<f64>> {
        v.as_array()?.iter().map(|x| x.as_f64()).collect()
    };
    let matrix = |v: &serde_json::Value| -> Option<DMatrix<f64>> {
        let r: Vec<Vec<f64>> = v.as_array()?.iter().map(vector).collect::<Option<_>>()?;
        let cols = r.first().map_or(0, |x| x.len());
        r.iter()
            .all(|x| x.len() == cols)
            .then(|| DMatrix::from_fn(r.len(), cols, |i, j| r[i][j]))
    };
    let finite = |x: &[f64]| x.iter().all(|v| v.is_finite());
    Some(match v["kind"].as_str()? {
        "gp" => {
            // A Gaussian's curvature is not negative (prediction would clamp it silently).
            let (a, b) = (vector(&v["a"])?, vector(&v["b"])?);
            if a.len() != b.len() || !finite(&a) || !finite(&b) || a.iter().any(|x| *x < 0.0) {
                return None;
            }
            BlockPosterior::Gp { a, b }
        }
        "sparse" => {
            let (prec, h) = (matrix(&v["prec"])?, vector(&v["h"])?);
            if !finite(&h) || !finite(prec.as_slice()) {
                return None;
            }
            // Sizes first: the factorisation assumes a square precision of `h`'s size.
            if prec.nrows() != prec.ncols() || prec.nrows() != h.len() {
                return None;
            }
            let mut q =
                gpm_runtime::sparse::QInducing::from_natural(prec, DVector::from_vec(h)).ok()?;
            // The inducing inputs an online choice made (one row per coordinate of `q`).
            if !v["inducing_inputs"].is_null() {
                let z = matrix(&v["inducing_inputs"])?;
                if z.nrows() != q.h.len() {
                    return None;
                }
                q.inputs = Some(z);
            }
            BlockPosterior::Sparse(q)
        }
        "particles" => {
            let (mean, spread) = (vector(&v["mean"])?, matrix(&v["spread"])?);
            if spread.nrows() != mean.len() || !finite(&mean) || !finite(spread.as_slice()) {
                return None;
            }
            BlockPosterior::Particles {
                mean: DVector::from_vec(mean),
                spread,
            }
        }
        "dense" => {
            // A covariance: square, of the mean's size, symmetric and positive definite.
            let (mean, cov) = (vector(&v["mean"])?, matrix(&v["cov"])?);
            let symmetric = (0..cov.nrows()).all(|i| {
                (0..i).all(|j| {
                    (cov[(i, j)] - cov[(j, i)]).abs()
                        <= 1e-9 * (cov[(i, i)].abs() * cov[(j, j)].abs()).sqrt()
                })
            });
            if cov.nrows() != mean.len()
                || cov.ncols() != mean.len()
                || !finite(&mean)
                || !symmetric
                || gpm_runtime::linalg::cholesky(cov.clone()).is_none()
            {
                return None;
            }
            BlockPosterior::Dense {
                mean: DVector::from_vec(mean),
                cov,
            }
        }
        _ => return None,
    })
}

/// The files that save a fit beside its output: `model.gpm` and `fit.json`.
pub fn files(
    c: &Checked,
    data_files: &[PathBuf],
    data: &Data,
    values: &HyperValues,
    seed: u64,
    (generic, nuts_step): (bool, bool),
    posterior: SavedPosterior,
) -> Vec<(String, String)> {
    let absolute: Vec<String> = data_files
        .iter()
        .map(|p| {
            std::fs::canonicalize(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string()
        })
        .collect();
    // NaN (no value) is written as null.
    let finite = |v: f64| if v.is_finite() { json!(v) } else { json!(null) };
    let (method, posterior) = match posterior {
        SavedPosterior::Draws(p) => (
            "gibbs".to_string(),
            json!({"pointwise": {"log_lik": p.log_lik, "ppc": p.ppc}}),
        ),
        SavedPosterior::Q { method, blocks } => (
            method.to_string(),
            json!({"q": blocks.iter().map(q_to_json).collect::<Vec<_>>()}),
        ),
    };
    let fit = json!({
        "method": method,
        "posterior": posterior,
        "model": c.name,
        "model_file": model_file(&c.name),
        "model_fingerprint": text_fingerprint(&c.source),
        "data_files": absolute,
        "data_fingerprint": fingerprint(data),
        "seed": seed,
        "generic": generic,
        "nuts_step": nuts_step,
        "hyper_values": {
            "scalars": values.scalars.iter().map(|v| finite(*v)).collect::<Vec<_>>(),
            "vectors": values.vectors,
        },
    });
    vec![
        (model_file(&c.name).to_string(), c.source.clone()),
        (
            FIT_FILE.to_string(),
            serde_json::to_string_pretty(&fit).expect("fit JSON"),
        ),
    ]
}

/// The hyperparameter values saved in a fit (`null` for a vector's scalar slot).
fn saved_hyper_values(saved: &serde_json::Value) -> Option<HyperValues> {
    let numbers = |v: &serde_json::Value| -> Option<Vec<f64>> {
        v.as_array()?
            .iter()
            .map(|x| {
                if x.is_null() {
                    Some(f64::NAN)
                } else {
                    x.as_f64()
                }
            })
            .collect()
    };
    let scalars = numbers(&saved["scalars"])?;
    let vectors = saved["vectors"]
        .as_array()
        .and_then(|vs| vs.iter().map(numbers).collect::<Option<Vec<_>>>())?;
    Some(HyperValues { scalars, vectors })
}

/// Read the fit saved in `dir`.
pub fn load(dir: &Path) -> Result<SavedFit, FitError> {
    let whole_density = || {
        std::fs::read_to_string(dir.join("summary.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|s| s.get("log_density").is_some())
    };
    if !dir.join(FIT_FILE).exists() && whole_density() {
        return Err(FitError(format!(
            "{}: this run is NUTS on a Stan program's whole log density, and prediction from such a run is not available yet; its draws are in chain-K.csv (generated quantities included)",
            dir.display()
        )));
    }
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).map_err(|e| {
            FitError(format!(
                "{}: {e} (a fit is saved by `gpmc infer` with --method gibbs)",
                dir.join(file).display()
            ))
        })
    };
    let fit: serde_json::Value = serde_json::from_str(&read(FIT_FILE)?)
        .map_err(|e| FitError(format!("{}: {e}", dir.join(FIT_FILE).display())))?;
    let bad = |what: &str| {
        FitError(format!(
            "{}: no valid `{what}`",
            dir.join(FIT_FILE).display()
        ))
    };
    let method = fit["method"]
        .as_str()
        .ok_or_else(|| bad("method"))?
        .to_string();
    let posterior = if method == "gibbs" {
        let p = &fit["posterior"]["pointwise"];
        Stored::Draws(Pointwise {
            log_lik: p["log_lik"].as_bool().unwrap_or(false),
            ppc: p["ppc"].as_bool().unwrap_or(false),
        })
    } else {
        Stored::Q(
            fit["posterior"]["q"]
                .as_array()
                .and_then(|q| q.iter().map(q_from_json).collect::<Option<Vec<_>>>())
                .ok_or_else(|| bad("posterior"))?,
        )
    };
    let values = saved_hyper_values(&fit["hyper_values"]).ok_or_else(|| bad("hyper_values"))?;
    // Fits saved before Stan programs were read have no `model_file`: theirs is `model.gpm`.
    let file = match fit["model_file"].as_str() {
        Some(STAN_MODEL_FILE) => STAN_MODEL_FILE,
        _ => MODEL_FILE,
    };
    let source = read(file)?;
    let recorded = fit["model_fingerprint"].as_str().ok_or_else(|| {
        FitError(format!(
            "{}: no `model_fingerprint` (a fit saved by an older gpmc, or edited): run `gpmc infer` again",
            dir.join(FIT_FILE).display()
        ))
    })?;
    if text_fingerprint(&source) != recorded {
        return Err(FitError(format!(
            "{} is not the model the fit was made from (its fingerprint differs from the one in {FIT_FILE}): predict from the output of a run of this model, or run `gpmc infer` again",
            dir.join(file).display()
        )));
    }
    Ok(SavedFit {
        name: fit["model"]
            .as_str()
            .ok_or_else(|| bad("model"))?
            .to_string(),
        source,
        data_files: fit["data_files"]
            .as_array()
            .and_then(|fs| fs.iter().map(|f| f.as_str().map(PathBuf::from)).collect())
            .ok_or_else(|| bad("data_files"))?,
        fingerprint: fit["data_fingerprint"]
            .as_str()
            .ok_or_else(|| bad("data_fingerprint"))?
            .to_string(),
        seed: fit["seed"].as_u64().ok_or_else(|| bad("seed"))?,
        generic: fit["generic"].as_bool().unwrap_or(false),
        // Fits saved before the switch existed were made with NUTS steps allowed.
        nuts_step: fit["nuts_step"].as_bool().unwrap_or(true),
        values,
        method,
        posterior,
    })
}

/// A saved fit opened for reuse: the checked model, the training data (verified against the
/// fit's fingerprint) and the draws.
pub struct Reuse {
    /// The fit's description.
    pub fit: SavedFit,
    /// The model, checked again.
    pub checked: Checked,
    /// The training data.
    pub train: Data,
    /// The draws (with the values the run used), or `None` for a variational fit, whose `q`
    /// is in [`SavedFit::posterior`].
    pub result: Option<crate::infer::InferResult>,
}

impl Reuse {
    /// Open the fit saved in `dir`.
    pub fn open(dir: &Path) -> Result<Reuse, FitError> {
        let fit = load(dir)?;
        let c = crate::check_with_options(&fit.name, &fit.source, fit.generic, fit.nuts_step)
            .map_err(|f| FitError(format!("the saved model no longer checks: {f}")))?;
        let paths: Vec<&Path> = fit.data_files.iter().map(|p| p.as_path()).collect();
        let train = crate::data::load(&c.model, &paths).map_err(|e| {
            FitError(format!(
                "the training data of the fit cannot be read again: {e}"
            ))
        })?;
        if fingerprint(&train) != fit.fingerprint {
            return Err(FitError(format!(
                "the training data ({}) changed since the fit: prediction needs the data the draws were made from",
                fit.data_files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        check_values(&c.model, &fit.values, &train, dir)?;
        let Stored::Draws(pointwise) = fit.posterior else {
            return Ok(Reuse {
                fit,
                checked: c,
                train,
                result: None,
            });
        };
        let result = draws_in(dir, &c, &train, &fit.values, pointwise)?;
        Ok(Reuse {
            fit,
            checked: c,
            train,
            result: Some(result),
        })
    }

    /// Predictions at `test` (responses optional): `predictions.csv` and the metrics.
    pub fn predict(&self, test: &Data) -> Result<(String, serde_json::Value), FitError> {
        match (&self.result, &self.fit.posterior) {
            (Some(result), _) => crate::infer::predict_with(
                &self.checked,
                &self.train,
                test,
                result,
                self.fit.seed,
                usize::MAX,
            ),
            (None, Stored::Q(blocks)) => crate::infer::predict_variational(
                &self.checked,
                &self.train,
                test,
                &self.fit.values,
                blocks,
            ),
            (None, Stored::Draws(_)) => unreachable!("draws are read when the fit is opened"),
        }
        .map_err(|e| FitError(e.to_string()))
    }
}

/// The draws of the Gibbs run whose chain files are in `dir` that prediction uses (at most
/// about [`crate::infer::PREDICT_DRAWS`], thinned as they are read, so that memory does not
/// grow with the run's length; predict from them with `max_draws = usize::MAX`).
pub fn draws_in(
    dir: &Path,
    c: &Checked,
    train: &Data,
    values: &HyperValues,
    pointwise: gpm_runtime::gibbs::Pointwise,
) -> Result<crate::infer::InferResult, FitError> {
    let schedule = crate::infer::schedule(c).map_err(|e| FitError(e.to_string()))?;
    let layout = gpm_runtime::gibbs::Sampler::new(schedule, train, values)
        .and_then(|s| s.with_pointwise(pointwise))
        .map_err(|e| FitError(e.to_string()))?
        .layout();
    let files = crate::summary::read_draws(dir, crate::infer::PREDICT_DRAWS)
        .map_err(|e| FitError(e.to_string()))?;
    if files.header.len() != layout.width() {
        return Err(FitError(format!(
            "{}: {} columns in the chain files where the model's draws have {}",
            dir.display(),
            files.header.len(),
            layout.width()
        )));
    }
    // Prediction averages over the latents and hyperparameters of each draw: one that is not
    // a number (an edited or damaged file) would make every prediction NaN.
    for var in layout.vars.iter().filter(|v| {
        use gpm_runtime::draws::VarKind;
        matches!(
            v.kind,
            VarKind::Hyper(_) | VarKind::Latent(_) | VarKind::Inducing(_)
        )
    }) {
        for (k, rows) in files.chains.iter().enumerate() {
            let columns = var.offset..var.offset + var.len();
            if let Some(row) = rows
                .iter()
                .position(|r| r[columns.clone()].iter().any(|x| !x.is_finite()))
            {
                let j = columns
                    .clone()
                    .find(|&j| !rows[row][j].is_finite())
                    .unwrap_or(var.offset);
                return Err(FitError(format!(
                    "{}: chain {} has the value {} in column `{}` of a draw (a damaged or edited chain file): prediction needs finite draws; run `gpmc infer` again",
                    dir.display(),
                    k + 1,
                    rows[row][j],
                    files.header.get(j).map_or("?", |s| s.as_str()),
                )));
            }
        }
    }
    let chains = files
        .chains
        .into_iter()
        .map(|rows| gpm_runtime::gibbs::Chain::new(layout.clone(), rows, Default::default()))
        .collect();
    Ok(crate::infer::InferResult::from_draws(
        chains,
        values.clone(),
    ))
}

/// Predict at the inputs of `test_files` (responses optional) from the fit saved in `dir`:
/// `predictions.csv` and the test metrics, as `gpmc infer --predict` gives them.
pub fn predict(
    dir: &Path,
    test_files: &[PathBuf],
) -> Result<(String, serde_json::Value), FitError> {
    let reuse = Reuse::open(dir)?;
    let test_paths: Vec<&Path> = test_files.iter().map(|p| p.as_path()).collect();
    let test = crate::data::load_test(&reuse.checked.model, &test_paths, Some(&reuse.train))
        .map_err(|e| FitError(e.to_string()))?;
    reuse.predict(&test)
}

/// The hyperparameter values of `fit.json` against the model: one per hyperparameter, finite
/// where the run fixed or learned them (a sampled one's values are in the draws), a vector's
/// of its declared length.
fn check_values(
    model: &gpm_ir::Model,
    values: &HyperValues,
    train: &Data,
    dir: &Path,
) -> Result<(), FitError> {
    let bad = |why: String| {
        FitError(format!(
            "{}: `hyper_values` {why} (an edited or damaged fit): run `gpmc infer` again",
            dir.join(FIT_FILE).display()
        ))
    };
    let n = model.hypers.len();
    if values.scalars.len() != n || values.vectors.len() != n {
        return Err(bad(format!(
            "hold {} values where the model has {n} hyperparameters",
            values.scalars.len().min(values.vectors.len())
        )));
    }
    for (k, h) in model.hypers.iter().enumerate() {
        let sampled = matches!(h.kind, gpm_ir::HyperKind::Prior { .. });
        match &h.shape {
            gpm_ir::Shape::Scalar => {
                if !sampled && !values.scalars[k].is_finite() {
                    return Err(bad(format!("have no finite value for `{}`", h.name)));
                }
            }
            shape => {
                let v = &values.vectors[k];
                let want = match shape {
                    gpm_ir::Shape::Vector(gpm_ir::Dim::Const(d)) => Some(*d),
                    gpm_ir::Shape::Vector(gpm_ir::Dim::Var(d)) => {
                        train.scalar(d).map(|x| x as usize)
                    }
                    _ => None,
                };
                if !sampled
                    && (v.is_empty()
                        || want.is_some_and(|d| d != v.len())
                        || v.iter().any(|x| !x.is_finite()))
                {
                    return Err(bad(format!(
                        "have {} values for `{}`, declared {shape}",
                        v.len(),
                        h.name
                    )));
                }
            }
        }
    }
    Ok(())
}
