//! From Stan text to [`StanProgram`]: pest does the grammar (`grammar/stan.pest`), a Pratt parser
//! Stan's operator precedence (`?:` < `||` < `&&` < `== !=` < `< <= > >=` < `+ -` <
//! `* / % \ .* ./ %/%` < unary `! - +` < `^ .^` (right) < postfix `'` and indexing).

use crate::ast::*;
use crate::error::StanError;
use gpm_syntax::{Ident, Span};
use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser;
use std::sync::OnceLock;

#[derive(pest_derive::Parser)]
#[grammar = "../../grammar/stan.pest"]
struct StanParser;

fn pratt() -> &'static PrattParser<Rule> {
    static PRATT: OnceLock<PrattParser<Rule>> = OnceLock::new();
    PRATT.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::ternary, Assoc::Right))
            .op(Op::infix(Rule::or, Assoc::Left))
            .op(Op::infix(Rule::and, Assoc::Left))
            .op(Op::infix(Rule::eq, Assoc::Left) | Op::infix(Rule::ne, Assoc::Left))
            .op(Op::infix(Rule::lt, Assoc::Left)
                | Op::infix(Rule::le, Assoc::Left)
                | Op::infix(Rule::gt, Assoc::Left)
                | Op::infix(Rule::ge, Assoc::Left))
            .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
            .op(Op::infix(Rule::mul, Assoc::Left)
                | Op::infix(Rule::div, Assoc::Left)
                | Op::infix(Rule::int_div, Assoc::Left)
                | Op::infix(Rule::modulus, Assoc::Left)
                | Op::infix(Rule::ldiv, Assoc::Left)
                | Op::infix(Rule::elt_mul, Assoc::Left)
                | Op::infix(Rule::elt_div, Assoc::Left))
            .op(Op::prefix(Rule::neg) | Op::prefix(Rule::not) | Op::prefix(Rule::plus))
            .op(Op::infix(Rule::pow, Assoc::Right) | Op::infix(Rule::elt_pow, Assoc::Right))
            .op(Op::postfix(Rule::index) | Op::postfix(Rule::transpose))
    })
}

