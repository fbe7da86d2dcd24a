//! Which parameters are Gaussian latents. A Stan program does not say; the rule (docs/stan_models.md):
//! a parameter is a latent block when it is unbounded, its prior is a normal or a Gaussian scale
//! mixture (Student-t, Cauchy, Laplace) or Stan's implicit flat prior, and the likelihood reads it
//! where a linear predictor goes. A scalar is a hyperparameter instead when another parameter's
//! prior reads it (`theta ~ normal(mu, tau)`: `mu`), when a likelihood reads it as a scale or
//! shape, or when it multiplies another latent (`tau * z`). Everything else is a hyperparameter.

use crate::ast::{BaseKind, BinOp, Expr, ExprKind, VarDecl};
use crate::distributions::{gaussian_family, locations};
use crate::error::StanError;
use crate::statements::{Sorted, Term};
use crate::symbols::{shape_of, Shape, Symbols};
use gpm_syntax::Span;
use serde::Serialize;
use std::collections::BTreeMap;

/// A parameter's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A Gaussian latent block.
    Latent,
    /// A hyperparameter.
    Hyper,
}

/// The decision for one parameter, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// The parameter.
    pub name: String,
    /// Latent or hyperparameter.
    pub role: Role,
    /// Why, in a sentence.
    pub why: String,
    /// Its declaration.
    #[serde(skip)]
    pub span: Span,
}

/// Decide every parameter's role.
pub fn decide(
    params: &[VarDecl],
    sorted: &Sorted,
    syms: &Symbols,
) -> Result<Vec<Decision>, StanError> {
    let prior_of = |p: &str| sorted.priors.iter().find(|(q, _)| q == p).map(|(_, d)| d);
    let likelihood_reads: Vec<String> = sorted
        .terms
        .iter()
        .flat_map(|t| match t {
            Term::Draw(d) => d.args.iter().flat_map(|a| syms.params_read(a)).collect(),
            Term::Formula { expr, .. } => syms.params_read(expr),
        })
        .collect();
    // First: who could be latent, and why not where not.
    let mut roles: BTreeMap<String, (Role, String)> = BTreeMap::new();
    for d in params {
        check_type(d)?;
        let p = &d.name.name;
        let bounded = d.ty.lower.is_some() || d.ty.upper.is_some();
        let prior = prior_of(p).map(|d| d.dist.name.as_str());
        let read = likelihood_reads.iter().any(|q| q == p);
        let (role, why) = if bounded {
            (Role::Hyper, "declared with bounds".to_string())
        } else if let Some(pr) = prior.filter(|pr| !gaussian_family(pr)) {
            (Role::Hyper, format!("its prior `{pr}` is not Gaussian"))
        } else if !read {
            let reader = sorted
                .priors
                .iter()
                .find(|(_, d)| d.args.iter().any(|a| syms.params_read(a).contains(p)));
            match reader {
                Some((q, _)) => (Role::Hyper, format!("the prior of `{q}` reads it")),
                None => (Role::Hyper, "the likelihood does not read it".to_string()),
            }
        } else {
            let why = match prior {
                Some("normal" | "std_normal") => {
                    "a normal prior, read by the likelihood".to_string()
                }
                Some(pr) => {
                    format!("a `{pr}` prior (a Gaussian scale mixture), read by the likelihood")
                }
                None => "no prior (flat, as in Stan), read by the likelihood".to_string(),
            };
            (Role::Latent, why)
        };
        roles.insert(p.clone(), (role, why));
    }
    demote(params, sorted, syms, &mut roles)?;
    params
        .iter()
        .map(|d| {
            let (role, why) = roles[&d.name.name].clone();
            if role == Role::Hyper && shape_of(&d.ty) != Shape::Scalar {
                return Err(StanError::unsupported(
                    format!("the vector parameter `{}` is a hyperparameter here ({why})", d.name.name),
                    d.span,
                    "gpmc's hyperparameters are scalars: give each scale its own `real<lower=0>` parameter, or make the vector an unbounded latent with a normal prior",
                ));
            }
            Ok(Decision {
                name: d.name.name.clone(),
                role,
                why,
                span: d.span,
            })
        })
        .collect()
}

