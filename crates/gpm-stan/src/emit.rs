//! The `.gpm` syntax tree of a sorted Stan program: data declarations and transformed data,
//! hyperparameters and latents as decided, and the likelihood as loops over the observations
//! (a vectorised statement becomes a loop; a Stan loop stays one).

use crate::ast::{AssignOp, BaseKind, Expr, ExprKind, Stmt, VarDecl};
use crate::convert::{At, Ctx};
use crate::decide::{Decision, Role};
use crate::distributions::{likelihood, needs_binary_labels, prior};
use crate::error::StanError;
use crate::statements::{Draw, Sorted, Term};
use crate::symbols::{shape_of, Origin, Shape, Symbols};
use gpm_syntax as g;
use std::collections::BTreeSet;

/// The data block: declarations, then transformed data as `let`s.
pub fn data(
    decls: &[VarDecl],
    transformed: &[Stmt],
    syms: &mut Symbols,
    binary: &BTreeSet<String>,
) -> Result<(Vec<g::DataDecl>, Vec<g::DataLet>), StanError> {
    let mut out = Vec::new();
    for d in decls {
        syms.declare(&d.name.name, Origin::Data, d.ty.clone());
        out.push(data_decl(syms, d, binary.contains(&d.name.name))?);
    }
    let mut lets = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for (s, var) in &flatten_loops(transformed) {
        let s = deindexed(s, var.as_deref())?;
        let s = &s;
        let (name, value, span) = match s {
            Stmt::Decl(d) => {
                syms.declare(&d.name.name, Origin::TransformedData, d.ty.clone());
                match &d.value {
                    Some(v) => (d.name.clone(), v.clone(), d.span),
                    None => {
                        pending.push(d.name.name.clone());
                        continue;
                    }
                }
            }
            Stmt::Assign {
                name,
                indices,
                op: AssignOp::Set,
                value,
                span,
            } if indices.is_empty() && pending.contains(&name.name) => {
                pending.retain(|p| *p != name.name);
                (name.clone(), value.clone(), *span)
            }
            other => {
                return Err(StanError::unsupported(
                    "this statement in `transformed data` is not translated yet",
                    other.span(),
                    "gpmc translates `type x = expression;` (and `x = expression;` after a declaration) with element-wise arithmetic, `mean`, `sd`, `sum`, columns `X[:, j]` and the math functions",
                ))
            }
        };
        if let Some(cols) = columns(&value) {
            syms.define(&name.name, crate::symbols::Definition::Columns(cols));
            continue;
        }
        let mut ctx = Ctx::new(syms);
        ctx.data = true;
        let value = ctx.conv(&value)?;
        lets.push(g::DataLet {
            name,
            value,
            after: out.len(),
            span,
        });
    }
    Ok((out, lets))
}

/// The statements of `transformed data` with each loop `for (n in 1:N) x[n] = e;` opened into
/// its body, marked with its loop variable.
fn flatten_loops(transformed: &[Stmt]) -> Vec<(Stmt, Option<String>)> {
    let mut flat: Vec<(Stmt, Option<String>)> = Vec::new();
    for s in transformed {
        match s {
            // `for (n in 1:N) x[n] = e;` is `x = e` with every `v[n]` read whole.
            Stmt::For {
                var,
                lo,
                hi: Some(_),
                body,
                ..
            } if lo.is_one() => {
                for b in body.iter().flat_map(block_items) {
                    flat.push((b.clone(), Some(var.name.clone())));
                }
            }
            other => flat.push((other.clone(), None)),
        }
    }
    flat
}

/// A statement of an opened loop read whole: `x[n] = e` is `x = e` with every `v[n]` read as
/// `v` (`var` the loop's variable, None outside a loop).
fn deindexed(s: &Stmt, var: Option<&str>) -> Result<Stmt, StanError> {
    Ok(match (s, var) {
        (
            Stmt::Assign {
                name,
                indices,
                op: AssignOp::Set,
                value,
                span,
            },
            Some(var),
        ) if is_index_by(indices, var) => Stmt::Assign {
            name: name.clone(),
            indices: vec![],
            op: AssignOp::Set,
            value: crate::convert::deindex(value, var)?,
            span: *span,
        },
        (s, None) => s.clone(),
        (other, Some(_)) => {
            return Err(StanError::unsupported(
                "this statement in a loop of `transformed data` is not translated yet",
                other.span(),
                "a loop of transformed data assigns entries `x[n] = ...;` read from entries `v[n]` of the data",
            ))
        }
    })
}

/// The columns of `[a', b', c']'` (a matrix written as its transposed rows).
fn columns(e: &Expr) -> Option<Vec<Expr>> {
    let ExprKind::Transpose(inner) = &e.kind else {
        return None;
    };
    let ExprKind::RowVector(items) = &inner.kind else {
        return None;
    };
    items
        .iter()
        .map(|i| match &i.kind {
            ExprKind::Transpose(c) => Some((**c).clone()),
            _ => None,
        })
        .collect()
}

fn block_items(s: &Stmt) -> Vec<&Stmt> {
    match s {
        Stmt::Block(body, _) => body.iter().flat_map(block_items).collect(),
        other => vec![other],
    }
}

