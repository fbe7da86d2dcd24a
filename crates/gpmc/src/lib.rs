//! # gpmc
//!
//! The command-line interface and the embedding API of the gpmc compiler. It owns reading files,
//! data and output formats, progress and printing — and holds no math: every number it shows is
//! computed by the pipeline crates (`gpm-syntax` → `gpm-ir` → `gpm-cas`/`gpm-augment` →
//! `gpm-schedule` → `gpm-runtime`).
//!
//! ```
//! let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"),
//!     "/../../models/gp_classification.gpm")).unwrap();
//! let checked = gpmc::check("gp_classification.gpm", &src).unwrap();
//! assert_eq!(checked.model.factors.len(), 1);
//! ```
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod cluster;
pub mod cmdstan;
pub mod data;
pub mod density;
pub mod diagnostics;
pub mod feedback;
pub mod fit;
pub mod infer;
pub mod init;
pub mod magnitudes;
pub mod method;
pub mod output;
pub mod plot;
pub mod report;
pub mod schedule_report;
pub mod spill;
pub mod summary;
pub mod variational;
pub mod warnings;

pub use diagnostics::{Diagnostic, Failure};
use gpm_ir::Model;

/// A model that parsed, resolved and type-checked.
#[derive(Debug, Clone)]
pub struct Checked {
    /// File name, for messages.
    pub name: String,
    /// The source text.
    pub source: String,
    /// The lowered model.
    pub model: Model,
    /// One certified augmentation plan per likelihood factor, in order.
    pub plans: Vec<gpm_augment::Plan>,
    /// For a Stan program, or a `.gpm` model with a `parameters` block: each parameter's role
    /// (latent or hyperparameter) and why, and what the translation left out.
    pub stan: Option<StanFront>,
    /// What inference will do (blocks, steps, every hyperparameter's update), data-free; or why
    /// the runtime cannot run the plans.
    pub schedule: Result<gpm_schedule::Schedule, gpm_schedule::ScheduleError>,
}

/// What the Stan front end decided for a `.stan` program.
#[derive(Debug, Clone)]
pub struct StanFront {
    /// Each parameter's role, in declaration order.
    pub decisions: Vec<gpm_stan::Decision>,
    /// What the translation left out.
    pub notes: Vec<gpm_stan::Note>,
}

/// Whether a model name is a Stan program (it ends in `.stan`): the one place the front end is
/// chosen.
pub fn is_stan(name: &str) -> bool {
    name.ends_with(".stan")
}

/// The `.gpm` syntax tree of a model text: parsed as `.gpm`, or translated from Stan when the
/// name ends in `.stan`.
fn front_end(
    name: &str,
    source: &str,
) -> Result<(gpm_syntax::Program, Option<StanFront>), Failure> {
    if is_stan(name) {
        let t = gpm_stan::translate(source)
            .map_err(|e| Failure::new(name, source, vec![Diagnostic::from_stan(&e, source)]))?;
        let front = StanFront {
            decisions: t.decisions,
            notes: t.notes,
        };
        Ok((t.program, Some(front)))
    } else {
        let program = gpm_syntax::parse(source)
            .map_err(|e| Failure::new(name, source, vec![Diagnostic::from_parse(&e, source)]))?;
        if program.parameters.is_empty() {
            return Ok((program, None));
        }
        // A `parameters` block: the compiler decides the split, and `check` prints it as it
        // does a Stan program's.
        let (program, decided) = gpm_ir::split_parameters(&program);
        let decisions = decided
            .into_iter()
            .map(|d| gpm_stan::Decision {
                name: d.name,
                role: if d.latent {
                    gpm_stan::Role::Latent
                } else {
                    gpm_stan::Role::Hyper
                },
                why: d.why,
                span: d.span,
            })
            .collect();
        Ok((
            program,
            Some(StanFront {
                decisions,
                notes: vec![],
            }),
        ))
    }
}

