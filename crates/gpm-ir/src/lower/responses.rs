//! Sampling statements `y ~ dist(...)`: the response, its kind against the distribution, the library density as a formula, robust losses.

use super::*;

impl Lowerer {
    /// The response of a `~` statement: a datum, whole (vectorised) or at `[i]` (in a loop).
    pub(super) fn response(
        &mut self,
        lhs: &ast::Expr,
        lp: Option<(&str, &Dim)>,
    ) -> Option<(DataVar, Dim)> {
        let (name, span) = self.response_name(lhs, lp)?;
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

    /// The name the left of `~` reads, and where: `y` (vectorised) or `y[i]` in a loop over `i`.
    fn response_name(
        &mut self,
        lhs: &ast::Expr,
        lp: Option<(&str, &Dim)>,
    ) -> Option<(String, Span)> {
        Some(match (&lhs.kind, lp) {
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
        })
    }

    pub(super) fn check_response_kind(
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
            // A positive response is checked value by value when the data are read.
            ResponseKind::Real | ResponseKind::Positive => Some(()),
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

    pub(super) fn sample(
        &mut self,
        lhs: &ast::Expr,
        dist: &ast::Call,
        modifier: Option<&ast::Call>,
        span: Span,
        lp: Option<(&str, &Dim)>,
    ) {
        if self.prior_in_model_block(lhs, dist) {
            return;
        }
        let Some(info) = self.likelihood(dist) else {
            return;
        };
        let Some((d, n)) = self.response(lhs, lp) else {
            return;
        };
        if self
            .check_response_kind(&d, info.response(), dist)
            .is_none()
        {
            return;
        }
        let (options, dist) = split_options(info, dist);
        let Some(args) = self.check_args(&dist, info.params()) else {
            return;
        };
        let ctx = ObsCtx {
            n: n.clone(),
            var: lp.map(|(i, _)| i.to_string()),
        };
        if info.response() == ResponseKind::Category {
            self.categorical_library(&d, &args[0], &options, &ctx, span);
            return;
        }
        let Some(params) = self.likelihood_params(&args, &d, &ctx) else {
            return;
        };
        if self.check_likelihood_params(info, &params, &args).is_none() {
            return;
        }
        if let Some(t) = info.trials() {
            if self
                .check_trials(info.name(), &params[t], &args[t])
                .is_none()
            {
                return;
            }
        }
        let labels = match &d.constraint {
            ValueSet::Set(s) => Some(s.as_slice()),
            _ => None,
        };
        let y = Sx::sym(SymRole::Data, &d.name);
        let Some(log_density) = library::log_density(info.0, y, &params, labels) else {
            unreachable!("only the categorical likelihood is structural")
        };
        let Some((log_density, observation)) =
            self.robust(modifier, &ctx, info, log_density, &params)
        else {
            return;
        };
        let source = match modifier {
            Some(m) => format!("{} ~ {} {}", lhs, dist, m),
            None => format!("{} ~ {}", lhs, dist),
        };
        let replicate = Some(Replicate {
            likelihood: info,
            labels: labels.map(<[i64]>::to_vec),
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

    /// With `robust(...)`: the robust loss in place of the log-density, and the log-density kept
    /// as the observation's (prediction scores it); without, the log-density as it is.
    fn robust(
        &mut self,
        modifier: Option<&ast::Call>,
        ctx: &ObsCtx,
        info: likelihoods::LikelihoodRef,
        log_density: Sx,
        params: &[Sx],
    ) -> Option<(Sx, Option<Sx>)> {
        let Some(m) = modifier else {
            return Some((log_density, None));
        };
        let divergence = self.robust_divergence(m, ctx)?;
        match robust::robust_log_density(divergence, info.0, log_density.clone(), params) {
            Ok(l) => Some((l, Some(log_density))),
            Err(message) => {
                self.err(
                    SemanticError::new("gpm::robust_unavailable", message, m.span, "here")
                        .help("write the robust loss with `target += ...`, or drop `robust(...)`"),
                );
                None
            }
        }
    }

    /// `sigma ~ cauchy(0, 2.5);` in the model block: a prior, which `.gpm` writes in the
    /// declaration — an error saying so (true when reported).
    fn prior_in_model_block(&mut self, lhs: &ast::Expr, dist: &ast::Call) -> bool {
        if let ExprKind::Var(v) = &lhs.kind {
            let role = match self.names.get(v).map(|(b, _)| b) {
                Some(Binding::Hyper) => Some(("hyperparameter", "hyper", "real in 0..")),
                Some(Binding::Latent) => Some(("latent", "latent", "vector[K]")),
                _ => None,
            };
            if let Some((what, block, ty)) = role {
                self.err(
                    SemanticError::new(
                        "gpm::bad_response",
                        format!("`{v}` is a {what}: its prior is written in its declaration, not in the model block"),
                        lhs.span,
                        "not observed data",
                    )
                    .help(format!(
                        "write `{v} : {ty} ~ {dist};` in the `{block}` block (a Stan program runs as it is from a `.stan` file: docs/stan_models.md)"
                    )),
                );
                return true;
            }
        }
        false
    }

    /// The library likelihood `dist` names, or an error with the name meant (a Stan
    /// distribution's `.gpm` name, a near miss, or the list).
    fn likelihood(&mut self, dist: &ast::Call) -> Option<likelihoods::LikelihoodRef> {
        let info = likelihoods::lookup(&dist.func.name);
        if info.is_none() {
            let names = likelihoods::LIKELIHOODS.iter().map(|d| d.name());
            let stan = super::stan_names::distribution(&dist.func.name).map(str::to_string);
            let help = stan
                .or_else(|| did_you_mean(&dist.func.name, names))
                .unwrap_or_else(|| {
                    format!(
                        "likelihoods: {}; or write any density with `target += ...`",
                        likelihoods::LIKELIHOODS
                            .iter()
                            .map(|d| d.name())
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
        }
        info
    }

    /// A likelihood's arguments lifted at the observation; none may read the response `d`.
    fn likelihood_params(
        &mut self,
        args: &[ast::Expr],
        d: &DataVar,
        ctx: &ObsCtx,
    ) -> Option<Vec<Sx>> {
        let mut params = Vec::new();
        for a in args {
            let node = self.node(a, ctx, false)?;
            self.span_hint = a.span;
            let sx = self.lift_node(node, ctx)?;
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
                return None;
            }
            params.push(sx);
        }
        Some(params)
    }

    /// A binomial's number of trials is a count known before sampling: a non-negative integer
    /// literal or integer data (whether each response is at most its trials is checked on the
    /// data, `gpmc::data`).
    fn check_trials(&mut self, name: &str, trials: &Sx, arg: &ast::Expr) -> Option<()> {
        let refuse = |l: &mut Self, msg: String| {
            l.err(
                SemanticError::new("gpm::bad_parameter", msg, arg.span, "the number of trials")
                    .help(
                    "write a whole number such as `10`, or an `int` datum such as `n` or `n[i]`",
                ),
            );
            None
        };
        if let Sx::Num(x) = trials {
            if !(x.fract() == 0.0 && *x >= 0.0 && x.is_finite()) {
                return refuse(
                    self,
                    format!("the number of trials of `{name}` must be a whole number ≥ 0, not {x}"),
                );
            }
            return Some(());
        }
        // One integer datum (whole, or at the observation): what the data check compares each
        // count with. Arithmetic on data belongs in a data `let`, checked the same way.
        match trials {
            // An `int` datum, or a transformed one (a `let`, real-typed: whether each value is a
            // whole number is checked on the data).
            Sx::Sym(SymRole::Data, datum)
                if self
                    .model
                    .datum(datum)
                    .is_some_and(|d| d.elem == Elem::Int || d.derived.is_some()) =>
            {
                Some(())
            }
            Sx::Sym(_, datum) => refuse(
                self,
                format!("the number of trials of `{name}` reads `{datum}`, which is not integer data"),
            ),
            _ => refuse(
                self,
                format!("the number of trials of `{name}` is an expression: give it as a whole number or an `int` datum (compute it in the data block with `let` if need be)"),
            ),
        }
    }

    /// The divergence of a `robust(beta = b)` or `robust(gamma = g)` modifier, its power a
    /// positive constant.
    pub(super) fn robust_divergence(
        &mut self,
        m: &ast::Call,
        ctx: &ObsCtx,
    ) -> Option<robust::Divergence> {
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
}

/// The logistic-softmax's options (`link`, `scale`), which are not parameters of its density,
/// and the call without them; any other likelihood's call as it is.
fn split_options(
    info: likelihoods::LikelihoodRef,
    dist: &ast::Call,
) -> (Vec<ast::Arg>, std::borrow::Cow<'_, ast::Call>) {
    if info.response() != ResponseKind::Category {
        return (vec![], std::borrow::Cow::Borrowed(dist));
    }
    let (options, rest): (Vec<ast::Arg>, Vec<ast::Arg>) =
        dist.args.iter().cloned().partition(|a| {
            a.name
                .as_ref()
                .is_some_and(|n| super::categorical::CATEGORICAL_OPTIONS.contains(&n.name.as_str()))
        });
    (
        options,
        std::borrow::Cow::Owned(ast::Call {
            args: rest,
            ..dist.clone()
        }),
    )
}
