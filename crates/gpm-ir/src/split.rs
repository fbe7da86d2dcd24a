//! `.gpm`'s `parameters` block: which parameters are Gaussian latents and which are
//! hyperparameters, decided by the compiler with the rule it uses for Stan programs
//! (docs/language.md, "The parameters block"), so that a model may leave the `latent`/`hyper`
//! split out. A parameter is a **latent** block when it has no range, its prior is Gaussian or a
//! Gaussian scale mixture (`normal`, `student_t`, `cauchy`, `laplace`, `horseshoe`, `gp`) or
//! absent (`flat()`), and a likelihood reads it where its linear predictor goes. A scalar is a
//! **hyperparameter** instead when another parameter's prior reads it, when a likelihood reads
//! it as a scale or shape, or when it multiplies another parameter. Everything else is a
//! hyperparameter. The pass rewrites the syntax tree before lowering: the split stays valid and
//! the two may be mixed.

use gpm_syntax::ast::{
    Arg, BinOp, Call, Expr, ExprKind, HyperDecl, HyperSpec, LatentDecl, ParamDecl, Program, Stmt,
    TypeKind,
};
use gpm_syntax::{Ident, Span};
use std::collections::{BTreeMap, BTreeSet};

/// The decision for one parameter of a `parameters` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamDecision {
    /// The parameter.
    pub name: String,
    /// Whether it is a Gaussian latent block (else a hyperparameter).
    pub latent: bool,
    /// Why, in a sentence.
    pub why: String,
    /// Its declaration.
    pub span: Span,
}

/// Latent priors: Gaussian, or Gaussian scale mixtures the augmentations take.
const GAUSSIAN_PRIORS: &[&str] = &[
    "normal",
    "student_t",
    "cauchy",
    "laplace",
    "double_exponential",
    "horseshoe",
    "gp",
    "flat",
];

/// A likelihood's parameters that are its linear predictor (the rest are scales and shapes).
const LOCATIONS: &[&str] = &["mu", "eta", "rate", "F", "f"];

/// The names an expression reads.
fn names(e: &Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    e.walk(&mut |x| {
        if let ExprKind::Var(v) = &x.kind {
            out.insert(v.clone());
        }
    });
    out
}

/// What the model block's statements read: per name, whether a likelihood reads it as a
/// location, as a scale or shape, and who multiplies it.
#[derive(Default)]
struct Reads {
    location: BTreeSet<String>,
    scale: BTreeSet<String>,
    /// `a * b` with both parameters: each is multiplied by the other.
    multiplied: BTreeSet<String>,
    /// Model `let`s: the names each reads (after expansion).
    lets: BTreeMap<String, BTreeSet<String>>,
}

impl Reads {
    fn expand(&self, e: &Expr) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for n in names(e) {
            match self.lets.get(&n) {
                Some(inner) => out.extend(inner.iter().cloned()),
                None => {
                    out.insert(n);
                }
            }
        }
        out
    }

    fn products(&mut self, e: &Expr, params: &BTreeSet<String>) {
        e.walk(&mut |x| {
            if let ExprKind::Binary(BinOp::Mul, a, b) = &x.kind {
                let (pa, pb) = (self.expand(a), self.expand(b));
                let (qa, qb): (Vec<_>, Vec<_>) = (
                    pa.intersection(params).cloned().collect(),
                    pb.intersection(params).cloned().collect(),
                );
                if !qa.is_empty() && !qb.is_empty() {
                    self.multiplied.extend(qa.into_iter().chain(qb));
                }
            }
        });
    }

    fn stmt(&mut self, s: &Stmt, params: &BTreeSet<String>) {
        match s {
            Stmt::Let { name, value, .. } => {
                let read = self.expand(value);
                self.products(value, params);
                self.lets.insert(name.name.clone(), read);
            }
            Stmt::Sample { dist, .. } => {
                let roles = gpm_library::likelihood::lookup(&dist.func.name)
                    .map(|l| l.params().to_vec())
                    .unwrap_or_default();
                for (k, a) in dist.args.iter().enumerate() {
                    let role = a
                        .name
                        .as_ref()
                        .map(|n| n.name.as_str())
                        .or_else(|| roles.get(k).copied());
                    let read = self.expand(&a.value);
                    self.products(&a.value, params);
                    if role.is_none_or(|r| LOCATIONS.contains(&r)) {
                        self.location.extend(read);
                    } else {
                        self.scale.extend(read);
                    }
                }
            }
            Stmt::Target { expr, .. } | Stmt::Factor { expr, .. } => {
                let read = self.expand(expr);
                self.products(expr, params);
                self.location.extend(read);
            }
            Stmt::For { body, .. } => body.iter().for_each(|b| self.stmt(b, params)),
        }
    }
}

