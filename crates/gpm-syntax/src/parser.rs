//! From text to [`Program`]: pest does the grammar, a Pratt parser the operator precedence
//! (`+ -` < `* /` < unary `-` < `^` (right-associative) < indexing), and this file builds the AST.

use crate::ast::*;
use crate::error::ParseError;
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser;
use std::sync::OnceLock;

/// The next child of a rule pest matched: the grammar (`grammar/gpm.pest`) guarantees it, so
/// its absence is a bug of this file, not of the model.
fn next<T>(it: &mut impl Iterator<Item = T>) -> T {
    it.next()
        .expect("the grammar gives the matched rule this child")
}

#[derive(pest_derive::Parser)]
#[grammar = "../../grammar/gpm.pest"]
struct GpmParser;

fn pratt() -> &'static PrattParser<Rule> {
    static PRATT: OnceLock<PrattParser<Rule>> = OnceLock::new();
    PRATT.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::eq, Assoc::Left))
            .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
            .op(Op::infix(Rule::mul, Assoc::Left) | Op::infix(Rule::div, Assoc::Left))
            .op(Op::prefix(Rule::neg))
            .op(Op::infix(Rule::pow, Assoc::Right))
            .op(Op::postfix(Rule::index))
    })
}

/// Parse a whole `.gpm` program.
pub fn parse(src: &str) -> Result<Program, ParseError> {
    crate::limits::check_limits(src)?;
    let mut pairs = GpmParser::parse(Rule::program, src).map_err(|e| convert_error(e, src))?;
    let program = pairs
        .next()
        .expect("the program rule always yields one pair");
    let mut out = Program::default();
    for block in program.into_inner() {
        let span = span_of(&block);
        let kw_span = Span::new(span.start, span.start + keyword_len(block.as_rule()));
        match block.as_rule() {
            Rule::data_block => {
                out.blocks.push((BlockKind::Data, kw_span));
                for d in block.into_inner() {
                    if d.as_rule() == Rule::data_let {
                        let after = out.data.len();
                        out.data_lets.push(data_let(d, after)?);
                    } else {
                        out.data.push(data_decl(d)?);
                    }
                }
            }
            Rule::hyper_block => {
                out.blocks.push((BlockKind::Hyper, kw_span));
                for d in block.into_inner() {
                    out.hypers.push(hyper_decl(d)?);
                }
            }
            Rule::latent_block => {
                out.blocks.push((BlockKind::Latent, kw_span));
                for d in block.into_inner() {
                    out.latents.push(latent_decl(d)?);
                }
            }
            Rule::params_block => {
                out.blocks.push((BlockKind::Parameters, kw_span));
                for d in block.into_inner() {
                    out.parameters.push(param_decl(d)?);
                }
            }
            Rule::model_block => {
                out.blocks.push((BlockKind::Model, kw_span));
                for s in block.into_inner() {
                    out.model.push(stmt(s)?);
                }
            }
            Rule::EOI => {}
            r => unreachable!("grammar: unexpected block {r:?}"),
        }
    }
    Ok(out)
}

fn keyword_len(rule: Rule) -> usize {
    match rule {
        Rule::data_block => 4,
        Rule::hyper_block => 5,
        Rule::latent_block => 6,
        Rule::params_block => 10,
        Rule::model_block => 5,
        _ => 0,
    }
}

fn span_of(p: &Pair<Rule>) -> Span {
    let s = p.as_span();
    Span::new(s.start(), s.end())
}

fn ident(p: Pair<Rule>) -> Ident {
    Ident {
        name: p.as_str().to_string(),
        span: span_of(&p),
    }
}

fn data_decl(p: Pair<Rule>) -> Result<DataDecl, ParseError> {
    let span = span_of(&p);
    let mut it = p.into_inner().filter(|q| !is_keyword(q.as_rule()));
    let name = ident(next(&mut it));
    let ty = ty(next(&mut it))?;
    let constraint = it.next().map(constraint).transpose()?;
    Ok(DataDecl {
        name,
        ty,
        constraint,
        span,
    })
}

fn data_let(p: Pair<Rule>, after: usize) -> Result<DataLet, ParseError> {
    let span = span_of(&p);
    let mut it = p.into_inner().filter(|q| !is_keyword(q.as_rule()));
    let name = ident(next(&mut it));
    let value = expr(next(&mut it))?;
    Ok(DataLet {
        name,
        value,
        after,
        span,
    })
}

