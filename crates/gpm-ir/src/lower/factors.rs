//! Assembling likelihood factors from formulas, and the checks made once the whole program is lowered.

use super::*;

impl Lowerer {
    /// `target += expr;` (log-density) or `factor(expr);` (density).
    pub(super) fn formula_factor(
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

    /// A log-density factor. `response`: the datum of a `~` statement; `None` for a formula,
    /// whose response is taken to be the one observation-indexed datum it reads, if there is
    /// exactly one.
    pub(super) fn push_factor(
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
            prior_of: None,
            source,
            span,
        });
    }

    pub(super) fn final_checks(&mut self, p: &ast::Program) {
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
