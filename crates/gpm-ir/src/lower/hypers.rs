//! The `hyper` block: each hyperparameter's shape, declared range `in lo..hi` and value — fixed,
//! `learn`ed, or a prior from the library (`gpm_library::HYPER_PRIORS`), truncated to the declared
//! range as in Stan.

use super::*;
use gpm_library::{HyperPrior, PriorError, HYPER_PRIORS};

/// The narrowest range, relative to the size of its ends, a sampled or learned hyperparameter
/// may have: about 4.5·10⁶ doubles across, so that the unconstrained scale still resolves it.
const NARROWEST_RANGE: f64 = 1e-9;

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
        let (lower, upper) = self.hyper_range(h);
        let kind = match &h.spec {
            ast::HyperSpec::Fixed(e) => self
                .constant(e, "a fixed hyperparameter")
                .map(|value| HyperKind::Fixed { value }),
            ast::HyperSpec::Learn(e) => self.learn(h, e, upper),
            ast::HyperSpec::Prior(c) => self
                .hyper_prior(c, (lower, upper), h)
                .map(|prior| HyperKind::Prior { prior }),
        };
        if let Some(HyperKind::Fixed { value: v } | HyperKind::Learn { init: v }) = &kind {
            self.check_in_range(h, *v, lower, upper);
        }
        if !matches!(kind, Some(HyperKind::Fixed { .. })) {
            self.check_sampleable_range(h, lower, upper);
        }
        if !self.declare(&h.name, Binding::Hyper) {
            return;
        }
        if let (Some(shape), Some(kind)) = (shape, kind) {
            self.model.hypers.push(Hyper {
                name: h.name.name.clone(),
                shape,
                lower,
                upper,
                kind,
                span: h.span,
            });
        }
    }

    /// Refuse a range a sampler or an optimiser cannot move in: both ends finite and closer
    /// than [`NARROWEST_RANGE`] of their size (a range one ulp wide made the slice step spin).
    fn check_sampleable_range(&mut self, h: &ast::HyperDecl, lo: Option<f64>, hi: Option<f64>) {
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return;
        };
        let size = lo.abs().max(hi.abs());
        if hi - lo > NARROWEST_RANGE * size {
            return;
        }
        self.err(
            SemanticError::new(
                "gpm::bad_constraint",
                format!(
                    "the range {lo}..{hi} of `{}` is too narrow to sample or learn in (width {:e})",
                    h.name.name,
                    hi - lo
                ),
                h.constraint.as_ref().map_or(h.span, |c| c.span),
                "too narrow",
            )
            .help(format!(
                "fix the value instead: `{} : real = {lo};`, or widen the range",
                h.name.name
            )),
        );
    }

    /// The declared range `in lo..hi` as constants.
    fn hyper_range(&mut self, h: &ast::HyperDecl) -> (Option<f64>, Option<f64>) {
        let constant = |b: &Option<Bound>| match b {
            Some(Bound::Const(v)) => Ok(Some(*v)),
            None => Ok(None),
            Some(Bound::Var(_)) => Err(()),
        };
        match self.value_set(&h.constraint, Elem::Real) {
            ValueSet::Any => (None, None),
            ValueSet::Range { lo, hi } => match (constant(&lo), constant(&hi)) {
                (Ok(lo), Ok(hi)) => (lo, hi),
                _ => {
                    self.err(
                        SemanticError::new(
                            "gpm::bad_constraint",
                            "a hyperparameter's range bounds must be numbers",
                            h.constraint.as_ref().map_or(h.span, |c| c.span),
                            "bound is a datum",
                        )
                        .help("write numbers, e.g. `in 0..` or `in 0..1`"),
                    );
                    (None, None)
                }
            },
            ValueSet::Set(_) => {
                self.err(
                    SemanticError::new(
                        "gpm::bad_constraint",
                        "a hyperparameter's constraint must be a numeric range like `in 0..`",
                        h.constraint.as_ref().map_or(h.span, |c| c.span),
                        "unsupported constraint",
                    )
                    .help("write a range, e.g. `in 0..` or `in 0..1`"),
                );
                (None, None)
            }
        }
    }

    fn learn(
        &mut self,
        h: &ast::HyperDecl,
        e: &ast::Expr,
        upper: Option<f64>,
    ) -> Option<HyperKind> {
        let init = self.constant(e, "the initial value of `learn`")?;
        if upper.is_some() {
            // Type-II ML optimises log θ: nothing would keep it below the bound.
            self.err(
                SemanticError::new(
                    "gpm::bad_constraint",
                    "a `learn`ed hyperparameter cannot have an upper bound",
                    h.constraint.as_ref().map_or(h.span, |c| c.span),
                    "upper bound",
                )
                .help(format!(
                    "type-II maximum likelihood optimises the logarithm of a positive scale: write `in 0..`, or give `{}` a prior on its range (`~ uniform(lo, hi)`) to sample it there",
                    h.name.name
                )),
            );
            return None;
        }
        if init > 0.0 {
            return Some(HyperKind::Learn { init });
        }
        self.err(
            SemanticError::new(
                "gpm::bad_parameter",
                format!(
                    "`learn` starts at {init}, but learned hyperparameters are positive scales"
                ),
                e.span,
                "must be > 0",
            )
            .help("type-II maximum likelihood optimises the logarithm: start at a positive value"),
        );
        None
    }

    fn check_in_range(&mut self, h: &ast::HyperDecl, v: f64, lo: Option<f64>, hi: Option<f64>) {
        let (side, bound) = match (lo, hi) {
            (Some(lo), _) if v < lo => ("below its lower", lo),
            (_, Some(hi)) if v > hi => ("above its upper", hi),
            _ => return,
        };
        let span = match &h.spec {
            ast::HyperSpec::Fixed(e) | ast::HyperSpec::Learn(e) => e.span,
            ast::HyperSpec::Prior(c) => c.span,
        };
        self.err(
            SemanticError::new(
                "gpm::constraint_violated",
                format!("the value {v} of `{}` is {side} bound {bound}", h.name.name),
                span,
                "violates the constraint",
            )
            .help("choose a value inside the declared range")
            .also(
                h.constraint
                    .as_ref()
                    .expect("a range violation has a constraint")
                    .span,
                "constraint",
            ),
        );
    }

    /// A library prior with constant parameters, truncated to the declared range.
    fn hyper_prior(
        &mut self,
        c: &ast::Call,
        range: (Option<f64>, Option<f64>),
        h: &ast::HyperDecl,
    ) -> Option<HyperPrior> {
        let Some(law) = gpm_library::hyperprior::lookup(&c.func.name) else {
            let names = HYPER_PRIORS.iter().map(|l| l.name());
            let help = did_you_mean(&c.func.name, names.clone());
            let all: Vec<&str> = names.collect();
            let mut e = SemanticError::new(
                "gpm::unknown_distribution",
                format!("unknown prior `{}` for a hyperparameter", c.func.name),
                c.func.span,
                "unknown prior",
            );
            e.help = Some(help.unwrap_or_else(|| {
                format!(
                    "hyperparameter priors: {} (docs/language.md)",
                    all.join(", ")
                )
            }));
            self.err(e);
            return None;
        };
        let names: Vec<&str> = law.params().iter().map(|p| p.name).collect();
        let args = self.check_args(c, &names)?;
        let v: Vec<f64> = args
            .iter()
            .map(|a| self.constant(a, "a prior parameter"))
            .collect::<Option<_>>()?;
        match HyperPrior::new(law.name(), v, range) {
            Ok(p) => Some(p),
            Err(PriorError::Param { index, message }) => {
                self.err(
                    SemanticError::new("gpm::bad_parameter", message, args[index].span, "invalid")
                        .help("scale, shape, rate and degrees-of-freedom parameters are positive"),
                );
                None
            }
            Err(e @ (PriorError::Params(_) | PriorError::Unknown(_))) => {
                self.err(
                    SemanticError::new("gpm::bad_parameter", e.to_string(), c.span, "invalid")
                        .help(format!("see docs/language.md for `{}`", law.name())),
                );
                None
            }
            Err(PriorError::NoMass(m)) => {
                let mut e = SemanticError::new("gpm::prior_outside_range", m, c.span, "prior");
                if let Some(k) = &h.constraint {
                    e = e.also(k.span, "declared range");
                }
                self.err(e.help(
                    "choose a prior whose support overlaps the declared range, or change the range",
                ));
                None
            }
        }
    }
}
