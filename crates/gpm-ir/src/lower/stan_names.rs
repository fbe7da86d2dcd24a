//! Names Stan users write that gpmc spells differently: the help of an unknown distribution or
//! kernel says what to write instead (docs/stan_models.md has whole models translated).

/// Stan's distributions and what to write in `.gpm`.
const DISTRIBUTIONS: &[(&str, &str)] = &[
    (
        "bernoulli",
        "write `bernoulli_logit(eta)` with the linear predictor itself: Stan's `bernoulli(inv_logit(eta))`",
    ),
    (
        "bernoulli_logit_glm",
        "write `bernoulli_logit(alpha + X * beta)` (or `X[i] * beta` in a loop)",
    ),
    (
        "poisson_log_glm",
        "write `poisson_log(alpha + X * beta)` (or `X[i] * beta` in a loop)",
    ),
    (
        "normal_id_glm",
        "write `normal(alpha + X * beta, sigma)` (or `X[i] * beta` in a loop)",
    ),
    (
        "neg_binomial_2",
        "write `neg_binomial_2_log(eta, phi)` with the log mean `eta` (for `mu = exp(eta)`)",
    ),
    (
        "binomial",
        "write `binomial_logit(n, eta)` with the log odds `eta`: Stan's `binomial(n, inv_logit(eta))`",
    ),
    (
        "double_exponential",
        "write `laplace(mu, b)` (the same density)",
    ),
    (
        "cauchy",
        "as a likelihood, write `student_t(1, mu, sigma)` (the same density)",
    ),
    (
        "categorical_logit",
        "write `categorical_logistic_softmax(F)` with one GP or regression column per class (thesis §7.4): Stan's softmax has no augmentation",
    ),
    (
        "multi_normal",
        "give the latent a `gp(X, kernel)` prior (its covariance from a kernel) or independent `normal` entries",
    ),
];

/// Stan's covariance functions and the kernel expression to write (gpmc kernels take the
/// inputs from `gp(X, ...)`, not as an argument).
const KERNELS: &[(&str, &str)] = &[
    (
        "gp_exp_quad_cov",
        "write `alpha^2 * sqexp(rho)` for Stan's `gp_exp_quad_cov(x, alpha, rho)`",
    ),
    (
        "cov_exp_quad",
        "write `alpha^2 * sqexp(rho)` for Stan's `cov_exp_quad(x, alpha, rho)`",
    ),
    (
        "gp_exponential_cov",
        "write `alpha^2 * matern12(rho)` for Stan's `gp_exponential_cov(x, alpha, rho)`",
    ),
    (
        "gp_matern32_cov",
        "write `alpha^2 * matern32(rho)` for Stan's `gp_matern32_cov(x, alpha, rho)`",
    ),
    (
        "gp_matern52_cov",
        "write `alpha^2 * matern52(rho)` for Stan's `gp_matern52_cov(x, alpha, rho)`",
    ),
    (
        "gp_periodic_cov",
        "write `alpha^2 * periodic(rho, p)` for Stan's `gp_periodic_cov(x, alpha, rho, p)`",
    ),
    (
        "gp_dot_prod_cov",
        "write `linear(sigma^2)` for Stan's `gp_dot_prod_cov(x, sigma)`",
    ),
];

/// Stan's functions gpmc has no function for, and what to write instead.
const FUNCTIONS: &[(&str, &str)] = &[
    (
        "log_mix",
        "a mixture is not a library function: write its density itself, e.g. `factor(0.3 * exp(-square(y[i] - mu1) / 2) + 0.7 * exp(-square(y[i] - mu2) / 2));` (factors the components share may be dropped); it runs by the generic update",
    ),
    (
        "log_sum_exp",
        "write `log(exp(a) + exp(b))`: the compiler simplifies it",
    ),
];

/// What to write for a Stan function gpmc lacks.
pub(super) fn function(name: &str) -> Option<&'static str> {
    find(FUNCTIONS, name)
}

fn find(table: &'static [(&str, &str)], name: &str) -> Option<&'static str> {
    table.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}

/// What to write for a Stan distribution gpmc spells differently.
pub(super) fn distribution(name: &str) -> Option<&'static str> {
    find(DISTRIBUTIONS, name)
}

/// What to write for a Stan covariance function.
pub(super) fn kernel(name: &str) -> Option<&'static str> {
    find(KERNELS, name)
}

#[cfg(test)]
mod tests {
    /// Every hint names something the language has (no hint for a name that is itself in the
    /// library).
    #[test]
    fn hints_are_for_names_gpmc_lacks() {
        for (n, _) in super::DISTRIBUTIONS {
            assert!(gpm_library::likelihood::lookup(n).is_none(), "{n}");
        }
        for (n, _) in super::KERNELS {
            assert!(gpm_library::kernel::lookup(n).is_none(), "{n}");
        }
    }
}