/// Parse and check a model. On failure, returns every diagnostic with its source attached.
pub fn check(name: &str, source: &str) -> Result<Checked, Failure> {
    check_with(name, source, false)
}

/// [`check`], with every likelihood's log-density factor kept as written when `generic_only`
/// (the generic update everywhere, augmentations or not): for comparing the generic update with
/// the augmentations on the same model (`gpmc infer --generic`, tests, benchmarks). A
/// heavy-tailed latent prior's factor keeps its scale mixture: its latent's prior is flat, and
/// the generic update needs the Gaussian that mixture gives it to move along.
pub fn check_with(name: &str, source: &str, generic_only: bool) -> Result<Checked, Failure> {
    check_with_options(name, source, generic_only, true)
}

/// [`check_with`], and with `nuts_step` false the Gibbs sweep keeps its elliptical and slice
/// steps where the schedule would put a NUTS step (`gpmc infer --no-nuts-step`;
/// [`gpm_schedule::Options`]).
pub fn check_with_options(
    name: &str,
    source: &str,
    generic_only: bool,
    nuts_step: bool,
) -> Result<Checked, Failure> {
    let (program, stan) = front_end(name, source)?;
    let model = gpm_ir::lower(&program).map_err(|errs| {
        let index = diagnostics::SourceIndex::new(source);
        Failure::new(
            name,
            source,
            errs.0
                .iter()
                .map(|e| Diagnostic::from_semantic(e, &index))
                .collect(),
        )
    })?;
    // Recognition: every factor gets a certified plan; a log-density factor no rule augments
    // is kept as written and takes the generic update (the plan says so, with the atom no rule
    // applied to and why, and `gpmc check` prints it). Only a categorical factor can be refused.
    let mut plans = Vec::new();
    let mut refusals = Vec::new();
    let recognized = gpm_augment::recognize(&model);
    let is_density =
        |k: usize| matches!(model.factors[k].form, gpm_ir::FactorForm::LogDensity { .. });
    let forced = |k: usize| generic_only && is_density(k) && model.factors[k].prior_of.is_none();
    // The factors that take the generic update (whole, under `--generic`).
    let generic: Vec<usize> = recognized
        .iter()
        .enumerate()
        .filter(|(k, r)| is_density(*k) && (r.is_err() || forced(*k)))
        .map(|(k, _)| k)
        .collect();
    for (k, r) in recognized.into_iter().enumerate() {
        let r = match r {
            Ok(p) if forced(k) => Err(gpm_augment::Refusal {
                factor: k,
                atom: "(the whole factor)".into(),
                normal_form: p.steps.first().cloned().unwrap_or_default(),
                reason: format!(
                    "the generic update was requested instead of the augmentation {}",
                    p.form
                ),
            }),
            other => other,
        };
        match r {
            Ok(p) => plans.push(p),
            // Under `--generic` every factor takes the generic update whole; a factor no rule
            // augments may still draw the predictors it is Gaussian in exactly.
            Err(e) => match &model.factors[e.factor].form {
                gpm_ir::FactorForm::LogDensity { .. } if generic_only => {
                    plans.push(gpm_augment::Plan::generic(&e))
                }
                gpm_ir::FactorForm::LogDensity { .. } => {
                    plans.push(gpm_augment::generic_plan(&model, &e, &generic))
                }
                gpm_ir::FactorForm::Categorical { .. } => refusals.push(Diagnostic::from_refusal(
                    &e,
                    &model,
                    &diagnostics::SourceIndex::new(source),
                )),
            },
        }
    }
    if !refusals.is_empty() {
        return Err(Failure::new(name, source, refusals));
    }
    let options = gpm_schedule::Options {
        nuts_blocks: nuts_step,
    };
    let schedule = gpm_schedule::build_with(&model, &plans, options);
    Ok(Checked {
        name: name.to_string(),
        source: source.to_string(),
        model,
        plans,
        stan,
        schedule,
    })
}
