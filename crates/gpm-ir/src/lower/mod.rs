//! Lowering: AST → [`Model`]. Resolves names, checks types and shapes, turns library
//! distributions into log-density formulas, and lifts the latent-dependent parts of every
//! likelihood into linear predictors.
//!
//! Lifting rule: inside a likelihood, a maximal sub-expression that is affine in the latents —
//! latent references (`f[i]`, `u[g[i]]`, a scalar latent `b`, `X * w`, `dot(X[i], w)`, a `let`
//! predictor) combined by `+`, `-` and multiplication by numeric constants — becomes one predictor
//! `η`. Everything else (observed data `y[i]`, hyperparameters, nonlinear functions) stays in the
//! factor's formula. So `log(logistic(y[i] * (f[i] + u[g[i]])))` has the predictor `f + u[g]` and
//! the formula `log(logistic(y * η))`.

use crate::diag::{did_you_mean, SemanticError, SemanticErrors};
use crate::library;
use crate::model::*;
use crate::robust;
use crate::sx::{Sx, SymRole};
use gpm_library::likelihood::{self as likelihoods, ResponseKind};
use gpm_syntax::{self as ast, BinOp, ExprKind, Span, Stmt, TypeKind};
use std::collections::HashMap;

mod affine;
mod args;
mod categorical;
mod constrained;
mod data;
mod expr;
mod factors;
pub(crate) mod heavy_tailed;
mod hypers;
mod index;
mod kernels;
mod latents;
mod responses;
mod sizes;
mod stan_names;
mod statements;
mod transformed;
mod vectorise;

/// Lower a parsed program to a [`Model`], or report every mistake found.
pub fn lower(program: &ast::Program) -> Result<Model, SemanticErrors> {
    // A `parameters` block: its declarations moved into `latent` and `hyper` first.
    let split;
    let program = if program.parameters.is_empty() {
        program
    } else {
        split = crate::split::split_parameters(program).0;
        &split
    };
    let mut l = Lowerer::default();
    l.blocks(program);
    // Data declarations and transformed data in the order written: a `let` reads only what
    // precedes it.
    let mut lets = program.data_lets.iter().peekable();
    for (k, d) in program.data.iter().enumerate() {
        while let Some(t) = lets.next_if(|t| t.after <= k) {
            l.data_let(t);
        }
        l.data_decl(d);
    }
    for t in lets {
        l.data_let(t);
    }
    for h in &program.hypers {
        l.hyper_decl(h);
    }
    for z in &program.latents {
        l.latent_decl(z);
    }
    for s in &program.model {
        l.stmt(s, None);
    }
    if l.errors.is_empty() {
        l.final_checks(program);
    }
    if l.errors.is_empty() {
        Ok(l.model)
    } else {
        Err(SemanticErrors(l.errors))
    }
}

/// What a name refers to.
#[derive(Debug, Clone)]
enum Binding {
    Data,
    Hyper,
    Latent,
    /// A `let` whose value is affine in the latents, with its length.
    LetPredictor(Affine, Dim),
    /// A `let` whose value is free of latents (kept as a formula at one observation).
    LetValue(Sx, bool),
    LoopVar,
}

#[derive(Default)]
struct Lowerer {
    /// Where the expression being lowered is, for errors raised while lifting it.
    span_hint: Span,
    model: Model,
    errors: Vec<SemanticError>,
    names: HashMap<String, (Binding, Span)>,
    anon: usize,
}

/// An affine combination of latent references at one observation.
#[derive(Debug, Clone, PartialEq)]
struct Affine {
    terms: Vec<Term>,
    offset: f64,
    span: Span,
    /// Name to give the predictor when lifted (a `let` name or the latent's own name).
    name: Option<String>,
}

impl Affine {
    /// One latent read through `design` with coefficient 1, no offset, no covariate.
    fn reading(latent: String, design: Design, span: Span, name: Option<String>) -> Affine {
        Affine {
            terms: vec![Term {
                latent,
                coef: 1.0,
                scale_by: None,
                design,
            }],
            offset: 0.0,
            span,
            name,
        }
    }

