//! Expressions at one observation: names, calls and arithmetic, each lowered to a `Node` (a formula free of latents, or affine in them).

use super::*;

impl Lowerer {
    /// Convert an expression at one observation. `param_only` forbids data and latents.
    pub(super) fn node(&mut self, e: &ast::Expr, ctx: &ObsCtx, param_only: bool) -> Option<Node> {
        match &e.kind {
            ExprKind::Num { value, .. } => Some(Node::Value(Sx::num(*value))),
            ExprKind::Var(v) => self.var_node(v, e.span, ctx, param_only),
            ExprKind::Neg(a) => match self.node(a, ctx, param_only)? {
                Node::Value(s) => Some(Node::Value(Sx::neg(s))),
                Node::Lat(a) => Some(Node::Lat(a.scale(-1.0))),
                Node::Mixed(v, a) => Some(Node::Mixed(Sx::neg(v), a.scale(-1.0))),
                _ => self.not_scalar(a.span),
            },
            ExprKind::Binary(op, a, b) => {
                let na = self.node(a, ctx, param_only)?;
                let nb = self.node(b, ctx, param_only)?;
                self.binary(*op, na, nb, e, ctx)
            }
            ExprKind::Call(c) => self.call_node(c, ctx, param_only),
            ExprKind::Index(base, ix) => self.index_node(base, ix, e.span, ctx, param_only),
            ExprKind::Str(_) => self.misplaced_string(e.span),
        }
    }

    /// A string literal where a number or expression is needed.
    pub(super) fn misplaced_string<T>(&mut self, span: Span) -> Option<T> {
        self.err(
            SemanticError::new(
                "gpm::bad_argument",
                "a string is only the value of a named option (`link = \"bijective\"`)",
                span,
                "a string here",
            )
            .help("write a number or an expression"),
        );
        None
    }

    pub(super) fn not_scalar(&mut self, span: Span) -> Option<Node> {
        self.err(
            SemanticError::new(
                "gpm::shape_mismatch",
                "a vector or matrix is used where one value per observation is needed",
                span,
                "not a scalar here",
            )
            .help("index it (`f[i]`) inside a loop, or multiply a matrix by a vector (`X * w`)"),
        );
        None
    }

    pub(super) fn var_node(
        &mut self,
        v: &str,
        span: Span,
        ctx: &ObsCtx,
        param_only: bool,
    ) -> Option<Node> {
        let Some((binding, _)) = self.names.get(v).cloned() else {
            self.unknown_name(v, span);
            return None;
        };
        let forbid = |l: &mut Self, what: &str| {
            l.err(
                SemanticError::new(
                    "gpm::bad_parameter",
                    format!("{what} `{v}` cannot appear in a hyperparameter, kernel or prior expression"),
                    span,
                    "not allowed here",
                )
                .help("parameters are built from constants and hyperparameters"),
            );
            None
        };
        match binding {
            Binding::Hyper => self.hyper_node(v, span),
            Binding::Data if param_only => forbid(self, "the datum"),
            Binding::Data => self.data_node(v, span, ctx),
            Binding::Latent => {
                if param_only {
                    return forbid(self, "the latent");
                }
                let z = self.model.latent(v)?.clone();
                match &z.shape {
                    Shape::Scalar => Some(Node::Lat(Affine::reading(
                        v.to_string(),
                        Design::Broadcast,
                        span,
                        Some(v.to_string()),
                    ))),
                    Shape::Vector(n) if ctx.var.is_none() && *n == ctx.n => Some(Node::Lat(
                        Affine::reading(v.to_string(), Design::Identity, span, Some(v.to_string())),
                    )),
                    Shape::Vector(_) => Some(Node::LatVec(v.to_string(), span)),
                    Shape::Matrix(..) => self.not_scalar(span),
                }
            }
            Binding::LetPredictor(a, len) => {
                if param_only {
                    return forbid(self, "the predictor");
                }
                if ctx.var.is_some() {
                    return self.not_scalar(span);
                }
                self.check_len(&len, &ctx.n, v, span)?;
                Some(Node::Lat(Affine { span, ..a }))
            }
            Binding::LetValue(sx, vectorised) => {
                if param_only && sx.has_role(SymRole::Data) {
                    return forbid(self, "the value");
                }
                if vectorised && ctx.var.is_some() {
                    return self.not_scalar(span);
                }
                Some(Node::Value(sx))
            }
            Binding::LoopVar => {
                self.err(
                    SemanticError::new(
                        "gpm::loop_variable_as_value",
                        format!("the loop variable `{v}` is an index, not a value"),
                        span,
                        "used as a value",
                    )
                    .help(format!("use it only inside brackets: `y[{v}]`")),
                );
                None
            }
        }
    }