/// Parse a whole Stan program (after the shared size and nesting limits).
pub fn parse(src: &str) -> Result<StanProgram, StanError> {
    gpm_syntax::limits::check_limits(src)?;
    let mut pairs = StanParser::parse(Rule::program, src).map_err(|e| convert_error(e, src))?;
    let Some(program) = pairs.next() else {
        return Err(StanError::new(
            "stan::syntax",
            "empty program",
            Span::default(),
        ));
    };
    let mut out = StanProgram::default();
    for block in program.into_inner() {
        let span = span_of(&block);
        match block.as_rule() {
            // brms writes an empty `functions { }` block: nothing to inline.
            Rule::functions_block => {
                out.functions = content(block).map(fun_def).collect::<Result<_, _>>()?;
                if !out.functions.is_empty() {
                    out.functions_span = Some(span);
                }
            }
            Rule::data_block => out.data = decls(block)?,
            Rule::params_block => out.parameters = decls(block)?,
            Rule::tdata_block => out.transformed_data = stmts(block)?,
            Rule::tparams_block => out.transformed_parameters = stmts(block)?,
            Rule::model_block => out.model = stmts(block)?,
            Rule::gq_block => {
                out.generated_span = Some(Span::new(span.start, span.start + 9));
                out.generated = stmts(block)?;
            }
            _ => {}
        }
    }
    Ok(out)
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

fn is_keyword(r: Rule) -> bool {
    format!("{r:?}").starts_with("kw_")
}

fn content(p: Pair<Rule>) -> impl Iterator<Item = Pair<Rule>> {
    p.into_inner().filter(|q| !is_keyword(q.as_rule()))
}

fn decls(block: Pair<Rule>) -> Result<Vec<VarDecl>, StanError> {
    content(block).map(var_decl).collect()
}

fn stmts(block: Pair<Rule>) -> Result<Vec<Stmt>, StanError> {
    content(block).map(stmt).collect()
}

fn var_decl(p: Pair<Rule>) -> Result<VarDecl, StanError> {
    let span = span_of(&p);
    let mut array = Vec::new();
    let mut ty = None;
    let mut name = None;
    let mut value = None;
    for q in p.into_inner() {
        match q.as_rule() {
            Rule::array_dims | Rule::old_dims => {
                for e in content(q) {
                    array.push(expr(e)?);
                }
            }
            Rule::base_type => ty = Some(base_type(q)?),
            Rule::ident => name = Some(ident(q)),
            Rule::expr => value = Some(expr(q)?),
            _ => {}
        }
    }
    let (Some(mut ty), Some(name)) = (ty, name) else {
        return Err(StanError::new(
            "stan::syntax",
            "incomplete declaration",
            span,
        ));
    };
    ty.array = array;
    Ok(VarDecl {
        ty,
        name,
        value,
        span,
    })
}

fn base_type(p: Pair<Rule>) -> Result<StanType, StanError> {
    let span = span_of(&p);
    let mut ty = StanType {
        base: BaseKind::Real,
        sizes: Vec::new(),
        array: Vec::new(),
        lower: None,
        upper: None,
        affine: false,
        offset: None,
        multiplier: None,
        span,
    };
    for q in p.into_inner() {
        match q.as_rule() {
            Rule::scalar_type | Rule::sized_type => {
                let kw = q.as_str().trim();
                ty.base = match kw {
                    "int" => BaseKind::Int,
                    "real" => BaseKind::Real,
                    "vector" => BaseKind::Vector,
                    "row_vector" => BaseKind::RowVector,
                    "matrix" => BaseKind::Matrix,
                    "simplex" => BaseKind::Constrained("simplex"),
                    "ordered" => BaseKind::Constrained("ordered"),
                    "positive_ordered" => BaseKind::Constrained("positive_ordered"),
                    "unit_vector" => BaseKind::Constrained("unit_vector"),
                    "cholesky_factor_corr" => BaseKind::Constrained("cholesky_factor_corr"),
                    "cholesky_factor_cov" => BaseKind::Constrained("cholesky_factor_cov"),
                    "corr_matrix" => BaseKind::Constrained("corr_matrix"),
                    _ => BaseKind::Constrained("cov_matrix"),
                };
            }
            Rule::bounds => {
                for b in q.into_inner() {
                    let mut it = b.into_inner();
                    let (Some(n), Some(e)) = (it.next(), it.next()) else {
                        continue;
                    };
                    let value = expr_pairs(e.into_inner(), span_of(&n))?;
                    match n.as_str() {
                        "lower" => ty.lower = Some(value),
                        "upper" => ty.upper = Some(value),
                        "offset" => {
                            ty.affine = true;
                            ty.offset = Some(value);
                        }
                        _ => {
                            ty.affine = true;
                            ty.multiplier = Some(value);
                        }
                    }
                }
            }
            Rule::expr => ty.sizes.push(expr(q)?),
            _ => {}
        }
    }
    Ok(ty)
}

fn stmt(p: Pair<Rule>) -> Result<Stmt, StanError> {
    let span = span_of(&p);
    Ok(match p.as_rule() {
        Rule::var_decl => Stmt::Decl(Box::new(var_decl(p)?)),
        Rule::block_stmt => Stmt::Block(stmts(p)?, span),
        Rule::for_stmt => {
            let mut it = content(p);
            let var = it.next().map(ident);
            let mut exprs = Vec::new();
            let mut body = Vec::new();
            for q in it {
                if q.as_rule() == Rule::expr {
                    exprs.push(expr(q)?);
                } else {
                    body.push(stmt(q)?);
                }
            }
            let mut exprs = exprs.into_iter();
            match (var, exprs.next()) {
                (Some(var), Some(lo)) => Stmt::For {
                    var,
                    lo,
                    hi: exprs.next(),
                    body,
                    span,
                },
                _ => return Err(StanError::new("stan::syntax", "incomplete loop", span)),
            }
        }
        Rule::target_stmt => match content(p).next() {
            Some(e) => Stmt::Target {
                expr: expr(e)?,
                span,
            },
            None => return Err(StanError::new("stan::syntax", "empty `target +=`", span)),
        },
        Rule::assign_stmt => assign(p, span)?,
        Rule::tilde_stmt => tilde(p, span)?,
        Rule::while_stmt => {
            let mut it = content(p);
            match (it.next(), it.next()) {
                (Some(c), Some(b)) => Stmt::While {
                    cond: expr(c)?,
                    body: Box::new(stmt(b)?),
                    span,
                },
                _ => return Err(StanError::new("stan::syntax", "incomplete `while`", span)),
            }
        }
        Rule::if_stmt => {
            let mut it = content(p);
            match (it.next(), it.next()) {
                (Some(c), Some(t)) => Stmt::If {
                    cond: expr(c)?,
                    then: Box::new(stmt(t)?),
                    otherwise: it.next().map(stmt).transpose()?.map(Box::new),
                    span,
                },
                _ => return Err(StanError::new("stan::syntax", "incomplete `if`", span)),
            }
        }
        Rule::print_stmt => Stmt::Other("print", span),
        Rule::reject_stmt => Stmt::Other("reject", span),
        Rule::break_stmt => Stmt::Other("break", span),
        Rule::continue_stmt => Stmt::Other("continue", span),
        Rule::return_stmt => Stmt::Return(content(p).next().map(expr).transpose()?, span),
        Rule::empty_stmt => Stmt::Block(vec![], span),
        _ => Stmt::Other("an expression statement", span),
    })
}

fn unsized_type(p: Pair<Rule>) -> UnsizedType {
    let mut base = BaseKind::Real;
    let mut array_dims = 0;
    let mut has_array = false;
    for q in p.into_inner() {
        match q.as_rule() {
            Rule::kw_array => {
                has_array = true;
                array_dims = 1;
            }
            Rule::dim_comma => array_dims += 1,
            Rule::unsized_base => {
                base = match q.as_str().trim() {
                    "int" => BaseKind::Int,
                    "vector" => BaseKind::Vector,
                    "row_vector" => BaseKind::RowVector,
                    "matrix" => BaseKind::Matrix,
                    _ => BaseKind::Real,
                };
                // The old `real[]` comes after the base: its brackets count from here.
                if !has_array {
                    array_dims = 0;
                }
            }
            _ => {}
        }
    }
    UnsizedType { base, array_dims }
}

fn fun_def(p: Pair<Rule>) -> Result<FunDef, StanError> {
    let span = span_of(&p);
    let mut returns = None;
    let mut name = None;
    let mut args = Vec::new();
    let mut body = None;
    for q in p.into_inner() {
        match q.as_rule() {
            Rule::fun_type => {
                returns = q
                    .into_inner()
                    .find(|r| r.as_rule() == Rule::unsized_type)
                    .map(unsized_type)
            }
            Rule::ident => name = Some(ident(q)),
            Rule::fun_arg => {
                let mut ty = None;
                let mut arg = None;
                for r in q.into_inner() {
                    match r.as_rule() {
                        Rule::unsized_type => ty = Some(unsized_type(r)),
                        Rule::ident => arg = Some(ident(r)),
                        _ => {}
                    }
                }
                if let (Some(t), Some(a)) = (ty, arg) {
                    args.push((t, a));
                }
            }
            Rule::block_stmt => body = Some(stmts(q)?),
            _ => {}
        }
    }
    let name =
        name.ok_or_else(|| StanError::new("stan::syntax", "a function without a name", span))?;
    Ok(FunDef {
        name,
        returns,
        args,
        body,
        span,
    })
}

fn assign(p: Pair<Rule>, span: Span) -> Result<Stmt, StanError> {
    let mut name = None;
    let mut indices = Vec::new();
    let mut op = AssignOp::Set;
    let mut value = None;
    for q in p.into_inner() {
        match q.as_rule() {
            Rule::lvalue => {
                for r in q.into_inner() {
                    match r.as_rule() {
                        Rule::ident => name = Some(ident(r)),
                        _ => indices.push(index(r)?),
                    }
                }
            }
            Rule::assign_op => {
                op = match q.as_str() {
                    "+=" => AssignOp::Add,
                    "-=" => AssignOp::Sub,
                    "*=" => AssignOp::Mul,
                    "/=" => AssignOp::Div,
                    ".*=" => AssignOp::EltMul,
                    "./=" => AssignOp::EltDiv,
                    _ => AssignOp::Set,
                }
            }
            Rule::expr => value = Some(expr(q)?),
            _ => {}
        }
    }
    match (name, value) {
        (Some(name), Some(value)) => Ok(Stmt::Assign {
            name,
            indices,
            op,
            value,
            span,
        }),
        _ => Err(StanError::new(
            "stan::syntax",
            "incomplete assignment",
            span,
        )),
    }
}

fn tilde(p: Pair<Rule>, span: Span) -> Result<Stmt, StanError> {
    let mut it = p.into_inner();
    let (Some(lhs), Some(dist)) = (it.next(), it.next()) else {
        return Err(StanError::new(
            "stan::syntax",
            "incomplete `~` statement",
            span,
        ));
    };
    let lhs = expr(lhs)?;
    let dist = ident(dist);
    let mut args = Vec::new();
    let mut truncation = None;
    for q in it {
        match q.as_rule() {
            Rule::truncation => {
                let tspan = span_of(&q);
                // The bounds sit either side of the comma at the truncation's top level.
                let comma = top_level_comma(q.as_str()).map_or(usize::MAX, |k| tspan.start + k);
                let (mut lo, mut hi) = (None, None);
                for e in q.into_inner() {
                    if e.as_span().start() < comma {
                        lo = Some(expr(e)?);
                    } else {
                        hi = Some(expr(e)?);
                    }
                }
                truncation = Some(Truncation {
                    span: tspan,
                    lo,
                    hi,
                });
            }
            _ => args.push(expr(q)?),
        }
    }
    Ok(Stmt::Tilde {
        lhs,
        dist,
        args,
        truncation,
        span,
    })
}

/// The byte offset of the first comma outside brackets, after the opening `T[`.
fn top_level_comma(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (k, c) in text.char_indices() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth -= 1,
            ',' if depth == 1 => return Some(k),
            _ => {}
        }
    }
    None
}

