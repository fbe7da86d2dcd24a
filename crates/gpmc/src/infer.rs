//! `gpmc infer`: run Gibbs on a checked model and write the results. Files are built in memory
//! and written into a fresh directory that replaces the output directory as a whole at the end
//! ([`write_all`]), so a failed run leaves no partial output behind and no stale file mixes in.

use crate::data::DataError;
use crate::Checked;
use gpm_ir::Shape;
use gpm_runtime::data::Data;
use gpm_runtime::diagnostics::{summarize, Summary};
use gpm_runtime::draws::VarKind;
use gpm_runtime::gibbs::{self, Chain, ChainTimes, GibbsConfig};
use gpm_runtime::kernels::HyperValues;
use gpm_runtime::rao_blackwell::WithMeans;
use gpm_runtime::RuntimeError;
use gpm_schedule::{GibbsUpdate, Schedule, VariationalUpdate};
use learning::learn_hypers;
use serde_json::json;
use std::fmt::Write as _;
use std::path::PathBuf;

mod learning;
mod merge;
mod outputs;
mod predict;
mod prediction_outputs;
pub use merge::{merge_runs, RunPart};
use outputs::chain_head;
pub use outputs::{
    chain_csv, draws_csv, gibbs_warnings, summaries_of, summary_json, summary_table, variables_json,
};
pub use predict::{
    bind_posterior, label_sets, posterior_sampler, predict, predict_bound, predict_variational,
    predict_variational_bound, predict_with, PREDICT_DRAWS,
};
pub use prediction_outputs::prediction_outputs;

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
    Runtime(gpm_runtime::RuntimeError),
    /// Output could not be written.
    #[error("cannot write the output: {0}")]
    #[diagnostic(code(gpm::io))]
    Io(String),
    /// The run gave no usable draw.
    #[error("{0}")]
    #[diagnostic(code(gpm::degenerate))]
    Degenerate(String),
    /// The run was interrupted with nothing to write.
    #[error("{0}")]
    #[diagnostic(code(gpm::interrupted))]
    Interrupted(String),
}

impl From<crate::output::OutputError> for InferError {
    fn from(e: crate::output::OutputError) -> Self {
        InferError::Io(e.0)
    }
}

impl From<gpm_runtime::RuntimeError> for InferError {
    /// A phase stopped on request is an interruption (exit 130), not a failure.
    fn from(e: gpm_runtime::RuntimeError) -> Self {
        match e {
            gpm_runtime::RuntimeError::Interrupted(m) => InferError::Interrupted(m),
            other => InferError::Runtime(other),
        }
    }
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
    /// The chains with their rows, when the draws were kept in memory ([`run_gibbs_with`];
    /// empty when they were streamed to files, [`run_gibbs_streamed`]).
    pub chains: Vec<Chain>,
    /// Each chain's times.
    pub times: Vec<ChainTimes>,
    /// Draws kept per chain.
    pub draws: usize,
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
    /// Rao-Blackwellised posterior means of the latents' columns that have them (name and
    /// estimate; [`gpm_runtime::rao_blackwell`]).
    pub rao_blackwell: Vec<(String, gpm_runtime::rao_blackwell::Estimate)>,
    /// Per chain, NUTS's transition statistics (empty for Gibbs).
    pub nuts: Vec<gpm_runtime::nuts::NutsStats>,
    /// Per chain, the seconds each step of the Gibbs sweep took, warm-up included, in the
    /// order `gpmc check` numbers them (empty for NUTS on the whole model).
    pub step_seconds: Vec<Vec<f64>>,
    /// NUTS: the latents whose prior is far wider than the data allow, read before sampling
    /// ([`gpm_runtime::scale_gap`]); empty for Gibbs.
    pub scale_gaps: Vec<gpm_runtime::scale_gap::ScaleGap>,
    /// Data, hyperparameter values and constants whose squares leave double precision
    /// ([`crate::magnitudes`]), read before sampling.
    pub extremes: Vec<crate::magnitudes::Extreme>,
}