fn hyper_decl(p: Pair<Rule>) -> Result<HyperDecl, ParseError> {
    let span = span_of(&p);
    let mut it = p.into_inner().filter(|q| !is_keyword(q.as_rule()));
    let name = ident(next(&mut it));
    let ty = ty(next(&mut it))?;
    let mut constraint = None;
    let mut spec = None;
    for q in it {
        match q.as_rule() {
            Rule::set_constraint | Rule::range_constraint => constraint = Some(constraint_of(q)?),
            Rule::fixed_spec => spec = Some(HyperSpec::Fixed(expr(next(&mut q.into_inner()))?)),
            Rule::learn_spec => {
                let e = q
                    .into_inner()
                    .find(|x| x.as_rule() == Rule::expr)
                    .expect("the grammar gives `learn(...)` an expression");
                spec = Some(HyperSpec::Learn(expr(e)?))
            }
            Rule::prior_spec => spec = Some(HyperSpec::Prior(call(next(&mut q.into_inner()))?)),
            r => unreachable!("grammar: unexpected {r:?} in hyper declaration"),
        }
    }
    Ok(HyperDecl {
        name,
        ty,
        constraint,
        spec: spec.expect("grammar requires a hyper spec"),
        span,
    })
}

fn param_decl(p: Pair<Rule>) -> Result<ParamDecl, ParseError> {
    let span = span_of(&p);
    let mut name = None;
    let mut ty_ = None;
    let mut constraint = None;
    let mut prior = None;
    for q in p.into_inner().filter(|q| !is_keyword(q.as_rule())) {
        match q.as_rule() {
            Rule::ident if name.is_none() => name = Some(ident(q)),
            Rule::set_constraint | Rule::range_constraint => constraint = Some(constraint_of(q)?),
            Rule::prior_spec => {
                if let Some(c) = q.into_inner().next() {
                    prior = Some(call(c)?);
                }
            }
            _ if ty_.is_none() => ty_ = Some(ty(q)?),
            _ => {}
        }
    }
    match (name, ty_) {
        (Some(name), Some(ty)) => Ok(ParamDecl {
            name,
            ty,
            constraint,
            prior,
            span,
        }),
        _ => Err(ParseError {
            message: "an incomplete parameter declaration".into(),
            span,
            label: "here".into(),
            help: Some("write `name : type [in lo..hi] [~ prior];`".into()),
        }),
    }
}

fn latent_decl(p: Pair<Rule>) -> Result<LatentDecl, ParseError> {
    let span = span_of(&p);
    let mut it = p.into_inner();
    let name = ident(next(&mut it));
    let ty = ty(next(&mut it))?;
    let prior = call(next(&mut it))?;
    Ok(LatentDecl {
        name,
        ty,
        prior,
        span,
    })
}

fn ty(p: Pair<Rule>) -> Result<Type, ParseError> {
    let span = span_of(&p);
    let rule = p.as_rule();
    let mut shapes = p
        .into_inner()
        .filter(|q| q.as_rule() == Rule::expr)
        .map(expr)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter();
    let kind = match rule {
        Rule::ty_int => TypeKind::Int,
        Rule::ty_real => TypeKind::Real,
        Rule::ty_vector => TypeKind::Vector(next(&mut shapes)),
        Rule::ty_matrix => TypeKind::Matrix(next(&mut shapes), next(&mut shapes)),
        Rule::ty_int_array => TypeKind::IntArray(next(&mut shapes)),
        Rule::ty_real_array => TypeKind::RealArray(next(&mut shapes)),
        r => unreachable!("grammar: unexpected type {r:?}"),
    };
    Ok(Type { kind, span })
}

fn constraint(p: Pair<Rule>) -> Result<Constraint, ParseError> {
    constraint_of(p)
}

fn constraint_of(p: Pair<Rule>) -> Result<Constraint, ParseError> {
    // pest's span of a range can end in the whitespace that follows it: trim it.
    let text = p.as_str();
    let mut span = span_of(&p);
    span.end = span.start + text.trim_end().len();
    let kind = match p.as_rule() {
        Rule::set_constraint => {
            let mut values = Vec::new();
            for q in p.into_inner() {
                let v = q.as_str().parse::<i64>().map_err(|_| {
                    ParseError::new(
                        "integer in a set constraint is out of range",
                        span_of(&q),
                        "too large for a 64-bit integer",
                    )
                })?;
                values.push(v);
            }
            ConstraintKind::Set(values)
        }
        Rule::range_constraint => {
            let mut lo = None;
            let mut hi = None;
            for q in p.into_inner() {
                let is_lo = q.as_rule() == Rule::range_lo;
                let e = pratt_expr(q.into_inner())?;
                if is_lo {
                    lo = Some(e)
                } else {
                    hi = Some(e)
                }
            }
            ConstraintKind::Range { lo, hi }
        }
        r => unreachable!("grammar: unexpected constraint {r:?}"),
    };
    Ok(Constraint { kind, span })
}