fn index(p: Pair<Rule>) -> Result<Vec<Index>, StanError> {
    let mut out = Vec::new();
    for idx in p.into_inner() {
        let Some(inner) = idx.into_inner().next() else {
            continue;
        };
        out.push(match inner.as_rule() {
            Rule::range_idx => {
                let text = inner.as_str();
                let colon = text.find(':').unwrap_or(0);
                let start = inner.as_span().start();
                let mut lo = None;
                let mut hi = None;
                for e in inner.into_inner() {
                    if e.as_span().start() < start + colon {
                        lo = Some(expr(e)?);
                    } else {
                        hi = Some(expr(e)?);
                    }
                }
                Index::Range(lo, hi)
            }
            Rule::empty_idx => Index::Range(None, None),
            _ => Index::Single(expr(inner)?),
        });
    }
    Ok(out)
}

/// An expression from its `expr` pair.
fn expr(p: Pair<Rule>) -> Result<Expr, StanError> {
    let span = span_of(&p);
    expr_pairs(p.into_inner(), span)
}

fn expr_pairs(pairs: Pairs<Rule>, span: Span) -> Result<Expr, StanError> {
    if pairs.clone().next().is_none() {
        return Err(StanError::new("stan::syntax", "empty expression", span));
    }
    pratt()
        .map_primary(primary)
        .map_prefix(|op, e| {
            let e = e?;
            let span = span_of(&op).join(e.span);
            Ok(match op.as_rule() {
                Rule::neg => Expr {
                    kind: ExprKind::Neg(Box::new(e)),
                    span,
                },
                Rule::not => Expr {
                    kind: ExprKind::Not(Box::new(e)),
                    span,
                },
                _ => e,
            })
        })
        .map_postfix(|e, op| {
            let e = e?;
            let span = e.span.join(span_of(&op));
            Ok(match op.as_rule() {
                Rule::transpose => Expr {
                    kind: ExprKind::Transpose(Box::new(e)),
                    span,
                },
                _ => Expr {
                    kind: ExprKind::Index(Box::new(e), index(op)?),
                    span,
                },
            })
        })
        .map_infix(|a, op, b| {
            let (a, b) = (a?, b?);
            let span = a.span.join(b.span);
            if op.as_rule() == Rule::ternary {
                let mid = match op.into_inner().next() {
                    Some(m) => expr(m)?,
                    None => return Err(StanError::new("stan::syntax", "incomplete `?:`", span)),
                };
                return Ok(Expr {
                    kind: ExprKind::Ternary(Box::new(a), Box::new(mid), Box::new(b)),
                    span,
                });
            }
            let op = match op.as_rule() {
                Rule::or => BinOp::Or,
                Rule::and => BinOp::And,
                Rule::eq => BinOp::Eq,
                Rule::ne => BinOp::Ne,
                Rule::lt => BinOp::Lt,
                Rule::le => BinOp::Le,
                Rule::gt => BinOp::Gt,
                Rule::ge => BinOp::Ge,
                Rule::add => BinOp::Add,
                Rule::sub => BinOp::Sub,
                Rule::mul => BinOp::Mul,
                Rule::div => BinOp::Div,
                Rule::int_div => BinOp::IntDiv,
                Rule::modulus => BinOp::Mod,
                Rule::ldiv => BinOp::LeftDiv,
                Rule::elt_mul => BinOp::EltMul,
                Rule::elt_div => BinOp::EltDiv,
                Rule::elt_pow => BinOp::EltPow,
                _ => BinOp::Pow,
            };
            Ok(Expr {
                kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
                span,
            })
        })
        .parse(pairs)
}