fn check_type(d: &VarDecl) -> Result<(), StanError> {
    let what = match (d.ty.base, d.ty.array.len()) {
        (BaseKind::Constrained(k), _) => Some(format!("a `{k}` parameter")),
        (BaseKind::Matrix, _) => Some("a matrix parameter".to_string()),
        (BaseKind::Vector | BaseKind::RowVector, n) if n > 0 => {
            Some("an array of vectors".to_string())
        }
        (_, n) if n > 1 => Some("a multi-dimensional array".to_string()),
        _ => None,
    };
    match what {
        Some(w) => Err(StanError::unsupported(
            format!("{w} (`{}`) is not translated yet", d.name.name),
            d.span,
            "gpmc translates `real` and `vector` parameters (and arrays of reals)",
        )),
        None => Ok(()),
    }
}

/// Demote scalars that cannot be latent, until nothing changes.
fn demote(
    params: &[VarDecl],
    sorted: &Sorted,
    syms: &Symbols,
    roles: &mut BTreeMap<String, (Role, String)>,
) -> Result<(), StanError> {
    let scalar = |p: &str| {
        params
            .iter()
            .find(|d| d.name.name == p)
            .is_some_and(|d| shape_of(&d.ty) == Shape::Scalar)
    };
    loop {
        let latent = |p: &str, roles: &BTreeMap<String, (Role, String)>| {
            roles.get(p).is_some_and(|(r, _)| *r == Role::Latent)
        };
        let mut change: Option<(String, String)> = None;
        // Read in another parameter's prior.
        for (q, draw) in &sorted.priors {
            for a in &draw.args {
                for p in syms.params_read(a) {
                    if latent(&p, roles) && change.is_none() {
                        if !scalar(&p) {
                            return Err(StanError::unsupported(
                                format!("the vector `{p}` is read in the prior of `{q}`"),
                                a.span,
                                "a latent's prior reads constants, data and scalar hyperparameters",
                            ));
                        }
                        change = Some((p, format!("the prior of `{q}` reads it")));
                    }
                }
            }
        }
        // Read as a scale or shape of a likelihood; or multiplying another latent.
        for t in &sorted.terms {
            let Term::Draw(d) = t else { continue };
            let loc = locations(&d.dist.name, d.args.len());
            for (k, a) in d.args.iter().enumerate() {
                for p in syms.params_read(a) {
                    if !loc.contains(&k) && latent(&p, roles) && scalar(&p) && change.is_none() {
                        change =
                            Some((p, format!("`{}` reads it as a scale or shape", d.dist.name)));
                    }
                }
                if change.is_none() {
                    change = product_of_latents(a, syms, roles, &scalar);
                }
            }
        }
        match change {
            Some((p, why)) => {
                roles.insert(p, (Role::Hyper, why));
            }
            None => return Ok(()),
        }
    }
}

/// A scalar latent multiplying an expression that reads another latent (`tau * z`).
fn product_of_latents(
    e: &Expr,
    syms: &Symbols,
    roles: &BTreeMap<String, (Role, String)>,
    scalar: &dyn Fn(&str) -> bool,
) -> Option<(String, String)> {
    let mut found = None;
    e.walk(&mut |x| {
        if found.is_some() {
            return;
        }
        if let ExprKind::Binary(BinOp::Mul | BinOp::EltMul | BinOp::Div, a, b) = &x.kind {
            let latent_of = |side: &Expr| -> Vec<String> {
                syms.params_read(side)
                    .into_iter()
                    .filter(|p| roles.get(p).is_some_and(|(r, _)| *r == Role::Latent))
                    .collect()
            };
            let (la, lb) = (latent_of(a), latent_of(b));
            if !la.is_empty() && !lb.is_empty() {
                let pick = la.iter().chain(lb.iter()).find(|p| scalar(p)).cloned();
                if let Some(p) = pick {
                    found = Some((p, "it multiplies another latent".to_string()));
                }
            }
        }
    });
    found
}