    /// A scalar hyperparameter by name (a vector one only kernels take whole).
    fn hyper_node(&mut self, v: &str, span: Span) -> Option<Node> {
        let h = self.model.hyper(v)?.clone();
        if h.shape != Shape::Scalar {
            self.err(
                SemanticError::new(
                    "gpm::shape_mismatch",
                    format!("the hyperparameter `{v}` is a vector; only kernels take it whole"),
                    span,
                    "vector hyperparameter",
                )
                .help("use it as an ARD lengthscale: `sqexp(ell)`"),
            );
            return None;
        }
        Some(Node::Value(Sx::sym(SymRole::Hyper, v)))
    }

    /// A datum: a scalar, or outside a loop a whole vector or matrix of the observations.
    fn data_node(&mut self, v: &str, span: Span, ctx: &ObsCtx) -> Option<Node> {
        let d = self.model.datum(v)?.clone();
        match &d.shape {
            Shape::Scalar => Some(Node::Value(Sx::sym(SymRole::Data, v))),
            Shape::Vector(n) if ctx.var.is_none() => {
                self.check_len(n, &ctx.n, v, span)?;
                Some(Node::Value(Sx::sym(SymRole::Data, v)))
            }
            Shape::Matrix(n, _) if ctx.var.is_none() => {
                self.check_len(n, &ctx.n, v, span)?;
                Some(Node::DataMatrix(v.to_string()))
            }
            _ => self.not_scalar(span),
        }
    }

    pub(super) fn check_len(&mut self, n: &Dim, want: &Dim, v: &str, span: Span) -> Option<()> {
        if n != want {
            self.err(
                SemanticError::new(
                    "gpm::shape_mismatch",
                    format!(
                        "`{v}` has {n} entries, but this statement runs over {want} observations"
                    ),
                    span,
                    format!("length {n}"),
                )
                .help("all vectors in one likelihood statement have one entry per observation"),
            );
            return None;
        }
        Some(())
    }

    pub(super) fn is_loop_var(&self, e: &ast::Expr, ctx: &ObsCtx) -> bool {
        matches!((&e.kind, &ctx.var), (ExprKind::Var(v), Some(i)) if v == i)
    }

