//! Vectorised statements that index, written as Stan users write them — `y ~ normal(beta[1] +
//! beta[2] * x, sigma)`, `y ~ normal(a[county] + b * x, s)`, `target += normal_lpdf(y | mu, s)`
//! — are the same statement in a loop over the observations: a vector as long as the response
//! is read at `i`, a data matrix with that many rows as its row, an integer data vector used as
//! an index as its entry (`a[county]` is `a[county[i]]`), a constant index stays. The loop is
//! then lowered as if written by hand, so every check and message is the loop's.

use super::*;

impl Lowerer {
    /// The loop a top-level statement stands for, when it is a vectorised statement that
    /// indexes or a `target +=` / `factor` over vectors; `None` to lower it as written.
    pub(super) fn as_loop(&self, s: &Stmt) -> Option<Stmt> {
        let (n, indexes) = match s {
            Stmt::Sample { lhs, dist, .. } => {
                let n = self.response_len(lhs)?;
                let indexes = dist.args.iter().any(|a| has_index(&a.value)) || has_index(lhs);
                (n, indexes)
            }
            Stmt::Target { expr, .. } | Stmt::Factor { expr, .. } => (self.vector_len(expr)?, true),
            _ => return None,
        };
        if !indexes || n == Dim::Const(1) {
            return None;
        }
        let span = s.span();
        let var = self.fresh_loop_var();
        let at = |e: &ast::Expr| self.at_observation(e, &var, &n);
        let body = match s {
            Stmt::Sample {
                lhs,
                dist,
                modifier,
                span,
            } => Stmt::Sample {
                lhs: at(lhs),
                dist: ast::Call {
                    args: dist
                        .args
                        .iter()
                        .map(|a| ast::Arg {
                            name: a.name.clone(),
                            value: at(&a.value),
                        })
                        .collect(),
                    ..dist.clone()
                },
                modifier: modifier.clone(),
                span: *span,
            },
            Stmt::Target { expr, span } => Stmt::Target {
                expr: at(expr),
                span: *span,
            },
            Stmt::Factor { expr, span } => Stmt::Factor {
                expr: at(expr),
                span: *span,
            },
            _ => return None,
        };
        let hi = match &n {
            Dim::Const(k) => ast::ExprKind::Num {
                value: *k as f64,
                is_int: true,
            },
            Dim::Var(v) => ast::ExprKind::Var(v.clone()),
        };
        Some(Stmt::For {
            var: ast::Ident { name: var, span },
            lo: ast::Expr {
                kind: ast::ExprKind::Num {
                    value: 1.0,
                    is_int: true,
                },
                span,
            },
            hi: ast::Expr { kind: hi, span },
            body: vec![body],
            span,
        })
    }

    /// The length of a whole response vector (`y`), if `lhs` is one.
    fn response_len(&self, lhs: &ast::Expr) -> Option<Dim> {
        let ExprKind::Var(v) = &lhs.kind else {
            return None;
        };
        match self.model.datum(v).map(|d| &d.shape) {
            Some(Shape::Vector(n)) => Some(n.clone()),
            _ => None,
        }
    }

    /// The first of `i`, `n`, `obs`, `i1`, `i2`, ... that names nothing.
    fn fresh_loop_var(&self) -> String {
        ["i", "n", "obs"]
            .iter()
            .map(|s| s.to_string())
            .chain((1..).map(|k| format!("i{k}")))
            .find(|v| !self.names.contains_key(v))
            .unwrap_or_else(|| "i".into())
    }

    /// The length of a name's values along the observations, if it has one.
    fn length_of(&self, v: &str) -> Option<Dim> {
        match self.names.get(v).map(|(b, _)| b) {
            Some(Binding::LetPredictor(_, n)) => return Some(n.clone()),
            Some(Binding::Data) => {}
            Some(Binding::Latent) => {}
            _ => return None,
        }
        let shape = self
            .model
            .datum(v)
            .map(|d| d.shape.clone())
            .or_else(|| self.model.latent(v).map(|z| z.shape.clone()))?;
        match shape {
            Shape::Vector(n) => Some(n),
            Shape::Matrix(n, _) if self.model.datum(v).is_some() => Some(n),
            _ => None,
        }
    }

    /// `e` read at observation `var` of `n`.
    fn at_observation(&self, e: &ast::Expr, var: &str, n: &Dim) -> ast::Expr {
        let index = |x: ast::Expr| ast::Expr {
            span: x.span,
            kind: ExprKind::Index(
                Box::new(x.clone()),
                vec![ast::Expr {
                    kind: ExprKind::Var(var.to_string()),
                    span: x.span,
                }],
            ),
        };
        let kind = match &e.kind {
            ExprKind::Var(v) if self.length_of(v).as_ref() == Some(n) => return index(e.clone()),
            ExprKind::Index(base, ix) => ExprKind::Index(
                base.clone(),
                ix.iter()
                    .map(|i| match &i.kind {
                        // A whole integer vector as an index: its entry (`a[county]`).
                        ExprKind::Var(g) if self.length_of(g).as_ref() == Some(n) => {
                            index(i.clone())
                        }
                        _ => i.clone(),
                    })
                    .collect(),
            ),
            ExprKind::Neg(a) => ExprKind::Neg(Box::new(self.at_observation(a, var, n))),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(
                *op,
                Box::new(self.at_observation(a, var, n)),
                Box::new(self.at_observation(b, var, n)),
            ),
            ExprKind::Call(c) => ExprKind::Call(ast::Call {
                args: c
                    .args
                    .iter()
                    .map(|a| ast::Arg {
                        name: a.name.clone(),
                        value: self.at_observation(&a.value, var, n),
                    })
                    .collect(),
                ..c.clone()
            }),
            other => other.clone(),
        };
        ast::Expr { kind, span: e.span }
    }
}

fn has_index(e: &ast::Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= matches!(x.kind, ExprKind::Index(..)));
    found
}
