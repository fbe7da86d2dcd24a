//! Indexing: `f[i]`, `u[g[i]]`, `X[i]`, `F[i, k]`, and a data matrix times a latent vector.

use super::*;

impl Lowerer {
    pub(super) fn index_node(
        &mut self,
        base: &ast::Expr,
        ix: &[ast::Expr],
        span: Span,
        ctx: &ObsCtx,
        param_only: bool,
    ) -> Option<Node> {
        let (v, binding, i) = self.indexed(base, span, ctx, param_only)?;
        let v = &v;
        // `eta[i]` of a `let` predictor: the predictor at this observation.
        if let (Binding::LetPredictor(a, len), [ix0]) = (&binding, ix) {
            if self.is_loop_var(ix0, ctx) {
                self.check_len(len, &ctx.n, v, span)?;
                return Some(Node::Lat(Affine { span, ..a.clone() }));
            }
        }
        let shape = self.indexed_shape(v, &binding, base.span, ix.len(), span)?;
        match (&binding, &shape, ix) {
            // y[i]: a datum at this observation.
            (Binding::Data, Shape::Vector(n), [a]) if self.is_loop_var(a, ctx) => {
                self.check_len(n, &ctx.n, v, span)?;
                Some(Node::Value(Sx::sym(SymRole::Data, v)))
            }
            // X[i]: a row of covariates.
            (Binding::Data, Shape::Matrix(n, _), [a]) if self.is_loop_var(a, ctx) => {
                self.check_len(n, &ctx.n, v, span)?;
                Some(Node::DataRow(v.clone()))
            }
            // X[i, 2]: one covariate.
            (Binding::Data, Shape::Matrix(n, cols), [a, b]) if self.is_loop_var(a, ctx) => {
                self.check_len(n, &ctx.n, v, span)?;
                self.covariate_column(v, cols, b)
            }
            // f[i]
            (Binding::Latent, Shape::Vector(n), [a]) if self.is_loop_var(a, ctx) => {
                self.check_len(n, &ctx.n, v, span)?;
                Some(Node::Lat(Affine::reading(
                    v.clone(),
                    Design::Identity,
                    span,
                    Some(v.clone()),
                )))
            }
            // u[g[i]]: a random effect by group.
            (Binding::Latent, Shape::Vector(groups), [g]) => {
                if let ExprKind::Num { value, .. } = g.kind {
                    return self.latent_entry(v, groups, value, g.span, span);
                }
                self.group_effect(v, g, span, ctx, &i)
            }
            // F[i, k] with k a constant class.
            (Binding::Latent, Shape::Matrix(n, cols), [a, b]) if self.is_loop_var(a, ctx) => {
                self.check_len(n, &ctx.n, v, span)?;
                self.latent_column(v, cols, b, span)
            }
            _ => {
                if matches!(binding, Binding::Latent) {
                    return self.bad_latent_index(v, span, &i);
                }
                self.err(
                    SemanticError::new(
                        "gpm::bad_index",
                        format!("`{v}` must be indexed by the observation `{i}` here"),
                        span,
                        "unsupported index",
                    )
                    .help(format!("write `{v}[{i}]`")),
                );
                None
            }
        }
    }

