//! `model` block statements: loops, `let`, sampling statements and density formulas.

use super::*;

impl Lowerer {
    pub(super) fn stmt(&mut self, s: &Stmt, lp: Option<(&str, &Dim)>) {
        // `target += normal_lpdf(y | mu, sigma);` is `y ~ normal(mu, sigma);`.
        if let Some(sample) = lpdf_as_sample(s) {
            return self.stmt(&sample, lp);
        }
        // A vectorised statement that indexes is its loop (vectorise.rs).
        if lp.is_none() {
            if let Some(looped) = self.as_loop(s) {
                return self.stmt(&looped, None);
            }
        }
        match s {
            Stmt::Let { name, value, .. } => {
                if lp.is_some() {
                    self.err(
                        SemanticError::new(
                            "gpm::let_in_loop",
                            "`let` inside a loop is not supported",
                            s.span(),
                            "move it out of the loop",
                        )
                        .help("define the predictor vectorised before the loop: `let eta = X * w + b;`"),
                    );
                    return;
                }
                self.let_stmt(name, value);
            }
            Stmt::For {
                var, lo, hi, body, ..
            } => {
                if lp.is_some() {
                    self.err(
                        SemanticError::new(
                            "gpm::nested_loop",
                            "loops cannot be nested",
                            s.span(),
                            "nested loop",
                        )
                        .help("one loop runs over the observations; classes are handled by `categorical_logistic_softmax`"),
                    );
                    return;
                }
                let lo_ok =
                    matches!(lo.kind, ExprKind::Num { value, is_int: true } if value == 1.0);
                if !lo_ok {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_loop",
                            "a loop over observations starts at 1",
                            lo.span,
                            "must be 1",
                        )
                        .help("write `for i in 1..N { ... }`"),
                    );
                    return;
                }
                let Some(n) = self.dim(hi) else { return };
                if !self.declare(var, Binding::LoopVar) {
                    return;
                }
                for b in body {
                    self.stmt(b, Some((&var.name, &n)));
                }
                // The loop variable's scope ends with the loop.
                self.names.remove(&var.name);
            }
            Stmt::Sample {
                lhs,
                dist,
                modifier,
                span,
            } => self.sample(lhs, dist, modifier.as_ref(), *span, lp),
            Stmt::Target { expr, span } => self.formula_factor(expr, *span, lp, false),
            Stmt::Factor { expr, span } => self.formula_factor(expr, *span, lp, true),
        }
    }

    pub(super) fn let_stmt(&mut self, name: &ast::Ident, value: &ast::Expr) {
        // The length of a vectorised `let` is that of the first vector it reads.
        let n = self.vector_len(value).unwrap_or(Dim::Const(1));
        let ctx = ObsCtx {
            n: n.clone(),
            var: None,
        };
        let Some(node) = self.node(value, &ctx, false) else {
            return;
        };
        let binding = match node {
            Node::Lat(mut a) => {
                a.name = Some(name.name.clone());
                Binding::LetPredictor(a, n.clone())
            }
            Node::Value(sx) => {
                if sx.has_role(SymRole::Predictor) {
                    self.err(
                        SemanticError::new(
                            "gpm::nonlinear_predictor",
                            format!("`{}` is not affine in the latent variables", name.name),
                            value.span,
                            "nonlinear in the latents",
                        )
                        .help("a `let` defines a linear predictor (`X * w + b`, `f + u[g]`); put nonlinear functions in the likelihood"),
                    );
                    return;
                }
                Binding::LetValue(sx, n != Dim::Const(1))
            }
            _ => {
                self.not_scalar(value.span);
                return;
            }
        };
        // Undo predictors registered while lowering a rejected `let`: none are (affine nodes are
        // lifted only inside nonlinear contexts, which are rejected above).
        self.declare(name, binding);
    }

    /// The number of observations a vectorised expression runs over: the length of the first
    /// vector (or the rows of the first matrix) it names.
    pub(super) fn vector_len(&self, e: &ast::Expr) -> Option<Dim> {
        let mut found = None;
        e.walk(&mut |x| {
            if found.is_some() {
                return;
            }
            if let ExprKind::Var(v) = &x.kind {
                let shape = self
                    .model
                    .datum(v)
                    .map(|d| d.shape.clone())
                    .or_else(|| self.model.latent(v).map(|z| z.shape.clone()));
                match shape {
                    Some(Shape::Vector(n)) if self.model.latent(v).is_some() => found = Some(n),
                    Some(Shape::Vector(n)) => found = Some(n),
                    Some(Shape::Matrix(n, _)) if self.model.datum(v).is_some() => found = Some(n),
                    _ => {
                        if let Some((Binding::LetPredictor(_, len), _)) = self.names.get(v) {
                            found = Some(len.clone());
                        } else if let Some((Binding::LetPredictor(..), _)) = self.names.get(v) {
                            if let Some(p) = self.model.predictor(v) {
                                found = Some(p.len.clone());
                            }
                        }
                    }
                }
            }
        });
        found
    }
}

/// `target += dist_lpdf(y | args);` (also `_lpmf`, `_lupdf`, `_lupmf`) as `y ~ dist(args);`.
fn lpdf_as_sample(s: &Stmt) -> Option<Stmt> {
    let Stmt::Target { expr, span } = s else {
        return None;
    };
    let ExprKind::Call(c) = &expr.kind else {
        return None;
    };
    let base = ["_lpdf", "_lpmf", "_lupdf", "_lupmf"]
        .iter()
        .find_map(|suffix| c.func.name.strip_suffix(suffix))?;
    let (y, rest) = c.args.split_first()?;
    if y.name.is_some() {
        return None;
    }
    Some(Stmt::Sample {
        lhs: y.value.clone(),
        dist: ast::Call {
            func: ast::Ident {
                name: base.to_string(),
                span: c.func.span,
            },
            args: rest.to_vec(),
            span: c.span,
        },
        modifier: None,
        span: *span,
    })
}
