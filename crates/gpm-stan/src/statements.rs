//! The statements of `transformed parameters` and `model`, sorted into what the translation
//! needs: each parameter's prior, the likelihood terms (with the loop they sit in), and the
//! definitions of locals (recorded in the symbol table, to be inlined where they are read).

use crate::ast::{AssignOp, BinOp, Expr, ExprKind, Index, Stmt, Truncation};
use crate::error::StanError;
use crate::symbols::{Definition, Origin, Symbols};
use gpm_syntax::{Ident, Span};

/// The loop a term sits in: `for (var in 1:hi)`.
#[derive(Debug, Clone)]
pub struct Loop {
    /// The loop variable.
    pub var: Ident,
    /// The last value.
    pub hi: Expr,
    /// Which loop of the program (terms of one loop share a `.gpm` loop).
    pub id: usize,
}

/// `lhs ~ dist(args)`, or `target += dist_lpdf(lhs | args)`.
#[derive(Debug, Clone)]
pub struct Draw {
    /// The variate.
    pub lhs: Expr,
    /// The distribution, without `_lpdf`.
    pub dist: Ident,
    /// Its arguments.
    pub args: Vec<Expr>,
    /// The enclosing loop.
    pub lp: Option<Loop>,
    /// The statement.
    pub span: Span,
}

/// A likelihood term.
#[derive(Debug, Clone)]
pub enum Term {
    /// A distribution of data.
    Draw(Draw),
    /// `target += expr` that is not a distribution call.
    Formula {
        /// The log-density.
        expr: Expr,
        /// The enclosing loop.
        lp: Option<Loop>,
        /// The statement.
        span: Span,
    },
}

/// What the statements say.
#[derive(Debug, Default)]
pub struct Sorted {
    /// Each parameter's prior, in order of appearance.
    pub priors: Vec<(String, Draw)>,
    /// The likelihood.
    pub terms: Vec<Term>,
}

/// Sort the statements of a block into `out`, declaring and defining its locals.
pub fn sort(
    stmts: &[Stmt],
    syms: &mut Symbols,
    out: &mut Sorted,
    loops: &mut usize,
) -> Result<(), StanError> {
    for s in stmts {
        sort_one(s, syms, out, None, loops)?;
    }
    Ok(())
}

fn sort_one(
    s: &Stmt,
    syms: &mut Symbols,
    out: &mut Sorted,
    lp: Option<&Loop>,
    loops: &mut usize,
) -> Result<(), StanError> {
    match s {
        Stmt::Decl(d) => {
            syms.declare(&d.name.name, Origin::Local, d.ty.clone());
            if let Some(v) = &d.value {
                syms.define(&d.name.name, Definition::Whole(v.clone()));
            }
        }
        Stmt::Assign {
            name,
            indices,
            op,
            value,
            span,
        } => assign(syms, name, indices, *op, value, lp, *span)?,
        Stmt::Tilde {
            lhs,
            dist,
            args,
            truncation,
            span,
        } => {
            let draw = Draw {
                lhs: lhs.clone(),
                dist: dist.clone(),
                args: args.clone(),
                lp: lp.cloned(),
                span: *span,
            };
            draw_or_prior(syms, draw, truncation.as_ref(), out)?;
        }
        Stmt::Target { expr, span } => target(syms, expr, lp, *span, out)?,
        Stmt::For {
            var,
            lo,
            hi,
            body,
            span,
        } => {
            let inner = observation_loop(var, lo, hi.as_ref(), lp, *span, loops)?;
            for b in body {
                sort_one(b, syms, out, Some(&inner), loops)?;
            }
        }
        Stmt::Block(body, _) => {
            for b in body {
                sort_one(b, syms, out, lp, loops)?;
            }
        }
        Stmt::If { span, .. } => return Err(StanError::unsupported(
            "`if` in the model is not translated yet",
            *span,
            "gpmc translates declarations, assignments, `~`, `target +=` and `for` loops over 1:N",
        )),
        Stmt::While { span, .. } => return Err(StanError::unsupported(
            "`while` in the model is not translated yet",
            *span,
            "gpmc translates declarations, assignments, `~`, `target +=` and `for` loops over 1:N",
        )),
        Stmt::Return(_, span) => {
            return Err(StanError::new(
                "stan::semantic",
                "`return` belongs in a user-defined function",
                *span,
            ))
        }
        Stmt::Other(what, span) => return Err(StanError::unsupported(
            format!("`{what}` in the model is not translated yet"),
            *span,
            "gpmc translates declarations, assignments, `~`, `target +=` and `for` loops over 1:N",
        )),
    }
    Ok(())
}

