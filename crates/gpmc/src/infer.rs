//! `gpmc infer`: run Gibbs on a checked model and write the results. Files are built in memory
//! and written into a fresh directory that replaces the output directory as a whole at the end
//! ([`write_all`]), so a failed run leaves no partial output behind and no stale file mixes in.

use crate::data::DataError;
use crate::Checked;
use gpm_ir::{HyperKind, Shape};
use gpm_runtime::diagnostics::{summarize, Summary};
use gpm_runtime::draws::VarKind;
use gpm_runtime::gibbs::{self, Chain, GibbsConfig};
use gpm_runtime::kernels::HyperValues;
use gpm_schedule::{GibbsUpdate, StartRule, VariationalUpdate};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Why inference failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum InferError {
    /// Bad data.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Data(#[from] DataError),
    /// The schedule could not be built.
    #[error("cannot run this model: {0}")]
    #[diagnostic(code(gpm::schedule))]
    Schedule(String),
    /// A runtime failure (numerical or a sampler).
    #[error("inference failed: {0}")]
    #[diagnostic(code(gpm::runtime))]
    Runtime(#[from] gpm_runtime::RuntimeError),
    /// Output could not be written.
    #[error("cannot write the output: {0}")]
    #[diagnostic(code(gpm::io))]
    Io(String),
    /// The run was interrupted with nothing to write.
    #[error("{0}")]
    #[diagnostic(code(gpm::interrupted))]
    Interrupted(String),
}

/// Options of `gpmc infer`.
#[derive(Debug, Clone)]
pub struct InferOptions {
    /// Gibbs settings.
    pub gibbs: GibbsConfig,
    /// Output directory (created; existing files of the same names are replaced).
    pub output: Option<PathBuf>,
}

/// The results of a run.
#[derive(Debug, Clone)]
pub struct InferResult {
    /// The chains.
    pub chains: Vec<Chain>,
    /// Per column: name and summary.
    pub summaries: Vec<(String, Summary)>,
    /// Hyperparameter values used, and how each was set.
    pub hypers: Vec<(String, f64, String)>,
    /// Jitter added to GP priors.
    pub jitter: f64,
    /// The hyperparameter values the run used (after type-II ML).
    pub values: HyperValues,
    /// Whether the run was interrupted (the chains hold the draws made until then).
    pub interrupted: bool,
}

/// The hyperparameter values a run starts from, as the schedule decides them
/// ([`gpm_schedule::start_value`]): fixed values as given; `learn` at its initial value (then
/// type-II maximum likelihood, where the augmentation has CAVI); a prior at its mean (its mode
/// where it has no mean; then Gibbs samples it when it can, and the output says which were held).
pub fn hyper_values(c: &Checked) -> (HyperValues, Vec<(String, f64, String)>) {
    let mut hv = HyperValues::new(c.model.hypers.len());
    let mut used = Vec::new();
    for (k, h) in c.model.hypers.iter().enumerate() {
        let id = gpm_schedule::HyperId(k);
        let (v, rule) = gpm_schedule::start_value(&h.kind);
        let how = match rule {
            StartRule::Fixed | StartRule::Init => rule.describe().to_string(),
            StartRule::PriorMean | StartRule::PriorMode => format!(
                "{}, held fixed (CAVI and SVI do not integrate over hyperparameter priors)",
                rule.describe()
            ),
        };
        match &h.shape {
            Shape::Vector(_) => {
                // ARD vectors: one value per input dimension, sized when the data are known.
                hv.set_vector(id, vec![v]);
            }
            _ => hv.set_scalar(id, v),
        }
        used.push((h.name.clone(), v, how));
    }
    (hv, used)
}

/// The CmdStan column names of a draw row: `lp__`, then every variable as `name`, `name.i` or
/// `name.i.j` in its declared shape (matrices column-major, the first index fastest, as
/// `arviz.from_cmdstan` reads them). A sparse latent's whitened inducing coordinates are the
/// variable `<latent>_inducing`, the pointwise log-likelihood `log_lik` and the replicated
/// responses `y_rep` (`_` appended to each until no declared name is taken).
pub fn column_names(c: &Checked, layout: &gpm_runtime::draws::Layout) -> Vec<String> {
    use gpm_runtime::draws::entry_suffixes;
    let declared = |n: &str| {
        c.model.data.iter().any(|d| d.name == n)
            || c.model.hypers.iter().any(|h| h.name == n)
            || c.model.latents.iter().any(|z| z.name == n)
            || c.model.predictors.iter().any(|p| p.name == n)
    };
    let undeclared = |mut n: String| {
        while declared(&n) {
            n.push('_');
        }
        n
    };
    let mut out = Vec::with_capacity(layout.width());
    for v in &layout.vars {
        let base = match v.kind {
            VarKind::LogJoint => "lp__".to_string(),
            VarKind::Hyper(h) => c.model.hypers[h.0].name.clone(),
            VarKind::Latent(l) => c.model.latents[l.0].name.clone(),
            VarKind::Inducing(l) => undeclared(format!("{}_inducing", c.model.latents[l.0].name)),
            VarKind::LogLik => undeclared("log_lik".into()),
            VarKind::Replicate => undeclared("y_rep".into()),
        };
        out.extend(
            entry_suffixes(&v.dims)
                .into_iter()
                .map(|s| format!("{base}{s}")),
        );
    }
    out
}

/// The model's schedule, or why it cannot run.
pub fn schedule(c: &Checked) -> Result<&gpm_schedule::Schedule, InferError> {
    c.schedule
        .as_ref()
        .map_err(|e| InferError::Schedule(e.to_string()))
}

/// Type-II maximum likelihood for the hyperparameters declared `learn(init)`: maximise the CAVI
/// ELBO over their logarithms. Models whose augmentation has no closed-form CAVI yet keep the
/// initial values, and the report says so.
fn learn_hypers(
    c: &Checked,
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    hv: HyperValues,
    hypers: &mut [(String, f64, String)],
) -> Result<HyperValues, InferError> {
    use gpm_runtime::learn::Coord;
    let mut coords = Vec::new();
    for (k, h) in c.model.hypers.iter().enumerate() {
        let id = gpm_schedule::HyperId(k);
        if let HyperKind::Learn { .. } = h.kind {
            match &h.shape {
                Shape::Scalar => coords.push(Coord::Scalar(id)),
                _ => {
                    let n = hv.vector(id).map_or(0, |v| v.len());
                    coords.extend((0..n).map(|k| Coord::Entry(id, k)));
                }
            }
        }
    }
    let learned_here = |k: usize| {
        coords
            .iter()
            .any(|c| matches!(c, Coord::Scalar(x) | Coord::Entry(x, _) if x.0 == k))
    };
    if coords.is_empty() {
        return Ok(hv);
    }
    if schedule
        .hyper_steps
        .iter()
        .any(|h| h.gibbs == GibbsUpdate::LearnUnavailable)
    {
        for (k, (_, _, how)) in hypers.iter_mut().enumerate() {
            if learned_here(k) {
                *how = "initial value: type-II ML needs closed-form CAVI, not yet available for this augmentation".into();
            }
        }
        return Ok(hv);
    }
    let learned = gpm_runtime::learn::learn(schedule, data, &hv, &coords, 400)?;
    for (k, (_, v, how)) in hypers.iter_mut().enumerate() {
        let id = gpm_schedule::HyperId(k);
        if let Some(x) = learned.hypers.scalar(id) {
            if coords.contains(&Coord::Scalar(id)) {
                *v = x;
                *how = format!(
                    "learned by type-II ML (ELBO {:.4} after {} evaluations)",
                    learned.fit.elbo.last().copied().unwrap_or(f64::NAN),
                    learned.evaluations
                );
            }
        }
        if let Some(vs) = learned.hypers.vector(id).filter(|_| learned_here(k)) {
            *v = vs[0];
            *how = format!("learned by type-II ML (ARD, values {vs:?})");
        }
    }
    Ok(learned.hypers)
}

/// A logistic-softmax factor whose number of classes is a datum was certified for 2 and 3
/// classes when the model was checked; certify it for the data's number before running.
fn certify_for_data(c: &Checked, data: &gpm_runtime::data::Data) -> Result<(), InferError> {
    for (k, f) in c.model.factors.iter().enumerate() {
        let gpm_ir::FactorForm::Categorical {
            classes: gpm_ir::Dim::Var(v),
            ..
        } = &f.form
        else {
            continue;
        };
        let Some(classes) = data.scalar(v) else {
            continue; // reported by the data checks
        };
        let cert = gpm_augment::certify::certify_categorical(classes as usize);
        if !cert.passed {
            return Err(InferError::Schedule(format!(
                "factor #{}: the logistic-softmax augmentation failed certification for {} classes (relative error {:.2e})",
                k + 1,
                classes,
                cert.max_rel_error
            )));
        }
    }
    Ok(())
}

/// What every run starts from: the schedule, the starting hyperparameter values (ARD vectors
/// sized to the data) and how each was set.
#[allow(clippy::type_complexity)]
fn start<'c>(
    c: &'c Checked,
    data: &gpm_runtime::data::Data,
) -> Result<
    (
        &'c gpm_schedule::Schedule,
        HyperValues,
        Vec<(String, f64, String)>,
    ),
    InferError,
