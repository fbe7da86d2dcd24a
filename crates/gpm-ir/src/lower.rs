//! Lowering: AST → [`Model`]. Resolves names, checks types and shapes, turns library
//! distributions into log-density formulas, and lifts the latent-dependent parts of every
//! likelihood into linear predictors.
//!
//! Lifting rule: inside a likelihood, a maximal sub-expression that is affine in the latents —
//! latent references (`f[i]`, `u[g[i]]`, a scalar latent `b`, `X * w`, `dot(X[i], w)`, a `let`
//! predictor) combined by `+`, `-` and multiplication by numeric constants — becomes one predictor
//! `η`. Everything else (observed data `y[i]`, hyperparameters, nonlinear functions) stays in the
//! factor's formula. So `log(logistic(y[i] * (f[i] + u[g[i]])))` has the predictor `f + u[g]` and
//! the formula `log(logistic(y * η))`.

use crate::diag::{SemanticError, SemanticErrors};
use crate::library::{self, ResponseKind};
use crate::model::*;
use crate::robust;
use crate::sx::{Sx, SymRole};
use gpm_syntax::{self as ast, BinOp, ExprKind, Span, Stmt, TypeKind};
use std::collections::HashMap;

/// Lower a parsed program to a [`Model`], or report every mistake found.
pub fn lower(program: &ast::Program) -> Result<Model, SemanticErrors> {
    let mut l = Lowerer::default();
    l.blocks(program);
    for d in &program.data {
        l.data_decl(d);
    }
    for h in &program.hypers {
        l.hyper_decl(h);
    }
    for z in &program.latents {
        l.latent_decl(z);
    }
    for s in &program.model {
        l.stmt(s, None);
    }
    if l.errors.is_empty() {
        l.final_checks(program);
    }
    if l.errors.is_empty() {
        Ok(l.model)
    } else {
        Err(SemanticErrors(l.errors))
    }
}

/// What a name refers to.
#[derive(Debug, Clone)]
enum Binding {
    Data,
    Hyper,
    Latent,
    /// A `let` whose value is affine in the latents, with its length.
    LetPredictor(Affine, Dim),
    /// A `let` whose value is free of latents (kept as a formula at one observation).
    LetValue(Sx, bool),
    LoopVar,
}

#[derive(Default)]
struct Lowerer {
    /// Where the expression being lowered is, for errors raised while lifting it.
    span_hint: Span,
    model: Model,
    errors: Vec<SemanticError>,
    names: HashMap<String, (Binding, Span)>,
    anon: usize,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            data: vec![],
            hypers: vec![],
            latents: vec![],
            predictors: vec![],
            factors: vec![],
        }
    }
}

/// An affine combination of latent references at one observation.
#[derive(Debug, Clone, PartialEq)]
struct Affine {
    terms: Vec<Term>,
    offset: f64,
    span: Span,
    /// Name to give the predictor when lifted (a `let` name or the latent's own name).
    name: Option<String>,
}

impl Affine {
    fn scale(mut self, c: f64) -> Affine {
        for t in &mut self.terms {
            t.coef *= c;
        }
        self.offset *= c;
        self.name = None;
        self
    }
    fn add(mut self, other: Affine, sign: f64) -> Affine {
        for t in other.terms {
            let t = Term {
                coef: t.coef * sign,
                ..t
            };
            if let Some(e) = self
                .terms
                .iter_mut()
                .find(|e| e.latent == t.latent && e.design == t.design && e.scale_by == t.scale_by)
            {
                e.coef += t.coef;
            } else {
                self.terms.push(t);
            }
        }
        self.terms.retain(|t| t.coef != 0.0);
        self.offset += sign * other.offset;
        self.span = self.span.join(other.span);
        self.name = None;
        self
    }
}

/// A value at one observation during lowering.
#[derive(Debug, Clone)]
enum Node {
    /// Free of latents.
    Value(Sx),
    /// Affine in the latents (not yet lifted).
    Lat(Affine),
    /// A row `X[i]` of a data matrix, waiting for a latent vector to multiply.
    DataRow(String),
    /// A whole latent vector `w`, waiting for a data row or matrix.
    LatVec(String, Span),
    /// A whole data matrix `X`, in a vectorised statement, waiting for `* w`.
    DataMatrix(String),
    /// `value + affine`: a sum whose latent part is kept apart so that further `±` of latents
    /// join the same predictor (`y[i] - f[i] - b` has one predictor `f + b`).
    Mixed(Sx, Affine),
}

/// What a likelihood statement says about its observations beyond the log-density inference
/// follows: the density prediction scores (a robust loss's distribution) and how to draw a new
/// response.
#[derive(Default)]
struct Observed {
    density: Option<Sx>,
    replicate: Option<Replicate>,
}

/// Where an expression is evaluated.
#[derive(Debug, Clone)]
struct ObsCtx {
    /// Number of observations.
    n: Dim,
    /// `Some(i)` inside `for i in 1..n`; `None` in a vectorised statement (an unindexed vector
    /// of length `n` then means its `i`-th entry).
    var: Option<String>,
}

fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let best = candidates
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(s, _)| *s > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some(format!("did you mean `{}`?", best.1))
}

fn shape_of(ty: &ast::Type, dims: &mut dyn FnMut(&ast::Expr) -> Option<Dim>) -> Option<Shape> {
    Some(match &ty.kind {
        TypeKind::Int | TypeKind::Real => Shape::Scalar,
        TypeKind::Vector(n) | TypeKind::IntArray(n) | TypeKind::RealArray(n) => {
            Shape::Vector(dims(n)?)
        }
        TypeKind::Matrix(r, c) => {
            let r = dims(r);
            let c = dims(c);
            Shape::Matrix(r?, c?)
        }
    })
}

impl Lowerer {
    fn err(&mut self, e: SemanticError) {
        self.errors.push(e);
    }

    fn blocks(&mut self, p: &ast::Program) {
        let mut seen: Vec<(ast::BlockKind, Span)> = vec![];
        for (kind, span) in &p.blocks {
            if let Some((_, first)) = seen.iter().find(|(k, _)| k == kind) {
                let e = SemanticError::new(
                    "gpm::duplicate_block",
                    format!("the `{}` block is given twice", block_name(*kind)),
                    *span,
                    "second block",
                )
                .also(*first, "first block")
                .help("put all declarations of a kind in one block");
                self.err(e);
            } else {
                seen.push((*kind, *span));
            }
        }
    }

    fn declare(&mut self, name: &ast::Ident, b: Binding) -> bool {
        if let Some((_, first)) = self.names.get(&name.name) {
            let first = *first;
            self.err(
                SemanticError::new(
                    "gpm::duplicate_declaration",
                    format!("`{}` is declared twice", name.name),
                    name.span,
                    "declared again here",
                )
                .also(first, "first declared here")
                .help("every name (data, hyperparameter, latent, let) must be unique"),
            );
            return false;
        }
        if library::distribution(&name.name).is_some()
            || library::MATH_FUNCTIONS.iter().any(|(f, _)| *f == name.name)
        {
            self.err(
                SemanticError::new(
                    "gpm::reserved_name",
                    format!("`{}` is the name of a library function", name.name),
                    name.span,
                    "reserved",
                )
                .help("choose another name"),
            );
            return false;
        }
        self.names.insert(name.name.clone(), (b, name.span));
        true
    }

    fn unknown_name(&mut self, name: &str, span: Span) {
        let help = did_you_mean(name, self.names.keys().map(|s| s.as_str()));
        let mut e = SemanticError::new(
            "gpm::unknown_name",
            format!("unknown name `{name}`"),
            span,
            "not declared",
        )
        .help("see docs/language.md");
        e.help = Some(help.unwrap_or_else(|| {
            "declare it in the `data`, `hyper` or `latent` block, or with `let`".into()
        }));
        self.err(e);
    }

    // ---------------------------------------------------------------- sizes and constants

