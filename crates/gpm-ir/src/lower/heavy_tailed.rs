//! Heavy-tailed latent priors: `w : vector[D] ~ student_t(nu, mu, sigma)`, `cauchy(mu, sigma)`,
//! `laplace(mu, b)` (Stan's `double_exponential`), `logistic(mu, s)` (a Pólya-Gamma mixture,
//! `PG(2, 0)`), `horseshoe(tau)`. Each is a Gaussian scale
//! mixture, so rather than a new kind of block the latent takes a flat prior and the prior's
//! density becomes a factor with one observation per coordinate (`Factor::prior_of`): the
//! recognizers find and certify its augmentation exactly as for a Student-t or Laplace likelihood
//! (an auxiliary scale per coordinate), and Gibbs and CAVI stay conjugate.

use super::*;
use gpm_library::Constraint;

const POSITIVE: Constraint = Constraint::Positive;
const REAL: Constraint = Constraint::Real;

/// A heavy-tailed latent prior: its name as written (and an alias), its parameters in order with
/// what each must be, and the library density (a Gaussian scale mixture the
/// recognizers augment) with that density's parameters, location included, made from them.
pub(super) struct HeavyTailed {
    /// The name in a model.
    pub(super) name: &'static str,
    /// Another name for it (Stan's).
    pub(super) alias: Option<&'static str>,
    /// Its parameters, in order.
    pub(super) params: &'static [&'static str],
    /// What each parameter must be.
    constraints: &'static [Constraint],
    /// The library likelihood whose density the prior is.
    density: &'static str,
    /// That density's parameters from the prior's.
    density_params: fn(Vec<Sx>) -> Vec<Sx>,
}

/// Every heavy-tailed latent prior: the one list the lowering, its errors and docs read.
pub(super) const HEAVY_TAILED: &[HeavyTailed] = &[
    HeavyTailed {
        name: "student_t",
        alias: None,
        params: &["nu", "mu", "sigma"],
        constraints: &[POSITIVE, REAL, POSITIVE],
        density: "student_t",
        density_params: |p| p,
    },
    HeavyTailed {
        name: "cauchy",
        alias: None,
        params: &["mu", "sigma"],
        constraints: &[REAL, POSITIVE],
        density: "student_t",
        density_params: |p| [vec![Sx::num(1.0)], p].concat(),
    },
    HeavyTailed {
        name: "laplace",
        alias: Some("double_exponential"),
        params: &["mu", "b"],
        constraints: &[REAL, POSITIVE],
        density: "laplace",
        density_params: |p| p,
    },
    HeavyTailed {
        name: "logistic",
        alias: None,
        params: &["mu", "s"],
        constraints: &[REAL, POSITIVE],
        density: "logistic",
        density_params: |p| p,
    },
    HeavyTailed {
        // The local scales λ_j ~ C⁺(0, 1) integrated out; the location is 0.
        name: "horseshoe",
        alias: None,
        params: &["tau"],
        constraints: &[POSITIVE],
        density: "horseshoe",
        density_params: |p| [vec![Sx::num(0.0)], p].concat(),
    },
];

/// Every latent prior as written, with its parameters: the Gaussian ones the lowering reads
/// itself, then [`HEAVY_TAILED`] (what an unknown latent prior's error and the docs list).
pub fn latent_prior_signatures() -> Vec<String> {
    ["gp(X, kernel)", "normal(mean, scale)", "flat()"]
        .into_iter()
        .map(str::to_string)
        .chain(
            HEAVY_TAILED
                .iter()
                .map(|h| format!("{}({})", h.name, h.params.join(", "))),
        )
        .collect()
}

/// Whether `name` is a heavy-tailed latent prior.
pub(super) fn is_heavy_tailed(name: &str) -> bool {
    HEAVY_TAILED
        .iter()
        .any(|h| h.name == name || h.alias == Some(name))
}

impl Lowerer {
    /// The prior's density (a library likelihood) and its parameters, location included;
    /// `None` after an error, or for a name not in [`HEAVY_TAILED`] (the caller asks
    /// [`is_heavy_tailed`] first: no name falls to a default law).
    pub(super) fn heavy_tailed_latent(
        &mut self,
        z: &ast::LatentDecl,
        shape: Option<&Shape>,
    ) -> Option<(&'static str, Vec<Sx>)> {
        if let Some(Shape::Matrix(..)) = shape {
            self.err(
                SemanticError::new(
                    "gpm::bad_latent_type",
                    format!(
                        "a `{}` prior is for a scalar or a vector",
                        z.prior.func.name
                    ),
                    z.ty.span,
                    "a matrix",
                )
                .help("give each column its own vector latent"),
            );
            return None;
        }
        let c = &z.prior;
        let law = HEAVY_TAILED
            .iter()
            .find(|h| h.name == c.func.name || h.alias == Some(c.func.name.as_str()))?;
        let a = self.check_args(c, law.params)?;
        let mut values = Vec::with_capacity(a.len());
        for (arg, (p, constraint)) in a.iter().zip(law.params.iter().zip(law.constraints)) {
            let what = format!("the `{p}` of a latent's `{}` prior", c.func.name);
            values.push(self.constrained_param(arg, &what, *constraint));
        }
        // Every parameter is checked (each error reported) before any is used.
        let values: Option<Vec<Sx>> = values.into_iter().collect();
        Some((law.density, (law.density_params)(values?)))
    }

    /// The factor `Σ_j log p(w_j)`: the density at the location, with the coordinate in the
    /// location's place (the densities are symmetric: `p(w | μ, s) = p(μ | w, s)`).
    pub(super) fn prior_factor(&mut self, z: &ast::LatentDecl, density: &str, params: Vec<Sx>) {
        let name = z.name.name.clone();
        let Some(latent) = self.model.latent(&name) else {
            return;
        };
        let (n, design) = match &latent.shape {
            Shape::Vector(n) => (n.clone(), Design::Identity),
            _ => (Dim::Const(1), Design::Broadcast),
        };
        let affine = Affine::reading(name.clone(), design, z.span, None);
        let eta = self.lift(affine, &n);
        let at = if density == "student_t" { 1 } else { 0 };
        let mut p = params;
        let mu = std::mem::replace(&mut p[at], Sx::sym(SymRole::Predictor, &eta));
        let likelihood = likelihoods::lookup(density).expect("a library likelihood");
        let log_density =
            library::log_density(likelihood.0, mu, &p, None).expect("not the structural one");
        let hypers = log_density.hypers();
        let args: Vec<String> = z.prior.args.iter().map(|a| a.value.to_string()).collect();
        self.model.factors.push(Factor {
            n,
            form: FactorForm::LogDensity { log_density },
            predictors: vec![eta],
            data: vec![],
            response: None,
            hypers,
            observation: None,
            replicate: None,
            prior_of: Some(name.clone()),
            source: format!(
                "{name} ~ {}({}) (prior)",
                z.prior.func.name,
                args.join(", ")
            ),
            span: z.span,
        });
    }
}