/// A `for` loop of the model block as one over the observations: `for (n in 1:N)`, not inside
/// another loop; numbered from 1 in the order met (`loops` counts them).
fn observation_loop(
    var: &Ident,
    lo: &Expr,
    hi: Option<&Expr>,
    lp: Option<&Loop>,
    span: Span,
    loops: &mut usize,
) -> Result<Loop, StanError> {
    if lp.is_some() {
        return Err(StanError::unsupported(
            "a loop inside a loop is not translated yet",
            span,
            "write the inner loop's statements vectorised (`y[n] ~ ...` over one index)",
        ));
    }
    let Some(hi) = hi else {
        return Err(StanError::unsupported(
            "a loop over a container's elements is not translated yet",
            span,
            "loop over positions: `for (n in 1:N)`",
        ));
    };
    if !lo.is_one() {
        return Err(StanError::unsupported(
            "a loop that does not start at 1 (a lag, `y[t - k]`) is not translated yet",
            lo.span,
            "loops over the observations start at 1",
        ));
    }
    *loops += 1;
    Ok(Loop {
        var: var.clone(),
        hi: hi.clone(),
        id: *loops,
    })
}

fn assign(
    syms: &mut Symbols,
    name: &Ident,
    indices: &[Vec<Index>],
    op: AssignOp,
    value: &Expr,
    lp: Option<&Loop>,
    span: Span,
) -> Result<(), StanError> {
    let v = &name.name;
    let Some(sym) = syms.get(v) else {
        return Err(StanError::new(
            "stan::unknown_name",
            format!("`{v}` is not declared"),
            name.span,
        ));
    };
    if sym.origin != Origin::Local {
        return Err(StanError::new(
            "stan::assign",
            format!("`{v}` cannot be assigned here: only local variables can"),
            span,
        ));
    }
    let old = sym.def.clone();
    let combine = |old: Option<&Expr>, new: &Expr| -> Result<Expr, StanError> {
        let bin = match op {
            AssignOp::Set => return Ok(new.clone()),
            AssignOp::Add => BinOp::Add,
            AssignOp::Sub => BinOp::Sub,
            AssignOp::Mul => BinOp::Mul,
            AssignOp::Div => BinOp::Div,
            AssignOp::EltMul => BinOp::EltMul,
            AssignOp::EltDiv => BinOp::EltDiv,
        };
        let Some(old) = old else {
            return Err(StanError::new(
                "stan::unassigned",
                format!("`{v}` is updated before it is assigned"),
                span,
            ));
        };
        Ok(Expr {
            kind: ExprKind::Binary(bin, Box::new(old.clone()), Box::new(new.clone())),
            span,
        })
    };
    let def = match (indices, lp) {
        ([], _) => {
            let old = match &old {
                Some(Definition::Whole(e)) => Some(e),
                _ => None,
            };
            Definition::Whole(combine(old, value)?)
        }
        ([one], Some(lp))
            if matches!(one.as_slice(), [Index::Single(Expr { kind: ExprKind::Var(i), .. })] if *i == lp.var.name) =>
        {
            let old = match &old {
                Some(Definition::Elementwise { var, value }) if *var == lp.var.name => Some(value),
                _ => None,
            };
            Definition::Elementwise {
                var: lp.var.name.clone(),
                value: combine(old, value)?,
            }
        }
        _ => {
            return Err(StanError::unsupported(
                format!("this assignment to part of `{v}` is not translated yet"),
                span,
                "assign a local whole (`mu = ...;`) or entry by entry in a loop (`mu[n] = ...;` in `for (n in 1:N)`)",
            ))
        }
    };
    syms.define(v, def);
    Ok(())
}

fn draw_or_prior(
    syms: &Symbols,
    draw: Draw,
    truncation: Option<&Truncation>,
    out: &mut Sorted,
) -> Result<(), StanError> {
    let root = draw.lhs.root_var().map(str::to_string);
    match root.as_deref().and_then(|r| syms.get(r)).map(|s| s.origin) {
        Some(Origin::Parameter) => {
            let p = root.unwrap_or_default();
            prior_covers_whole(syms, &p, &draw)?;
            if let Some(t) = truncation {
                // gpmc truncates every prior to the declared bounds: a truncation is the same
                // model only when it is those bounds.
                let text = |e: &Option<Expr>| e.as_ref().map(crate::ast::size_text);
                let same = syms.get(&p).is_some_and(|s| {
                    text(&s.ty.lower) == text(&t.lo) && text(&s.ty.upper) == text(&t.hi)
                });
                if !same {
                    return Err(StanError::unsupported(
                        format!("a truncation other than `{p}`'s declared bounds is not translated"),
                        t.span,
                        "declare the bounds on the parameter (`real<lower=0> sigma;`): gpmc truncates its prior to them, as Stan does with `T[0, ]`",
                    ));
                }
            }
            if let Some((_, first)) = out.priors.iter().find(|(q, _)| *q == p) {
                return Err(StanError::unsupported(
                    format!("`{p}` has two prior statements"),
                    draw.span,
                    format!(
                        "gpmc takes one prior per parameter (the first is at bytes {}..{})",
                        first.span.start, first.span.end
                    ),
                ));
            }
            // `theta[j] ~ normal(m[j], s)` in a loop over `theta` is `theta ~ normal(m, s)`.
            let mut draw = draw;
            if let Some(lp) = &draw.lp {
                let var = lp.var.name.clone();
                draw.args = draw
                    .args
                    .iter()
                    .map(|a| crate::convert::deindex(a, &var))
                    .collect::<Result<_, _>>()?;
            }
            out.priors.push((p, draw));
        }
        Some(Origin::Local) => return Err(StanError::unsupported(
            "a distribution on a transformed parameter (it needs its Jacobian) is not translated",
            draw.span,
            "put the prior on the parameter itself",
        )),
        _ => {
            if !syms.params_read(&draw.lhs).is_empty() {
                return Err(StanError::unsupported(
                    "a distribution on a function of parameters is not translated",
                    draw.lhs.span,
                    "the left of `~` is data, or a parameter for its prior",
                ));
            }
            if let Some(t) = truncation {
                return Err(StanError::unsupported(
                    "a truncated likelihood is not translated yet",
                    t.span,
                    "write the truncated density with `target +=` and its normalising term",
                ));
            }
            out.terms.push(Term::Draw(draw));
        }
    }
    Ok(())
}

