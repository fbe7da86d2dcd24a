//! The `hyper` block: each hyperparameter's shape, declared range and value (fixed, `learn`, or a prior from `gpm_library`, truncated to the range).

use super::*;

impl Lowerer {
    pub(super) fn hyper_decl(&mut self, h: &ast::HyperDecl) {
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

    pub(super) fn hyper_prior(&mut self, c: &ast::Call) -> Option<PriorDist> {
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
}
