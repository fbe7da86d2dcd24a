//! Categorical factors: the logistic-softmax from the library or recognised in a formula.

use super::*;
use gpm_library::MAX_CLASSES;

impl Lowerer {
    pub(super) fn categorical_library(
        &mut self,
        d: &DataVar,
        arg: &ast::Expr,
        ctx: &ObsCtx,
        span: Span,
    ) {
        // The argument is the latent matrix `F` (vectorised) or its row `F[i]` (in a loop).
        let name = match (&arg.kind, &ctx.var) {
            (ExprKind::Var(v), None) => Some(v.clone()),
            (ExprKind::Index(b, ix), Some(i)) => match (&b.kind, ix.as_slice()) {
                (ExprKind::Var(v), [a]) if matches!(&a.kind, ExprKind::Var(j) if j == i) => {
                    Some(v.clone())
                }
                _ => None,
            },
            _ => None,
        };
        let Some(z) = name.and_then(|v| self.model.latent(&v).cloned()) else {
            self.err(
                SemanticError::new(
                    "gpm::bad_categorical",
                    "`categorical_logistic_softmax` takes a latent matrix with one column per class",
                    arg.span,
                    "not a latent matrix",
                )
                .help("declare `F : matrix[N, C] ~ gp(X, k);` and write `y ~ categorical_logistic_softmax(F);`"),
            );
            return;
        };
        self.push_categorical(
            d,
            &z,
            arg.span,
            span,
            |cp| {
                Sx::call(
                    crate::sx::SxFunc::Log,
                    Sx::call(crate::sx::SxFunc::Logistic, cp),
                )
            },
            ctx,
        );
    }

    pub(super) fn push_categorical(
        &mut self,
        d: &DataVar,
        z: &Latent,
        arg_span: Span,
        span: Span,
        log_weight: impl Fn(Sx) -> Sx,
        ctx: &ObsCtx,
    ) {
        let Shape::Matrix(rows, classes) = &z.shape else {
            self.err(
                SemanticError::new(
                    "gpm::bad_categorical",
                    format!("`{}` must be a matrix with one column per class", z.name),
                    arg_span,
                    format!("a {}", z.shape),
                )
                .help("see docs/language.md")
                .also(z.span, "declared here"),
            );
            return;
        };
        // Each class is a predictor, certified and lowered one by one (about 17 ms each): a
        // literal count beyond any classification task is refused rather than run for hours.
        if let Dim::Const(c) = classes {
            if *c > MAX_CLASSES {
                self.err(
                    SemanticError::new(
                        "gpm::bad_categorical",
                        format!(
                            "`{}` has {c} classes; at most {MAX_CLASSES} are supported",
                            z.name
                        ),
                        z.span,
                        "too many classes",
                    )
                    .help("check the declared number of columns (one per class)"),
                );
                return;
            }
        }
        if *rows != ctx.n {
            self.err(
                SemanticError::new(
                    "gpm::shape_mismatch",
                    format!(
                        "`{}` has {rows} rows but there are {} observations",
                        z.name, ctx.n
                    ),
                    arg_span,
                    format!("{rows} rows"),
                )
                .help("see docs/language.md"),
            );
            return;
        }
        let labels_ok = match &d.constraint {
            ValueSet::Range {
                lo: Some(Bound::Const(lo)),
                hi: Some(hi),
            } => {
                *lo == 1.0
                    && match (hi, classes) {
                        (Bound::Var(h), Dim::Var(c)) => h == c,
                        (Bound::Const(h), Dim::Const(c)) => *h == *c as f64,
                        _ => false,
                    }
            }
            _ => false,
        };
        if !labels_ok {
            self.err(
                SemanticError::new(
                    "gpm::bad_response",
                    format!("the labels `{}` must be declared `in 1..{classes}`, one value per class of `{}`", d.name, z.name),
                    d.span,
                    "label range",
                )
.help(format!("declare `{} : int[N] in 1..{classes};`: labels count classes from 1", d.name))
                .also(arg_span, format!("{classes} classes")),
            );
            return;
        }
        let cp = "η_c".to_string();
        let form = FactorForm::Categorical {
            label: d.name.clone(),
            classes: classes.clone(),
            latent: z.name.clone(),
            class_predictor: cp.clone(),
            log_weight: log_weight(Sx::sym(SymRole::Predictor, &cp)),
        };
        // One predictor per class: the columns of the latent matrix.
        let mut preds = vec![];
        if let Dim::Const(c) = classes {
            for k in 0..*c {
                preds.push(self.lift(
                    Affine::reading(z.name.clone(), Design::Column { column: k }, arg_span, None),
                    &ctx.n,
                ));
            }
        }
        self.model.factors.push(Factor {
            n: ctx.n.clone(),
            form,
            predictors: preds,
            data: vec![d.name.clone()],
            response: Some(d.name.clone()),
            hypers: vec![],
            observation: None,
            replicate: None,
            prior_of: None,
            source: format!("{} ~ categorical_logistic_softmax({})", d.name, z.name),
            span,
        });
    }

