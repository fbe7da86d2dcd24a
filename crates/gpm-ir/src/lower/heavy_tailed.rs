//! Heavy-tailed latent priors: `w : vector[D] ~ student_t(nu, mu, sigma)`, `cauchy(mu, sigma)`,
//! `laplace(mu, b)` (Stan's `double_exponential`), `horseshoe(tau)`. Each is a Gaussian scale
//! mixture, so rather than a new kind of block the latent takes a flat prior and the prior's
//! density becomes a factor with one observation per coordinate (`Factor::prior_of`): the
//! recognizers find and certify its augmentation exactly as for a Student-t or Laplace likelihood
//! (an auxiliary scale per coordinate), and Gibbs and CAVI stay conjugate.

use super::*;

impl Lowerer {
    /// The prior's density (a library likelihood) and its parameters, location included.
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
        let what = |p: &str| format!("the `{p}` of a latent's `{}` prior", z.prior.func.name);
        let c = &z.prior;
        match c.func.name.as_str() {
            "student_t" => {
                let a = self.check_args(c, &["nu", "mu", "sigma"])?;
                let nu = self.positive_param(&a[0], &what("nu"));
                let mu = self.param(&a[1], &what("mu"));
                let sigma = self.positive_param(&a[2], &what("sigma"));
                Some(("student_t", vec![nu?, mu?, sigma?]))
            }
            "cauchy" => {
                let a = self.check_args(c, &["mu", "sigma"])?;
                let mu = self.param(&a[0], &what("mu"));
                let sigma = self.positive_param(&a[1], &what("sigma"));
                Some(("student_t", vec![Sx::num(1.0), mu?, sigma?]))
            }
            "horseshoe" => {
                // The local scales λ_j ~ C⁺(0, 1) integrated out; the location is 0.
                let a = self.check_args(c, &["tau"])?;
                let tau = self.positive_param(&a[0], &what("tau"));
                Some(("horseshoe", vec![Sx::num(0.0), tau?]))
            }
            _ => {
                let a = self.check_args(c, &["mu", "b"])?;
                let mu = self.param(&a[0], &what("mu"));
                let b = self.positive_param(&a[1], &what("b"));
                Some(("laplace", vec![mu?, b?]))
            }
        }
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
        let hypers = log_density
            .symbols()
            .into_iter()
            .filter(|(r, _)| *r == SymRole::Hyper)
            .map(|(_, s)| s)
            .collect();
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