fn primary(p: Pair<Rule>) -> Result<Expr, StanError> {
    let span = span_of(&p);
    let kind = match p.as_rule() {
        Rule::number => {
            let text = p.as_str();
            let value: f64 = text.parse().map_err(|_| {
                StanError::new("stan::syntax", format!("`{text}` is not a number"), span)
            })?;
            ExprKind::Num {
                value,
                is_int: !text.contains(['.', 'e', 'E']),
            }
        }
        Rule::ident => ExprKind::Var(p.as_str().to_string()),
        Rule::string => ExprKind::Str(p.as_str().trim_matches('"').to_string()),
        Rule::expr => return expr(p),
        Rule::call | Rule::cond_call => {
            let conditional = p.as_rule() == Rule::cond_call;
            let mut it = p.into_inner();
            let Some(func) = it.next().map(ident) else {
                return Err(StanError::new("stan::syntax", "incomplete call", span));
            };
            let args = it.map(expr).collect::<Result<Vec<_>, _>>()?;
            ExprKind::Call {
                func,
                args,
                conditional,
            }
        }
        Rule::array_expr => ExprKind::Array(p.into_inner().map(expr).collect::<Result<_, _>>()?),
        Rule::row_vector_expr => {
            ExprKind::RowVector(p.into_inner().map(expr).collect::<Result<_, _>>()?)
        }
        r => {
            return Err(StanError::new(
                "stan::syntax",
                format!("unexpected {r:?}"),
                span,
            ))
        }
    };
    Ok(Expr { kind, span })
}

fn convert_error(e: pest::error::Error<Rule>, src: &str) -> StanError {
    use pest::error::InputLocation;
    let (start, end) = match e.location {
        InputLocation::Pos(p) => (p, p),
        InputLocation::Span((s, e)) => (s, e),
    };
    let (end, found) = gpm_syntax::offending_token(src, start, end);
    StanError::new(
        "stan::syntax",
        format!("syntax error: unexpected {found}"),
        Span::new(start, end),
    )
    .with_help(
        "gpmc reads Stan programs as the Stan Reference Manual writes them: blocks in the order \
         functions, data, transformed data, parameters, transformed parameters, model, generated \
         quantities; a statement ends with `;`",
    )
}