    /// `target += log(w(F[i, y[i]])) - log(sum(w(F[i])))` or `factor(w(F[i, y[i]]) / sum(w(F[i])))`.
    pub(super) fn try_categorical_formula(
        &mut self,
        e: &ast::Expr,
        ctx: &ObsCtx,
        span: Span,
        is_density: bool,
    ) -> bool {
        let (num, den) = match (&e.kind, is_density) {
            (ExprKind::Binary(BinOp::Sub, a, b), false) => match (&a.kind, &b.kind) {
                (ExprKind::Call(la), ExprKind::Call(lb))
                    if la.func.name == "log"
                        && lb.func.name == "log"
                        && la.args.len() == 1
                        && lb.args.len() == 1 =>
                {
                    (&la.args[0].value, &lb.args[0].value)
                }
                _ => return false,
            },
            (ExprKind::Binary(BinOp::Div, a, b), true) => (&**a, &**b),
            _ => return false,
        };
        let ExprKind::Call(sum) = &den.kind else {
            return false;
        };
        if sum.func.name != "sum" || sum.args.len() != 1 {
            return false;
        }
        // Find the latent matrix `F` read as `F[i]` in the denominator and `F[i, y[i]]` above.
        let i = ctx.var.clone().unwrap();
        let mut row_of = None;
        sum.args[0].value.walk(&mut |x| {
            if let ExprKind::Index(b, ix) = &x.kind {
                if let (ExprKind::Var(v), [a]) = (&b.kind, ix.as_slice()) {
                    if matches!(&a.kind, ExprKind::Var(j) if *j == i) {
                        row_of = Some((v.clone(), x.span));
                    }
                }
            }
        });
        let Some((fname, fspan)) = row_of else {
            return false;
        };
        let Some(z) = self.model.latent(&fname).cloned() else {
            return false;
        };
        let mut label = None;
        num.walk(&mut |x| {
            if let ExprKind::Index(b, ix) = &x.kind {
                if let (ExprKind::Var(v), [a, c]) = (&b.kind, ix.as_slice()) {
                    if *v == fname && matches!(&a.kind, ExprKind::Var(j) if *j == i) {
                        if let ExprKind::Index(lb, li) = &c.kind {
                            if let (ExprKind::Var(l), [li0]) = (&lb.kind, li.as_slice()) {
                                if matches!(&li0.kind, ExprKind::Var(j) if *j == i) {
                                    label = Some(l.clone());
                                }
                            }
                        }
                    }
                }
            }
        });
        let Some(label) = label else { return false };
        let Some(d) = self.model.datum(&label).cloned() else {
            return false;
        };
        // Lower w(·) from the denominator with the class row replaced by a class symbol, and check
        // that the numerator is the same w at the observed class.
        let class_sym = "η_c";
        let w_den = replace_index(&sum.args[0].value, &fname, &i, None, class_sym);
        let w_num = replace_index(num, &fname, &i, Some(&label), class_sym);
        if !self.same_weight(&w_den, &w_num, class_sym, &ctx.n, &i) {
            self.err(
                SemanticError::new(
                    "gpm::bad_categorical",
                    "the numerator and the denominator use different class weights",
                    span,
                    "not a normalised class probability",
                )
                .help("see docs/language.md")
                .help("write p(y = k) = w(F[i, k]) / sum(w(F[i])) with the same w above and below"),
            );
            return true;
        }
        let mut names = self.names.clone();
        names.insert(class_sym.to_string(), (Binding::LoopVar, fspan));
        let sub_ctx = ObsCtx {
            n: ctx.n.clone(),
            var: Some(i.clone()),
        };
        // Lower `w` with `η_c` bound to a fresh scalar latent-like predictor symbol.
        let saved = std::mem::replace(&mut self.names, names);
        self.names.insert(
            class_sym.to_string(),
            (
                Binding::LetValue(Sx::sym(SymRole::Predictor, class_sym), false),
                fspan,
            ),
        );
        let w = self
            .node(&w_den, &sub_ctx, false)
            .and_then(|n| self.lift_node(n, &sub_ctx));
        self.names = saved;
        let Some(w) = w else { return true };
        self.push_categorical(
            &d,
            &z,
            fspan,
            span,
            move |cp| {
                let _ = cp;
                Sx::call(crate::sx::SxFunc::Log, w.clone())
            },
            ctx,
        );
        true
    }

    /// Whether two class-weight expressions are the same function of the class predictor:
    /// lowered separately and compared at several points (so `logistic(z)` and
    /// `1 / (1 + exp(-z))` agree).
    pub(super) fn same_weight(
        &mut self,
        a: &ast::Expr,
        b: &ast::Expr,
        class_sym: &str,
        n: &Dim,
        i: &str,
    ) -> bool {
        let ctx = ObsCtx {
            n: n.clone(),
            var: Some(i.to_string()),
        };
        let saved_errors = self.errors.len();
        self.names.insert(
            class_sym.to_string(),
            (
                Binding::LetValue(Sx::sym(SymRole::Predictor, class_sym), false),
                Span::default(),
            ),
        );
        let la = self
            .node(a, &ctx, false)
            .and_then(|x| self.lift_node(x, &ctx));
        let lb = self
            .node(b, &ctx, false)
            .and_then(|x| self.lift_node(x, &ctx));
        self.names.remove(class_sym);
        self.errors.truncate(saved_errors);
        let (Some(la), Some(lb)) = (la, lb) else {
            return false;
        };
        [-2.3, -0.7, 0.0, 0.4, 1.9].iter().all(|&z| {
            let env = |r: SymRole, name: &str| -> Option<f64> {
                if r == SymRole::Predictor && name == class_sym {
                    Some(z)
                } else {
                    // Other symbols (hyperparameters) get the same arbitrary value in both.
                    Some(1.37 + name.len() as f64 * 0.11)
                }
            };
            match (la.eval(&env), lb.eval(&env)) {
                (Some(x), Some(y)) => (x - y).abs() <= 1e-12 * (1.0 + x.abs()),
                _ => false,
            }
        })
    }
}