    fn scale(mut self, c: f64) -> Affine {
        for t in &mut self.terms {
            t.coef *= c;
        }
        self.offset *= c;
        self.name = None;
        self
    }
    fn add(mut self, other: Affine, sign: f64) -> Affine {
        for t in other.terms {
            let t = Term {
                coef: t.coef * sign,
                ..t
            };
            if let Some(e) = self
                .terms
                .iter_mut()
                .find(|e| e.latent == t.latent && e.design == t.design && e.scale_by == t.scale_by)
            {
                e.coef += t.coef;
            } else {
                self.terms.push(t);
            }
        }
        self.terms.retain(|t| t.coef != 0.0);
        self.offset += sign * other.offset;
        self.span = self.span.join(other.span);
        self.name = None;
        self
    }
}

/// A value at one observation during lowering.
#[derive(Debug, Clone)]
enum Node {
    /// Free of latents.
    Value(Sx),
    /// Affine in the latents (not yet lifted).
    Lat(Affine),
    /// A row `X[i]` of a data matrix, waiting for a latent vector to multiply.
    DataRow(String),
    /// A whole latent vector `w`, waiting for a data row or matrix.
    LatVec(String, Span),
    /// A whole data matrix `X`, in a vectorised statement, waiting for `* w`.
    DataMatrix(String),
    /// `value + affine`: a sum whose latent part is kept apart so that further `±` of latents
    /// join the same predictor (`y[i] - f[i] - b` has one predictor `f + b`).
    Mixed(Sx, Affine),
}

/// What a likelihood statement says about its observations beyond the log-density inference
/// follows: the density prediction scores (a robust loss's distribution) and how to draw a new
/// response.
#[derive(Default)]
struct Observed {
    density: Option<Sx>,
    replicate: Option<Replicate>,
}

/// Where an expression is evaluated.
#[derive(Debug, Clone)]
struct ObsCtx {
    /// Number of observations.
    n: Dim,
    /// `Some(i)` inside `for i in 1..n`; `None` in a vectorised statement (an unindexed vector
    /// of length `n` then means its `i`-th entry).
    var: Option<String>,
}

fn shape_of(ty: &ast::Type, dims: &mut dyn FnMut(&ast::Expr) -> Option<Dim>) -> Option<Shape> {
    Some(match &ty.kind {
        TypeKind::Int | TypeKind::Real => Shape::Scalar,
        TypeKind::Vector(n) | TypeKind::IntArray(n) | TypeKind::RealArray(n) => {
            Shape::Vector(dims(n)?)
        }
        TypeKind::Matrix(r, c) => {
            let r = dims(r);
            let c = dims(c);
            Shape::Matrix(r?, c?)
        }
    })
}

impl Lowerer {
    pub(super) fn err(&mut self, e: SemanticError) {
        self.errors.push(e);
    }

    pub(super) fn blocks(&mut self, p: &ast::Program) {
        let mut seen: Vec<(ast::BlockKind, Span)> = vec![];
        for (kind, span) in &p.blocks {
            if let Some((_, first)) = seen.iter().find(|(k, _)| k == kind) {
                let e = SemanticError::new(
                    "gpm::duplicate_block",
                    format!("the `{}` block is given twice", block_name(*kind)),
                    *span,
                    "second block",
                )
                .also(*first, "first block")
                .help("put all declarations of a kind in one block");
                self.err(e);
            } else {
                seen.push((*kind, *span));
            }
        }
    }

    pub(super) fn declare(&mut self, name: &ast::Ident, b: Binding) -> bool {
        if let Some((_, first)) = self.names.get(&name.name) {
            let first = *first;
            self.err(
                SemanticError::new(
                    "gpm::duplicate_declaration",
                    format!("`{}` is declared twice", name.name),
                    name.span,
                    "declared again here",
                )
                .also(first, "first declared here")
                .help("every name (data, hyperparameter, latent, let) must be unique"),
            );
            return false;
        }
        if likelihoods::lookup(&name.name).is_some()
            || library::MATH_FUNCTIONS.iter().any(|(f, _)| *f == name.name)
        {
            self.err(
                SemanticError::new(
                    "gpm::reserved_name",
                    format!("`{}` is the name of a library function", name.name),
                    name.span,
                    "reserved",
                )
                .help("choose another name"),
            );
            return false;
        }
        self.names.insert(name.name.clone(), (b, name.span));
        true
    }

