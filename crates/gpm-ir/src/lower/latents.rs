//! The `latent` block: Gaussian priors (GP or independent normals) and their parameters.

use super::*;

impl Lowerer {
    /// `flat()`: no arguments, on a scalar or vector latent.
    fn flat_latent(&mut self, z: &ast::LatentDecl, shape: Option<&Shape>) -> Option<LatentPrior> {
        if !z.prior.args.is_empty() {
            self.wrong_arity(&z.prior, 0, 0);
            return None;
        }
        if let Some(Shape::Matrix(..)) = shape {
            self.err(
                SemanticError::new(
                    "gpm::bad_latent_type",
                    "a flat prior is for a scalar or a vector of coefficients",
                    z.ty.span,
                    "a matrix",
                )
                .help("give a matrix latent a `gp` prior, or write one vector per column"),
            );
            return None;
        }
        Some(LatentPrior::Flat)
    }

    pub(super) fn latent_decl(&mut self, z: &ast::LatentDecl) {
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
        let mut heavy = None;
        let prior = match z.prior.func.name.as_str() {
            "gp" => self.gp_prior(&z.prior, shape.as_ref(), &z.name.name),
            "normal" => self.normal_latent(&z.prior, shape.as_ref()),
            "flat" => self.flat_latent(z, shape.as_ref()),
            name if super::heavy_tailed::is_heavy_tailed(name) => {
                heavy = self.heavy_tailed_latent(z, shape.as_ref());
                heavy.as_ref().map(|_| LatentPrior::Flat)
            }
            other => {
                let heavy_names = super::heavy_tailed::HEAVY_TAILED.iter().map(|h| h.name);
                let help = did_you_mean(
                    other,
                    ["gp", "normal", "flat"].into_iter().chain(heavy_names),
                );
                let mixtures: Vec<String> = super::heavy_tailed::HEAVY_TAILED
                    .iter()
                    .map(|h| format!("`{}({})`", h.name, h.params.join(", ")))
                    .collect();
                self.err(
                    SemanticError::new(
                        "gpm::unknown_distribution",
                        format!("unknown latent prior `{other}`"),
                        z.prior.func.span,
                        "not a Gaussian prior",
                    )
                    .help("see docs/language.md")
                    .help(help.unwrap_or_else(|| {
                        format!(
                            "latent priors: `gp(X, kernel)`, `normal(mean, scale)`, the improper `flat()`, and the Gaussian scale mixtures {}",
                            mixtures.join(", ")
                        )
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
            if let Some((density, params)) = heavy {
                self.prior_factor(z, density, params);
            }
        }
    }

    /// `normal(mean, scale)`: a mean and a positive scale, each a parameter or (for a vector)
    /// data read entry by entry.
    fn normal_latent(&mut self, c: &ast::Call, shape: Option<&Shape>) -> Option<LatentPrior> {
        let args = self.check_args(c, &["mean", "scale"]);
        args.and_then(|a| {
            let mean = self.normal_param(&a[0], "the mean of a latent block", shape);
            let scale = self.normal_param(&a[1], "the scale of a latent block", shape);
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

    /// `adaptive(rho, max)` (by position or name): ρ in (0, 1), `max` a positive integer.
    fn adaptive_inducing(&mut self, c: &ast::Call) -> Option<Inducing> {
        let args = self.check_args(c, &["rho", "max"])?;
        let rho = self.constant(&args[0], "the acceptance threshold ρ")?;
        let max = self.constant(&args[1], "the largest number of inducing points")?;
        let bad = if !(rho > 0.0 && rho < 1.0) {
            Some((
                args[0].span,
                "`rho` is a kernel correlation threshold strictly between 0 and 1",
            ))
        } else if !(max >= 1.0 && max.fract() == 0.0) {
            Some((
                args[1].span,
                "`max` is a positive whole number of inducing points",
            ))
        } else {
            None
        };
        if let Some((span, message)) = bad {
            self.err(
                SemanticError::new("gpm::bad_parameter", message, span, "out of range")
                    .help("`inducing = adaptive(rho = 0.8, max = 200)`: a row becomes an inducing point when its kernel correlation with every current one is below rho (thesis Appendix A)"),
            );
            return None;
        }
        Some(Inducing::Adaptive {
            rho,
            max: max as usize,
        })
    }

    pub(super) fn gp_prior(
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
        let GpOptions {
            mean,
            mut inducing,
            inducing_points,
            alpha,
        } = self.gp_options(c)?;
        let (inputs, dims) = self.gp_inputs(&positional[0].value, shape, name, c.span)?;
        if let Some((z, span)) = inducing_points {
            inducing = Some(self.inducing_inputs(z, span, &inputs, &dims)?);
        }
        let kernel = self.kernel(&positional[1].value, &dims)?;
        if let (Some((_, span)), None) = (alpha, &inducing) {
            self.err(
                SemanticError::new(
                    "gpm::bad_parameter",
                    "`alpha` is the power of a sparse GP's Power-EP approximation",
                    span,
                    "no inducing points",
                )
                .help("add `inducing = M` (a full GP is exact: it has no α)"),
            );
            return None;
        }
        Some(LatentPrior::Gp {
            inputs,
            kernel,
            mean,
            inducing,
            alpha: alpha.map_or(1.0, |a| a.0),
        })
    }

    /// A `gp`'s named arguments: `mean`, `inducing` (a count, `adaptive(...)` or a data matrix
    /// of points) and `alpha`.
    fn gp_options(&mut self, c: &ast::Call) -> Option<GpOptions> {
        let mut mean = Sx::num(0.0);
        let mut inducing = None;
        let mut inducing_points: Option<(String, Span)> = None;
        let mut alpha = None;
        for (a, n) in c
            .args
            .iter()
            .filter_map(|a| a.name.as_ref().map(|n| (a, n)))
        {
            match n.name.as_str() {
                "mean" => mean = self.param(&a.value, "the mean of a GP")?,
                "inducing" if matches!(&a.value.kind, ExprKind::Var(v) if self.model.datum(v).is_some_and(|d| !matches!(d.shape, Shape::Scalar))) =>
                {
                    let ExprKind::Var(z) = &a.value.kind else {
                        unreachable!()
                    };
                    inducing_points = Some((z.clone(), a.value.span));
                }
                "inducing" if matches!(&a.value.kind, ExprKind::Call(c) if c.func.name == "adaptive") =>
                {
                    let ExprKind::Call(c) = &a.value.kind else {
                        unreachable!()
                    };
                    inducing = Some(self.adaptive_inducing(c)?);
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
                "alpha" => {
                    let v = self.constant(&a.value, "the Power-EP power α")?;
                    if !(0.0..=1.0).contains(&v) {
                        self.err(
                            SemanticError::new(
                                "gpm::bad_parameter",
                                format!("`alpha` = {v} is outside [0, 1]"),
                                a.value.span,
                                "not in [0, 1]",
                            )
                            .help("α = 1 is FITC (the default), α = 0 Titsias' variational posterior (thesis §7.5)"),
                        );
                        return None;
                    }
                    alpha = Some((v, a.value.span));
                }
                other => {
                    self.err(
                        SemanticError::new(
                            "gpm::unknown_argument",
                            format!("`gp` has no argument `{other}`"),
                            n.span,
                            "unknown argument",
                        )
                        .help("`gp(X, kernel, mean = m, inducing = M, alpha = 1.0)`"),
                    );
                    return None;
                }
            }
        }
        Some(GpOptions {
            mean,
            inducing,
            inducing_points,
            alpha,
        })
    }

    /// A `gp`'s inputs: a data vector or matrix with one row per entry of the latent `name`
    /// (of `shape`); its name and number of columns.
    fn gp_inputs(
        &mut self,
        inputs_e: &ast::Expr,
        shape: Option<&Shape>,
        name: &str,
        call_span: Span,
    ) -> Option<(String, Dim)> {
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
                        call_span,
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
        Some((inputs.clone(), dims))
    }

    /// `inducing = Z`: inducing inputs given as data, with as many columns as the inputs.
    fn inducing_inputs(
        &mut self,
        z: String,
        span: Span,
        inputs: &str,
        dims: &Dim,
    ) -> Option<Inducing> {
        let zd = self.model.datum(&z).cloned()?;
        let zdims = match &zd.shape {
            Shape::Matrix(_, c) => c.clone(),
            _ => Dim::Const(1),
        };
        if zdims != *dims {
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
        Some(Inducing::Points(z))
    }

    /// A scalar parameter: constants, scalar hyperparameters and arithmetic/math on them.
    /// A `normal` prior's mean or scale: a parameter, or for a vector latent also an
    /// expression of data vectors as long as the latent, read entry by entry
    /// (`w : vector[M] ~ normal(0, sdgp * sqrt(spd))`, the brms approximate GP).
    fn normal_param(&mut self, e: &ast::Expr, what: &str, shape: Option<&Shape>) -> Option<Sx> {
        // A `real` latent's prior may read scalar data (Stan's `alpha ~ normal(pmualpha,
        // psalpha)`), a vector latent's data vectors as long as itself.
        let n = match shape {
            Some(Shape::Vector(n)) => n.clone(),
            Some(Shape::Scalar) => Dim::Const(1),
            _ => return self.param(e, what),
        };
        let ctx = ObsCtx { n, var: None };
        match self.node(e, &ctx, false)? {
            Node::Value(sx) if !sx.has_role(SymRole::Predictor) => Some(sx),
            _ => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_parameter",
                        format!("{what} must be built from constants, scalar hyperparameters, scalar data and data vectors as long as the latent"),
                        e.span,
                        "not a parameter",
                    )
                    .help("compute per-coordinate values in the data block (`let spd = ...;`) and write e.g. `normal(0, s * sqrt(spd))`"),
                );
                None
            }
        }
    }

    pub(super) fn param(&mut self, e: &ast::Expr, what: &str) -> Option<Sx> {
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
}

/// A `gp` prior's named arguments, as written.
struct GpOptions {
    mean: Sx,
    inducing: Option<Inducing>,
    /// `inducing = Z`: the data matrix of points and where it is written.
    inducing_points: Option<(String, Span)>,
    /// `alpha = a` and where it is written.
    alpha: Option<(f64, Span)>,
}
