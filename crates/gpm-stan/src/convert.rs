//! Stan expressions to `.gpm` expressions. A vectorised Stan expression is read at one
//! observation (`At`): a vector of the statement's length `N` becomes its entry `x[i]`, a matrix
//! with `N` rows its row `X[i]` (so `X * beta` becomes `X[i] * beta`), an integer array used as a
//! multi-index its entry (`a[county]` becomes `a[county[i]]`), and locals are inlined from their
//! definitions. Spans stay those of the Stan text.

use crate::ast::{BinOp, Expr, ExprKind, Index};
use crate::error::StanError;
use crate::gexpr::respan;
use crate::symbols::{Definition, Origin, Shape, Symbols};
use gpm_syntax as g;
use std::collections::HashMap;

/// A matrix's columns and the observation its row is read at.
type ColumnsAt = (Vec<Expr>, Option<At>);

/// Reading a vectorised expression at one observation.
#[derive(Debug, Clone)]
pub struct At {
    /// The observation's index (the `.gpm` loop variable, or a Stan index expression).
    pub index: g::Expr,
    /// The statement's length, as written (`N`).
    pub len: String,
}

/// The context of a conversion.
#[derive(Clone)]
pub struct Ctx<'a> {
    /// The program's names.
    pub syms: &'a Symbols,
    /// Read at one observation, or as written.
    pub at: Option<At>,
    /// Stan loop variables and the `.gpm` expressions that stand for them.
    pub subst: HashMap<String, g::Expr>,
    /// Transformed data: `==` allowed and whole columns are `col(X, j)`.
    pub data: bool,
    depth: usize,
}

impl<'a> Ctx<'a> {
    /// A context with no observation and no loop.
    pub fn new(syms: &'a Symbols) -> Self {
        Ctx {
            syms,
            at: None,
            subst: HashMap::new(),
            data: false,
            depth: 0,
        }
    }

    /// This context, read at an observation.
    pub fn at(&self, at: Option<At>) -> Self {
        let mut c = self.clone();
        c.at = at;
        c
    }

    /// Convert one expression.
    pub fn conv(&self, e: &Expr) -> Result<g::Expr, StanError> {
        if self.depth > 64 {
            return Err(StanError::unsupported(
                "definitions nest more than 64 deep",
                e.span,
                "a local defined through itself cannot be inlined",
            ));
        }
        let kind = match &e.kind {
            ExprKind::Num { value, is_int } => g::ExprKind::Num {
                value: *value,
                is_int: *is_int,
            },
            ExprKind::Var(v) => return self.var(v, e),
            ExprKind::Neg(x) => g::ExprKind::Neg(Box::new(self.conv(x)?)),
            ExprKind::Transpose(x) => return self.conv(x),
            ExprKind::Binary(op, a, b) => return self.binary(*op, a, b, e),
            ExprKind::Index(x, ix) => return self.index(x, ix, e),
            ExprKind::Call { func, args, .. } => {
                return crate::functions::call(func, args, &|a| self.conv(a), e.span)
            }
            ExprKind::Str(_) => return Err(not_model(e, "a string")),
            ExprKind::Not(_) => return Err(not_model(e, "`!`")),
            ExprKind::Ternary(..) => return Err(not_model(e, "the conditional operator `?:`")),
            ExprKind::Array(_) | ExprKind::RowVector(_) => {
                return Err(not_model(e, "an array or row-vector literal"))
            }
        };
        Ok(g::Expr { kind, span: e.span })
    }

    fn deeper(&self) -> Self {
        let mut c = self.clone();
        c.depth += 1;
        c
    }

