//! Affine parts of expressions in the latents, and lifting them to linear predictors.

use super::*;

impl Lowerer {
    /// Whether an affine node's terms can take a per-observation real covariate: no offset, no
    /// covariate yet, and only latents with `normal` priors (the dense block reads a scaled
    /// term through its design rows; a GP keeps the covariate in the formula).
    pub(super) fn scalable(&self, a: &Affine, covariate: &str) -> bool {
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
        // Terms already scaled by one covariate take the product (`beta[3] * x[i] * z[i]`).
        let first = a.terms.first().map(|t| &t.scale_by);
        real && unnamed
            && a.offset == 0.0
            && a.terms.iter().all(|t| {
                Some(&t.scale_by) == first
                    && self.model.latents.iter().any(|z| {
                        z.name == t.latent
                            && matches!(z.prior, LatentPrior::Normal { .. } | LatentPrior::Flat)
                    })
            })
    }

    /// Scale an affine node's terms by covariate `d` (per observation); terms already scaled by
    /// `e` are scaled by the product `e·d`, a transformed datum made here (named `e*d`, which
    /// no declaration can take) so that the product stays in the predictor's design.
    pub(super) fn scale_by_covariate(&mut self, mut x: Affine, d: &str) -> Affine {
        let by = match x.terms.first().and_then(|t| t.scale_by.clone()) {
            None => d.to_string(),
            Some(e) => self.covariate_product(&e, d),
        };
        for t in &mut x.terms {
            t.scale_by = Some(by.clone());
        }
        x.name = None;
        x
    }

    fn covariate_product(&mut self, e: &str, d: &str) -> String {
        let name = format!("{e}*{d}");
        if self.model.datum(&name).is_some() {
            return name;
        }
        let operand = |s: &str| match crate::sx::parse_data_column(s) {
            (m, Some(column)) => crate::DataExpr::Column {
                name: m.to_string(),
                column,
            },
            (m, None) => crate::DataExpr::Data {
                name: m.to_string(),
            },
        };
        let shape = |s: &str| {
            let (m, col) = crate::sx::parse_data_column(s);
            match (self.model.datum(m).map(|v| v.shape.clone()), col) {
                (Some(Shape::Matrix(r, _)), Some(_)) => Some(Shape::Vector(r)),
                (s, _) => s,
            }
        };
        let shape = shape(e).or_else(|| shape(d)).unwrap_or(Shape::Scalar);
        let expr = crate::DataExpr::Binary {
            op: BinOp::Mul,
            left: Box::new(operand(e)),
            right: Box::new(operand(d)),
        };
        self.model.data.push(DataVar {
            name: name.clone(),
            elem: Elem::Real,
            shape,
            constraint: ValueSet::Any,
            span: self.span_hint,
            derived: Some(expr),
        });
        name
    }

    /// Turn a node into a scalar formula, lifting an affine node into a predictor symbol.
    pub(super) fn lift_node(&mut self, n: Node, ctx: &ObsCtx) -> Option<Sx> {
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
    pub(super) fn lift(&mut self, a: Affine, n: &Dim) -> String {
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
}
