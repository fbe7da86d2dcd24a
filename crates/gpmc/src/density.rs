//! The path of a Stan program with no Gaussian-latent structure: its whole log density
//! compiled by `gpm-density` and sampled by NUTS ([`gpm_runtime::density_nuts`]). `check`
//! says why the augmentation pipeline could not take the program and what NUTS will move;
//! `infer` writes the same chain files and `summary.json` as every other method.

use crate::diagnostics::{Diagnostic, Failure};
use crate::infer::InferError;
use gpm_density::program::{Base, Constraint, Decl};
use gpm_density::{Model, Program};
use gpm_runtime::diagnostics::{summarize, Summary};
use gpm_runtime::gibbs::{ChainTimes, GibbsConfig};
use gpm_runtime::nuts::NutsStats;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::Arc;

/// The algorithm line of the chain files.
pub const ALGORITHM: &str = "nuts (gpmc: the whole log density, Stan's transforms)";

/// A Stan program compiled for NUTS on its whole log density.
#[derive(Debug, Clone)]
pub struct DensityChecked {
    /// File name.
    pub name: String,
    /// The Stan text.
    pub source: String,
    /// The compiled program.
    pub program: Arc<Program>,
    /// Why the augmentation pipeline did not take it (its diagnostics' messages).
    pub why: Vec<String>,
}

/// Compile a Stan program the augmentation pipeline refused (`latent`: that refusal). A
/// program this path cannot evaluate either is refused with both reasons, this path's first.
pub fn check(name: &str, source: &str, latent: &Failure) -> Result<DensityChecked, Failure> {
    match gpm_density::compile_source(source) {
        Ok(program) if program.parameters.is_empty() => {
            let mut diagnostics = vec![Diagnostic::plain(
                "stan::unsupported",
                "the program declares no parameters: there is nothing to sample (gpmc does not run Stan's fixed_param sampler)".into(),
            )];
            diagnostics.extend(latent.diagnostics.iter().cloned());
            Err(Failure::new(name, source, diagnostics))
        }
        Ok(program) => Ok(DensityChecked {
            name: name.into(),
            source: source.into(),
            program: Arc::new(program),
            why: latent
                .diagnostics
                .iter()
                .map(|d| d.message.clone())
                .collect(),
        }),
        Err(e) => {
            let mut diagnostics = vec![Diagnostic::from_stan(&e, source)];
            if e.code != "stan::syntax" {
                diagnostics.extend(latent.diagnostics.iter().cloned());
            }
            Err(Failure::new(name, source, diagnostics))
        }
    }
}

fn type_text(d: &Decl) -> String {
    let base = match (&d.constraint, d.ty.base) {
        (Constraint::Simplex, _) => "simplex",
        (Constraint::Ordered, _) => "ordered",
        (Constraint::PositiveOrdered, _) => "positive_ordered",
        (Constraint::CholeskyCorr, _) => "cholesky_factor_corr",
        (_, Base::Int) => "int",
        (_, Base::Real) => "real",
        (_, Base::Vector) => "vector",
        (_, Base::RowVector) => "row_vector",
        (_, Base::Matrix) => "matrix",
    };
    let transform = match &d.constraint {
        Constraint::Bounded {
            lower,
            upper,
            offset,
            multiplier,
        } => match (lower.is_some(), upper.is_some()) {
            (true, true) => "lower and upper bounds: scaled logit",
            (true, false) => "lower bound: log",
            (false, true) => "upper bound: log",
            _ if offset.is_some() || multiplier.is_some() => "offset/multiplier: affine",
            _ => "unconstrained",
        },
        Constraint::Simplex => "stick-breaking",
        Constraint::Ordered | Constraint::PositiveOrdered => "log increments",
        Constraint::CholeskyCorr => "tanh, row by row",
    };
    let arrays = if d.ty.array.is_empty() {
        ""
    } else {
        "array of "
    };
    format!("{arrays}{base} ({transform})")
}