fn is_index_by(indices: &[Vec<crate::ast::Index>], var: &str) -> bool {
    matches!(indices, [one] if matches!(one.as_slice(),
        [crate::ast::Index::Single(Expr { kind: ExprKind::Var(v), .. })] if v == var))
}

fn data_decl(syms: &Symbols, d: &VarDecl, binary: bool) -> Result<g::DataDecl, StanError> {
    let ctx = Ctx::new(syms);
    let size = |e: &Expr| ctx.conv(e);
    let span = d.ty.span;
    let ty = &d.ty;
    let kind = match (ty.base, ty.array.as_slice(), ty.sizes.as_slice()) {
        (BaseKind::Int, [], _) => g::TypeKind::Int,
        (BaseKind::Real, [], _) => g::TypeKind::Real,
        (BaseKind::Int, [n], _) => g::TypeKind::IntArray(size(n)?),
        (BaseKind::Real, [n], _) => g::TypeKind::RealArray(size(n)?),
        (BaseKind::Vector | BaseKind::RowVector, [], [n]) => g::TypeKind::Vector(size(n)?),
        (BaseKind::Matrix, [], [r, c]) => g::TypeKind::Matrix(size(r)?, size(c)?),
        (BaseKind::Vector | BaseKind::RowVector, [n], [k]) => {
            g::TypeKind::Matrix(size(n)?, size(k)?)
        }
        _ => {
            return Err(StanError::unsupported(
                format!("the datum `{}`'s type is not translated yet", d.name.name),
                d.span,
                "gpmc reads int, real, vector, row_vector, matrix, one-dimensional arrays of int and real, and arrays of vectors (as a matrix)",
            ))
        }
    };
    let literal = |e: &Option<Expr>| match e.as_ref().map(|e| &e.kind) {
        Some(ExprKind::Num { value, .. }) => Some(*value),
        _ => None,
    };
    let is_int = ty.base == BaseKind::Int;
    let constraint = if binary
        || (is_int && literal(&ty.lower) == Some(0.0) && literal(&ty.upper) == Some(1.0))
    {
        Some(g::ConstraintKind::Set(vec![0, 1]))
    } else if ty.lower.is_some() || ty.upper.is_some() {
        Some(g::ConstraintKind::Range {
            lo: ty.lower.as_ref().map(&size).transpose()?,
            hi: ty.upper.as_ref().map(&size).transpose()?,
        })
    } else {
        None
    };
    Ok(g::DataDecl {
        name: d.name.clone(),
        ty: g::Type { kind, span },
        constraint: constraint.map(|kind| g::Constraint { kind, span }),
        span: d.span,
    })
}

/// The names of data a Bernoulli likelihood reads as its response (declared `in {0, 1}`).
pub fn binary_responses(sorted: &Sorted) -> BTreeSet<String> {
    sorted
        .terms
        .iter()
        .filter_map(|t| match t {
            Term::Draw(d) if needs_binary_labels(&d.dist.name) => {
                d.lhs.root_var().map(str::to_string)
            }
            _ => None,
        })
        .collect()
}

/// The hyperparameters and latents, as decided.
pub fn parameters(
    params: &[VarDecl],
    decisions: &[Decision],
    sorted: &Sorted,
    syms: &Symbols,
) -> Result<(Vec<g::HyperDecl>, Vec<g::LatentDecl>), StanError> {
    let ctx = Ctx::new(syms);
    let mut hypers = Vec::new();
    let mut latents = Vec::new();
    for (d, decision) in params.iter().zip(decisions) {
        let draw = sorted
            .priors
            .iter()
            .find(|(p, _)| *p == d.name.name)
            .map(|(_, d)| d);
        let dist = draw.map(|d| (&d.dist, d.args.as_slice()));
        let latent = decision.role == Role::Latent;
        let call = prior(&ctx, dist, latent, d.name.span)?;
        let kind = match shape_of(&d.ty) {
            Shape::Scalar => g::TypeKind::Real,
            Shape::Vector(_) => {
                let n = d.ty.array.first().or(d.ty.sizes.first());
                match n {
                    Some(n) => g::TypeKind::Vector(ctx.conv(n)?),
                    None => g::TypeKind::Real,
                }
            }
            Shape::Matrix(_) => {
                return Err(StanError::unsupported(
                    "a matrix parameter is not translated yet",
                    d.span,
                    "declare vectors",
                ))
            }
        };
        let ty = g::Type {
            kind,
            span: d.ty.span,
        };
        if latent {
            latents.push(g::LatentDecl {
                name: d.name.clone(),
                ty,
                prior: call,
                span: d.span,
            });
        } else {
            let constraint = if d.ty.lower.is_some() || d.ty.upper.is_some() {
                Some(g::Constraint {
                    kind: g::ConstraintKind::Range {
                        lo: d.ty.lower.as_ref().map(|e| ctx.conv(e)).transpose()?,
                        hi: d.ty.upper.as_ref().map(|e| ctx.conv(e)).transpose()?,
                    },
                    span: d.ty.span,
                })
            } else {
                None
            };
            hypers.push(g::HyperDecl {
                name: d.name.clone(),
                ty,
                constraint,
                spec: g::HyperSpec::Prior(call),
                span: d.span,
            });
        }
    }
    Ok((hypers, latents))
}