    /// A size: an integer literal or an `int` scalar datum.
    fn dim(&mut self, e: &ast::Expr) -> Option<Dim> {
        match &e.kind {
            ExprKind::Num { value, is_int } if *is_int && *value >= 0.0 => {
                Some(Dim::Const(*value as usize))
            }
            ExprKind::Var(v) => match self.model.datum(v) {
                Some(d) if d.elem == Elem::Int && d.shape == Shape::Scalar => {
                    Some(Dim::Var(v.clone()))
                }
                Some(_) => {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_size",
                            format!("the size `{v}` is not an `int` scalar"),
                            e.span,
                            "must be an `int` datum",
                        )
                        .help("declare sizes as `N : int;` in the data block"),
                    );
                    None
                }
                None => {
                    if self.names.contains_key(v) {
                        self.err(
                            SemanticError::new(
                                "gpm::bad_size",
                                format!("the size `{v}` is not a datum"),
                                e.span,
                                "sizes must be `int` data",
                            )
                            .help("declare sizes as `N : int;` in the data block, before use"),
                        );
                    } else {
                        self.unknown_name(v, e.span);
                    }
                    None
                }
            },
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_size",
                        "a size must be a non-negative integer literal or an `int` datum",
                        e.span,
                        "not a size",
                    )
                    .help("write e.g. `vector[N]` or `matrix[N, 3]`"),
                );
                None
            }
        }
    }

    /// A numeric constant (literals and arithmetic on them).
    fn constant(&mut self, e: &ast::Expr, what: &str) -> Option<f64> {
        fn go(e: &ast::Expr) -> Option<f64> {
            Some(match &e.kind {
                ExprKind::Num { value, .. } => *value,
                ExprKind::Neg(a) => -go(a)?,
                ExprKind::Binary(op, a, b) => {
                    let (a, b) = (go(a)?, go(b)?);
                    match op {
                        BinOp::Add => a + b,
                        BinOp::Sub => a - b,
                        BinOp::Mul => a * b,
                        BinOp::Div => a / b,
                        BinOp::Pow => a.powf(b),
                    }
                }
                ExprKind::Call(c) if c.args.len() == 1 => {
                    let x = go(&c.args[0].value)?;
                    match c.func.name.as_str() {
                        "sqrt" => x.sqrt(),
                        "exp" => x.exp(),
                        "log" => x.ln(),
                        _ => return None,
                    }
                }
                _ => return None,
            })
        }
        match go(e) {
            Some(v) if v.is_finite() => Some(v),
            Some(_) => {
                self.err(
                    SemanticError::new(
                        "gpm::not_constant",
                        format!("{what} evaluates to a non-finite number"),
                        e.span,
                        "not finite",
                    )
                    .help("see docs/language.md"),
                );
                None
            }
            None => {
                self.err(
                    SemanticError::new(
                        "gpm::not_constant",
                        format!("{what} must be a numeric constant"),
                        e.span,
                        "not a constant",
                    )
                    .help("write a number such as `1.0` or `2 * 3.5`"),
                );
                None
            }
        }
    }

    fn value_set(&mut self, c: &Option<ast::Constraint>, elem: Elem) -> ValueSet {
        let Some(c) = c else { return ValueSet::Any };
        match &c.kind {
            ast::ConstraintKind::Set(v) => {
                if elem != Elem::Int {
                    self.err(
                        SemanticError::new(
                            "gpm::set_on_real",
                            "a set of labels constrains an integer, but this is real-valued",
                            c.span,
                            "label set on a real",
                        )
                        .help("declare labels as `y : int[N] in {-1, 1};`"),
                    );
                }
                let mut s = v.clone();
                s.sort();
                if s.windows(2).any(|w| w[0] == w[1]) {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_constraint",
                            "a value is listed twice in the set",
                            c.span,
                            "repeated value",
                        )
                        .help("see docs/language.md"),
                    );
                }
                ValueSet::Set(s)
            }
            ast::ConstraintKind::Range { lo, hi } => {
                let bound = |l: &mut Self, e: &Option<ast::Expr>| -> Option<Bound> {
                    let e = e.as_ref()?;
                    if let ExprKind::Var(v) = &e.kind {
                        return l.dim(e).map(|_| Bound::Var(v.clone()));
                    }
                    l.constant(e, "a range bound").map(Bound::Const)
                };
                let lo_b = bound(self, lo);
                let hi_b = bound(self, hi);
                if let (Some(Bound::Const(a)), Some(Bound::Const(b))) = (&lo_b, &hi_b) {
                    if a > b {
                        self.err(
                            SemanticError::new(
                                "gpm::bad_constraint",
                                format!("the range {a}..{b} is empty"),
                                c.span,
                                "empty range",
                            )
                            .help("see docs/language.md"),
                        );
                    }
                }
                ValueSet::Range { lo: lo_b, hi: hi_b }
            }
        }
    }

    // ---------------------------------------------------------------- declarations

    fn data_decl(&mut self, d: &ast::DataDecl) {
        let elem = match d.ty.kind {
            TypeKind::Int | TypeKind::IntArray(_) => Elem::Int,
            _ => Elem::Real,
        };
        let shape = shape_of(&d.ty, &mut |e| self.dim(e));
        let constraint = self.value_set(&d.constraint, elem);
        if !self.declare(&d.name, Binding::Data) {
            return;
        }
        if let Some(shape) = shape {
            self.model.data.push(DataVar {
                name: d.name.name.clone(),
                elem,
                shape,
                constraint,
                span: d.span,
            });
        }
    }

    fn hyper_decl(&mut self, h: &ast::HyperDecl) {
        let shape = match &h.ty.kind {
            TypeKind::Real => Some(Shape::Scalar),
            TypeKind::Vector(n) => self.dim(n).map(Shape::Vector),
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_hyper_type",
                        "a hyperparameter is a `real` or a `vector[n]`",
                        h.ty.span,
                        "not allowed here",
                    )
                    .help("integers and matrices belong in the data block"),
                );
                None
            }
        };
        let lower = match self.value_set(&h.constraint, Elem::Real) {
            // An upper bound would be silently ignored by learning and sampling: refuse it.
            ValueSet::Range { hi: Some(_), .. } => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_constraint",
                        "upper bounds on hyperparameters are not supported",
                        h.constraint.as_ref().map_or(h.span, |c| c.span),
                        "upper bound",
                    )
                    .help("write `in 0..` (a positive scale); bound it through its prior instead"),
                );
                None
            }
            ValueSet::Range {
                lo: Some(Bound::Const(v)),
                ..
            } => Some(v),
            ValueSet::Any | ValueSet::Range { lo: None, .. } => None,
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_constraint",
                        "a hyperparameter's constraint must be a numeric range like `in 0..`",
                        h.constraint.as_ref().map_or(h.span, |c| c.span),
                        "unsupported constraint",
                    )
                    .help("see docs/language.md"),
                );
                None
            }
        };
        let kind = match &h.spec {
            ast::HyperSpec::Fixed(e) => self
                .constant(e, "a fixed hyperparameter")
                .map(|value| HyperKind::Fixed { value }),
            ast::HyperSpec::Learn(e) => match self.constant(e, "the initial value of `learn`") {
                Some(init) if init > 0.0 => Some(HyperKind::Learn { init }),
                Some(init) => {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_parameter",
                            format!("`learn` starts at {init}, but learned hyperparameters are positive scales"),
                            e.span,
                            "must be > 0",
                        )
                        .help("type-II maximum likelihood optimises the logarithm: start at a positive value"),
                    );
                    None
                }
                None => None,
            },
            ast::HyperSpec::Prior(c) => self.hyper_prior(c).map(|prior| HyperKind::Prior { prior }),
        };
        if let (Some(lo), Some(HyperKind::Fixed { value: v } | HyperKind::Learn { init: v })) =
            (lower, &kind)
        {
            if *v < lo {
                let span = match &h.spec {
                    ast::HyperSpec::Fixed(e) | ast::HyperSpec::Learn(e) => e.span,
                    ast::HyperSpec::Prior(c) => c.span,
                };
                self.err(
                    SemanticError::new(
                        "gpm::constraint_violated",
                        format!(
                            "the value {v} of `{}` is below its lower bound {lo}",
                            h.name.name
                        ),
                        span,
                        "violates the constraint",
                    )
                    .help("choose a value inside the declared range")
                    .also(h.constraint.as_ref().unwrap().span, "constraint"),
                );
            }
        }
        if !self.declare(&h.name, Binding::Hyper) {
            return;
        }
        if let (Some(shape), Some(kind)) = (shape, kind) {
            self.model.hypers.push(Hyper {
                name: h.name.name.clone(),
                shape,
                lower,
                kind,
                span: h.span,
            });
        }
    }

    fn check_args(&mut self, c: &ast::Call, params: &[&str]) -> Option<Vec<ast::Expr>> {
        let mut slots: Vec<Option<ast::Expr>> = vec![None; params.len()];
        let mut pos = 0;
        for a in &c.args {
            let k = match &a.name {
                Some(n) => match params.iter().position(|p| *p == n.name) {
                    Some(k) => k,
                    None => {
                        let help = did_you_mean(&n.name, params.iter().copied());
                        let mut e = SemanticError::new(
                            "gpm::unknown_argument",
                            format!("`{}` has no argument `{}`", c.func.name, n.name),
                            n.span,
                            "unknown argument",
                        )
                        .help("see docs/language.md");
                        e.help = Some(help.unwrap_or_else(|| {
                            format!("its arguments are: {}", params.join(", "))
                        }));
                        self.err(e);
                        return None;
                    }
                },
                None => {
                    pos += 1;
                    pos - 1
                }
            };
            if k >= params.len() {
                self.wrong_arity(c, params.len(), params.len());
                return None;
            }
            slots[k] = Some(a.value.clone());
        }
        if slots.iter().any(|s| s.is_none()) {
            self.wrong_arity(c, params.len(), params.len());
            return None;
        }
        Some(slots.into_iter().map(|s| s.unwrap()).collect())
    }

    fn wrong_arity(&mut self, c: &ast::Call, min: usize, max: usize) {
        let want = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        self.err(
            SemanticError::new(
                "gpm::wrong_arity",
                format!(
                    "`{}` takes {want} argument{}, but {} {} given",
                    c.func.name,
                    if max == 1 { "" } else { "s" },
                    c.args.len(),
                    if c.args.len() == 1 { "was" } else { "were" }
                ),
                c.span,
                "wrong number of arguments",
            )
            .help(format!("see docs/language.md for `{}`", c.func.name)),
        );
    }

    fn hyper_prior(&mut self, c: &ast::Call) -> Option<PriorDist> {
        const PRIORS: &[(&str, &[&str])] = &[
            ("gamma", &["shape", "rate"]),
            ("inv_gamma", &["shape", "scale"]),
            ("lognormal", &["mu", "sigma"]),
            ("normal", &["mu", "sigma"]),
            ("half_normal", &["sigma"]),
            ("exponential", &["rate"]),
        ];
        let Some((name, params)) = PRIORS.iter().find(|(n, _)| *n == c.func.name) else {
            let help = did_you_mean(&c.func.name, PRIORS.iter().map(|(n, _)| *n));
            let mut e = SemanticError::new(
                "gpm::unknown_distribution",
                format!("unknown prior `{}` for a hyperparameter", c.func.name),
                c.func.span,
                "unknown prior",
            )
            .help("see docs/language.md");
            e.help = Some(help.unwrap_or_else(|| {
                "hyperparameter priors: gamma, inv_gamma, lognormal, normal, half_normal, exponential"
                    .into()
            }));
            self.err(e);
            return None;
        };
        let args = self.check_args(c, params)?;
        let v: Vec<f64> = args
            .iter()
            .map(|a| self.constant(a, "a prior parameter"))
            .collect::<Option<_>>()?;
        let positive = |l: &mut Self, k: usize| {
            if v[k] <= 0.0 {
                l.err(
                    SemanticError::new(
                        "gpm::bad_parameter",
                        format!("the `{}` of `{name}` must be positive", params[k]),
                        args[k].span,
                        "must be > 0",
                    )
                    .help("scale, shape and rate parameters are positive"),
                );
            }
        };
        match *name {
            "gamma" | "inv_gamma" | "lognormal" | "normal" => positive(self, 1),
            _ => {}
        }
        if matches!(*name, "gamma" | "inv_gamma" | "half_normal" | "exponential") {
            positive(self, 0);
        }
        Some(match *name {
            "gamma" => PriorDist::Gamma {
                shape: v[0],
                rate: v[1],
            },
            "inv_gamma" => PriorDist::InvGamma {
                shape: v[0],
                scale: v[1],
            },
            "lognormal" => PriorDist::LogNormal {
                mu: v[0],
                sigma: v[1],
            },
            "normal" => PriorDist::Normal {
                mu: v[0],
                sigma: v[1],
            },
            "half_normal" => PriorDist::HalfNormal { sigma: v[0] },
            _ => PriorDist::Exponential { rate: v[0] },
        })
    }

    /// A scalar parameter: constants, scalar hyperparameters and arithmetic/math on them.
    fn param(&mut self, e: &ast::Expr, what: &str) -> Option<Sx> {
        let ctx = ObsCtx {
            n: Dim::Const(1),
            var: None,
        };
        match self.node(e, &ctx, true)? {
            Node::Value(sx) if !sx.has_role(SymRole::Data) => Some(sx),
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_parameter",
                        format!("{what} must be built from constants and scalar hyperparameters"),
                        e.span,
                        "not a parameter",
                    )
                    .help("declare it in the `hyper` block"),
                );
                None
            }
        }
    }

    /// A parameter that must be positive: a literal is checked here, a hyperparameter by its
    /// declaration and at run time.
    fn positive_param(&mut self, e: &ast::Expr, what: &str) -> Option<Sx> {
        let p = self.param(e, what)?;
        if let Sx::Num(v) = p {
            if v <= 0.0 {
                self.err(
                    SemanticError::new(
                        "gpm::bad_parameter",
                        format!("{what} must be positive, not {v}"),
                        e.span,
                        "must be > 0",
                    )
                    .help("kernel variances, lengthscales and periods are positive"),
                );
                return None;
            }
        }
        Some(p)
    }

    fn latent_decl(&mut self, z: &ast::LatentDecl) {
        let shape = match &z.ty.kind {
            TypeKind::Real => Some(Shape::Scalar),
            TypeKind::Vector(n) => self.dim(n).map(Shape::Vector),
            TypeKind::Matrix(r, c) => {
                let r = self.dim(r);
                let c = self.dim(c);
                r.zip(c).map(|(r, c)| Shape::Matrix(r, c))
            }
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_latent_type",
                        "a latent block is a `real`, a `vector[n]` or a `matrix[n, k]`",
                        z.ty.span,
                        "not allowed here",
                    )
                    .help("latents are real-valued and Gaussian"),
                );
                None
            }
        };
        let prior = match z.prior.func.name.as_str() {
            "gp" => self.gp_prior(&z.prior, shape.as_ref(), &z.name.name),
            "normal" => {
                let args = self.check_args(&z.prior, &["mean", "scale"]);
                args.and_then(|a| {
                    let mean = self.param(&a[0], "the mean of a latent block");
                    let scale = self.param(&a[1], "the scale of a latent block");
                    if let Some(Sx::Num(s)) = &scale {
                        if *s <= 0.0 {
                            self.err(
                                SemanticError::new(
                                    "gpm::bad_parameter",
                                    "the scale of a normal prior must be positive",
                                    a[1].span,
                                    "must be > 0",
                                )
                                .help("see docs/language.md"),
                            );
                            return None;
                        }
                    }
                    Some(LatentPrior::Normal {
                        mean: mean?,
                        scale: scale?,
                    })
                })
            }
            other => {
                let help = did_you_mean(other, ["gp", "normal"].into_iter());
                self.err(
                    SemanticError::new(
                        "gpm::unknown_distribution",
                        format!("unknown latent prior `{other}`"),
                        z.prior.func.span,
                        "not a Gaussian prior",
                    )
                    .help("see docs/language.md")
                    .help(help.unwrap_or_else(|| {
                        "latent blocks are Gaussian: `gp(X, kernel)` or `normal(mean, scale)`"
                            .into()
                    })),
                );
                None
            }
        };
        if !self.declare(&z.name, Binding::Latent) {
            return;
        }
        if let (Some(shape), Some(prior)) = (shape, prior) {
            self.model.latents.push(Latent {
                name: z.name.name.clone(),
                shape,
                prior,
                span: z.span,
            });
        }
    }

    fn gp_prior(
        &mut self,
        c: &ast::Call,
        shape: Option<&Shape>,
        name: &str,
    ) -> Option<LatentPrior> {
        let positional: Vec<&ast::Arg> = c.args.iter().filter(|a| a.name.is_none()).collect();
        if positional.len() != 2 {
            self.wrong_arity(c, 2, 2);
            return None;
        }
        let mut mean = Sx::num(0.0);
        let mut inducing = None;
        let mut inducing_points: Option<(String, Span)> = None;
        for a in c.args.iter().filter(|a| a.name.is_some()) {
            let n = a.name.as_ref().unwrap();
            match n.name.as_str() {
                "mean" => mean = self.param(&a.value, "the mean of a GP")?,
                "inducing" if matches!(&a.value.kind, ExprKind::Var(v) if self.model.datum(v).is_some_and(|d| !matches!(d.shape, Shape::Scalar))) =>
                {
                    let ExprKind::Var(z) = &a.value.kind else {
                        unreachable!()
                    };
                    inducing_points = Some((z.clone(), a.value.span));
                }
                "inducing" => {
                    let v = self.constant(&a.value, "the number of inducing points")?;
                    if v < 1.0 || v.fract() != 0.0 {
                        self.err(
                            SemanticError::new(
                                "gpm::bad_parameter",
                                "the number of inducing points is a positive integer",
                                a.value.span,
                                "not a positive integer",
                            )
                            .help("see docs/language.md"),
                        );
                        return None;
                    }
                    inducing = Some(Inducing::Count(v as usize));
                }
                other => {
                    self.err(
                        SemanticError::new(
                            "gpm::unknown_argument",
                            format!("`gp` has no argument `{other}`"),
                            n.span,
                            "unknown argument",
                        )
                        .help("`gp(X, kernel, mean = m, inducing = M)`"),
                    );
                    return None;
                }
            }
        }
        let inputs_e = &positional[0].value;
        let ExprKind::Var(inputs) = &inputs_e.kind else {
            self.err(
                SemanticError::new(
                    "gpm::bad_gp_inputs",
                    "the inputs of a GP must be a data matrix or vector",
                    inputs_e.span,
                    "not a datum",
                )
                .help("declare the inputs as `X : matrix[N, D];` and write `gp(X, ...)`"),
            );
            return None;
        };
        let Some(d) = self.model.datum(inputs).cloned() else {
            if self.names.contains_key(inputs) {
                self.err(
                    SemanticError::new(
                        "gpm::bad_gp_inputs",
                        format!("the inputs `{inputs}` of a GP must be data"),
                        inputs_e.span,
                        "not a datum",
                    )
                    .help("see docs/language.md"),
                );
            } else {
                self.unknown_name(inputs, inputs_e.span);
            }
            return None;
        };
        let (rows, dims) = match &d.shape {
            Shape::Matrix(r, c) => (r.clone(), c.clone()),
            Shape::Vector(r) => (r.clone(), Dim::Const(1)),
            Shape::Scalar => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_gp_inputs",
                        format!("the inputs `{inputs}` of a GP are a scalar"),
                        inputs_e.span,
                        "need one input per observation",
                    )
                    .help("see docs/language.md"),
                );
                return None;
            }
        };
        let len = match shape {
            Some(Shape::Vector(n)) | Some(Shape::Matrix(n, _)) => Some(n.clone()),
            Some(Shape::Scalar) => {
                self.err(
                    SemanticError::new(
                        "gpm::shape_mismatch",
                        format!("`{name}` is a scalar but has a GP prior"),
                        c.span,
                        "a GP needs a vector",
                    )
                    .help("see docs/language.md"),
                );
                return None;
            }
            None => None,
        };
        if let Some(len) = len {
            if len != rows {
                self.err(
                    SemanticError::new(
                        "gpm::shape_mismatch",
                        format!(
                            "`{name}` has {len} entries but its inputs `{inputs}` have {rows} rows"
                        ),
                        inputs_e.span,
                        format!("{rows} rows"),
                    )
                    .help("a GP latent has one value per input row"),
                );
                return None;
            }
        }
        if let Some((z, span)) = inducing_points {
            let zd = self.model.datum(&z).cloned()?;
            let zdims = match &zd.shape {
                Shape::Matrix(_, c) => c.clone(),
                _ => Dim::Const(1),
            };
            if zdims != dims {
                self.err(
                    SemanticError::new(
                        "gpm::shape_mismatch",
                        format!(
                            "the inducing inputs `{z}` have {zdims} columns but the inputs `{inputs}` have {dims}"
                        ),
                        span,
                        format!("{zdims} columns"),
                    )
                    .help("inducing inputs live in the input space: one row per inducing point"),
                );
                return None;
            }
            inducing = Some(Inducing::Points(z));
        }
        let kernel = self.kernel(&positional[1].value, &dims)?;
        Some(LatentPrior::Gp {
            inputs: inputs.clone(),
            kernel,
            mean,
            inducing,
        })
    }

    fn kernel(&mut self, e: &ast::Expr, dims: &Dim) -> Option<Kernel> {
        match &e.kind {
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Mul), a, b) => {
                let (ka, kb) = (is_kernel_expr(a), is_kernel_expr(b));
                match (op, ka, kb) {
                    (BinOp::Add, true, true) => Some(Kernel::Sum {
                        left: Box::new(self.kernel(a, dims)?),
                        right: Box::new(self.kernel(b, dims)?),
                    }),
                    (BinOp::Mul, true, true) => Some(Kernel::Product {
                        left: Box::new(self.kernel(a, dims)?),
                        right: Box::new(self.kernel(b, dims)?),
                    }),
                    (BinOp::Mul, false, true) => Some(Kernel::Scale {
                        variance: self.positive_param(a, "a kernel variance")?,
                        kernel: Box::new(self.kernel(b, dims)?),
                    }),
                    (BinOp::Mul, true, false) => Some(Kernel::Scale {
                        variance: self.positive_param(b, "a kernel variance")?,
                        kernel: Box::new(self.kernel(a, dims)?),
                    }),
                    _ => self.not_a_kernel(e),
                }
            }
            ExprKind::Call(c) => {
                let Some((name, min, max)) = library::KERNELS
                    .iter()
                    .find(|(n, _, _)| *n == c.func.name)
                    .copied()
                else {
                    let help = did_you_mean(&c.func.name, library::KERNELS.iter().map(|k| k.0));
                    self.err(
                        SemanticError::new(
                            "gpm::unknown_kernel",
                            format!("unknown kernel `{}`", c.func.name),
                            c.func.span,
                            "not a kernel",
                        )
.help("see docs/language.md")
                        .help(help.unwrap_or_else(|| {
                            "kernels: sqexp (rbf), matern12, matern32, matern52, linear, periodic, constant, white".into()
                        })),
                    );
                    return None;
                };
                if c.args.len() < min
                    || c.args.len() > max
                    || c.args.iter().any(|a| a.name.is_some())
                {
                    self.wrong_arity(c, min, max);
                    return None;
                }
                let ls = |l: &mut Self| l.lengthscale(&c.args[0].value, dims);
                Some(match name {
                    "sqexp" | "rbf" => Kernel::SqExp {
                        lengthscale: ls(self)?,
                    },
                    "matern12" => Kernel::Matern12 {
                        lengthscale: ls(self)?,
                    },
                    "matern32" => Kernel::Matern32 {
                        lengthscale: ls(self)?,
                    },
                    "matern52" => Kernel::Matern52 {
                        lengthscale: ls(self)?,
                    },
                    "linear" => Kernel::Linear {
                        offset: match c.args.first() {
                            Some(a) => self.param(&a.value, "the offset of `linear`")?,
                            None => Sx::num(0.0),
                        },
                    },
                    "periodic" => Kernel::Periodic {
                        lengthscale: self.positive_param(&c.args[0].value, "a lengthscale")?,
                        period: self.positive_param(&c.args[1].value, "a period")?,
                    },
                    "constant" => Kernel::Constant,
                    _ => Kernel::White,
                })
            }
            _ => self.not_a_kernel(e),
        }
    }

    fn not_a_kernel(&mut self, e: &ast::Expr) -> Option<Kernel> {
        self.err(
            SemanticError::new(
                "gpm::not_a_kernel",
                "this is not a kernel expression",
                e.span,
                "expected a kernel",
            )
            .help("build kernels from sqexp(ℓ), matern32(ℓ), linear(), ... with `+`, `*` and scalar variances: `s2 * sqexp(ell) + linear()`"),
        );
        None
    }

    fn lengthscale(&mut self, e: &ast::Expr, dims: &Dim) -> Option<Lengthscale> {
        if let ExprKind::Var(v) = &e.kind {
            if let Some(h) = self.model.hyper(v).cloned() {
                if let Shape::Vector(n) = &h.shape {
                    if n != dims {
                        self.err(
                            SemanticError::new(
                                "gpm::shape_mismatch",
                                format!("the ARD lengthscale `{v}` has {n} entries but the inputs have {dims} columns"),
                                e.span,
                                format!("needs {dims} entries"),
                            )
                            .help("an ARD lengthscale has one entry per input column"),
                        );
                        return None;
                    }
                    return Some(Lengthscale::Ard { hyper: v.clone() });
                }
            }
        }
        Some(Lengthscale::Scalar {
            value: self.positive_param(e, "a lengthscale")?,
        })
    }

    // ---------------------------------------------------------------- expressions

    /// Convert an expression at one observation. `param_only` forbids data and latents.
    fn node(&mut self, e: &ast::Expr, ctx: &ObsCtx, param_only: bool) -> Option<Node> {
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
        }
    }

    fn not_scalar(&mut self, span: Span) -> Option<Node> {
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

    fn var_node(&mut self, v: &str, span: Span, ctx: &ObsCtx, param_only: bool) -> Option<Node> {
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
            Binding::Hyper => {
                let h = self.model.hyper(v)?.clone();
                if h.shape != Shape::Scalar {
                    self.err(
                        SemanticError::new(
                            "gpm::shape_mismatch",
                            format!(
                                "the hyperparameter `{v}` is a vector; only kernels take it whole"
                            ),
                            span,
                            "vector hyperparameter",
                        )
                        .help("use it as an ARD lengthscale: `sqexp(ell)`"),
                    );
                    return None;
                }
                Some(Node::Value(Sx::sym(SymRole::Hyper, v)))
            }
            Binding::Data => {
                if param_only {
                    return forbid(self, "the datum");
                }
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
            Binding::Latent => {
                if param_only {
                    return forbid(self, "the latent");
                }
                let z = self.model.latent(v)?.clone();
                match &z.shape {
                    Shape::Scalar => Some(Node::Lat(Affine {
                        terms: vec![Term {
                            latent: v.to_string(),
                            coef: 1.0,
                            scale_by: None,
                            design: Design::Broadcast,
                        }],
                        offset: 0.0,
                        span,
                        name: Some(v.to_string()),
                    })),
                    Shape::Vector(n) if ctx.var.is_none() && *n == ctx.n => {
                        Some(Node::Lat(Affine {
                            terms: vec![Term {
                                latent: v.to_string(),
                                coef: 1.0,
                                scale_by: None,
                                design: Design::Identity,
                            }],
                            offset: 0.0,
                            span,
                            name: Some(v.to_string()),
                        }))
                    }
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

    fn check_len(&mut self, n: &Dim, want: &Dim, v: &str, span: Span) -> Option<()> {
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

    fn is_loop_var(&self, e: &ast::Expr, ctx: &ObsCtx) -> bool {
        matches!((&e.kind, &ctx.var), (ExprKind::Var(v), Some(i)) if v == i)
    }

    fn index_node(
        &mut self,
        base: &ast::Expr,
        ix: &[ast::Expr],
        span: Span,
        ctx: &ObsCtx,
        param_only: bool,
    ) -> Option<Node> {
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
        // `eta[i]` of a `let` predictor: the predictor at this observation.
        if let (Binding::LetPredictor(a, len), [ix0]) = (&binding, ix) {
            if self.is_loop_var(ix0, ctx) {
                self.check_len(len, &ctx.n, v, span)?;
                return Some(Node::Lat(Affine { span, ..a.clone() }));
            }
        }
        let shape = match &binding {
            Binding::Data => self.model.datum(v).map(|d| d.shape.clone()),
            Binding::Latent => self.model.latent(v).map(|d| d.shape.clone()),
            _ => None,
        };
        let Some(shape) = shape else {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!("`{v}` cannot be indexed"),
                    base.span,
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
        if ix.len() > rank {
            self.err(
                SemanticError::new(
                    "gpm::bad_index",
                    format!(
                        "`{v}` has {rank} dimension{} but is indexed with {}",
                        if rank == 1 { "" } else { "s" },
                        ix.len()
                    ),
                    span,
                    "too many indices",
                )
                .help("see docs/language.md"),
            );
            return None;
        }
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
                let c = self.constant(b, "a column index")?;
                let in_range = c.fract() == 0.0
                    && c >= 1.0
                    && match cols {
                        Dim::Const(k) => c <= *k as f64,
                        Dim::Var(_) => true,
                    };
                if !in_range {
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
            // f[i]
            (Binding::Latent, Shape::Vector(n), [a]) if self.is_loop_var(a, ctx) => {
                self.check_len(n, &ctx.n, v, span)?;
                Some(Node::Lat(Affine {
                    terms: vec![Term {
                        latent: v.clone(),
                        coef: 1.0,
                        scale_by: None,
                        design: Design::Identity,
                    }],
                    offset: 0.0,
                    span,
                    name: Some(v.clone()),
                }))
            }
            // u[g[i]]: a random effect by group.
            (Binding::Latent, Shape::Vector(groups), [g]) => {
                let ExprKind::Index(gb, gi) = &g.kind else {
                    return self.bad_latent_index(v, span, &i);
                };
                let (ExprKind::Var(gname), [gi0]) = (&gb.kind, gi.as_slice()) else {
                    return self.bad_latent_index(v, span, &i);
                };
                let ok = self.model.datum(gname).is_some_and(|d| {
                    d.elem == Elem::Int && d.shape == Shape::Vector(ctx.n.clone())
                }) && self.is_loop_var(gi0, ctx);
                if !ok {
                    return self.bad_latent_index(v, span, &i);
                }
                let _ = groups;
                Some(Node::Lat(Affine {
                    terms: vec![Term {
                        latent: v.clone(),
                        coef: 1.0,
                        scale_by: None,
                        design: Design::Gather {
                            index: gname.clone(),
                        },
                    }],
                    offset: 0.0,
                    span,
                    name: None,
                }))
            }
            // F[i, k] with k a constant class.
            (Binding::Latent, Shape::Matrix(n, cols), [a, b]) if self.is_loop_var(a, ctx) => {
                self.check_len(n, &ctx.n, v, span)?;
                let k = self.constant(b, "a column index of a latent matrix")?;
                let in_range = match cols {
                    Dim::Const(c) => k >= 1.0 && k <= *c as f64,
                    Dim::Var(_) => k >= 1.0,
                };
                if k.fract() != 0.0 || !in_range {
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
                }
                Some(Node::Lat(Affine {
                    terms: vec![Term {
                        latent: v.clone(),
                        coef: 1.0,
                        scale_by: None,
                        design: Design::Column {
                            column: k as usize - 1,
                        },
                    }],
                    offset: 0.0,
                    span,
                    name: None,
                }))
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

    fn bad_latent_index(&mut self, v: &str, span: Span, i: &str) -> Option<Node> {
        self.err(
            SemanticError::new(
                "gpm::bad_index",
                format!("unsupported index into the latent `{v}`"),
                span,
                "unsupported index",
            )
.help("see docs/language.md")
            .help(format!(
                "latents are read as `{v}[{i}]`, `{v}[group[{i}]]` (random effects) or `{v}[{i}, k]`"
            )),
        );
        None
    }

    fn call_node(&mut self, c: &ast::Call, ctx: &ObsCtx, param_only: bool) -> Option<Node> {
        let name = c.func.name.as_str();
        let Some((_, arity)) = library::MATH_FUNCTIONS
            .iter()
            .find(|(f, _)| *f == name)
            .copied()
        else {
            let what = if library::distribution(name).is_some() {
                "a distribution, not a function: use it in `y ~ ...`"
            } else if library::KERNELS.iter().any(|k| k.0 == name) {
                "a kernel: kernels go inside `gp(X, kernel)`"
            } else {
                ""
            };
            let help = if what.is_empty() {
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

    /// `X * w`: check that the columns of `X` match the length of `w`.
    fn matrix_term(&mut self, x: &str, w: &str, wspan: Span, span: Span) -> Option<Node> {
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
        Some(Node::Lat(Affine {
            terms: vec![Term {
                latent: w.to_string(),
                coef: 1.0,
                scale_by: None,
                design: Design::Matrix {
                    data: x.to_string(),
                },
            }],
            offset: 0.0,
            span,
            name: None,
        }))
    }

    fn binary(&mut self, op: BinOp, a: Node, b: Node, e: &ast::Expr, ctx: &ObsCtx) -> Option<Node> {
        use Node::*;
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
                let c = num(&b).unwrap();
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
                let mut x = x.clone();
                for t in &mut x.terms {
                    t.scale_by = Some(d.clone());
                }
                x.name = None;
                return Some(Lat(x));
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
        }))
    }

    /// Whether an affine node's terms can take a per-observation real covariate: no offset, no
    /// covariate yet, and only latents with `normal` priors (the dense block reads a scaled
    /// term through its design rows; a GP keeps the covariate in the formula).
    fn scalable(&self, a: &Affine, covariate: &str) -> bool {
        // A real covariate only (labels and counts are responses, which prediction overwrites
        // in the formula, not in a predictor), and not a named `let` predictor (kept whole).
        let (name, _) = crate::sx::parse_data_column(covariate);
        let real = self
            .model
            .datum(name)
            .is_some_and(|d| d.elem == crate::model::Elem::Real);
        // A bare latent (`w`, `b[g[i]]`) carries its own name; a `let` predictor's is another.
        let unnamed = a
            .name
            .as_ref()
            .is_none_or(|n| self.model.latent(n).is_some());
        real && unnamed
            && a.offset == 0.0
            && a.terms.iter().all(|t| {
                t.scale_by.is_none()
                    && self.model.latents.iter().any(|z| {
                        z.name == t.latent && matches!(z.prior, LatentPrior::Normal { .. })
                    })
            })
    }

    /// Turn a node into a scalar formula, lifting an affine node into a predictor symbol.
    fn lift_node(&mut self, n: Node, ctx: &ObsCtx) -> Option<Sx> {
        let hint = self.span_hint;
        match n {
            Node::Mixed(v, a) => {
                // Keep the predictor's leading sign positive: `y − f − b` reads `y − η`,
                // `η = f + b`.
                if a.terms.first().is_some_and(|t| t.coef < 0.0) {
                    let p = self.lift_node(Node::Lat(a.scale(-1.0)), ctx)?;
                    return Some(Sx::sub(v, p));
                }
                let p = self.lift_node(Node::Lat(a), ctx)?;
                Some(Sx::add(v, p))
            }
            Node::Value(s) => Some(s),
            Node::Lat(a) => {
                // A multiple or shift of one latent reference (`-f[i]`, `2 * f[i] + 1`) keeps
                // the reference as the predictor and the arithmetic in the formula, so that
                // `log σ(f)` and `log σ(-f)` share one predictor (and one Pólya-Gamma variable).
                if a.terms.len() == 1 && (a.terms[0].coef != 1.0 || a.offset != 0.0) {
                    let (c, off) = (a.terms[0].coef, a.offset);
                    let unit = Affine {
                        terms: vec![Term {
                            coef: 1.0,
                            ..a.terms[0].clone()
                        }],
                        offset: 0.0,
                        span: a.span,
                        name: None,
                    };
                    let p = Sx::sym(SymRole::Predictor, &self.lift(unit, &ctx.n));
                    let scaled = if c == 1.0 { p } else { Sx::mul(Sx::num(c), p) };
                    return Some(if off == 0.0 {
                        scaled
                    } else {
                        Sx::add(scaled, Sx::num(off))
                    });
                }
                Some(Sx::sym(SymRole::Predictor, &self.lift(a, &ctx.n)))
            }
            Node::DataRow(_) | Node::DataMatrix(_) | Node::LatVec(..) => None.or_else(|| {
                self.err(
                    SemanticError::new(
                        "gpm::shape_mismatch",
                        "a vector or matrix is used where one value per observation is needed",
                        hint,
                        "not a scalar",
                    )
                    .help("multiply covariates by a latent vector: `X * w` or `dot(X[i], w)`"),
                );
                None
            }),
        }
    }

    /// Register (or reuse) the predictor for an affine combination.
    fn lift(&mut self, a: Affine, n: &Dim) -> String {
        if let Some(p) = self
            .model
            .predictors
            .iter()
            .find(|p| p.terms == a.terms && p.offset == a.offset && &p.len == n)
        {
            return p.name.clone();
        }
        // A bare latent reference `f[i]` is the predictor `f`.
        let unit_name = match a.terms.as_slice() {
            [t] if t.coef == 1.0 && a.offset == 0.0 && t.design == Design::Identity => {
                Some(t.latent.clone())
            }
            _ => None,
        };
        let name = match a.name.or(unit_name) {
            Some(name) if self.model.predictor(&name).is_none() => name,
            _ => loop {
                self.anon += 1;
                let candidate = format!("η{}", self.anon);
                if !self.names.contains_key(&candidate) {
                    break candidate;
                }
            },
        };
        self.model.predictors.push(Predictor {
            name: name.clone(),
            len: n.clone(),
            terms: a.terms,
            offset: a.offset,
            span: a.span,
        });
        name
    }

    // ---------------------------------------------------------------- statements

    fn stmt(&mut self, s: &Stmt, lp: Option<(&str, &Dim)>) {
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

    fn let_stmt(&mut self, name: &ast::Ident, value: &ast::Expr) {
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
    fn vector_len(&self, e: &ast::Expr) -> Option<Dim> {
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

    /// The response of a `~` statement: a datum, whole (vectorised) or at `[i]` (in a loop).
    fn response(&mut self, lhs: &ast::Expr, lp: Option<(&str, &Dim)>) -> Option<(DataVar, Dim)> {
        let (name, span) = match (&lhs.kind, lp) {
            (ExprKind::Var(v), None) => (v.clone(), lhs.span),
            (ExprKind::Index(b, ix), Some((i, _))) => match (&b.kind, ix.as_slice()) {
                (ExprKind::Var(v), [a]) if matches!(&a.kind, ExprKind::Var(j) if j == i) => {
                    (v.clone(), b.span)
                }
                _ => {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_response",
                            "the left of `~` in a loop must be a datum at the loop index",
                            lhs.span,
                            "not `y[i]`",
                        )
                        .help(format!("write `y[{i}] ~ ...`")),
                    );
                    return None;
                }
            },
            (ExprKind::Index(..), None) => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_index",
                        "indexing outside a `for` loop",
                        lhs.span,
                        "no observation index here",
                    )
                    .help("write `y ~ ...` (vectorised) or loop with `for i in 1..N`"),
                );
                return None;
            }
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_response",
                        "the left of `~` must be observed data",
                        lhs.span,
                        "not a datum",
                    )
                    .help("likelihood statements read `y ~ distribution(...)` with `y` in the data block"),
                );
                return None;
            }
        };
        let Some(d) = self.model.datum(&name).cloned() else {
            if self.names.contains_key(&name) {
                let what = match self.names.get(&name).map(|b| &b.0) {
                    Some(Binding::Latent) => {
                        "a latent variable: latents get their prior in the `latent` block"
                    }
                    Some(Binding::Hyper) => {
                        "a hyperparameter: give it a prior in the `hyper` block"
                    }
                    _ => "not observed data",
                };
                self.err(
                    SemanticError::new(
                        "gpm::bad_response",
                        format!("`{name}` is {what}"),
                        span,
                        "not observed data",
                    )
                    .help("the left of `~` in the model block is a datum"),
                );
            } else {
                self.unknown_name(&name, span);
            }
            return None;
        };
        let n = match (&d.shape, lp) {
            (Shape::Vector(n), None) => n.clone(),
            (Shape::Vector(n), Some((_, ln))) => {
                if n != ln {
                    self.err(SemanticError::new(
                        "gpm::shape_mismatch",
                        format!("`{name}` has {n} entries but the loop runs to {ln}"),
                        span,
                        format!("length {n}"),
                    )
.help("loop over the observations of the response: `for i in 1..N` with `y : vector[N]`"));
                    return None;
                }
                n.clone()
            }
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::shape_mismatch",
                        format!("the response `{name}` must be a vector of observations"),
                        span,
                        format!("a {}", d.shape),
                    )
                    .help("declare it as `vector[N]` or `int[N]`"),
                );
                return None;
            }
        };
        Some((d, n))
    }

    fn check_response_kind(
        &mut self,
        d: &DataVar,
        kind: ResponseKind,
        dist: &ast::Call,
    ) -> Option<()> {
        let name = &d.name;
        let bad = |l: &mut Self, msg: String, help: &str| {
            l.err(
                SemanticError::new(
                    "gpm::bad_response",
                    msg,
                    dist.func.span,
                    "this distribution",
                )
                .also(d.span, "declared here")
                .help(help.to_string()),
            );
            None
        };
        match kind {
            ResponseKind::Real => Some(()),
            ResponseKind::Binary => {
                if d.elem != Elem::Int {
                    return bad(
                        self,
                        format!(
                            "`{}` needs integer labels but `{name}` is real",
                            dist.func.name
                        ),
                        "declare `y : int[N] in {0, 1};` or `in {-1, 1}`",
                    );
                }
                match &d.constraint {
                    ValueSet::Set(s) if s == &[0, 1] || s == &[-1, 1] => Some(()),
                    ValueSet::Set(_) => bad(
                        self,
                        format!("`{}` takes labels in {{0, 1}} or {{-1, 1}}", dist.func.name),
                        "change the label set, or recode the labels",
                    ),
                    _ => bad(
                        self,
                        format!("declare which labels `{name}` uses: `{{0, 1}}` or `{{-1, 1}}`"),
                        "add `in {0, 1}` or `in {-1, 1}` to the declaration of the labels",
                    ),
                }
            }
            ResponseKind::Count => {
                if d.elem != Elem::Int {
                    return bad(
                        self,
                        format!("`{}` needs counts but `{name}` is real", dist.func.name),
                        "declare `y : int[N] in 0..;`",
                    );
                }
                Some(())
            }
            ResponseKind::Category => {
                if d.elem != Elem::Int {
                    return bad(
                        self,
                        format!(
                            "`{}` needs class labels but `{name}` is real",
                            dist.func.name
                        ),
                        "declare `y : int[N] in 1..C;`",
                    );
                }
                Some(())
            }
        }
    }

    fn sample(
        &mut self,
        lhs: &ast::Expr,
        dist: &ast::Call,
        modifier: Option<&ast::Call>,
        span: Span,
        lp: Option<(&str, &Dim)>,
    ) {
        let Some(info) = library::distribution(&dist.func.name) else {
            let names = library::DISTRIBUTIONS.iter().map(|d| d.name);
            let help = did_you_mean(&dist.func.name, names).unwrap_or_else(|| {
                format!(
                    "likelihoods: {}; or write any density with `target += ...`",
                    library::DISTRIBUTIONS
                        .iter()
                        .map(|d| d.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
            self.err(
                SemanticError::new(
                    "gpm::unknown_distribution",
                    format!("unknown distribution `{}`", dist.func.name),
                    dist.func.span,
                    "not in the library",
                )
                .help(help),
            );
            return;
        };
        let Some((d, n)) = self.response(lhs, lp) else {
            return;
        };
        if self.check_response_kind(&d, info.response, dist).is_none() {
            return;
        }
        let Some(args) = self.check_args(dist, info.params) else {
            return;
        };
        let ctx = ObsCtx {
            n: n.clone(),
            var: lp.map(|(i, _)| i.to_string()),
        };
        if info.response == ResponseKind::Category {
            self.categorical_library(&d, &args[0], &ctx, span);
            return;
        }
        let mut params = Vec::new();
        for a in &args {
            let Some(node) = self.node(a, &ctx, false) else {
                return;
            };
            self.span_hint = a.span;
            let Some(sx) = self.lift_node(node, &ctx) else {
                return;
            };
            if sx
                .symbols()
                .iter()
                .any(|(r, s)| *r == SymRole::Data && s == &d.name)
            {
                self.err(
                    SemanticError::new(
                        "gpm::response_in_parameter",
                        format!(
                            "the response `{}` appears in its own distribution's parameters",
                            d.name
                        ),
                        a.span,
                        "uses the response",
                    )
                    .help(
                        "write the density as a formula with `target += ...` if this is intended",
                    ),
                );
                return;
            }
            params.push(sx);
        }
        let labels = match &d.constraint {
            ValueSet::Set(s) => Some(s.as_slice()),
            _ => None,
        };
        let y = Sx::sym(SymRole::Data, &d.name);
        let divergence = match modifier {
            Some(m) => match self.robust_divergence(m, &ctx) {
                Some(d) => Some(d),
                None => return,
            },
            None => None,
        };
        let mut log_density = library::log_density(info.name, y, params.clone(), labels);
        let mut observation = None;
        if let (Some(divergence), Some(m)) = (divergence, modifier) {
            match robust::robust_log_density(divergence, info.name, log_density.clone(), &params) {
                Ok(l) => observation = Some(std::mem::replace(&mut log_density, l)),
                Err(message) => {
                    self.err(
                        SemanticError::new("gpm::robust_unavailable", message, m.span, "here")
                            .help(
                                "write the robust loss with `target += ...`, or drop `robust(...)`",
                            ),
                    );
                    return;
                }
            }
        }
        let source = match modifier {
            Some(m) => format!("{} ~ {} {}", lhs, dist, m),
            None => format!("{} ~ {}", lhs, dist),
        };
        let replicate = library::Family::of(info.name, labels).map(|family| Replicate {
            family,
            params: params.clone(),
        });
        self.push_factor(
            FactorForm::LogDensity { log_density },
            n,
            span,
            source,
            Some(d.name.clone()),
            Observed {
                density: observation,
                replicate,
            },
        );
    }

    /// The divergence of a `robust(beta = b)` or `robust(gamma = g)` modifier, its power a
    /// positive constant.
    fn robust_divergence(&mut self, m: &ast::Call, ctx: &ObsCtx) -> Option<robust::Divergence> {
        let bad = |this: &mut Self, message: String, span: Span| {
            this.err(
                SemanticError::new("gpm::bad_robust", message, span, "here").help(
                    "write `y ~ normal(f, s) robust(beta = 0.2);` (the β-divergence) or `robust(gamma = 0.2)` (the γ-divergence), with a positive constant",
                ),
            );
            None
        };
        if m.func.name != "robust" {
            return bad(
                self,
                format!(
                    "unknown modifier `{}` after a distribution (only `robust(...)`)",
                    m.func.name
                ),
                m.func.span,
            );
        }
        let [arg] = m.args.as_slice() else {
            return bad(
                self,
                "`robust` takes one argument, `beta = …` or `gamma = …`".into(),
                m.span,
            );
        };
        let kind: fn(f64) -> robust::Divergence = match arg.name.as_ref().map(|n| n.name.as_str()) {
            Some("beta") => robust::Divergence::Beta,
            Some("gamma") => robust::Divergence::Gamma,
            _ => {
                return bad(
                    self,
                    "`robust` takes `beta = …` or `gamma = …`".into(),
                    m.span,
                )
            }
        };
        let node = self.node(&arg.value, ctx, false)?;
        let sx = self.lift_node(node, ctx)?;
        match sx.eval(&|_, _| None) {
            Some(b) if b > 0.0 && b.is_finite() => Some(kind(b)),
            Some(b) => bad(
                self,
                format!("the divergence's power must be positive, not {b}"),
                arg.value.span,
            ),
            None => bad(
                self,
                "the divergence's power must be a number (a constant expression)".into(),
                arg.value.span,
            ),
        }
    }

    fn categorical_library(&mut self, d: &DataVar, arg: &ast::Expr, ctx: &ObsCtx, span: Span) {
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

    fn push_categorical(
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
                    Affine {
                        terms: vec![Term {
                            latent: z.name.clone(),
                            coef: 1.0,
                            scale_by: None,
                            design: Design::Column { column: k },
                        }],
                        offset: 0.0,
                        span: arg_span,
                        name: None,
                    },
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
            source: format!("{} ~ categorical_logistic_softmax({})", d.name, z.name),
            span,
        });
    }

    /// `target += expr;` (log-density) or `factor(expr);` (density).
    fn formula_factor(
        &mut self,
        e: &ast::Expr,
        span: Span,
        lp: Option<(&str, &Dim)>,
        is_density: bool,
    ) {
        let Some((i, n)) = lp else {
            self.err(
                SemanticError::new(
                    "gpm::formula_outside_loop",
                    "a density formula must be inside a loop over the observations",
                    span,
                    "outside a loop",
                )
                .help("write `for i in 1..N { target += ...; }`"),
            );
            return;
        };
        let ctx = ObsCtx {
            n: n.clone(),
            var: Some(i.to_string()),
        };
        if self.try_categorical_formula(e, &ctx, span, is_density) {
            return;
        }
        let Some(node) = self.node(e, &ctx, false) else {
            return;
        };
        self.span_hint = e.span;
        let Some(sx) = self.lift_node(node, &ctx) else {
            return;
        };
        let log_density = if is_density {
            Sx::call(crate::sx::SxFunc::Log, sx)
        } else {
            sx
        };
        let kw = if is_density { "factor" } else { "target +=" };
        self.push_factor(
            FactorForm::LogDensity { log_density },
            n.clone(),
            span,
            format!("{kw} {e}"),
            None,
            Observed::default(),
        );
    }

    /// `target += log(w(F[i, y[i]])) - log(sum(w(F[i])))` or `factor(w(F[i, y[i]]) / sum(w(F[i])))`.
    fn try_categorical_formula(
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
    fn same_weight(
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

    /// A log-density factor. `response`: the datum of a `~` statement; `None` for a formula,
    /// whose response is taken to be the one observation-indexed datum it reads, if there is
    /// exactly one.
    fn push_factor(
        &mut self,
        form: FactorForm,
        n: Dim,
        span: Span,
        source: String,
        response: Option<String>,
        observed: Observed,
    ) {
        let FactorForm::LogDensity { log_density } = &form else {
            unreachable!()
        };
        let syms = log_density.symbols();
        let predictors: Vec<String> = syms
            .iter()
            .filter(|(r, _)| *r == SymRole::Predictor)
            .map(|(_, s)| s.clone())
            .collect();
        if predictors.is_empty() {
            self.err(
                SemanticError::new(
                    "gpm::no_latent",
                    "this likelihood does not depend on any latent variable",
                    span,
                    "constant in the latents",
                )
                .help("a likelihood term links data to a latent (`f`, `X * w`, ...); priors on hyperparameters go in the `hyper` block"),
            );
            return;
        }
        let data: Vec<String> = syms
            .iter()
            .filter(|(r, s)| {
                *r == SymRole::Data
                    && self
                        .model
                        .datum(s)
                        .is_some_and(|d| d.shape != Shape::Scalar)
            })
            .map(|(_, s)| s.clone())
            .collect();
        let hypers = syms
            .iter()
            .filter(|(r, _)| *r == SymRole::Hyper)
            .map(|(_, s)| s.clone())
            .collect();
        let response = response.or_else(|| match data.as_slice() {
            [only] => Some(only.clone()),
            _ => None,
        });
        self.model.factors.push(Factor {
            n,
            form,
            predictors,
            data,
            response,
            hypers,
            observation: observed.density,
            replicate: observed.replicate,
            source,
            span,
        });
    }

    fn final_checks(&mut self, p: &ast::Program) {
        if self.model.factors.is_empty() {
            let span = p
                .blocks
                .iter()
                .find(|(k, _)| *k == ast::BlockKind::Model)
                .map(|b| b.1)
                .unwrap_or_default();
            self.err(
                SemanticError::new(
                    "gpm::no_likelihood",
                    "the model has no likelihood statement",
                    span,
                    "no `~`, `target +=` or `factor` here",
                )
                .help("add e.g. `y ~ bernoulli_logit(f);` to the model block"),
            );
        }
        // Every latent must be reached by some predictor: an unused latent has no posterior
        // beyond its prior and is almost always a typo.
        let mut used: Vec<&str> = self
            .model
            .predictors
            .iter()
            .filter(|p| {
                self.model
                    .factors
                    .iter()
                    .any(|f| f.predictors.contains(&p.name))
            })
            .flat_map(|p| p.terms.iter().map(|t| t.latent.as_str()))
            .collect();
        for f in &self.model.factors {
            if let FactorForm::Categorical { latent, .. } = &f.form {
                used.push(latent);
            }
        }
        let unused: Vec<(String, Span)> = self
            .model
            .latents
            .iter()
            .filter(|z| !used.contains(&z.name.as_str()))
            .map(|z| (z.name.clone(), z.span))
            .collect();
        for (name, span) in unused {
            self.err(
                SemanticError::new(
                    "gpm::unused_latent",
                    format!("the latent `{name}` is not used by any likelihood"),
                    span,
                    "unused",
                )
                .help("use it in the model block or remove it"),
            );
        }
    }
}

fn block_name(k: ast::BlockKind) -> &'static str {
    match k {
        ast::BlockKind::Data => "data",
        ast::BlockKind::Hyper => "hyper",
        ast::BlockKind::Latent => "latent",
        ast::BlockKind::Model => "model",
    }
}

/// Whether an expression is (syntactically) a kernel: it contains a kernel call.
fn is_kernel_expr(e: &ast::Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let ExprKind::Call(c) = &x.kind {
            found |= library::KERNELS.iter().any(|k| k.0 == c.func.name);
        }
    });
    found
}

/// Replace `F[i]` (row, when `label` is None) or `F[i, label[i]]` by the class symbol.
fn replace_index(e: &ast::Expr, f: &str, i: &str, label: Option<&str>, sym: &str) -> ast::Expr {
    let is_i = |x: &ast::Expr| matches!(&x.kind, ExprKind::Var(j) if j == i);
    let hit = match &e.kind {
        ExprKind::Index(b, ix) => match (&b.kind, ix.as_slice(), label) {
            (ExprKind::Var(v), [a], None) => v == f && is_i(a),
            (ExprKind::Var(v), [a, c], Some(l)) => {
                v == f
                    && is_i(a)
                    && matches!(&c.kind, ExprKind::Index(lb, li)
                        if matches!(&lb.kind, ExprKind::Var(x) if x == l)
                        && li.len() == 1 && is_i(&li[0]))
            }
            _ => false,
        },
        _ => false,
    };
    if hit {
        return ast::Expr {
            kind: ExprKind::Var(sym.to_string()),
            span: Span::default(),
        };
    }
    let r = |x: &ast::Expr| replace_index(x, f, i, label, sym);
    let kind = match &e.kind {
        ExprKind::Num { .. } | ExprKind::Var(_) => e.kind.clone(),
        ExprKind::Neg(a) => ExprKind::Neg(Box::new(r(a))),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(*op, Box::new(r(a)), Box::new(r(b))),
        ExprKind::Call(c) => ExprKind::Call(ast::Call {
            func: c.func.clone(),
            args: c
                .args
                .iter()
                .map(|a| ast::Arg {
                    name: a.name.clone(),
                    value: r(&a.value),
                })
                .collect(),
            span: Span::default(),
        }),
        ExprKind::Index(b, ix) => ExprKind::Index(Box::new(r(b)), ix.iter().map(r).collect()),
    };
    ast::Expr {
        kind,
        span: Span::default(),
    }
}