    pub(super) fn unknown_name(&mut self, name: &str, span: Span) {
        let help = did_you_mean(name, self.names.keys().map(|s| s.as_str()));
        let mut e = SemanticError::new(
            "gpm::unknown_name",
            format!("unknown name `{name}`"),
            span,
            "not declared",
        )
        .help("see docs/language.md");
        e.help = Some(help.unwrap_or_else(|| {
            "declare it in the `data`, `hyper` or `latent` block, or with `let`".into()
        }));
        self.err(e);
    }

    // ---------------------------------------------------------------- sizes and constants
}

fn block_name(k: ast::BlockKind) -> &'static str {
    match k {
        ast::BlockKind::Data => "data",
        ast::BlockKind::Hyper => "hyper",
        ast::BlockKind::Latent => "latent",
        ast::BlockKind::Parameters => "parameters",
        ast::BlockKind::Model => "model",
    }
}

/// Whether an expression is (syntactically) a kernel: it contains a kernel call.
fn is_kernel_expr(e: &ast::Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let ExprKind::Call(c) = &x.kind {
            found |= gpm_library::kernel::lookup(&c.func.name).is_some();
        }
    });
    found
}

/// Which entries of a latent matrix's row [`replace_index`] replaces.
#[derive(Clone, Copy)]
enum ClassRead<'a> {
    /// The row `F[i]`.
    Row,
    /// `F[i, y[i]]`: the column a label picks.
    Label(&'a str),
    /// `F[i, k]` for a literal `k`.
    Column(f64),
}

/// Replace `F[i]`, `F[i, y[i]]` or `F[i, k]` (as `read` says) by the class symbol.
fn replace_index(e: &ast::Expr, f: &str, i: &str, read: ClassRead, sym: &str) -> ast::Expr {
    let is_i = |x: &ast::Expr| matches!(&x.kind, ExprKind::Var(j) if j == i);
    let hit = match &e.kind {
        ExprKind::Index(b, ix) => match (&b.kind, ix.as_slice(), read) {
            (ExprKind::Var(v), [a], ClassRead::Row) => v == f && is_i(a),
            (ExprKind::Var(v), [a, c], ClassRead::Label(l)) => {
                v == f
                    && is_i(a)
                    && matches!(&c.kind, ExprKind::Index(lb, li)
                        if matches!(&lb.kind, ExprKind::Var(x) if x == l)
                        && li.len() == 1 && is_i(&li[0]))
            }
            (ExprKind::Var(v), [a, c], ClassRead::Column(k)) => {
                v == f && is_i(a) && matches!(&c.kind, ExprKind::Num { value, .. } if *value == k)
            }
            _ => false,
        },
        _ => false,
    };
    if hit {
        return ast::Expr {
            kind: ExprKind::Var(sym.to_string()),
            span: Span::default(),
        };
    }
    let r = |x: &ast::Expr| replace_index(x, f, i, read, sym);
    let kind = match &e.kind {
        ExprKind::Num { .. } | ExprKind::Var(_) | ExprKind::Str(_) => e.kind.clone(),
        ExprKind::Neg(a) => ExprKind::Neg(Box::new(r(a))),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, Box::new(r(a)), Box::new(r(b))),
        ExprKind::Call(c) => ExprKind::Call(ast::Call {
            func: c.func.clone(),
            args: c
                .args
                .iter()
                .map(|a| ast::Arg {
                    name: a.name.clone(),
                    value: r(&a.value),
                })
                .collect(),
            span: Span::default(),
        }),
        ExprKind::Index(b, ix) => ExprKind::Index(Box::new(r(b)), ix.iter().map(r).collect()),
    };
    ast::Expr {
        kind,
        span: Span::default(),
    }
}