fn stmt(p: Pair<Rule>) -> Result<Stmt, ParseError> {
    let span = span_of(&p);
    let rule = p.as_rule();
    let mut it = p.into_inner().filter(|q| !is_keyword(q.as_rule()));
    Ok(match rule {
        Rule::let_stmt => Stmt::Let {
            name: ident(next(&mut it)),
            value: expr(next(&mut it))?,
            span,
        },
        Rule::sample_stmt => Stmt::Sample {
            lhs: expr(next(&mut it))?,
            dist: call(next(&mut it))?,
            modifier: it.next().map(call).transpose()?,
            span,
        },
        Rule::target_stmt => Stmt::Target {
            expr: expr(next(&mut it))?,
            span,
        },
        Rule::factor_stmt => Stmt::Factor {
            expr: expr(next(&mut it))?,
            span,
        },
        Rule::for_stmt => {
            let var = ident(next(&mut it));
            // The bounds are bare operator sequences (`sum`), not `expr` pairs; everything up to
            // the first statement belongs to them. Split them at the `..` by position.
            let rest: Vec<Pair<Rule>> = it.collect();
            let first_stmt = rest
                .iter()
                .position(|q| is_stmt(q.as_rule()))
                .unwrap_or(rest.len());
            let (bounds, body) = rest.split_at(first_stmt);
            let (lo, hi) = split_bounds(bounds)?;
            let body = body
                .iter()
                .cloned()
                .map(stmt)
                .collect::<Result<Vec<_>, _>>()?;
            Stmt::For {
                var,
                lo,
                hi,
                body,
                span,
            }
        }
        r => unreachable!("grammar: unexpected statement {r:?}"),
    })
}

/// The pairs of `lo .. hi` come as one flat sequence of operands and operators; the operand
/// boundary is where an operand is followed directly by another operand (no infix between).
fn split_bounds(pairs: &[Pair<Rule>]) -> Result<(Expr, Expr), ParseError> {
    let mut split = None;
    for k in 1..pairs.len() {
        let prev_operand = is_operand_end(pairs[k - 1].as_rule());
        let next_operand_start = is_operand_start(pairs[k].as_rule());
        if prev_operand && next_operand_start {
            split = Some(k);
            break;
        }
    }
    let k = split.expect("grammar: a for loop has two bounds");
    let lo = pratt_expr_from(pairs[..k].to_vec())?;
    let hi = pratt_expr_from(pairs[k..].to_vec())?;
    Ok((lo, hi))
}

fn is_operand_end(r: Rule) -> bool {
    matches!(
        r,
        Rule::number | Rule::ident | Rule::call | Rule::expr | Rule::index
    )
}

fn is_operand_start(r: Rule) -> bool {
    matches!(
        r,
        Rule::number | Rule::ident | Rule::call | Rule::expr | Rule::neg
    )
}

fn is_keyword(r: Rule) -> bool {
    matches!(
        r,
        Rule::kw_let
            | Rule::kw_for
            | Rule::kw_in
            | Rule::kw_target
            | Rule::kw_factor
            | Rule::kw_learn
    )
}

fn is_stmt(r: Rule) -> bool {
    matches!(
        r,
        Rule::let_stmt | Rule::for_stmt | Rule::target_stmt | Rule::factor_stmt | Rule::sample_stmt
    )
}

fn call(p: Pair<Rule>) -> Result<Call, ParseError> {
    let span = span_of(&p);
    let mut it = p.into_inner();
    let func = ident(next(&mut it));
    let mut args = Vec::new();
    for a in it {
        let mut inner = a.into_inner().collect::<Vec<_>>();
        let last = inner.pop().expect("inner is not empty: checked above");
        let value = if last.as_rule() == Rule::string {
            let text = last.as_str();
            Expr {
                kind: ExprKind::Str(text[1..text.len() - 1].to_string()),
                span: span_of(&last),
            }
        } else {
            expr(last)?
        };
        let name = inner.pop().map(ident);
        args.push(Arg { name, value });
    }
    Ok(Call { func, args, span })
}