/// The model block: every likelihood term in a loop over its observations.
#[allow(clippy::type_complexity)]
pub fn model(
    sorted: &Sorted,
    syms: &Symbols,
) -> Result<(Vec<g::Stmt>, Vec<(g::LatentDecl, Decision)>), StanError> {
    let mut out: Vec<g::Stmt> = Vec::new();
    let mut marginal = Vec::new();
    // The `.gpm` loop of each Stan loop, by its id.
    let mut loops: Vec<(usize, usize)> = Vec::new();
    let var = fresh_loop_var(syms);
    for t in &sorted.terms {
        let (lp, span) = match t {
            Term::Draw(d) => (&d.lp, d.span),
            Term::Formula { lp, span, .. } => (lp, *span),
        };
        match lp {
            Some(lp) => {
                let mut ctx = Ctx::new(syms);
                ctx.subst.insert(
                    lp.var.name.clone(),
                    g::Expr {
                        kind: g::ExprKind::Var(lp.var.name.clone()),
                        span: lp.var.span,
                    },
                );
                let stmt = match t {
                    Term::Draw(d) => draw(&ctx, d)?,
                    Term::Formula { expr, .. } => g::Stmt::Target {
                        expr: ctx.conv(expr)?,
                        span,
                    },
                };
                match loops.iter().find(|(id, _)| *id == lp.id) {
                    Some((_, k)) => {
                        if let g::Stmt::For { body, .. } = &mut out[*k] {
                            body.push(stmt);
                        }
                    }
                    None => {
                        loops.push((lp.id, out.len()));
                        out.push(g::Stmt::For {
                            var: lp.var.clone(),
                            lo: one(lp.var.span),
                            hi: Ctx::new(syms).conv(&lp.hi)?,
                            body: vec![stmt],
                            span,
                        });
                    }
                }
            }
            None => {
                let Term::Draw(d) = t else { continue };
                let (stmt, latent) = vectorised(syms, d, &var)?;
                out.push(stmt);
                marginal.extend(latent);
            }
        }
    }
    Ok((out, marginal))
}

/// `y ~ dist(args)` over a whole data vector: a loop over its entries.
fn vectorised(
    syms: &Symbols,
    d: &Draw,
    var: &str,
) -> Result<(g::Stmt, Option<(g::LatentDecl, Decision)>), StanError> {
    let y = match &d.lhs.kind {
        ExprKind::Var(y) if syms.is_data(y) => y,
        _ => {
            return Err(StanError::unsupported(
                "the observed side of this statement is not translated yet",
                d.lhs.span,
                "write a data vector (`y ~ ...`) or, in a loop, its entry (`y[n] ~ ...`)",
            ))
        }
    };
    let sym = syms.get(y).map(|s| s.ty.clone());
    let len = sym
        .as_ref()
        .and_then(|t| t.array.first().or(t.sizes.first()).cloned());
    let (Some(Shape::Vector(n)), Some(len)) = (syms.shape(y), len) else {
        return Err(StanError::unsupported(
            format!("`{y}` is not a vector of observations"),
            d.lhs.span,
            "a likelihood statement observes a vector or an array of data",
        ));
    };
    let index = g::Expr {
        kind: g::ExprKind::Var(var.to_string()),
        span: d.span,
    };
    let ctx = Ctx::new(syms).at(Some(At { index, len: n }));
    let var_ident = g::Ident {
        name: var.to_string(),
        span: d.span,
    };
    let (body, latent) = if d.dist.name.starts_with("multi_normal") {
        let y = ctx.conv(&d.lhs)?;
        let (stmt, latent, why) = crate::gp::marginal(&ctx, d, y)?;
        let decision = Decision {
            name: latent.name.name.clone(),
            role: Role::Latent,
            why,
            span: d.span,
        };
        (stmt, Some((latent, decision)))
    } else {
        (draw(&ctx, d)?, None)
    };
    let stmt = g::Stmt::For {
        var: var_ident,
        lo: one(d.span),
        hi: Ctx::new(syms).conv(&len)?,
        body: vec![body],
        span: d.span,
    };
    Ok((stmt, latent))
}

fn draw(ctx: &Ctx, d: &Draw) -> Result<g::Stmt, StanError> {
    let y = ctx.conv(&d.lhs)?;
    likelihood(ctx, &d.dist, &d.args, y, d.span)
}

fn one(span: g::Span) -> g::Expr {
    g::Expr {
        kind: g::ExprKind::Num {
            value: 1.0,
            is_int: true,
        },
        span,
    }
}

/// A loop variable no declaration uses.
fn fresh_loop_var(syms: &Symbols) -> String {
    ["i", "n", "obs"]
        .iter()
        .map(|s| s.to_string())
        .chain((1..).map(|k| format!("i{k}")))
        .find(|v| syms.get(v).is_none())
        .unwrap_or_else(|| "i".into())
}