> {
    let schedule = schedule(c)?;
    certify_for_data(c, data)?;
    let (hv, hypers) = hyper_values(c);
    Ok((schedule, size_ard(c, data, hv), hypers))
}

/// Run Gibbs sampling on a checked model with loaded data.
pub fn run_gibbs(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<InferResult, InferError> {
    run_gibbs_with(c, data, config, GibbsExtras::default(), progress)
}

/// What a Gibbs run adds to its draws and where its chains start.
#[derive(Debug, Clone, Default)]
pub struct GibbsExtras {
    /// The pointwise columns (`log_lik`, `y_rep`; not summarised: they are per observation,
    /// not parameters).
    pub pointwise: gibbs::Pointwise,
    /// Initial values of latents (the others start from a draw from their prior).
    pub init: gibbs::Init,
    /// Set (by a signal handler) to end the run early with the draws made so far.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// Run Gibbs sampling with these extras.
pub fn run_gibbs_with(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &GibbsConfig,
    extras: GibbsExtras,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<InferResult, InferError> {
    let (schedule, hv, mut hypers) = start(c, data)?;
    // What Gibbs does with each prior is the schedule's decision; say it.
    for (step, (_, _, how)) in schedule.hyper_steps.iter().zip(hypers.iter_mut()) {
        match &step.gibbs {
            g if g.is_sampled() => {
                *how = format!(
                    "{}; starts at the {}",
                    g.describe(&schedule.kernel_groups),
                    step.start_rule.describe()
                )
            }
            GibbsUpdate::Held { reason } => {
                *how = format!("{}, held fixed ({reason})", step.start_rule.describe())
            }
            _ => {}
        }
    }
    let hv = learn_hypers(c, &schedule, data, hv, &mut hypers)?;
    let sampler = gibbs::Sampler::new(&schedule, data, &hv)?
        .with_pointwise(extras.pointwise)?
        .with_init(extras.init)?;
    let jitter = sampler.prepared().jitter;
    let (chains, interrupted) = match &extras.stop {
        Some(stop) => {
            let chains = gibbs::run_until(&sampler, config, progress, stop)?;
            (chains, stop.load(std::sync::atomic::Ordering::Relaxed))
        }
        None => (gibbs::run(&sampler, config, progress)?, false),
    };
    if chains.first().is_none_or(|c| c.rows.is_empty()) {
        return Err(InferError::Interrupted(
            "the run was interrupted before any draw was kept".into(),
        ));
    }
    let layout = &chains[0].layout;
    let names = column_names(c, layout);
    // The pointwise columns come last.
    let ncol: usize = layout
        .vars
        .iter()
        .filter(|v| !matches!(v.kind, VarKind::LogLik | VarKind::Replicate))
        .map(|v| v.len())
        .sum();
    let mut summaries = Vec::with_capacity(ncol);
    for j in 0..ncol {
        let cols: Vec<Vec<f64>> = chains
            .iter()
            .map(|ch| ch.rows.iter().map(|r| r[j]).collect())
            .collect();
        let refs: Vec<&[f64]> = cols.iter().map(|v| v.as_slice()).collect();
        summaries.push((names[j].clone(), summarize(&refs)));
    }
    Ok(InferResult {
        chains,
        summaries,
        hypers,
        jitter,
        values: hv,
        interrupted,
    })
}

/// Run CAVI on a checked model with loaded data.
pub fn run_cavi(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &gpm_runtime::cavi::CaviConfig,
) -> Result<(gpm_runtime::cavi::CaviResult, Vec<(String, f64, String)>), InferError> {
    let (r, hypers, _) = run_cavi_with_values(c, data, config)?;
    Ok((r, hypers))
}

/// [`run_cavi`], also returning the hyperparameter values used (learned ones included).
pub fn run_cavi_with_values(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &gpm_runtime::cavi::CaviConfig,
) -> Result<
    (
        gpm_runtime::cavi::CaviResult,
        Vec<(String, f64, String)>,
        HyperValues,
    ),
    InferError,
> {
    let (schedule, hv, mut hypers) = start(c, data)?;
    let hv = learn_hypers(c, &schedule, data, hv, &mut hypers)?;
    let r = gpm_runtime::cavi::run(&schedule, data, &hv, config)?;
    Ok((r, hypers, hv))
}

/// Run Gaussian particle flow on a checked model with loaded data, the hyperparameters at the
/// values CAVI would use (`learn()` ones learned by CAVI's type-II ML, where it exists).
pub fn run_gpf(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &gpm_runtime::gpf::GpfConfig,
) -> Result<
    (
        gpm_runtime::gpf::GpfResult,
        Vec<(String, f64, String)>,
        HyperValues,
    ),
    InferError,
> {
    let (schedule, hv, mut hypers) = start(c, data)?;
    // Refused before type-II ML runs.
    gpm_runtime::gpf::steps(&schedule)?;
    let hv = learn_hypers(c, &schedule, data, hv, &mut hypers)?;
    let r = gpm_runtime::gpf::run(&schedule, data, &hv, config)?;
    Ok((r, hypers, hv))
}

/// Run stochastic CAVI on a checked model whose latents are sparse GPs. Positive scalar
/// `learn()` hyperparameters are learned along the way (Adam); the others keep their values, and
/// the report says which. `report` sees the trace points as they come.
pub fn run_svi(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &gpm_runtime::svi::SviConfig,
    report: &mut dyn FnMut(&gpm_runtime::svi::SviPoint, &[gpm_runtime::cavi::BlockPosterior]),
) -> Result<
    (
        gpm_runtime::svi::SviResult,
        Vec<(String, f64, String)>,
        HyperValues,
    ),
    InferError,
> {
    let (schedule, mut hv, mut hypers) = start(c, data)?;
    // SVI learns the positive scalar `learn()` hyperparameters (kernel and likelihood); ARD
    // vectors and unbounded ones keep their initial values.
    // Which `learn()` hyperparameters SVI learns is the schedule's decision.
    let mut learn = Vec::new();
    for (step, x) in schedule.hyper_steps.iter().zip(hypers.iter_mut()) {
        match step.variational {
            VariationalUpdate::TypeIiMl => learn.push(step.hyper),
            VariationalUpdate::TypeIiMlCaviOnly => {
                x.2 = "initial value: SVI learns positive scalar hyperparameters only (use --method cavi to learn this one)".into()
            }
            _ => {}
        }
    }
    let prep = gpm_runtime::prepared::Prepared::new(&schedule, data, &hv)?;
    let r = gpm_runtime::svi::run_learning(&prep, &schedule, config, &learn, report)?;
    for &(id, v) in &r.hypers {
        hv.set_scalar(id, v);
        if let Some(x) = hypers.get_mut(id.0) {
            x.1 = v;
            x.2 = "learned by SVI: Adam on the minibatch ELBO (finite-difference gradient in log θ), alternating with the natural-gradient steps".into();
        }
    }
    Ok((r, hypers, hv))
}

/// The inducing values `u` of every sparse block (`name.u.k,mean,sd`).
pub fn inducing_csv(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
) -> Result<String, InferError> {
    let schedule = schedule(c)?;
    let prep = gpm_runtime::prepared::Prepared::new(&schedule, data, hypers)?;
    let mut s = String::from("variable,mean,sd\n");
    for (b, post) in prep.blocks.iter().zip(blocks) {
        if let (
            gpm_runtime::prepared::Block::Sparse {
                latent, column, sp, ..
            },
            gpm_runtime::cavi::BlockPosterior::Sparse(q),
        ) = (b, post)
        {
            let (mu, sd) = q.inducing_values(sp)?;
            let name = &prep.latents[*latent].0;
            for k in 0..mu.len() {
                let _ = writeln!(
                    s,
                    "{name}.u.{}.{},{:.9e},{:.9e}",
                    column + 1,
                    k + 1,
                    mu[k],
                    sd[k]
                );
            }
        }
    }
    Ok(s)
}

fn size_ard(c: &Checked, data: &gpm_runtime::data::Data, mut hv: HyperValues) -> HyperValues {
    for (k, h) in c.model.hypers.iter().enumerate() {
        if let Shape::Vector(d) = &h.shape {
            let n = match d {
                gpm_ir::Dim::Const(n) => *n,
                gpm_ir::Dim::Var(v) => data.scalar(v).unwrap_or(1.0) as usize,
            };
            let id = gpm_schedule::HyperId(k);
            let v = hv.vector(id).map_or(f64::NAN, |v| v[0]);
            hv.set_vector(id, vec![v; n]);
        }
    }
    hv
}

/// A variational posterior (CAVI's, the particle flow's): one row per latent entry
/// (`name,mean,sd`).
pub fn posterior_csv(
    latents: &[(String, nalgebra::DVector<f64>, nalgebra::DVector<f64>)],
) -> String {
    let mut s = String::from("variable,mean,sd\n");
    for (name, m, v) in latents {
        let n = m.len();
        for i in 0..n {
            let label = if n == 1 {
                name.clone()
            } else {
                format!("{name}.{}", i + 1)
            };
            let _ = writeln!(s, "{label},{:.9e},{:.9e}", m[i], v[i].max(0.0).sqrt());
        }
    }
    s
}

/// The response datum and label set of each factor whose response ([`gpm_ir::Factor::response`])
/// has a finite label set (for predictive probabilities): a `{…}` set, or the classes `1..C` of a
/// categorical factor.
pub fn label_sets(c: &Checked, data: &gpm_runtime::data::Data) -> Vec<Option<(String, Vec<f64>)>> {
    c.model
        .factors
        .iter()
        .map(|f| {
            if let gpm_ir::FactorForm::Categorical { label, classes, .. } = &f.form {
                let k = match classes {
                    gpm_ir::Dim::Const(k) => *k,
                    gpm_ir::Dim::Var(v) => data.scalar(v)? as usize,
                };
                return Some((label.clone(), (1..=k).map(|x| x as f64).collect()));
            }
            let d = f.response.as_ref()?;
            match &c.model.datum(d)?.constraint {
                gpm_ir::ValueSet::Set(s) => {
                    Some((d.clone(), s.iter().map(|v| *v as f64).collect()))
                }
                _ => None,
            }
        })
        .collect()
}

/// Predictions at test points from a Gibbs run: `predictions.csv` and the test metrics.
pub fn predict(
    c: &Checked,
    train: &gpm_runtime::data::Data,
    test: &gpm_runtime::data::Data,
    r: &InferResult,
    seed: u64,
) -> Result<(String, serde_json::Value), InferError> {
    let schedule = schedule(c)?;
    let hv = r.values.clone();
    let labels = label_sets(c, test);
    let posterior = gpm_runtime::predict::Posterior::Draws {
        chains: &r.chains,
        max_draws: 1000,
        seed,
    };
    let sets: Vec<Option<Vec<f64>>> = labels
        .iter()
        .map(|l| l.as_ref().map(|l| l.1.clone()))
        .collect();
    let tr = gpm_runtime::prepared::Prepared::new(schedule, train, &hv)?;
    let p = gpm_runtime::predict::predict(&tr, schedule, train, test, &hv, posterior, &sets)?;
    Ok(prediction_outputs(&p, &labels, test))
}

/// How many draws from a variational posterior to write, with which pointwise columns.
#[derive(Debug, Clone, Copy)]
pub struct QDraws {
    /// The pointwise columns.
    pub pointwise: gibbs::Pointwise,
    /// Number of draws.
    pub draws: usize,
    /// Seed.
    pub seed: u64,
}

/// Draws from a variational posterior `q` (CAVI or particle flow) in the layout of
/// Gibbs draws, with the pointwise columns asked for: one CmdStan CSV.
pub fn draws_from_q(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
    q: &QDraws,
    method: &str,
) -> Result<String, InferError> {
    let QDraws {
        pointwise,
        draws,
        seed,
    } = *q;
    let schedule = schedule(c)?;
    let sampler = gibbs::Sampler::new(schedule, data, hypers)?.with_pointwise(pointwise)?;
    let chain = sampler.draws_from_q(blocks, draws, seed)?;
    let config = GibbsConfig {
        chains: 1,
        warmup: 0,
        draws,
        thin: 1,
        seed,
    };
    Ok(draws_csv(
        c,
        &chain,
        0,
        &config,
        &format!("draws from the {method} posterior q, by gpmc"),
    ))
}

/// Predictions at test points from a variational posterior (CAVI or SVI): `predictions.csv` and
/// the test metrics, the densities by adaptive Gauss-Hermite quadrature.
pub fn predict_variational(
    c: &Checked,
    train: &gpm_runtime::data::Data,
    test: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
) -> Result<(String, serde_json::Value), InferError> {
    let schedule = schedule(c)?;
    let labels = label_sets(c, test);
    let posterior = gpm_runtime::predict::Posterior::Variational(blocks);
    let sets: Vec<Option<Vec<f64>>> = labels
        .iter()
        .map(|l| l.as_ref().map(|l| l.1.clone()))
        .collect();
    let tr = gpm_runtime::prepared::Prepared::new(schedule, train, hypers)?;
    let p = gpm_runtime::predict::predict(&tr, schedule, train, test, hypers, posterior, &sets)?;
    Ok(prediction_outputs(&p, &labels, test))
}

/// The CSV and metrics of a prediction.
pub fn prediction_outputs(
    p: &gpm_runtime::predict::Prediction,
    labels: &[Option<(String, Vec<f64>)>],
    test: &gpm_runtime::data::Data,
) -> (String, serde_json::Value) {
    let n = p
        .predictors
        .iter()
        .map(|x| x.1.len())
        .chain(p.log_predictive.iter().map(|v| v.len()))
        .chain(p.label_probabilities.iter().flatten().map(|l| l.1.len()))
        .max()
        .unwrap_or(0);
    let mut header = vec!["point".to_string()];
    for (name, _, _) in &p.predictors {
        header.push(format!("{name}_mean"));
        header.push(format!("{name}_sd"));
    }
    // A factor whose test responses were left out (NaN) has no log predictive density.
    let scored = |lp: &Vec<f64>| !lp.is_empty() && lp.iter().all(|v| !v.is_nan());
    for (f, lp) in p.log_predictive.iter().enumerate() {
        if scored(lp) {
            header.push(format!("log_predictive_{}", f + 1));
        }
    }
    for (f, lab) in p.label_probabilities.iter().enumerate() {
        if let Some((ls, _)) = lab {
            for l in ls {
                header.push(format!("p_{}_{}", f + 1, l));
            }
        }
    }
    // The predictive distribution of a new response, per factor that has one.
    let response_names: Vec<String> = (0..p.responses.len())
        .map(|f| format!("y_rep_{}", f + 1))
        .collect();
    for (f, r) in p.responses.iter().enumerate() {
        if r.is_some() {
            for stat in ["mean", "sd", "q5", "q50", "q95"] {
                header.push(format!("{}_{stat}", response_names[f]));
            }
        }
    }
    let mut csv = header.join(",") + "\n";
    for i in 0..n {
        let mut row = vec![(i + 1).to_string()];
        for (_, m, v) in &p.predictors {
            row.push(format!("{:.6e}", m.get(i).copied().unwrap_or(f64::NAN)));
            row.push(format!(
                "{:.6e}",
                v.get(i).copied().unwrap_or(f64::NAN).sqrt()
            ));
        }
        for lp in &p.log_predictive {
            if scored(lp) {
                row.push(format!("{:.6e}", lp.get(i).copied().unwrap_or(f64::NAN)));
            }
        }
        for (ls, probs) in p.label_probabilities.iter().flatten() {
            for k in 0..ls.len() {
                row.push(format!("{:.6}", probs.get(i).map_or(f64::NAN, |pr| pr[k])));
            }
        }
        for r in p.responses.iter().flatten() {
            let s = r.get(i);
            for v in [
                s.map(|s| s.mean),
                s.map(|s| s.sd),
                s.map(|s| s.q5),
                s.map(|s| s.q50),
                s.map(|s| s.q95),
            ] {
                row.push(format!("{:.6e}", v.unwrap_or(f64::NAN)));
            }
        }
        csv += &(row.join(",") + "\n");
    }
    // Metrics: total and mean log predictive density; error rate where labels exist.
    let mut metrics = serde_json::Map::new();
    let lpd: f64 = p
        .log_predictive
        .iter()
        .filter(|v| scored(v))
        .flatten()
        .sum();
    let count: usize = p
        .log_predictive
        .iter()
        .filter(|v| scored(v))
        .map(|v| v.len())
        .sum();
    metrics.insert("points".into(), json!(n));
    if p.draws > 0 {
        metrics.insert("draws_used".into(), json!(p.draws));
    } else {
        metrics.insert(
            "quadrature".into(),
            json!("adaptive Gauss-Hermite, 40 nodes"),
        );
    }
    if count > 0 {
        metrics.insert("log_predictive_density".into(), json!(lpd));
        metrics.insert(
            "mean_log_predictive_density".into(),
            json!(lpd / count as f64),
        );
    } else {
        metrics.insert(
            "scored".into(),
            json!("no: the test data have no responses"),
        );
    }
    for (f, lab) in p.label_probabilities.iter().enumerate() {
        let (Some((ls, probs)), Some((name, _))) = (lab, &labels[f]) else {
            continue;
        };
        let Some(y) = test.vector(name).filter(|y| y.iter().all(|v| !v.is_nan())) else {
            continue;
        };
        let wrong = probs
            .iter()
            .zip(y)
            .filter(|(pr, yi)| {
                let best = (0..ls.len())
                    .max_by(|a, b| pr[*a].total_cmp(&pr[*b]))
                    .unwrap_or(0);
                ls[best] != **yi
            })
            .count();
        metrics.insert(
            format!("error_rate_factor_{}", f + 1),
            json!(wrong as f64 / y.len().max(1) as f64),
        );
    }
    (csv, serde_json::Value::Object(metrics))
}

/// One chain as a CSV in the CmdStan layout (comment header, column names, one row per draw),
/// which `arviz.from_cmdstan` reads.
pub fn chain_csv(c: &Checked, chain: &Chain, k: usize, config: &GibbsConfig) -> String {
    draws_csv(c, chain, k, config, "gibbs, augmented by gpmc")
}

/// Draws as a CSV in the CmdStan layout, `algorithm` saying how they were made.
pub fn draws_csv(
    c: &Checked,
    chain: &Chain,
    k: usize,
    config: &GibbsConfig,
    algorithm: &str,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# model = {}", c.name);
    let _ = writeln!(s, "# method = sample (algorithm = {algorithm})");
    let _ = writeln!(s, "#   num_samples = {}", chain.rows.len());
    let _ = writeln!(s, "#   num_warmup = {}", config.warmup);
    let _ = writeln!(s, "#   thin = {}", config.thin);
    let _ = writeln!(s, "# id = {}", k + 1);
    let _ = writeln!(s, "# seed = {}", config.seed);
    let _ = writeln!(s, "{}", column_names(c, &chain.layout).join(","));
    for r in &chain.rows {
        let line: Vec<String> = r.iter().map(|v| format!("{v:.9e}")).collect();
        let _ = writeln!(s, "{}", line.join(","));
    }
    let _ = writeln!(
        s,
        "#  Elapsed Time: {:.3} seconds (Warm-up)",
        chain.warmup_seconds
    );
    let _ = writeln!(
        s,
        "#                {:.3} seconds (Sampling)",
        chain.sampling_seconds
    );
    s
}

/// `summary.json`.
pub fn summary_json(c: &Checked, r: &InferResult, config: &GibbsConfig) -> serde_json::Value {
    json!({
        "model": c.name,
        "method": "gibbs",
        "chains": r.chains.len(),
        "warmup": config.warmup,
        "draws": r.chains.first().map_or(0, |c| c.rows.len()),
        "draws_requested": config.draws,
        "interrupted": r.interrupted,
        "thin": config.thin,
        "seed": config.seed,
        "hyperparameters": r.hypers.iter().map(|(n, v, how)| json!({"name": n, "value": v, "set_by": how})).collect::<Vec<_>>(),
        "gp_jitter": r.jitter,
        "augmentations": c.plans.iter().map(|p| json!({"factor": p.factor, "form": p.form, "certified_max_rel_error": p.certificate.max_rel_error})).collect::<Vec<_>>(),
        "timing_seconds": {
            "warmup": r.chains.iter().map(|ch| ch.warmup_seconds).collect::<Vec<_>>(),
            "sampling": r.chains.iter().map(|ch| ch.sampling_seconds).collect::<Vec<_>>(),
        },
        "variables": r.summaries.iter().map(|(n, s)| json!({
            "name": n, "mean": s.mean, "sd": s.sd, "q5": s.q5, "q50": s.q50, "q95": s.q95,
            "mcse_mean": s.mcse_mean, "mad": s.mad, "ess_bulk": s.ess_bulk, "ess_tail": s.ess_tail, "rhat": s.rhat,
        })).collect::<Vec<_>>(),
    })
}

/// The table printed after a run (at most `max_rows` variables, then a count).
pub fn summary_table(r: &InferResult, max_rows: usize) -> String {
    let mut s = crate::summary::table(&r.summaries, 4, max_rows);
    let worst = r
        .summaries
        .iter()
        .map(|(_, x)| x.rhat)
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let min_ess = r
        .summaries
        .iter()
        .map(|(_, x)| x.ess_bulk)
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    // Each chain's own elapsed time, summed: the CPU time of the chains when each has a core
    // (more chains than cores overstate it).
    let secs: f64 = r
        .chains
        .iter()
        .map(|c| c.warmup_seconds + c.sampling_seconds)
        .sum();
    let _ = writeln!(
        s,
        "max R-hat {worst:.3}; min bulk ESS {min_ess:.0}; {secs:.2} chain-seconds (warm-up and sampling, summed over {} chains; {:.0} min-ESS per chain-second)",
        r.chains.len(),
        min_ess / secs.max(1e-9)
    );
    // The thresholds of Vehtari et al. (2021): R̂ below 1.01 and bulk ESS above 100 per chain
    // (400 over four) before the draws are trusted.
    let need = 100.0 * r.chains.len() as f64;
    if worst > 1.01 || min_ess < need {
        let bad: Vec<&str> = r
            .summaries
            .iter()
            .filter(|(_, x)| x.rhat > 1.01 || x.ess_bulk < need)
            .take(5)
            .map(|(n, _)| n.as_str())
            .collect();
        let _ = writeln!(
            s,
            "warning: the chains have not mixed well enough (R-hat > 1.01 or bulk ESS < {need:.0}), e.g. {}; run more draws or check the model",
            bad.join(", ")
        );
    }
    s
}

/// Write `files` as the whole content of the output directory `dir`: into a fresh directory
/// beside it (`.<name>.partial-<pid>`), renamed into place once every file is written. A rerun
/// with fewer chains so leaves no stale `chain-5.csv` for ArviZ to mix in, and a failed write
/// leaves the previous output as it was. An existing `dir` is replaced only if it is a gpmc
/// output (it holds `summary.json`) or empty; leftovers of killed runs are removed.
pub fn write_all(dir: &Path, files: &[(String, String)]) -> Result<(), InferError> {
    let io = |what: &Path, e: std::io::Error| InferError::Io(format!("{}: {e}", what.display()));
    let name = dir
        .file_name()
        .ok_or_else(|| InferError::Io(format!("{}: not a directory name", dir.display())))?
        .to_string_lossy()
        .to_string();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if dir.exists() {
        let ours = dir.join("summary.json").is_file()
            || std::fs::read_dir(dir)
                .map_err(|e| io(dir, e))?
                .next()
                .is_none();
        if !dir.is_dir() || !ours {
            return Err(InferError::Io(format!(
                "{} exists and is not a gpmc output directory (no summary.json): choose another --output",
                dir.display()
            )));
        }
    }
    std::fs::create_dir_all(&parent).map_err(|e| io(&parent, e))?;
    remove_leftovers(&parent, &name);
    let pid = std::process::id();
    let partial = parent.join(format!(".{name}.partial-{pid}"));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir(&partial).map_err(|e| io(&partial, e))?;
    for (file, content) in files {
        if let Err(e) = std::fs::write(partial.join(file), content) {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(io(&partial.join(file), e));
        }
    }
    // Move the old output aside, the new one in, then drop the old one.
    let old = parent.join(format!(".{name}.old-{pid}"));
    let had_old = dir.exists();
    if had_old {
        if let Err(e) = std::fs::rename(dir, &old) {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(io(dir, e));
        }
    }
    if let Err(e) = std::fs::rename(&partial, dir) {
        if had_old {
            let _ = std::fs::rename(&old, dir);
        }
        let _ = std::fs::remove_dir_all(&partial);
        return Err(io(dir, e));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Remove `.<name>.partial-<pid>` and `.<name>.old-<pid>` directories in `parent` left by runs
/// that were killed (their process no longer exists).
fn remove_leftovers(parent: &Path, name: &str) {
    // Whether a process is alive is read from /proc; elsewhere nothing is removed.
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().to_string();
        let pid = [".partial-", ".old-"].iter().find_map(|tag| {
            file.strip_prefix(&format!(".{name}{tag}"))
                .and_then(|p| p.parse::<u32>().ok())
        });
        let alive = |pid: u32| Path::new(&format!("/proc/{pid}")).exists();
        if let Some(pid) = pid {
            if pid != std::process::id() && !alive(pid) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}