fn is_scalar(p: &ParamDecl) -> bool {
    matches!(p.ty.kind, TypeKind::Real | TypeKind::Int)
}

fn decide(
    p: &ParamDecl,
    reads: &Reads,
    prior_readers: &BTreeMap<String, String>,
) -> (bool, String) {
    let name = &p.name.name;
    let prior = p.prior.as_ref().map(|c| c.func.name.as_str());
    if p.constraint.is_some() {
        return (false, "declared with a range".into());
    }
    if let Some(pr) = prior.filter(|pr| !GAUSSIAN_PRIORS.contains(pr)) {
        return (false, format!("its prior `{pr}` is not Gaussian"));
    }
    if let Some(q) = prior_readers.get(name).filter(|_| is_scalar(p)) {
        return (false, format!("the prior of `{q}` reads it"));
    }
    if !reads.location.contains(name) {
        return if reads.scale.contains(name) {
            (false, "a likelihood reads it as a scale or shape".into())
        } else {
            (false, "no likelihood reads it".into())
        };
    }
    if is_scalar(p) && reads.scale.contains(name) {
        return (false, "a likelihood reads it as a scale or shape".into());
    }
    if is_scalar(p) && reads.multiplied.contains(name) {
        return (false, "it multiplies another parameter".into());
    }
    let why = match prior {
        None | Some("flat") => "no prior (flat), read by the likelihood's predictor",
        Some("normal") => "a normal prior, read by the likelihood's predictor",
        Some("gp") => "a GP prior, read by the likelihood's predictor",
        Some(_) => "a Gaussian scale-mixture prior, read by the likelihood's predictor",
    };
    (true, why.into())
}

fn flat(span: Span) -> Call {
    Call {
        func: Ident {
            name: "flat".into(),
            span,
        },
        args: Vec::<Arg>::new(),
        span,
    }
}

/// Move every `parameters` declaration into `latent` or `hyper` by the rule above; the
/// decisions, in declaration order, say why.
pub fn split_parameters(program: &Program) -> (Program, Vec<ParamDecision>) {
    let params: BTreeSet<String> = program
        .parameters
        .iter()
        .map(|p| p.name.name.clone())
        .collect();
    let mut reads = Reads::default();
    for s in &program.model {
        reads.stmt(s, &params);
    }
    // Who reads whom in a prior (of a parameter, a latent or a hyperparameter).
    let mut prior_readers = BTreeMap::new();
    let priors = program
        .parameters
        .iter()
        .filter_map(|p| p.prior.as_ref().map(|c| (&p.name.name, c)))
        .chain(program.latents.iter().map(|z| (&z.name.name, &z.prior)))
        .chain(program.hypers.iter().filter_map(|h| match &h.spec {
            HyperSpec::Prior(c) => Some((&h.name.name, c)),
            _ => None,
        }));
    for (owner, call) in priors {
        for a in &call.args {
            for n in names(&a.value) {
                prior_readers.entry(n).or_insert_with(|| owner.clone());
            }
        }
    }
    let mut out = program.clone();
    out.parameters.clear();
    let mut decisions = Vec::with_capacity(program.parameters.len());
    for p in &program.parameters {
        let (latent, why) = decide(p, &reads, &prior_readers);
        let prior = p.prior.clone().unwrap_or_else(|| flat(p.span));
        if latent {
            out.latents.push(LatentDecl {
                name: p.name.clone(),
                ty: p.ty.clone(),
                prior,
                span: p.span,
            });
        } else {
            out.hypers.push(HyperDecl {
                name: p.name.clone(),
                ty: p.ty.clone(),
                constraint: p.constraint.clone(),
                spec: HyperSpec::Prior(prior),
                span: p.span,
            });
        }
        decisions.push(ParamDecision {
            name: p.name.name.clone(),
            latent,
            why,
            span: p.span,
        });
    }
    (out, decisions)
}