    /// What is indexed, inside a loop: its name, its binding and the loop's variable (an error
    /// for an expression, an unknown name, a parameter expression or a place outside a loop).
    fn indexed(
        &mut self,
        base: &ast::Expr,
        span: Span,
        ctx: &ObsCtx,
        param_only: bool,
    ) -> Option<(String, Binding, String)> {
        let ExprKind::Var(v) = &base.kind else {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    "only named vectors and matrices can be indexed",
                    span,
                    "cannot index this",
                )
                .help("see docs/language.md"),
            );
            return None;
        };
        let Some((binding, _)) = self.names.get(v).cloned() else {
            self.unknown_name(v, base.span);
            return None;
        };
        if param_only {
            self.err(
                SemanticError::new(
                    "gpm::bad_parameter",
                    "indexing is not allowed in a parameter expression",
                    span,
                    "not a parameter",
                )
                .help("see docs/language.md"),
            );
            return None;
        }
        let Some(i) = ctx.var.clone() else {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    "indexing outside a `for` loop",
                    span,
                    "no observation index here",
                )
                .help("vectorised statements use whole vectors: `y ~ bernoulli_logit(f)`; or write a loop `for i in 1..N { ... }`"),
            );
            return None;
        };
        Some((v.clone(), binding, i))
    }

    /// The declared shape of an indexed datum or latent, with no more indices than its rank.
    fn indexed_shape(
        &mut self,
        v: &str,
        binding: &Binding,
        base_span: Span,
        indices: usize,
        span: Span,
    ) -> Option<Shape> {
        let shape = match binding {
            Binding::Data => self.model.datum(v).map(|d| d.shape.clone()),
            Binding::Latent => self.model.latent(v).map(|d| d.shape.clone()),
            _ => None,
        };
        let Some(shape) = shape else {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!("`{v}` cannot be indexed"),
                    base_span,
                    "not a vector or matrix",
                )
                .help("index data and latent vectors; `let` predictors are used whole in vectorised statements"),
            );
            return None;
        };
        let rank = match shape {
            Shape::Scalar => 0,
            Shape::Vector(_) => 1,
            Shape::Matrix(..) => 2,
        };
        if indices > rank {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!(
                        "`{v}` has {rank} dimension{} but is indexed with {indices}",
                        if rank == 1 { "" } else { "s" },
                    ),
                    span,
                    "too many indices",
                )
                .help("see docs/language.md"),
            );
            return None;
        }
        Some(shape)
    }

    /// `X[i, c]`: the covariate in column `c` (a constant, from 1) of a data matrix.
    fn covariate_column(&mut self, v: &str, cols: &Dim, b: &ast::Expr) -> Option<Node> {
        let c = self.constant(b, "a column index")?;
        if sizes::one_based(c, cols).is_none() {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!("column {c} of `{v}` does not exist (columns are 1..{cols})"),
                    b.span,
                    "out of range",
                )
                .help("columns count from 1"),
            );
            return None;
        }
        Some(Node::Value(Sx::sym(
            SymRole::Data,
            &crate::sx::data_column_symbol(v, c as usize),
        )))
    }

    /// `u[g[i]]`: a latent vector gathered by an integer datum of the observations.
    fn group_effect(
        &mut self,
        v: &str,
        g: &ast::Expr,
        span: Span,
        ctx: &ObsCtx,
        i: &str,
    ) -> Option<Node> {
        let ExprKind::Index(gb, gi) = &g.kind else {
            return self.bad_latent_index(v, span, i);
        };
        let (ExprKind::Var(gname), [gi0]) = (&gb.kind, gi.as_slice()) else {
            return self.bad_latent_index(v, span, i);
        };
        let ok = self
            .model
            .datum(gname)
            .is_some_and(|d| d.elem == Elem::Int && d.shape == Shape::Vector(ctx.n.clone()))
            && self.is_loop_var(gi0, ctx);
        if !ok {
            return self.bad_latent_index(v, span, i);
        }
        Some(Node::Lat(Affine::reading(
            v.to_string(),
            Design::Gather {
                index: gname.clone(),
            },
            span,
            None,
        )))
    }

    /// `F[i, k]`: column `k` (a constant class, from 1) of a latent matrix.
    fn latent_column(&mut self, v: &str, cols: &Dim, b: &ast::Expr, span: Span) -> Option<Node> {
        if !matches!(
            b.kind,
            ExprKind::Num { .. } | ExprKind::Neg(_) | ExprKind::Binary(..)
        ) {
            // `F[i, y[i]]`: a column chosen by the data — a softmax written by hand.
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!("a column of the latent matrix `{v}` is chosen by `{}`: columns of a latent matrix are read at constant indices", b),
                    b.span,
                    "not a constant column",
                )
                .help(format!("for a softmax over classes write `y ~ categorical_logistic_softmax({v})` (labels 1..C); to read one class, write its number, e.g. `{v}[i, 2]`")),
            );
            return None;
        }
        let k = self.constant(b, "a column index of a latent matrix")?;
        let Some(column) = sizes::one_based(k, cols) else {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!("column {k} of `{v}` does not exist (columns are 1..{cols})"),
                    b.span,
                    "out of range",
                )
                .help("see docs/language.md"),
            );
            return None;
        };
        Some(Node::Lat(Affine::reading(
            v.to_string(),
            Design::Column { column },
            span,
            None,
        )))
    }

    /// `beta[k]`, a constant entry of a latent vector, read at every observation.
    fn latent_entry(
        &mut self,
        v: &str,
        len: &Dim,
        k: f64,
        kspan: Span,
        span: Span,
    ) -> Option<Node> {
        // A length that is a datum is checked when the data are bound.
        let Some(index) = sizes::one_based(k, len) else {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!("entry {k} of `{v}` does not exist (entries are 1..{len})"),
                    kspan,
                    "out of range",
                )
                .help("entries count from 1"),
            );
            return None;
        };
        Some(Node::Lat(Affine::reading(
            v.to_string(),
            Design::Entry { index },
            span,
            None,
        )))
    }

    pub(super) fn bad_latent_index(&mut self, v: &str, span: Span, i: &str) -> Option<Node> {
        self.err(
            SemanticError::new(
                "gpm::bad_index",
                format!("unsupported index into the latent `{v}`"),
                span,
                "unsupported index",
            )
.help("see docs/language.md")
            .help(format!(
                "latents are read as `{v}[{i}]`, `{v}[k]` with a constant k, `{v}[group[{i}]]` (random effects) or `{v}[{i}, k]`"
            )),
        );
        None
    }

    /// `X * w`: check that the columns of `X` match the length of `w`.
    pub(super) fn matrix_term(
        &mut self,
        x: &str,
        w: &str,
        wspan: Span,
        span: Span,
    ) -> Option<Node> {
        let cols = match &self.model.datum(x)?.shape {
            Shape::Matrix(_, c) => c.clone(),
            _ => return None,
        };
        let len = match &self.model.latent(w)?.shape {
            Shape::Vector(n) => n.clone(),
            _ => return None,
        };
        if cols != len {
            self.err(
                SemanticError::new(
                    "gpm::shape_mismatch",
                    format!("`{x}` has {cols} columns but `{w}` has {len} entries"),
                    span,
                    "matrix-vector product of mismatched sizes",
                )
                .help("the data matrix needs one column per entry of the latent vector")
                .also(wspan, format!("length {len}")),
            );
            return None;
        }
        Some(Node::Lat(Affine::reading(
            w.to_string(),
            Design::Matrix {
                data: x.to_string(),
            },
            span,
            None,
        )))
    }
}