fn expr(p: Pair<Rule>) -> Result<Expr, ParseError> {
    debug_assert_eq!(p.as_rule(), Rule::expr);
    pratt_expr(p.into_inner())
}

fn pratt_expr(pairs: Pairs<Rule>) -> Result<Expr, ParseError> {
    pratt_expr_from(pairs.collect())
}

fn pratt_expr_from(pairs: Vec<Pair<Rule>>) -> Result<Expr, ParseError> {
    pratt()
        .map_primary(primary)
        .map_prefix(|op, rhs| {
            let rhs = rhs?;
            let span = span_of(&op).join(rhs.span);
            // Fold `-3` into a literal so that constants stay constants.
            if let ExprKind::Num { value, is_int } = rhs.kind {
                return Ok(Expr {
                    kind: ExprKind::Num {
                        value: -value,
                        is_int,
                    },
                    span,
                });
            }
            Ok(Expr {
                kind: ExprKind::Neg(Box::new(rhs)),
                span,
            })
        })
        .map_postfix(|lhs, op| {
            let lhs = lhs?;
            let span = lhs.span.join(span_of(&op));
            let inner: Vec<Pair<Rule>> = op.into_inner().collect();
            if inner.first().is_some_and(|q| q.as_rule() == Rule::all_rows) {
                // `X[, j]`: the column, as the library function `col(X, j)`.
                let j = expr(inner[1].clone())?;
                let func = Ident {
                    name: "col".into(),
                    span,
                };
                let args = vec![
                    Arg {
                        name: None,
                        value: lhs,
                    },
                    Arg {
                        name: None,
                        value: j,
                    },
                ];
                return Ok(Expr {
                    kind: ExprKind::Call(Call { func, args, span }),
                    span,
                });
            }
            let ix = inner.into_iter().map(expr).collect::<Result<Vec<_>, _>>()?;
            Ok(Expr {
                kind: ExprKind::Index(Box::new(lhs), ix),
                span,
            })
        })
        .map_infix(|lhs, op, rhs| {
            let (lhs, rhs) = (lhs?, rhs?);
            let bop = match op.as_rule() {
                Rule::add => BinOp::Add,
                Rule::sub => BinOp::Sub,
                Rule::mul => BinOp::Mul,
                Rule::div => BinOp::Div,
                Rule::pow => BinOp::Pow,
                Rule::eq => BinOp::Eq,
                r => unreachable!("grammar: unexpected infix {r:?}"),
            };
            Ok(Expr {
                span: lhs.span.join(rhs.span),
                kind: ExprKind::Binary(bop, Box::new(lhs), Box::new(rhs)),
            })
        })
        .parse(pairs.into_iter())
}

fn primary(p: Pair<Rule>) -> Result<Expr, ParseError> {
    let span = span_of(&p);
    match p.as_rule() {
        Rule::number => {
            let text = p.as_str();
            let value: f64 = text.parse().map_err(|_| {
                ParseError::new(format!("`{text}` is not a number"), span, "not a number")
            })?;
            if !value.is_finite() {
                return Err(ParseError::new(
                    format!("the literal `{text}` overflows a 64-bit float"),
                    span,
                    "too large",
                ));
            }
            let is_int = !text.contains(['.', 'e', 'E']);
            Ok(Expr {
                kind: ExprKind::Num { value, is_int },
                span,
            })
        }
        Rule::ident => Ok(Expr {
            kind: ExprKind::Var(p.as_str().to_string()),
            span,
        }),
        Rule::call => Ok(Expr {
            kind: ExprKind::Call(call(p)?),
            span,
        }),
        Rule::expr => {
            // A parenthesised expression keeps the span of the parentheses' content.
            expr(p)
        }
        r => unreachable!("grammar: unexpected primary {r:?}"),
    }
}