    pub(super) fn call_node(
        &mut self,
        c: &ast::Call,
        ctx: &ObsCtx,
        param_only: bool,
    ) -> Option<Node> {
        let name = c.func.name.as_str();
        let Some((_, arity)) = library::MATH_FUNCTIONS
            .iter()
            .find(|(f, _)| *f == name)
            .copied()
        else {
            let what = if likelihoods::lookup(name).is_some() {
                "a distribution, not a function: use it in `y ~ ...`"
            } else if gpm_library::kernel::lookup(name).is_some() {
                "a kernel: kernels go inside `gp(X, kernel)`"
            } else {
                ""
            };
            let help = if let Some(h) = super::stan_names::function(name) {
                h.to_string()
            } else if what.is_empty() {
                did_you_mean(name, library::MATH_FUNCTIONS.iter().map(|f| f.0))
                    .unwrap_or_else(|| "see docs/language.md for the functions".into())
            } else {
                format!("`{name}` is {what}")
            };
            self.err(
                SemanticError::new(
                    "gpm::unknown_function",
                    format!("unknown function `{name}`"),
                    c.func.span,
                    "unknown function",
                )
                .help(help),
            );
            return None;
        };
        if c.args.len() != arity || c.args.iter().any(|a| a.name.is_some()) {
            self.wrong_arity(c, arity, arity);
            return None;
        }
        if name == "sum" {
            self.err(
                SemanticError::new(
                    "gpm::bad_sum",
                    "`sum` over classes is only understood in a normalised class probability",
                    c.span,
                    "unsupported here",
                )
.help("see docs/language.md")
                .help("write `target += log(w(F[i, y[i]])) - log(sum(w(F[i])));` or use `categorical_logistic_softmax(F)`"),
            );
            return None;
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.node(&a.value, ctx, param_only)?);
        }
        if name == "dot" {
            return match (&args[0], &args[1]) {
                (Node::DataRow(x), Node::LatVec(w, s)) | (Node::LatVec(w, s), Node::DataRow(x)) => {
                    let (x, w, s) = (x.clone(), w.clone(), *s);
                    self.matrix_term(&x, &w, s, c.span)
                }
                _ => {
                    self.err(
                        SemanticError::new(
                            "gpm::shape_mismatch",
                            "`dot` takes a row of covariates and a latent vector",
                            c.span,
                            "unsupported arguments",
                        )
                        .help("write `dot(X[i], w)`"),
                    );
                    None
                }
            };
        }
        let mut sx = Vec::new();
        for a in args {
            self.span_hint = c.span;
            sx.push(self.lift_node(a, ctx)?);
        }
        Some(Node::Value(library::apply_math(name, sx)))
    }

    pub(super) fn binary(
        &mut self,
        op: BinOp,
        a: Node,
        b: Node,
        e: &ast::Expr,
        ctx: &ObsCtx,
    ) -> Option<Node> {
        use Node::*;
        if op == BinOp::Eq {
            self.err(
                SemanticError::new(
                    "gpm::bad_transform",
                    "`==` makes an indicator of data, computed once in the data block",
                    e.span,
                    "comparison in the model",
                )
                .help("write `let is_k = g == k;` in the data block and use `is_k[i]` here"),
            );
            return None;
        }
        let num = |n: &Node| match n {
            Value(Sx::Num(v)) => Some(*v),
            _ => None,
        };
        match (op, &a, &b) {
            (BinOp::Mul, DataRow(x) | DataMatrix(x), LatVec(w, s)) => {
                let (x, w, s) = (x.clone(), w.clone(), *s);
                return self.matrix_term(&x, &w, s, e.span);
            }
            (BinOp::Add | BinOp::Sub, Lat(_), Lat(_)) => {
                let sign = if op == BinOp::Sub { -1.0 } else { 1.0 };
                let (Lat(x), Lat(y)) = (a, b) else {
                    unreachable!()
                };
                return Some(Lat(x.add(y, sign)));
            }
            (BinOp::Add | BinOp::Sub, Lat(_), Value(Sx::Num(c))) => {
                let c = if op == BinOp::Sub { -c } else { *c };
                let Lat(mut x) = a else { unreachable!() };
                x.offset += c;
                x.name = None;
                return Some(Lat(x));
            }
            (BinOp::Add, Value(Sx::Num(c)), Lat(_)) => {
                let c = *c;
                let Lat(mut x) = b else { unreachable!() };
                x.offset += c;
                x.name = None;
                return Some(Lat(x));
            }
            (BinOp::Sub, Value(Sx::Num(c)), Lat(_)) => {
                let c = *c;
                let Lat(x) = b else { unreachable!() };
                let mut x = x.scale(-1.0);
                x.offset += c;
                return Some(Lat(x));
            }
            (BinOp::Mul, Lat(_), Value(Sx::Num(_))) | (BinOp::Div, Lat(_), Value(Sx::Num(_))) => {
                let c = num(&b).expect("the pattern matched a number");
                let c = if op == BinOp::Div { 1.0 / c } else { c };
                let Lat(x) = a else { unreachable!() };
                return Some(Lat(x.scale(c)));
            }
            (BinOp::Mul, Value(Sx::Num(c)), Lat(_)) => {
                let c = *c;
                let Lat(x) = b else { unreachable!() };
                return Some(Lat(x.scale(c)));
            }
            // A covariate times weights or random effects (`X[i,1] * v[g[i]]`, `x[i] * b`): a
            // term scaled per observation, so that `X[i,1] * v[g[i]] + u[g[i]]` is one
            // predictor (random slopes and intercepts in one dense block) rather than two
            // predictors coupled in the likelihood.
            (BinOp::Mul, Value(Sx::Sym(SymRole::Data, d)), Lat(x))
            | (BinOp::Mul, Lat(x), Value(Sx::Sym(SymRole::Data, d)))
                if self.scalable(x, d) =>
            {
                let (x, d) = (x.clone(), d.clone());
                return Some(Lat(self.scale_by_covariate(x, &d)));
            }
            _ => {}
        }
        // Sums and differences keep latent parts together (see `Node::Mixed`).
        if matches!(op, BinOp::Add | BinOp::Sub) {
            let sign = if op == BinOp::Sub { -1.0 } else { 1.0 };
            let neg = |v: Sx| if sign < 0.0 { Sx::neg(v) } else { v };
            let split = |n: &Node| -> Option<(Option<Sx>, Option<Affine>)> {
                match n {
                    Value(v) => Some((Some(v.clone()), None)),
                    Lat(a) => Some((None, Some(a.clone()))),
                    Mixed(v, a) => Some((Some(v.clone()), Some(a.clone()))),
                    _ => None,
                }
            };
            if let (Some((va, la)), Some((vb, lb))) = (split(&a), split(&b)) {
                if la.is_some() || lb.is_some() {
                    let value = match (va, vb) {
                        (Some(x), Some(y)) => Some(if sign < 0.0 {
                            Sx::sub(x, y)
                        } else {
                            Sx::add(x, y)
                        }),
                        (Some(x), None) => Some(x),
                        (None, Some(y)) => Some(neg(y)),
                        (None, None) => None,
                    };
                    let lat = match (la, lb) {
                        (Some(x), Some(y)) => x.add(y, sign),
                        (Some(x), None) => x,
                        (None, Some(y)) => y.scale(sign),
                        (None, None) => unreachable!("one side has latents"),
                    };
                    return Some(match value {
                        Some(v) => Mixed(v, lat),
                        None => Lat(lat),
                    });
                }
            }
        }
        if let (BinOp::Mul | BinOp::Div, Mixed(v, l), Value(Sx::Num(c))) = (op, &a, &b) {
            let c = if op == BinOp::Div { 1.0 / c } else { *c };
            return Some(Mixed(Sx::mul(Sx::num(c), v.clone()), l.clone().scale(c)));
        }
        if let (BinOp::Mul, Value(Sx::Num(c)), Mixed(v, l)) = (op, &a, &b) {
            return Some(Mixed(Sx::mul(Sx::num(*c), v.clone()), l.clone().scale(*c)));
        }
        if matches!(a, DataRow(_) | DataMatrix(_) | LatVec(..))
            || matches!(b, DataRow(_) | DataMatrix(_) | LatVec(..))
        {
            return self.not_scalar(e.span);
        }
        self.span_hint = e.span;
        let sa = self.lift_node(a, ctx)?;
        let sb = self.lift_node(b, ctx)?;
        Some(Value(match op {
            BinOp::Add => Sx::add(sa, sb),
            BinOp::Sub => Sx::sub(sa, sb),
            BinOp::Mul => Sx::mul(sa, sb),
            BinOp::Div => Sx::div(sa, sb),
            BinOp::Pow => Sx::pow(sa, sb),
            BinOp::Eq => unreachable!("refused above"),
        }))
    }
}