    fn var(&self, v: &str, e: &Expr) -> Result<g::Expr, StanError> {
        if let Some(x) = self.subst.get(v) {
            return Ok(respan(x.clone(), e.span));
        }
        let Some(sym) = self.syms.get(v) else {
            return Err(StanError::new(
                "stan::unknown_name",
                format!("`{v}` is not declared"),
                e.span,
            )
            .with_help("declare it in one of the blocks above its first use"));
        };
        if sym.origin == Origin::Local {
            return match &sym.def {
                Some(Definition::Whole(body)) => {
                    self.deeper().conv(body).map(|x| respan(x, e.span))
                }
                Some(Definition::Elementwise { var, value }) => match &self.at {
                    Some(at) => self.entry_of(var, value, at.index.clone(), e.span),
                    None => Err(StanError::unsupported(
                        format!("`{v}` is defined entry by entry and read whole here"),
                        e.span,
                        "read it in a vectorised statement or as `v[n]` in a loop",
                    )),
                },
                Some(Definition::Columns(_)) | None => Err(StanError::new(
                    "stan::unassigned",
                    format!("`{v}` is read before it is assigned"),
                    e.span,
                )),
            };
        }
        if let Some(Definition::Columns(_)) = &sym.def {
            return Err(StanError::unsupported(
                format!("the matrix `{v}`, built from columns, is read here other than times a coefficient vector"),
                e.span,
                format!("gpmc reads `{v} * beta` (and `{v}[n] * beta` in a loop)"),
            ));
        }
        let plain = g::Expr {
            kind: g::ExprKind::Var(v.to_string()),
            span: e.span,
        };
        match (&self.at, self.syms.shape(v)) {
            (Some(at), Some(Shape::Vector(n) | Shape::Matrix(n))) if n == at.len => Ok(g::Expr {
                kind: g::ExprKind::Index(Box::new(plain), vec![at.index.clone()]),
                span: e.span,
            }),
            _ => Ok(plain),
        }
    }

    /// Entry `index` of a local defined entry by entry through `var`.
    fn entry_of(
        &self,
        var: &str,
        value: &Expr,
        index: g::Expr,
        span: g::Span,
    ) -> Result<g::Expr, StanError> {
        let mut c = self.deeper();
        c.at = None;
        c.subst.insert(var.to_string(), index);
        c.conv(value).map(|x| respan(x, span))
    }

    fn binary(&self, op: BinOp, a: &Expr, b: &Expr, e: &Expr) -> Result<g::Expr, StanError> {
        if op == BinOp::Mul {
            if let Some((cols, at)) = self.columns_of(a)? {
                return self.columns_times(&cols, at, b, e);
            }
        }
        let gop = match op {
            BinOp::Add => g::BinOp::Add,
            BinOp::Sub => g::BinOp::Sub,
            BinOp::Mul | BinOp::EltMul => g::BinOp::Mul,
            BinOp::Div | BinOp::EltDiv => g::BinOp::Div,
            BinOp::Pow | BinOp::EltPow => g::BinOp::Pow,
            BinOp::Eq if self.data => g::BinOp::Eq,
            _ => return Err(not_model(e, &format!("the operator `{}`", op.symbol()))),
        };
        Ok(g::Expr {
            kind: g::ExprKind::Binary(gop, Box::new(self.conv(a)?), Box::new(self.conv(b)?)),
            span: e.span,
        })
    }