fn rule_name(r: &Rule) -> Option<&'static str> {
    Some(match r {
        Rule::ident => "a name",
        Rule::number => "a number",
        Rule::expr | Rule::sum => "an expression",
        Rule::call => "a call like `normal(0, 1)`",
        Rule::data_block => "`data {`",
        Rule::hyper_block => "`hyper {`",
        Rule::latent_block => "`latent {`",
        Rule::params_block => "`parameters {`",
        Rule::model_block => "`model {`",
        Rule::data_decl | Rule::hyper_decl | Rule::latent_decl | Rule::param_decl => {
            "a declaration `name : type ...;`"
        }
        Rule::ty_int | Rule::kw_int => "`int`",
        Rule::ty_real | Rule::kw_real => "`real`",
        Rule::ty_vector | Rule::kw_vector => "`vector[n]`",
        Rule::ty_matrix | Rule::kw_matrix => "`matrix[n, m]`",
        Rule::ty_int_array => "`int[n]`",
        Rule::ty_real_array => "`real[n]`",
        Rule::kw_in => "`in`",
        Rule::set_constraint => "a set `{a, b}`",
        Rule::range_constraint => "a range `lo..hi`",
        Rule::learn_spec | Rule::fixed_spec => "`= value` or `= learn(init)`",
        Rule::prior_spec => "`~ prior(...)`",
        Rule::let_stmt | Rule::data_let => "`let`",
        Rule::for_stmt => "`for`",
        Rule::target_stmt => "`target +=`",
        Rule::factor_stmt => "`factor(...)`",
        Rule::sample_stmt => "a statement",
        Rule::add | Rule::sub | Rule::mul | Rule::div | Rule::pow | Rule::eq => "an operator",
        Rule::index => "`[`",
        Rule::neg => "`-`",
        Rule::arg => "an argument",
        Rule::string => "a string",
        Rule::signed_int => "an integer",
        Rule::EOI => "the end of the file",
        _ => return None,
    })
}

fn convert_error(e: pest::error::Error<Rule>, src: &str) -> ParseError {
    use pest::error::{ErrorVariant, InputLocation};
    let (start, end) = match e.location {
        InputLocation::Pos(p) => (p, p),
        InputLocation::Span((s, e)) => (s, e),
    };
    let (end, found) = crate::error::offending_token(src, start, end);
    let mut expected: Vec<&str> = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => {
            positives.iter().filter_map(rule_name).collect()
        }
        ErrorVariant::CustomError { .. } => vec![],
    };
    expected.sort();
    expected.dedup();
    let message = if expected.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {}, found {found}", join_or(&expected))
    };
    let help = hint(src, start).or_else(|| Some("see docs/language.md for the grammar".into()));
    let err = ParseError::new(message, Span::new(start, end), "here");
    match help {
        Some(h) => err.with_help(h),
        None => err,
    }
}

fn join_or(items: &[&str]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].to_string(),
        _ => format!(
            "{} or {}",
            items[..items.len() - 1].join(", "),
            items[items.len() - 1]
        ),
    }
}

/// A targeted hint for the mistakes people coming from Stan make most.
fn hint(src: &str, pos: usize) -> Option<String> {
    let before = src[..pos].trim_end();
    let after = src[pos..].trim_start();
    if after.starts_with("/*") && !after.contains("*/") {
        return Some("this `/*` comment is never closed with `*/`".into());
    }
    if after.starts_with('}') || (after.is_empty() && !before.ends_with('}')) {
        return Some("is a `;` or a closing `}` missing?".into());
    }
    let word: String = after
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if [
        "data", "hyper", "latent", "model", "let", "for", "in", "target", "factor", "learn", "int",
        "real", "vector", "matrix",
    ]
    .contains(&word.as_str())
        && !before.ends_with(';')
        && !before.ends_with('{')
        && !before.ends_with('}')
    {
        return Some("is the `;` at the end of the previous line missing?".into());
    }
    if ["int", "real", "vector", "matrix"].contains(&word.as_str()) {
        return Some("declarations are written `name : type;` (the name comes first)".into());
    }
    // `beta : vector[2];` in the latent block, `sigma : real in 0..;` in the hyper block: a
    // declaration that stops where its prior or value should be.
    if after.starts_with(';') || after.starts_with(']') {
        let block = ["latent", "hyper", "data", "model"]
            .iter()
            .filter_map(|b| {
                before
                    .rfind(&format!("{b} {{"))
                    .or_else(|| before.rfind(&format!("{b}{{")))
                    .map(|k| (k, *b))
            })
            .max();
        match block.map(|(_, b)| b) {
            Some("latent") => {
                return Some("a latent is declared with its prior: `beta : vector[2] ~ normal(0, 10);` (Stan's implicit flat prior is `~ flat()`)".into())
            }
            Some("hyper") => {
                return Some("a hyperparameter is declared with a value (`= 1.5`), `= learn(1.0)` or a prior (`~ gamma(2, 1)`); Stan's implicit flat prior on its range is `~ flat()`".into())
            }
            _ => {}
        }
    }
    if after.starts_with('<') {
        return Some(
            "constraints are written `in lo..hi` or `in {a, b}`, not `<lower=...>`".into(),
        );
    }
    None
}
