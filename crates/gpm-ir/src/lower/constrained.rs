//! Parameters checked against their registry's [`Constraint`] (issue 51): a literal by its
//! value; a hyperparameter written as the parameter by every value it can take — its fixed
//! value, its declared range when learned, its prior's support cut to the range when sampled —
//! so that `normal(mu, s)` with `s : real ~ normal(0, 1)` is refused here rather than run with a
//! negative scale; an expression of literals and hyperparameters (`nu - 5`, `1 / s`) by its
//! range over theirs, by interval arithmetic ([`crate::interval`]). An expression that reads data or
//! latents, or a function interval arithmetic does not follow, is checked when it is evaluated.

use super::*;
use gpm_library::Constraint;

impl Lowerer {
    /// A parameter that must be positive (a kernel variance, a lengthscale, a prior's scale).
    pub(super) fn positive_param(&mut self, e: &ast::Expr, what: &str) -> Option<Sx> {
        self.constrained_param(e, what, Constraint::Positive)
    }

    /// A scalar parameter (constants and scalar hyperparameters) within `c`.
    pub(super) fn constrained_param(
        &mut self,
        e: &ast::Expr,
        what: &str,
        c: Constraint,
    ) -> Option<Sx> {
        let p = self.param(e, what)?;
        self.check_constraint(&p, e.span, what, c)?;
        Some(p)
    }

    /// A likelihood's parameters against its row's constraints, every one checked (each error
    /// reported) before the answer.
    pub(super) fn check_likelihood_params(
        &mut self,
        info: gpm_library::LikelihoodRef,
        params: &[Sx],
        args: &[ast::Expr],
    ) -> Option<()> {
        let checked: Vec<Option<()>> = (params.iter().zip(args))
            .zip(info.params().iter().zip(info.constraints()))
            .map(|((p, a), (name, c))| {
                let what = format!("the `{name}` of `{}`", info.name());
                self.check_constraint(p, a.span, &what, *c)
            })
            .collect();
        checked.into_iter().collect::<Option<Vec<()>>>().map(|_| ())
    }

    /// `Some(())` when every value `p` can take is within `c`; an error naming the value or
    /// the hyperparameter's range, and what to declare, when not.
    pub(super) fn check_constraint(
        &mut self,
        p: &Sx,
        span: Span,
        what: &str,
        c: Constraint,
    ) -> Option<()> {
        let must = c.describe();
        match p {
            Sx::Num(v) if !c.contains(*v) => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_parameter",
                        format!("{what} must be {must}, not {v}"),
                        span,
                        format!("must be {must}"),
                    )
                    .help(format!("write a value that is {must}")),
                );
                None
            }
            Sx::Sym(SymRole::Hyper, name) => {
                // Every hyperparameter symbol names a declared hyperparameter; were one not
                // to, there would be nothing to check (never a silently dropped statement).
                let Some(h) = self.model.hyper(name).cloned() else {
                    return Some(());
                };
                let (ok, can_be) = hyper_values(&h, c);
                if ok {
                    return Some(());
                }
                let declare = c.declaration().map_or_else(String::new, |d| {
                    format!("declare `{name} : real {d}` (with a prior or value inside it)")
                });
                self.err(
                    SemanticError::new(
                        "gpm::bad_parameter",
                        format!("{what} must be {must}, but `{name}` {can_be}"),
                        span,
                        format!("must be {must}"),
                    )
                    .also(h.span, "declared here")
                    .help(declare),
                );
                None
            }
            Sx::Num(_) | Sx::Sym(..) => Some(()),
            _ => self.check_expression(p, span, what, c),
        }
    }

    /// An expression of literals and hyperparameters: refused when its range over theirs
    /// reaches outside `c`, naming each hyperparameter's range.
    fn check_expression(&mut self, p: &Sx, span: Span, what: &str, c: Constraint) -> Option<()> {
        let model = &self.model;
        let hypers = |role: SymRole, name: &str| match role {
            SymRole::Hyper => model.hyper(name).map(crate::interval::hyper_range),
            _ => None,
        };
        let Some((lo, hi)) = crate::interval::range(p, &hypers) else {
            return Some(());
        };
        if c.admits_range(Some(lo), Some(hi)) {
            return Some(());
        }
        let must = c.describe();
        let mut named: Vec<String> = Vec::new();
        for name in p.hypers() {
            if let Some(h) = self.model.hyper(&name) {
                let line = format!("`{name}` {}", hyper_values(h, c).1);
                if !named.contains(&line) {
                    named.push(line);
                }
            }
        }
        let over = if named.is_empty() {
            String::new()
        } else {
            format!(" when {}", named.join(" and "))
        };
        self.err(
            SemanticError::new(
                "gpm::bad_parameter",
                format!(
                    "{what} must be {must}, but `{p}` {}{over}",
                    crate::interval::spread((lo, hi))
                ),
                span,
                format!("must be {must}"),
            )
            .help(format!(
                "give the hyperparameters ranges, priors or values that keep `{p}` {must}"
            )),
        );
        None
    }
}

/// Whether every value hyperparameter `h` can take is within `c`, and what it can be (for
/// the message when not).
fn hyper_values(h: &Hyper, c: Constraint) -> (bool, String) {
    // The values it can take: its fixed value, its range when learned, its prior's support.
    let (lo, hi) = crate::interval::hyper_range(h);
    let end = |v: f64, inf: &str| {
        if v.is_finite() {
            v.to_string()
        } else {
            inf.to_string()
        }
    };
    let over = format!("({}, {})", end(lo, "−∞"), end(hi, "∞"));
    let admitted = c.admits_range(Some(lo), Some(hi));
    match &h.kind {
        // A value outside its own declared range is that declaration's error, reported there.
        HyperKind::Fixed { value } => {
            let declared =
                h.lower.is_none_or(|lo| *value >= lo) && h.upper.is_none_or(|hi| *value <= hi);
            (
                c.contains(*value) || !declared,
                format!("is fixed at {value}"),
            )
        }
        HyperKind::Learn { .. } => (admitted, format!("is learned over {over}")),
        HyperKind::Prior { prior } => (
            admitted,
            format!("has a `{}` prior over {over}", prior.family()),
        ),
    }
}
