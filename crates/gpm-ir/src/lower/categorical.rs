//! Categorical factors: the logistic-softmax from the library or recognised in a formula.

use super::*;
use gpm_library::MAX_CLASSES;

/// The named options of `categorical_logistic_softmax` (thesis §7.4.2-7.4.3).
pub(super) const CATEGORICAL_OPTIONS: [&str; 2] = ["link", "scale"];

impl Lowerer {
    pub(super) fn categorical_library(
        &mut self,
        d: &DataVar,
        arg: &ast::Expr,
        options: &[ast::Arg],
        ctx: &ObsCtx,
        span: Span,
    ) {
        let Some(link) = self.softmax_link(options) else {
            return;
        };
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
            link,
            ctx,
        );
    }

    /// `link = "bijective" | "overparametrised"` and `scale = theta` (a vector hyperparameter).
    fn softmax_link(&mut self, options: &[ast::Arg]) -> Option<SoftmaxLink> {
        let mut link = SoftmaxLink::default();
        for a in options {
            let name = a.name.as_ref().map_or("", |n| n.name.as_str());
            match (name, &a.value.kind) {
                ("link", ExprKind::Str(s)) if s == "bijective" => link.bijective = true,
                ("link", ExprKind::Str(s))
                    if s == "overparametrised" || s == "overparametrized" =>
                {
                    link.bijective = false
                }
                ("scale", ExprKind::Var(v)) if self.model.hypers.iter().any(|h| &h.name == v) => {
                    link.scale = Some(v.clone())
                }
                _ => {
                    let (label, help) = if name == "link" {
                        ("not a link", "`link = \"bijective\"` (K − 1 latent columns and a fixed last class, thesis §7.4.2) or `link = \"overparametrised\"` (the default: one column per class)")
                    } else {
                        ("not a hyperparameter", "`scale = theta` with `theta : vector[C] in 0.. ~ gamma(a, b);` (or `= learn(1.0)`) in the hyper block: one class scale per class (thesis §7.4.3)")
                    };
                    self.err(
                        SemanticError::new(
                            "gpm::bad_argument",
                            format!(
                                "`{}` is not a valid `{name}` of `categorical_logistic_softmax`",
                                a.value
                            ),
                            a.value.span,
                            label,
                        )
                        .help(help),
                    );
                    return None;
                }
            }
        }
        Some(link)
    }

    /// The class scales `theta` of a scaled link: a vector hyperparameter on `[0, ∞)` with one
    /// entry per class, fixed, learned, or with a Gamma prior (its conjugate conditional,
    /// thesis §7.4.3).
    fn check_scale(&mut self, name: &str, classes: &Dim, span: Span) -> bool {
        let Some(h) = self.model.hypers.iter().find(|h| h.name == name).cloned() else {
            return false;
        };
        let problem = if h.shape != Shape::Vector(classes.clone()) {
            Some(format!(
                "`{name}` is a {}, not a vector[{classes}] (one scale per class)",
                h.shape
            ))
        } else if h.lower != Some(0.0) || h.upper.is_some() {
            Some(format!(
                "`{name}` must be declared `in 0..` (scales are positive)"
            ))
        } else if let HyperKind::Prior { prior } = &h.kind {
            prior.conjugate_gamma().is_none().then(|| {
                format!("`{name}` has the prior `{prior}`; class scales take a `gamma(a, b)` prior (their conditional is then Gamma, thesis §7.4.3), `learn()` or fixed values")
            })
        } else {
            None
        };
        if let Some(p) = problem {
            self.err(
                SemanticError::new("gpm::bad_argument", p, span, "class scales")
                    .help(format!("declare `{name} : vector[{classes}] in 0.. ~ gamma(2, 2);` (or `= learn(1.0)`)"))
                    .also(h.span, "declared here"),
            );
            return false;
        }
        true
    }

    // The statement's parts as the caller destructured them, passed on once.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_categorical(
        &mut self,
        d: &DataVar,
        z: &Latent,
        arg_span: Span,
        span: Span,
        log_weight: impl Fn(Sx) -> Sx,
        link: SoftmaxLink,
        ctx: &ObsCtx,
    ) {
        let Shape::Matrix(rows, columns) = &z.shape else {
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
        if let Dim::Const(c) = columns {
            let problem = if *c > MAX_CLASSES {
                Some(format!(
                    "`{}` has {c} classes; at most {MAX_CLASSES} are supported",
                    z.name
                ))
            } else if *c == 0 && link.bijective {
                Some(format!(
                    "`{}` has no column: the bijective link needs one per class but the last",
                    z.name
                ))
            } else {
                None
            };
            if let Some(message) = problem {
                self.err(
                    SemanticError::new("gpm::bad_categorical", message, z.span, "number of classes")
                        .help("check the declared number of columns (one per class; one fewer under `link = \"bijective\"`)"),
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
        // The labels' range `1..C` names the classes: `C` the columns, or one more (bijective).
        let declared = match &d.constraint {
            ValueSet::Range {
                lo: Some(Bound::Const(lo)),
                hi: Some(hi),
            } if *lo == 1.0 => match hi {
                Bound::Var(h) => Some(Dim::Var(h.clone())),
                Bound::Const(h) if h.fract() == 0.0 && *h >= 1.0 => Some(Dim::Const(*h as usize)),
                _ => None,
            },
            _ => None,
        };
        let classes = match (&declared, columns, link.bijective) {
            (Some(c), cols, false) if c == cols => Some(c.clone()),
            (Some(Dim::Const(c)), Dim::Const(cols), true) if *c == cols + 1 => Some(Dim::Const(*c)),
            // A datum on either side: `C = columns + 1` is checked when the data are read.
            (Some(c @ Dim::Var(_)), _, true) | (Some(c @ Dim::Const(_)), Dim::Var(_), true) => {
                Some(c.clone())
            }
            _ => None,
        };
        let Some(classes) = classes else {
            let want = if link.bijective {
                format!("{columns} + 1")
            } else {
                columns.to_string()
            };
            self.err(
                SemanticError::new(
                    "gpm::bad_response",
                    format!("the labels `{}` must be declared `in 1..C` with C = {want} classes (`{}` has {columns} columns)", d.name, z.name),
                    d.span,
                    "label range",
                )
.help(format!("declare `{} : int[N] in 1..C;`: labels count classes from 1{}", d.name, if link.bijective { "; under `link = \"bijective\"` the last class has no column" } else { "" }))
                .also(arg_span, format!("{columns} columns")),
            );
            return;
        };
        if let Some(theta) = &link.scale {
            if !self.check_scale(theta, &classes, span) {
                return;
            }
        }
        let cp = "η_c".to_string();
        let form = FactorForm::Categorical {
            label: d.name.clone(),
            classes: classes.clone(),
            latent: z.name.clone(),
            class_predictor: cp.clone(),
            log_weight: log_weight(Sx::sym(SymRole::Predictor, &cp)),
            link,
        };
        // One predictor per latent class: the columns of the latent matrix.
        let mut preds = vec![];
        if let Dim::Const(c) = columns {
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
        // The class sum: `sum(w(F[i]))`, or `w(F[i, 1]) + … + w(F[i, K])` written out.
        let i = ctx
            .var
            .clone()
            .expect("a categorical formula is read inside its loop");
        let class_sym = "η_c";
        let Some(sum) = class_sum(den, &i, class_sym) else {
            return false;
        };
        let (fname, fspan, w_den) = (sum.latent.clone(), sum.span, sum.weight.clone());
        let Some(z) = self.model.latent(&fname).cloned() else {
            return false;
        };
        if let Some(terms) = sum.spelled_out(&z) {
            self.err(
                SemanticError::new(
                    "gpm::bad_categorical",
                    format!("the class sum has {terms} terms, but `{fname}` has {} columns", z.shape),
                    den.span,
                    "not a sum over every class",
                )
                .help(format!("write one term per column, `w({fname}[i, 1]) + … + w({fname}[i, C])`, or `sum(w({fname}[i]))`"))
                .also(z.span, "declared here"),
            );
            return true;
        }
        for other in &sum.others {
            if !self.same_weight(&w_den, other, class_sym, &ctx.n, &i) {
                self.err(
                    SemanticError::new(
                        "gpm::bad_categorical",
                        "the terms of the class sum use different class weights",
                        den.span,
                        "not a logistic-softmax",
                    )
                    .help(format!("every term must be the same function of its class: `w({fname}[i, 1]) + … + w({fname}[i, C])`")),
                );
                return true;
            }
        }
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
        // Check that the numerator is the same w, at the observed class.
        let w_num = replace_index(num, &fname, &i, ClassRead::Label(&label), class_sym);
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
            SoftmaxLink::default(),
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

/// The denominator of a class probability written as a formula.
struct ClassSum {
    /// The latent matrix.
    latent: String,
    /// Where it is read.
    span: Span,
    /// `w` of the first term (or of `sum`'s row) with the class's entry as the class symbol.
    weight: ast::Expr,
    /// The other terms' `w`, to be compared with `weight`.
    others: Vec<ast::Expr>,
    /// The number of terms when written out.
    terms: Option<usize>,
}

impl ClassSum {
    /// `Some(terms)` when the sum is written out with a number of terms other than the latent's
    /// literal number of columns.
    fn spelled_out(&self, z: &Latent) -> Option<usize> {
        let terms = self.terms?;
        match &z.shape {
            Shape::Matrix(_, Dim::Const(c)) if *c == terms => None,
            _ => Some(terms),
        }
    }
}

/// `sum(w(F[i]))`, or `w(F[i, 1]) + … + w(F[i, K])`: every column `1..K` once, each term
/// reading one entry `F[i, k]` of the same matrix with a literal `k`.
fn class_sum(den: &ast::Expr, i: &str, sym: &str) -> Option<ClassSum> {
    let is_i = |x: &ast::Expr| matches!(&x.kind, ExprKind::Var(j) if j == i);
    if let ExprKind::Call(sum) = &den.kind {
        if sum.func.name != "sum" || sum.args.len() != 1 {
            return None;
        }
        let mut row_of = None;
        sum.args[0].value.walk(&mut |x| {
            if let ExprKind::Index(b, ix) = &x.kind {
                if let (ExprKind::Var(v), [a]) = (&b.kind, ix.as_slice()) {
                    if is_i(a) {
                        row_of = Some((v.clone(), x.span));
                    }
                }
            }
        });
        let (latent, span) = row_of?;
        let weight = replace_index(&sum.args[0].value, &latent, i, ClassRead::Row, sym);
        return Some(ClassSum {
            latent,
            span,
            weight,
            others: vec![],
            terms: None,
        });
    }
    let mut terms = Vec::new();
    flatten_sum(den, &mut terms);
    if terms.len() < 2 {
        return None;
    }
    let mut reads = Vec::with_capacity(terms.len());
    for t in &terms {
        let mut found: Vec<(String, f64, Span)> = Vec::new();
        t.walk(&mut |x| {
            if let ExprKind::Index(b, ix) = &x.kind {
                if let (ExprKind::Var(v), [a, c]) = (&b.kind, ix.as_slice()) {
                    if let ExprKind::Num { value, .. } = &c.kind {
                        if is_i(a) {
                            found.push((v.clone(), *value, x.span));
                        }
                    }
                }
            }
        });
        let first = found.first()?.clone();
        if found.iter().any(|f| f.0 != first.0 || f.1 != first.1) {
            return None;
        }
        reads.push(first);
    }
    let latent = reads[0].0.clone();
    let mut columns: Vec<f64> = reads.iter().map(|r| r.1).collect();
    columns.sort_by(f64::total_cmp);
    let every_column = columns
        .iter()
        .enumerate()
        .all(|(k, c)| *c == (k + 1) as f64);
    if reads.iter().any(|r| r.0 != latent) || !every_column {
        return None;
    }
    let mut weights: Vec<ast::Expr> = terms
        .iter()
        .zip(&reads)
        .map(|(t, r)| replace_index(t, &latent, i, ClassRead::Column(r.1), sym))
        .collect();
    let weight = weights.remove(0);
    Some(ClassSum {
        latent,
        span: reads[0].2,
        weight,
        others: weights,
        terms: Some(terms.len()),
    })
}

/// The terms of `a + b + …`, however bracketed.
fn flatten_sum<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    match &e.kind {
        ExprKind::Binary(BinOp::Add, a, b) => {
            flatten_sum(a, out);
            flatten_sum(b, out);
        }
        _ => out.push(e),
    }
}