impl InferResult {
    /// Draws made before (read back from files, or handed over by an embedding), to predict
    /// from: no summaries, no times.
    pub fn from_draws(chains: Vec<Chain>, values: HyperValues) -> InferResult {
        InferResult {
            times: vec![],
            draws: chains.first().map_or(0, |c| c.rows.len()),
            chains,
            summaries: vec![],
            hypers: vec![],
            jitter: 0.0,
            values,
            interrupted: false,
            rao_blackwell: vec![],
            nuts: vec![],
            step_seconds: vec![],
            scale_gaps: vec![],
            extremes: vec![],
        }
    }
}

/// The hyperparameter values a run starts from, as the schedule decides them
/// ([`gpm_schedule::start_value`]): fixed values as given; `learn` at its initial value (then
/// type-II maximum likelihood, where the augmentation has CAVI); a prior at its mean (its mode
/// where it has no mean; then Gibbs samples it when it can, and the output says which were held).
pub fn hyper_values(c: &Checked) -> (HyperValues, HyperReport) {
    let mut hv = HyperValues::new(c.model.hypers.len());
    let mut used = Vec::new();
    for (k, h) in c.model.hypers.iter().enumerate() {
        let id = gpm_schedule::HyperId(k);
        let (v, rule) = gpm_schedule::start_value(&h.kind);
        let how = match rule {
            r if !r.from_prior() => rule.describe().to_string(),
            _ => format!(
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

/// A logistic-softmax factor whose number of classes is a datum was certified for 2 and 3
/// classes when the model was checked; certify it for the data's number before running.
fn certify_for_data(c: &Checked, data: &gpm_runtime::data::Data) -> Result<(), InferError> {
    for (k, f) in c.model.factors.iter().enumerate() {
        let gpm_ir::FactorForm::Categorical {
            classes: gpm_ir::Dim::Var(v),
            link,
            ..
        } = &f.form
        else {
            continue;
        };
        let Some(classes) = data.scalar(v) else {
            continue; // reported by the data checks
        };
        let cert = gpm_augment::certify::certify_categorical(classes as usize, link);
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

/// Each hyperparameter's name, value and how it was set, as reported by every run.
pub type HyperReport = Vec<(String, f64, String)>;

/// A fit with the hyperparameters it used: how each was set, and their values (learned ones
/// included).
pub type Fitted<R> = (R, HyperReport, HyperValues);

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
    /// Sample with NUTS on the original model ([`gpm_runtime::nuts`]) instead of the Gibbs
    /// sweep: the same rows, outputs and summaries.
    pub nuts: bool,
    /// With `nuts`: on the augmented model (each auxiliary a coordinate), thesis §7.3.
    pub augmented: bool,
}

impl GibbsExtras {
    /// Which model NUTS runs on.
    fn nuts_on(&self) -> gpm_runtime::nuts::On {
        if self.augmented {
            gpm_runtime::nuts::On::Augmented
        } else {
            gpm_runtime::nuts::On::Original
        }
    }
}

/// A Gibbs sampler ready to run: the schedule's decisions for each hyperparameter said, the
/// learned ones learned.
struct GibbsSetup<'c> {
    sampler: gibbs::Sampler<'c>,
    hypers: Vec<(String, f64, String)>,
    values: HyperValues,
    scale_gaps: Vec<gpm_runtime::scale_gap::ScaleGap>,
    extremes: Vec<crate::magnitudes::Extreme>,
}

/// What the chains kept, however they were stored.
struct Kept {
    draws: usize,
    interrupted: bool,
    rao_blackwell: Vec<(String, gpm_runtime::rao_blackwell::Estimate)>,
    nuts: Vec<gpm_runtime::nuts::NutsStats>,
    /// Per chain, the seconds each step of the Gibbs sweep took (empty for NUTS).
    step_seconds: Vec<Vec<f64>>,
}

impl GibbsSetup<'_> {
    /// The run's result: the chains (empty when streamed to files), their times and summaries,
    /// what they kept, and what the setup decided (hyperparameters, jitter).
    fn result(
        self,
        chains: Vec<Chain>,
        times: Vec<ChainTimes>,
        summaries: Vec<(String, Summary)>,
        kept: Kept,
    ) -> InferResult {
        InferResult {
            chains,
            times,
            draws: kept.draws,
            summaries,
            jitter: self.sampler.prepared().jitter,
            hypers: self.hypers,
            values: self.values,
            interrupted: kept.interrupted,
            rao_blackwell: kept.rao_blackwell,
            nuts: kept.nuts,
            step_seconds: kept.step_seconds,
            scale_gaps: self.scale_gaps,
            extremes: self.extremes,
        }
    }
}

fn gibbs_setup<'c>(
    c: &'c Checked,
    data: &gpm_runtime::data::Data,
    extras: &GibbsExtras,
) -> Result<GibbsSetup<'c>, InferError> {
    let (schedule, hv, mut hypers) = start(c, data)?;
    if extras.augmented && !extras.nuts {
        return Err(InferError::Schedule(
            "the augmented model is a choice of NUTS's target: use it with NUTS (--method nuts)"
                .into(),
        ));
    }
    if let Some(why) = extras
        .nuts
        .then(|| gpm_runtime::nuts::refusal(schedule, extras.nuts_on()))
        .flatten()
    {
        return Err(InferError::Schedule(why));
    }
    // What Gibbs does with each prior is the schedule's decision; say it.
    for (step, (_, _, how)) in schedule.hyper_steps.iter().zip(hypers.iter_mut()) {
        match &step.gibbs {
            g if g.is_sampled() && extras.nuts => {
                *how = format!(
                    "moved by NUTS on its unconstrained scale; starts near the {}",
                    step.start_rule.describe()
                )
            }
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
    let values = learn_hypers(schedule, data, hv, &mut hypers)?;
    let sampler = gibbs::Sampler::new(schedule, data, &values)?
        .with_pointwise(extras.pointwise)?
        .with_init(extras.init.clone())?;
    // NUTS on the original model starts from prior draws whitened by the priors: a prior far
    // wider than the data allow is read before sampling (the run then says why it did not mix).
    // A likelihood the probe cannot evaluate at the prior's mean says nothing here: the run
    // goes on and reports as before.
    let scale_gaps = if extras.nuts && !extras.augmented {
        gpm_runtime::scale_gap::gaps(sampler.prepared(), schedule, &values).unwrap_or_default()
    } else {
        vec![]
    };
    Ok(GibbsSetup {
        sampler,
        hypers,
        values,
        scale_gaps,
        extremes: crate::magnitudes::extremes(&c.model, data),
    })
}

/// Run the chains of `setup` into `sinks` (one per chain), stopping early if `extras.stop` is
/// set: the chains that kept draws with their times, the draws each kept, and whether the run
/// was interrupted.
#[allow(clippy::type_complexity)]
fn run_chains<S: gibbs::RowSink>(
    setup: &GibbsSetup,
    config: &GibbsConfig,
    extras: &GibbsExtras,
    progress: &(dyn Fn(usize, usize) + Sync),
    sinks: Vec<S>,
) -> Result<(Vec<(WithMeans<S>, ChainTimes)>, Kept), InferError> {
    let never = std::sync::atomic::AtomicBool::new(false);
    let stop = extras.stop.as_deref().unwrap_or(&never);
    let width = setup.sampler.prepared().latents.iter().map(|l| l.1).sum();
    let sinks = sinks
        .into_iter()
        .map(|sink| WithMeans {
            sink,
            sums: gpm_runtime::rao_blackwell::RaoBlackwell::new(width, config.draws),
        })
        .collect();
    let (chains, kept, nuts, step_seconds) = if extras.nuts {
        let (ran, kept) = gpm_runtime::nuts_run::run_into(
            &setup.sampler,
            extras.nuts_on(),
            config,
            progress,
            stop,
            sinks,
        )?;
        let (chains, stats) = ran.into_iter().map(|(s, t, n)| ((s, t), n)).unzip();
        (chains, kept, stats, vec![])
    } else {
        let (ran, kept) = gibbs::run_into(&setup.sampler, config, progress, stop, sinks)?;
        let (chains, stats): (Vec<_>, Vec<_>) =
            ran.into_iter().map(|(s, t, n)| ((s, t), n)).unzip();
        // The sweep's NUTS steps report as NUTS does (divergences warned of, per-chain
        // statistics in summary.json).
        let nuts = if setup.sampler.schedule().nuts_blocks.is_empty() {
            vec![]
        } else {
            stats.iter().map(|s| s.nuts.to_nuts_stats()).collect()
        };
        let step_seconds = stats.into_iter().map(|s| s.step_seconds).collect();
        (chains, kept, nuts, step_seconds)
    };
    if kept == 0 {
        return Err(InferError::Interrupted(
            "the run was interrupted before any draw was kept".into(),
        ));
    }
    let kept = Kept {
        draws: kept,
        interrupted: stop.load(std::sync::atomic::Ordering::Relaxed),
        rao_blackwell: vec![],
        nuts,
        step_seconds,
    };
    Ok((chains, kept))
}

/// The Rao-Blackwellised means of the latent columns named in `names` (the row layout's
/// columns), from each chain's sums.
fn rao_blackwell_means(
    layout: &gpm_runtime::draws::Layout,
    names: &[String],
    sums: &[gpm_runtime::rao_blackwell::RaoBlackwell],
) -> Vec<(String, gpm_runtime::rao_blackwell::Estimate)> {
    let mut latent_names = Vec::new();
    let mut offset = 0;
    for v in &layout.vars {
        if matches!(v.kind, VarKind::Latent(_)) {
            latent_names.extend(names[offset..offset + v.len()].iter().cloned());
        }
        offset += v.len();
    }
    gpm_runtime::rao_blackwell::combine(sums)
        .into_iter()
        .zip(latent_names)
        .filter_map(|(e, n)| e.map(|e| (n, e)))
        .collect()
}

/// The number of leading columns of a draw row that are parameters (the pointwise
/// `log_lik`/`y_rep` columns come last and are not summarised).
fn parameter_columns(layout: &gpm_runtime::draws::Layout) -> usize {
    layout
        .vars
        .iter()
        .filter(|v| !matches!(v.kind, VarKind::LogLik | VarKind::Replicate))
        .map(|v| v.len())
        .sum()
}

/// Run Gibbs sampling with these extras, the draws kept in memory.
pub fn run_gibbs_with(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &GibbsConfig,
    extras: GibbsExtras,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<InferResult, InferError> {
    let setup = gibbs_setup(c, data, &extras)?;
    // The rows are kept in memory here (the Python package, the tests), twice at once when
    // they are handed over (the rows and the bytes Python reads them from).
    crate::output::check_memory(
        (config.chains as u64).saturating_mul(config.draws as u64),
        setup.sampler.layout().width(),
        2,
    )?;
    let sinks = (0..config.chains).map(|_| Vec::new()).collect();
    let (ran, mut kept) = run_chains(&setup, config, &extras, progress, sinks)?;
    let layout = setup.sampler.layout();
    let names = column_names(c, &layout);
    check_log_density(
        &names,
        ran.iter().map(|(w, _)| w.sink.len()).sum(),
        ran.iter()
            .flat_map(|(w, _)| w.sink.iter())
            .filter(|r| r.first().is_some_and(|v| v.is_finite()))
            .count(),
    )?;
    let sums: Vec<_> = ran.iter().map(|(w, _)| w.sums.clone()).collect();
    let rao_blackwell = rao_blackwell_means(&layout, &names, &sums);
    let chains: Vec<Chain> = ran
        .into_iter()
        .map(|(w, t)| Chain::new(layout.clone(), w.sink, t))
        .collect();
    let summaries = (0..parameter_columns(&layout))
        .map(|j| {
            let cols: Vec<Vec<f64>> = chains
                .iter()
                .map(|ch| ch.rows.iter().map(|r| r[j]).collect())
                .collect();
            let refs: Vec<&[f64]> = cols.iter().map(|v| v.as_slice()).collect();
            (names[j].clone(), summarize(&refs))
        })
        .collect();
    let times = chains.iter().map(Chain::times).collect();
    kept.rao_blackwell = rao_blackwell;
    Ok(setup.result(chains, times, summaries, kept))
}

/// A run whose every draw has a non-finite log density is not a posterior (a prior variance of
/// 10⁵⁰, data near the overflow range): an error, with nothing written. `names` are the columns
/// (`lp__` first), `rows` the draws kept, `finite` those with a finite `lp__`.
fn check_log_density(names: &[String], rows: usize, finite: usize) -> Result<(), InferError> {
    if names.first().is_some_and(|n| n == "lp__") && rows > 0 && finite == 0 {
        return Err(InferError::Degenerate(format!(
            "every one of the {rows} draws has a non-finite log density (lp__): the model underflows or overflows at these data and hyperparameters; check their scales"
        )));
    }
    Ok(())
}

/// Run Gibbs sampling with these extras, each chain's draws written to `chain-K.csv` in
/// `staging` as they are made, so that memory stays flat in the number of draws; the summaries
/// are read back from the files, a block of columns at a time. The result holds no rows
/// (`chains` is empty).
pub fn run_gibbs_streamed(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &GibbsConfig,
    extras: GibbsExtras,
    progress: &(dyn Fn(usize, usize) + Sync),
    staging: &crate::output::Staging,
) -> Result<InferResult, InferError> {
    let setup = gibbs_setup(c, data, &extras)?;
    let layout = setup.sampler.layout();
    let names = column_names(c, &layout);
    // Each kept draw is a CSV row (~16 bytes a value) and a binary row (8 bytes a value).
    crate::output::check_space(
        staging.partial_dir(),
        (config.chains as u64).saturating_mul(config.draws as u64),
        names.len(),
        24,
    )?;
    let paths: Vec<PathBuf> = (1..=config.chains)
        .map(|k| staging.path(&format!("chain-{k}.csv")))
        .collect();
    // Chain `k`'s rows in binary, for the summaries (not part of the output).
    let spill_path = |k: usize| staging.path(&format!(".chain-{k}.rows"));
    let sinks = paths
        .iter()
        .enumerate()
        .map(|(k, path)| {
            let algorithm = if extras.nuts {
                NUTS_ALGORITHM
            } else {
                GIBBS_ALGORITHM
            };
            let head = chain_head(c, algorithm, config, k, &names);
            let spill = crate::spill::Spill::create(&spill_path(k + 1), layout.width())?;
            crate::cmdstan::ChainWriter::create(path, &head, config.draws, Some(spill))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (ran, mut kept) = run_chains(&setup, config, &extras, progress, sinks)?;
    // Chains that kept no draw (not started when the run was interrupted) are removed and the
    // others numbered 1, 2, … so that readers find every chain.
    let mut kept_paths = Vec::with_capacity(ran.len());
    let mut spills = Vec::with_capacity(ran.len());
    let mut times = Vec::with_capacity(ran.len());
    check_log_density(
        &names,
        ran.iter().map(|(w, _)| w.sink.rows()).sum(),
        ran.iter().map(|(w, _)| w.sink.finite_first()).sum(),
    )?;
    let sums: Vec<_> = ran.iter().map(|(w, _)| w.sums.clone()).collect();
    let rao_blackwell = rao_blackwell_means(&layout, &names, &sums);
    for (WithMeans { sink: writer, .. }, t) in ran {
        kept_paths.push(writer.path().to_path_buf());
        spills.extend(writer.finish(&t)?);
        times.push(t);
    }
    for p in paths.iter().filter(|p| !kept_paths.contains(p)) {
        let _ = std::fs::remove_file(p);
    }
    for (k, p) in kept_paths.iter().enumerate() {
        if *p != paths[k] {
            std::fs::rename(p, &paths[k])
                .map_err(|e| InferError::Io(format!("{}: {e}", p.display())))?;
        }
    }
    let parameters = &names[..parameter_columns(&layout)];
    let summaries =
        crate::spill::summarize_spilled(&spills, layout.width(), parameters, kept.draws);
    // The spill files are not part of the output, whatever the summaries gave.
    for k in 1..=config.chains {
        let _ = std::fs::remove_file(spill_path(k));
    }
    kept.rao_blackwell = rao_blackwell;
    Ok(setup.result(vec![], times, summaries?, kept))
}

/// Run CAVI on a checked model with loaded data.
pub fn run_cavi(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    config: &gpm_runtime::cavi::CaviConfig,
) -> Result<(gpm_runtime::cavi::CaviResult, HyperReport), InferError> {
    let (r, hypers, _) = run_learned(c, data, config)?;
    Ok((r, hypers))
}

/// A method that runs at the hyperparameters CAVI's type-II ML learned (its `learn()` ones;
/// the others at their start values): CAVI itself and Gaussian particle flow.
pub trait AfterLearning {
    /// What the method returns.
    type Output;
    /// Whether it can run this schedule, asked before type-II ML runs.
    fn refuse(&self, _schedule: &Schedule) -> Result<(), RuntimeError> {
        Ok(())
    }
    /// Run it at the hyperparameters `hv`.
    fn run(&self, s: &Schedule, d: &Data, hv: &HyperValues) -> Result<Self::Output, RuntimeError>;
}

impl AfterLearning for gpm_runtime::cavi::CaviConfig {
    type Output = gpm_runtime::cavi::CaviResult;
    fn run(&self, s: &Schedule, d: &Data, hv: &HyperValues) -> Result<Self::Output, RuntimeError> {
        gpm_runtime::cavi::run(s, d, hv, self)
    }
}

/// Gaussian particle flow at the hyperparameters CAVI would use.
impl AfterLearning for gpm_runtime::gpf::GpfConfig {
    type Output = gpm_runtime::gpf::GpfResult;
    fn refuse(&self, schedule: &Schedule) -> Result<(), RuntimeError> {
        gpm_runtime::gpf::steps(schedule).map(|_| ())
    }
    fn run(&self, s: &Schedule, d: &Data, hv: &HyperValues) -> Result<Self::Output, RuntimeError> {
        gpm_runtime::gpf::run(s, d, hv, self)
    }
}

/// Run `method` (CAVI, particle flow) on a checked model with loaded data, after type-II ML of
/// its `learn()` hyperparameters; also returns the hyperparameter values used.
pub fn run_learned<M: AfterLearning>(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    method: &M,
) -> Result<Fitted<M::Output>, InferError> {
    let (schedule, hv, mut hypers) = start(c, data)?;
    method.refuse(schedule)?;
    let hv = learn_hypers(schedule, data, hv, &mut hypers)?;
    let r = method.run(schedule, data, &hv)?;
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
) -> Result<Fitted<gpm_runtime::svi::SviResult>, InferError> {
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
    let prep = gpm_runtime::prepared::Prepared::for_streaming(schedule, data, &hv)?;
    let r = gpm_runtime::svi::run_learning(&prep, schedule, config, &learn, report)?;
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
    let prep = bind_posterior(c, data, hypers, blocks)?;
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
                    "{name}.u.{}.{},{:e},{:e}",
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
            let _ = writeln!(s, "{label},{:e},{:e}", m[i], v[i].max(0.0).sqrt());
        }
    }
    s
}

/// How many draws from a variational posterior to write, with which pointwise columns.
#[derive(Debug, Clone, Copy)]
pub struct QDraws {
    /// The pointwise columns.
    pub pointwise: gibbs::Pointwise,
    /// Number of draws (`None`: [`default_q_draws`]).
    pub draws: Option<usize>,
    /// Seed.
    pub seed: u64,
}

/// Values a file of draws from `q` holds at most unless more draws are asked for (about
/// 340 MB of CSV).
const Q_FILE_VALUES: usize = 20_000_000;

/// Draws from `q` written when none are asked for: 1000, fewer for very wide rows so that the
/// file stays under [`Q_FILE_VALUES`] values, and at least 10.
pub fn default_q_draws(width: usize) -> usize {
    (Q_FILE_VALUES / width.max(1)).clamp(10, 1000)
}

/// Latent values per draw row above which draws from `q` are written only when asked for
/// (`--draws`): forming a sparse GP's values at every training input needs its `M × N` feature
/// matrix (160 MB at M = 100, N = 2·10⁵), which SVI at scale never forms.
pub const Q_DRAWS_WIDEST: usize = 200_000;

/// Number of latent values of the model on these data (the width of a draw row, nearly).
pub fn latent_values(c: &Checked, data: &gpm_runtime::data::Data) -> usize {
    let size = |d: &gpm_ir::Dim| match d {
        gpm_ir::Dim::Const(n) => *n,
        gpm_ir::Dim::Var(v) => data.scalar(v).map_or(0, |x| x as usize),
    };
    c.model
        .latents
        .iter()
        .map(|z| match &z.shape {
            Shape::Scalar => 1,
            Shape::Vector(n) => size(n),
            Shape::Matrix(r, k) => size(r) * size(k),
        })
        .sum()
}

/// Draws from a variational posterior `q` (CAVI, particle flow, SVI) in the layout of Gibbs
/// draws, with the pointwise columns asked for, streamed to the CmdStan CSV `path` row by row.
/// Returns the number of draws written: none, and no file, when 0 were asked for, or none were
/// and the model has more than [`Q_DRAWS_WIDEST`] latent values.
pub fn write_draws_from_q(
    c: &Checked,
    data: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
    q: &QDraws,
    method: &str,
    path: &std::path::Path,
) -> Result<usize, InferError> {
    // None asked for (`--draws 0`: q is the answer, in fit.json), or none by default on a model
    // too wide for them.
    if q.draws == Some(0) || q.draws.is_none() && latent_values(c, data) > Q_DRAWS_WIDEST {
        return Ok(0);
    }
    let sampler = posterior_sampler(c, data, hypers, blocks)?.with_pointwise(q.pointwise)?;
    let layout = sampler.layout();
    let draws = q.draws.unwrap_or_else(|| default_q_draws(layout.width()));
    let columns = column_names(c, &layout);
    if let Some(dir) = path.parent() {
        crate::output::check_space(dir, draws as u64, columns.len(), 24)?;
    }
    let algorithm = format!("draws from the {method} posterior q, by gpmc");
    let config = GibbsConfig {
        first_chain: 0,
        chains: 1,
        warmup: 0,
        draws,
        thin: 1,
        seed: q.seed,
        nuts: Default::default(),
    };
    let head = chain_head(c, &algorithm, &config, 0, &columns);
    let mut writer = crate::cmdstan::ChainWriter::create(path, &head, draws, None)?;
    let t0 = std::time::Instant::now();
    sampler.draws_from_q_into(blocks, draws, q.seed, &mut writer)?;
    writer.finish(&ChainTimes {
        warmup_seconds: 0.0,
        sampling_seconds: t0.elapsed().as_secs_f64(),
    })?;
    Ok(draws)
}

/// How Gibbs draws are described in their files.
const GIBBS_ALGORITHM: &str = "gibbs, augmented by gpmc";
/// How NUTS draws are described in their files.
const NUTS_ALGORITHM: &str =
    "nuts (nuts-rs) on the original model, latents whitened by their priors, by gpmc";

#[cfg(test)]
mod log_density_check {
    use super::*;

    #[test]
    fn a_run_with_no_finite_log_density_is_an_error() {
        let names: Vec<String> = ["lp__", "f.1"].iter().map(|s| s.to_string()).collect();
        assert!(matches!(
            check_log_density(&names, 40, 0),
            Err(InferError::Degenerate(m)) if m.contains("40 draws")
        ));
        // One finite draw, or no draws at all (an interrupted run), is not this error.
        assert!(check_log_density(&names, 40, 1).is_ok());
        assert!(check_log_density(&names, 0, 0).is_ok());
    }
}
