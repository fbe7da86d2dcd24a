//! # gpm-stan
//!
//! Owns the Stan front end: Stan's grammar (`grammar/stan.pest`), its syntax tree with spans,
//! and the translation of a Stan program into the `.gpm` syntax tree of `gpm-syntax` — so that a
//! Stan program is lowered, augmented, scheduled and run by exactly the pipeline a `.gpm` file
//! is, with every check and diagnostic shared. It decides which parameters are Gaussian latents
//! (a Stan program does not say: `decide.rs`) and reports that decision. It must not touch the
//! IR, the augmentations or inference: what it cannot carry into the `.gpm` tree it refuses,
//! naming the construct, and what the `.gpm` tree cannot mean is `gpm-ir`'s to say.
//!
//! ```
//! let src = "data { int N; vector[N] y; } parameters { real mu; } \
//!            model { mu ~ normal(0, 10); y ~ normal(mu, 1); }";
//! let t = gpm_stan::translate(src).unwrap();
//! assert_eq!(t.program.latents.len(), 1);
//! assert_eq!(t.decisions[0].role, gpm_stan::Role::Latent);
//! ```
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod ast;
mod convert;
mod decide;
mod distributions;
mod emit;
mod error;
mod functions;
mod gexpr;
mod gp;
mod parser;
mod statements;
mod symbols;

pub use decide::{Decision, Role};
pub use error::StanError;
pub use parser::parse;

use ast::{StanProgram, Stmt};
use gpm_syntax::{BlockKind, Program, Span};
use serde::Serialize;
use symbols::{Origin, Symbols};

/// Something the translation left out, said at `check` time.
#[derive(Debug, Clone, Serialize)]
pub struct Note {
    /// What, in a sentence.
    pub message: String,
    /// Where.
    #[serde(skip)]
    pub span: Span,
}

/// A Stan program as a `.gpm` syntax tree, with the decisions that made it.
#[derive(Debug, Clone)]
pub struct Translation {
    /// The program, its spans in the Stan text.
    pub program: Program,
    /// Each parameter's role, in declaration order.
    pub decisions: Vec<Decision>,
    /// What was left out (generated quantities, transformed parameters' columns).
    pub notes: Vec<Note>,
}

/// Parse and translate a Stan program.
pub fn translate(src: &str) -> Result<Translation, StanError> {
    let stan = parse(src)?;
    translate_program(&stan)
}

/// Translate a parsed Stan program.
pub fn translate_program(stan: &StanProgram) -> Result<Translation, StanError> {
    if let Some(span) = stan.functions_span {
        return Err(StanError::unsupported(
            "user-defined functions are not translated yet",
            Span::new(span.start, span.start + 9),
            "write the function's body where it is called",
        ));
    }
    let mut syms = Symbols::default();
    for d in &stan.data {
        syms.declare(&d.name.name, Origin::Data, d.ty.clone());
    }
    for s in &stan.transformed_data {
        if let Stmt::Decl(d) = s {
            syms.declare(&d.name.name, Origin::TransformedData, d.ty.clone());
        }
    }
    for d in &stan.parameters {
        if d.value.is_some() {
            return Err(StanError::new(
                "stan::syntax",
                "a parameter cannot be given a value",
                d.span,
            ));
        }
        syms.declare(&d.name.name, Origin::Parameter, d.ty.clone());
    }
    let mut sorted = statements::Sorted::default();
    let mut loops = 0;
    statements::sort(
        &stan.transformed_parameters,
        &mut syms,
        &mut sorted,
        &mut loops,
    )?;
    statements::sort(&stan.model, &mut syms, &mut sorted, &mut loops)?;
    let replaced = gp::noncentred(&stan.parameters, &mut sorted, &mut syms);
    let params: Vec<ast::VarDecl> = replaced.iter().map(|(d, _)| d.clone()).collect();
    let promoted: Vec<String> = replaced
        .iter()
        .filter(|(_, eta)| eta.is_some())
        .map(|(d, _)| d.name.name.clone())
        .collect();
    let mut decisions = decide::decide(&params, &sorted, &syms)?;
    for (d, (decl, eta)) in decisions.iter_mut().zip(&replaced) {
        if let Some(eta) = eta {
            d.why = format!(
                "the non-centred GP `{} = L * {eta}` (L the Cholesky factor of a GP covariance, `{eta} ~ std_normal()`): `{}` is sampled with its GP prior in `{eta}`'s place",
                decl.name.name, decl.name.name
            );
        }
    }
    let binary = emit::binary_responses(&sorted);
    let (data, data_lets) = emit::data(&stan.data, &stan.transformed_data, &mut syms, &binary)?;
    let (hypers, mut latents) = emit::parameters(&params, &decisions, &sorted, &syms)?;
    let (model, marginal) = emit::model(&sorted, &syms)?;
    for (latent, decision) in marginal {
        latents.push(latent);
        decisions.push(decision);
    }
    if !decisions.iter().any(|d| d.role == Role::Latent) {
        let why: Vec<String> = decisions
            .iter()
            .map(|d| format!("`{}`: {}", d.name, d.why))
            .collect();
        let span = stan.parameters.first().map_or(Span::default(), |d| d.span);
        return Err(StanError::unsupported(
            format!(
                "no parameter of this program is a Gaussian latent ({}), and gpmc's model class needs one",
                why.join("; ")
            ),
            span,
            "a coefficient the likelihood reads through a linear predictor is a latent when it is unbounded with a normal (or Student-t, Cauchy, Laplace, or no) prior: drop its bounds and give it e.g. `normal(0, 10)`",
        ));
    }
    let blocks = vec![
        (BlockKind::Data, Span::default()),
        (BlockKind::Hyper, Span::default()),
        (BlockKind::Latent, Span::default()),
        (BlockKind::Model, Span::default()),
    ];
    Ok(Translation {
        program: Program {
            data,
            data_lets,
            hypers,
            latents,
            parameters: vec![],
            model,
            blocks,
        },
        decisions,
        notes: notes(stan, &promoted),
    })
}

fn notes(stan: &StanProgram, promoted: &[String]) -> Vec<Note> {
    let mut out = Vec::new();
    let tparams: Vec<&str> = stan
        .transformed_parameters
        .iter()
        .filter_map(|s| match s {
            Stmt::Decl(d) if !promoted.contains(&d.name.name) => Some(d.name.name.as_str()),
            _ => None,
        })
        .collect();
    if let (Some(first), false) = (stan.transformed_parameters.first(), tparams.is_empty()) {
        out.push(Note {
            message: format!(
                "transformed parameters ({}) are inlined where they are read; they are not written as columns yet",
                tparams.join(", ")
            ),
            span: first.span(),
        });
    }
    if let Some(span) = stan.generated_span {
        out.push(Note {
            message: "the generated quantities block is not computed yet (use --log-lik and --ppc for `log_lik` and `y_rep`)".into(),
            span,
        });
    }
    out
}