/// A prior is on the whole parameter: `p ~ ...`, or `p[n] ~ ...` in a loop over all of `p`.
fn prior_covers_whole(syms: &Symbols, p: &str, draw: &Draw) -> Result<(), StanError> {
    let whole = match (&draw.lhs.kind, &draw.lp) {
        (ExprKind::Var(_), None) => true,
        (ExprKind::Index(_, ix), Some(lp)) => {
            let len = match syms.shape(p) {
                Some(crate::symbols::Shape::Vector(n)) => Some(n),
                _ => None,
            };
            matches!(ix.as_slice(), [Index::Single(Expr { kind: ExprKind::Var(i), .. })] if *i == lp.var.name)
                && len == Some(crate::ast::size_text(&lp.hi))
        }
        _ => false,
    };
    if whole {
        Ok(())
    } else {
        Err(StanError::unsupported(
            format!("a prior on part of `{p}` is not translated yet"),
            draw.span,
            format!("give `{p}` one prior for all its entries (`{p} ~ normal(0, s);`), or declare the entries as separate parameters"),
        ))
    }
}

/// `target += ...`: distribution calls become draws, anything else one formula.
fn target(
    syms: &Symbols,
    expr: &Expr,
    lp: Option<&Loop>,
    span: Span,
    out: &mut Sorted,
) -> Result<(), StanError> {
    let mut terms = Vec::new();
    split_sum(expr, &mut terms);
    // Terms that read no parameter are constants of the log density (brms' normalising
    // `- 1 * student_t_lccdf(0 | 3, 0, 10)` of a half-Student-t prior): dropped.
    terms.retain(|t| !syms.params_read(t).is_empty());
    let draws: Option<Vec<Draw>> = terms.iter().map(|t| as_draw(t, lp, span)).collect();
    match draws {
        Some(draws) => {
            for d in draws {
                draw_or_prior(syms, d, None, out)?;
            }
        }
        None => {
            let reads_data = expr.names().iter().any(|n| syms.is_data(n));
            if !reads_data {
                return Err(StanError::unsupported(
                    "a `target +=` term that reads no data (a prior or a Jacobian written by hand) is not translated yet",
                    span,
                    "write the prior with `~` on the parameter",
                ));
            }
            if lp.is_none() {
                return Err(StanError::unsupported(
                    "a `target +=` formula outside a loop is not translated yet",
                    span,
                    "write it per observation inside `for (n in 1:N)`, or as a distribution `target += normal_lpdf(y | mu, sigma)`",
                ));
            }
            out.terms.push(Term::Formula {
                expr: expr.clone(),
                lp: lp.cloned(),
                span,
            });
        }
    }
    Ok(())
}

/// The terms of a sum; a subtracted term that reads no parameter is kept as a term too (it is
/// dropped as a constant), any other difference stays one term.
fn split_sum<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match &e.kind {
        ExprKind::Binary(BinOp::Add, a, b) => {
            split_sum(a, out);
            split_sum(b, out);
        }
        ExprKind::Binary(BinOp::Sub, a, b) if is_constant(b) => {
            split_sum(a, out);
            out.push(b);
        }
        _ => out.push(e),
    }
}

/// An expression that reads no variable at all (so no parameter and no datum).
fn is_constant(e: &Expr) -> bool {
    e.names().is_empty()
}

/// `normal_lpdf(y | mu, sigma)` (or `normal_lupdf`, `_lpmf`, `_lupmf`) as a draw.
fn as_draw(e: &Expr, lp: Option<&Loop>, span: Span) -> Option<Draw> {
    let ExprKind::Call { func, args, .. } = &e.kind else {
        return None;
    };
    let base = ["_lpdf", "_lpmf", "_lupdf", "_lupmf"]
        .iter()
        .find_map(|s| func.name.strip_suffix(s))?;
    let (lhs, rest) = args.split_first()?;
    Some(Draw {
        lhs: lhs.clone(),
        dist: Ident {
            name: base.to_string(),
            span: func.span,
        },
        args: rest.to_vec(),
        lp: lp.cloned(),
        span,
    })
}