    /// A matrix written by its columns, read whole (at this context's observation) or as row
    /// `x[n]`: its columns and the observation they are read at.
    fn columns_of(&self, a: &Expr) -> Result<Option<ColumnsAt>, StanError> {
        let cols_of = |v: &str| match self.syms.get(v).and_then(|s| s.def.as_ref()) {
            Some(Definition::Columns(c)) => Some(c.clone()),
            _ => None,
        };
        match &a.kind {
            ExprKind::Var(v) => Ok(cols_of(v).map(|c| (c, self.at.clone()))),
            ExprKind::Index(x, ix) => match (&x.kind, ix.as_slice()) {
                (ExprKind::Var(v), [Index::Single(n)]) => match cols_of(v) {
                    Some(c) => {
                        let len = match self.syms.shape(v) {
                            Some(Shape::Matrix(len)) => len,
                            _ => return Ok(None),
                        };
                        let index = self.conv(n)?;
                        Ok(Some((c, Some(At { index, len }))))
                    }
                    None => Ok(None),
                },
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// `[c1', c2', ...]' * beta` at an observation: `c1[i] * beta[1] + c2[i] * beta[2] + ...`.
    fn columns_times(
        &self,
        cols: &[Expr],
        at: Option<At>,
        b: &Expr,
        e: &Expr,
    ) -> Result<g::Expr, StanError> {
        let Some(at) = at else {
            return Err(StanError::unsupported(
                "a matrix built from columns is multiplied outside a statement over its rows",
                e.span,
                "use it in a vectorised likelihood (`y ~ bernoulli_logit_glm(x, alpha, beta)`, `y ~ normal(x * beta, sigma)`)",
            ));
        };
        let coef = self.at(None).conv(b)?;
        let row = self.at(Some(at));
        let mut sum: Option<g::Expr> = None;
        for (k, c) in cols.iter().enumerate() {
            let term = g::Expr {
                kind: g::ExprKind::Binary(
                    g::BinOp::Mul,
                    Box::new(row.conv(c)?),
                    Box::new(g::Expr {
                        kind: g::ExprKind::Index(
                            Box::new(coef.clone()),
                            vec![g::Expr {
                                kind: g::ExprKind::Num {
                                    value: (k + 1) as f64,
                                    is_int: true,
                                },
                                span: e.span,
                            }],
                        ),
                        span: e.span,
                    }),
                ),
                span: e.span,
            };
            sum = Some(match sum {
                Some(s) => g::Expr {
                    kind: g::ExprKind::Binary(g::BinOp::Add, Box::new(s), Box::new(term)),
                    span: e.span,
                },
                None => term,
            });
        }
        sum.ok_or_else(|| not_model(e, "an empty matrix"))
    }

    fn index(&self, x: &Expr, ix: &[Index], e: &Expr) -> Result<g::Expr, StanError> {
        // A local indexed by a position: inline its entry.
        if let (ExprKind::Var(v), [Index::Single(i)]) = (&x.kind, ix) {
            if let Some(sym) = self.syms.get(v).filter(|s| s.origin == Origin::Local) {
                let index = self.conv(i)?;
                return match &sym.def {
                    Some(Definition::Elementwise { var, value }) => {
                        self.entry_of(var, value, index, e.span)
                    }
                    Some(Definition::Whole(body)) => {
                        let len = self.syms.shape(v).and_then(|s| match s {
                            Shape::Vector(n) | Shape::Matrix(n) => Some(n),
                            Shape::Scalar => None,
                        });
                        let mut c = self.deeper();
                        c.at = len.map(|len| At { index, len });
                        c.conv(body).map(|b| respan(b, e.span))
                    }
                    Some(Definition::Columns(_)) | None => Err(StanError::new(
                        "stan::unassigned",
                        format!("`{v}` is read before it is assigned"),
                        e.span,
                    )),
                };
            }
        }
        if let ExprKind::Var(v) = &x.kind {
            if self.syms.get(v).is_some_and(|s| s.origin == Origin::Local) {
                return Err(StanError::unsupported(
                    format!("`{v}` is a local or transformed parameter indexed in a way gpmc cannot inline yet"),
                    e.span,
                    format!("write `{v}`'s definition where it is read, or define it entry by entry (`{v}[n] = ...;` in a loop) and read `{v}[n]`"),
                ));
            }
        }
        // The indexed value is read as written; its indices at the observation.
        let base = match &x.kind {
            ExprKind::Var(v) if !self.subst.contains_key(v) && self.syms.get(v).is_some() => {
                g::Expr {
                    kind: g::ExprKind::Var(v.clone()),
                    span: x.span,
                }
            }
            _ => self.at(None).conv(x)?,
        };
        let mut out = Vec::new();
        for (k, i) in ix.iter().enumerate() {
            match i {
                Index::Single(i) => out.push(self.conv(i)?),
                Index::Range(None, None) if k == 0 && ix.len() == 2 => {
                    if let Some(at) = &self.at {
                        out.push(at.index.clone());
                    } else if self.data {
                        let Index::Single(j) = &ix[1] else {
                            return Err(not_model(e, "a slice of a slice"));
                        };
                        return Ok(g::Expr {
                            kind: g::ExprKind::Call(g::Call {
                                func: g::Ident {
                                    name: "col".into(),
                                    span: e.span,
                                },
                                args: vec![
                                    g::Arg {
                                        name: None,
                                        value: base,
                                    },
                                    g::Arg {
                                        name: None,
                                        value: self.conv(j)?,
                                    },
                                ],
                                span: e.span,
                            }),
                            span: e.span,
                        });
                    } else {
                        return Err(not_model(
                            e,
                            "a whole column outside a vectorised statement",
                        ));
                    }
                }
                Index::Range(..) => {
                    return Err(StanError::unsupported(
                        "a slice `a:b` is not translated yet",
                        e.span,
                        "index one position, or a whole column `X[:, j]` in a vectorised statement",
                    ))
                }
            }
        }
        Ok(g::Expr {
            kind: g::ExprKind::Index(Box::new(base), out),
            span: e.span,
        })
    }
}

fn not_model(e: &Expr, what: &str) -> StanError {
    StanError::unsupported(
        format!("{what} is not translated into a gpmc model"),
        e.span,
        "gpmc translates arithmetic, indexing and the Stan math functions listed in docs/stan_models.md",
    )
}

/// An entry-by-entry expression read whole: `v[n]` becomes `v` (transformed data are
/// element-wise in `.gpm`). The loop variable anywhere else cannot be read whole.
pub fn deindex(e: &Expr, var: &str) -> Result<Expr, StanError> {
    use crate::ast::Index;
    let kind = match &e.kind {
        ExprKind::Index(x, ix) => match (&x.kind, ix.as_slice()) {
            (
                ExprKind::Var(_),
                [Index::Single(Expr {
                    kind: ExprKind::Var(v),
                    ..
                })],
            ) if v == var => return Ok((**x).clone()),
            _ => ExprKind::Index(
                Box::new(deindex(x, var)?),
                ix.iter()
                    .map(|i| match i {
                        Index::Single(x) => deindex(x, var).map(Index::Single),
                        Index::Range(a, b) => Ok(Index::Range(a.clone(), b.clone())),
                    })
                    .collect::<Result<_, _>>()?,
            ),
        },
        ExprKind::Var(v) if v == var => {
            return Err(StanError::unsupported(
                format!("the loop variable `{var}` is read as a value here"),
                e.span,
                "transformed data read entries `v[n]` of the data at the loop's position",
            ))
        }
        ExprKind::Neg(a) => ExprKind::Neg(Box::new(deindex(a, var)?)),
        ExprKind::Not(a) => ExprKind::Not(Box::new(deindex(a, var)?)),
        ExprKind::Transpose(a) => ExprKind::Transpose(Box::new(deindex(a, var)?)),
        ExprKind::Binary(op, a, b) => {
            ExprKind::Binary(*op, Box::new(deindex(a, var)?), Box::new(deindex(b, var)?))
        }
        ExprKind::Ternary(a, b, c) => ExprKind::Ternary(
            Box::new(deindex(a, var)?),
            Box::new(deindex(b, var)?),
            Box::new(deindex(c, var)?),
        ),
        ExprKind::Call {
            func,
            args,
            conditional,
        } => ExprKind::Call {
            func: func.clone(),
            args: args
                .iter()
                .map(|a| deindex(a, var))
                .collect::<Result<_, _>>()?,
            conditional: *conditional,
        },
        other => other.clone(),
    };
    Ok(Expr { kind, span: e.span })
}