/// `gpmc check`'s text for this path.
pub fn text(c: &DensityChecked) -> String {
    let mut s = String::new();
    let p = &c.program;
    let _ = writeln!(s, "model: {} (Stan program)", c.name);
    let _ = writeln!(
        s,
        "method: NUTS on the whole log density (gradients on a tape; no augmentation, no Gibbs)"
    );
    let _ = writeln!(s, "why not the augmentation pipeline:");
    for w in &c.why {
        let _ = writeln!(s, "  - {w}");
    }
    let _ = writeln!(
        s,
        "parameters (NUTS moves each on its unconstrained scale):"
    );
    for d in &p.parameters {
        let _ = writeln!(s, "  {}: {}", d.name, type_text(d));
    }
    let names = |ds: &[Decl]| {
        ds.iter()
            .map(|d| d.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !p.transformed_decls.is_empty() {
        let _ = writeln!(
            s,
            "transformed parameters (output columns): {}",
            names(&p.transformed_decls)
        );
    }
    if !p.generated_decls.is_empty() {
        let _ = writeln!(
            s,
            "generated quantities (output columns): {}",
            names(&p.generated_decls)
        );
    }
    s
}

/// The 1-based line of a byte offset.
fn line_of(source: &str, at: usize) -> usize {
    source[..at.min(source.len())].lines().count().max(1)
}

/// `gpmc check --format json` for this path.
pub fn json(c: &DensityChecked) -> Value {
    let p = &c.program;
    let decls = |ds: &[Decl]| {
        ds.iter()
            .map(|d| json!({"name": d.name, "type": type_text(d)}))
            .collect::<Vec<_>>()
    };
    json!({
        "schema_version": crate::report::SCHEMA_VERSION,
        "gpmc_version": env!("CARGO_PKG_VERSION"),
        "model": c.name,
        "ok": true,
        "method": "nuts",
        "density": {
            "why": c.why,
            "parameters": decls(&p.parameters),
            "transformed_parameters": decls(&p.transformed_decls),
            "generated_quantities": decls(&p.generated_decls),
            "generated_quantities_not_computed": p.generated_refusal.as_ref().map(|e| e.message.clone()),
        },
    })
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct DensityRun {
    /// Column names: `lp__`, then the program's outputs.
    pub names: Vec<String>,
    /// Per chain: its rows.
    pub chains: Vec<Vec<Vec<f64>>>,
    /// Per chain: its times.
    pub times: Vec<ChainTimes>,
    /// Per chain: NUTS's statistics.
    pub stats: Vec<NutsStats>,
    /// Draws kept per chain.
    pub draws: usize,
    /// Whether a stop request cut the run short.
    pub interrupted: bool,
    /// Per column: its summary.
    pub summaries: Vec<(String, Summary)>,
}

fn program_error(c: &DensityChecked, e: gpm_density::EvalError) -> InferError {
    let at = e
        .span
        .map(|s| format!(" (line {})", line_of(&c.source, s.start)));
    InferError::Runtime(gpm_runtime::RuntimeError::BadData(format!(
        "{}{}",
        e.message,
        at.unwrap_or_default()
    )))
}

/// Bind the data and run NUTS.
pub fn run(
    c: &DensityChecked,
    data: &serde_json::Map<String, Value>,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &std::sync::atomic::AtomicBool,
) -> Result<DensityRun, InferError> {
    let model =
        Arc::new(Model::bind(Arc::clone(&c.program), data).map_err(|e| program_error(c, e))?);
    if model.dim() == 0 {
        return Err(InferError::Schedule(
            "the program has no parameters to sample".into(),
        ));
    }
    let mut names = vec!["lp__".to_string()];
    names.extend(model.column_names().map_err(|e| program_error(c, e))?);
    // The draws are kept in memory until the chain files are written: their size first, twice
    // (the rows and, at once, their text or the bytes Python reads).
    crate::output::check_memory((config.chains * config.draws) as u64, names.len(), 2)?;
    let sinks: Vec<Vec<Vec<f64>>> = (0..config.chains).map(|_| Vec::new()).collect();
    let (ran, draws) = gpm_runtime::density_nuts::run_into(&model, config, progress, stop, sinks)
        .map_err(|e| match e {
        gpm_runtime::density_nuts::DensityRunError::Program(e) => program_error(c, e),
        gpm_runtime::density_nuts::DensityRunError::Runtime(e) => InferError::from(e),
    })?;
    if draws == 0 {
        return Err(InferError::Interrupted(
            "interrupted before any draw was kept: nothing written".into(),
        ));
    }
    if let Some(bad) = ran
        .iter()
        .flat_map(|(rows, _, _)| rows)
        .find(|r| r.len() != names.len())
    {
        return Err(InferError::Runtime(
            gpm_runtime::RuntimeError::Inconsistent(format!(
                "a draw has {} values for {} columns (a variable changed its size?)",
                bad.len(),
                names.len()
            )),
        ));
    }
    let interrupted = draws < config.draws;
    let mut chains = Vec::new();
    let (mut times, mut stats) = (Vec::new(), Vec::new());
    for (rows, t, s) in ran {
        chains.push(rows);
        times.push(t);
        stats.push(s);
    }
    let summaries = (0..names.len())
        .map(|j| {
            let cols: Vec<Vec<f64>> = chains
                .iter()
                .map(|ch| ch.iter().map(|r| r[j]).collect())
                .collect();
            let refs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
            (names[j].clone(), summarize(&refs))
        })
        .collect();
    Ok(DensityRun {
        names,
        chains,
        times,
        stats,
        draws,
        interrupted,
        summaries,
    })
}

/// The run's warnings: a log density too large for its rounding, chains that have not mixed,
/// divergences.
pub fn warnings(r: &DensityRun) -> Vec<String> {
    crate::warnings::rounded_log_density(&r.summaries, true)
        .into_iter()
        .chain(crate::warnings::mixing(&r.summaries, r.chains.len()))
        .chain(crate::warnings::divergences(&r.stats))
        .collect()
}

/// The files of a run: a CmdStan CSV per chain and `summary.json`.
pub fn files(c: &DensityChecked, r: &DensityRun, config: &GibbsConfig) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, rows) in r.chains.iter().enumerate() {
        let head = crate::cmdstan::Head {
            model: &c.name,
            algorithm: ALGORITHM,
            num_warmup: config.warmup,
            thin: config.thin,
            id: k + 1,
            seed: config.seed,
            columns: &r.names,
        };
        out.push((
            format!("chain-{}.csv", k + 1),
            crate::cmdstan::csv(&head, rows, &r.times[k]),
        ));
    }
    out.push((
        "summary.json".into(),
        serde_json::to_string_pretty(&summary_json(c, r, config)).unwrap_or_default(),
    ));
    out
}

/// `summary.json` of a run.
pub fn summary_json(c: &DensityChecked, r: &DensityRun, config: &GibbsConfig) -> Value {
    json!({
        "model": c.name,
        "method": "nuts",
        "log_density": "whole program (gpm-density)",
        "chains": r.chains.len(),
        "warmup": config.warmup,
        "draws": r.draws,
        "draws_requested": config.draws,
        "interrupted": r.interrupted,
        "thin": config.thin,
        "seed": config.seed,
        "why": c.why,
        "timing_seconds": {
            "warmup": r.times.iter().map(|t| t.warmup_seconds).collect::<Vec<_>>(),
            "sampling": r.times.iter().map(|t| t.sampling_seconds).collect::<Vec<_>>(),
        },
        "variables": crate::infer::variables_json(&r.summaries),
        "nuts": r.stats.iter().map(|n| json!({
            "divergences": n.divergences, "max_depth_hits": n.max_depth_hits,
            "step_size": n.step_size, "mean_leapfrog_steps": n.mean_steps,
            "model": "whole log density", "gibbs_step": false,
        })).collect::<Vec<_>>(),
        "warnings": warnings(r),
    })
}

/// The table printed after a run.
pub fn table(r: &DensityRun, max_rows: usize) -> String {
    crate::summary::table(&r.summaries, 4, max_rows)
}
