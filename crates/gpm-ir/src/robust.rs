//! Robust likelihood statements, `y ~ normal(f, s) robust(beta = 0.2);`: the generalized-Bayes
//! update with the β-divergence (density power divergence; Futami, Sato & Sugiyama, seed 004,
//! "β cross entropy"; seed 003 for the supervised setting). The posterior is
//! `q(θ) ∝ p(θ) exp(−N d_β)`, `d_β = −((β+1)/β) (1/N) Σ_i p(y_i | θ)^β + ∫ p(y | θ)^(1+β) dy`,
//! so each observation contributes the pseudo-log-likelihood
//!
//! `ℓ_β(y_i) = ((β+1)/β) p(y_i | θ)^β − ∫ p(y | θ)^(1+β) dy`, here shifted by the constant
//! `(β+1)/β − 1`.
//!
//! As `β → 0`, `((β+1)/β) (p^β − 1) = (β+1) log p + O(β)` and the integral is `1 + O(β)`,
//! so `ℓ_β` tends to `log p(y_i | θ)`: the ordinary posterior. For `β > 0` an outlier,
//! where `p(y_i | θ)` is tiny, contributes about nothing (its weight is `p^β`), where under the
//! likelihood it contributes `log p`, unbounded.
//!
//! The integral is in closed form for the location-scale families, a finite sum for binary
//! labels and, for counts, a sum truncated at a certified tail (`poisson_power_moment`); the
//! others are refused until their integrals are certified.

use crate::library::{exp, from_formula, log, n};
use crate::sx::Sx;
use gpm_library::likelihood::{Likelihood, LIKELIHOODS};

/// `∫ p(y | θ)^(1+β) dy` for a library likelihood with parameters `p` (in the order of
/// [`Likelihood::params`]) — for discrete responses the sum — or why there is none.
fn integral(l: &dyn Likelihood, p: &[Sx], beta: f64) -> Result<Sx, String> {
    match l.power_integral(beta) {
        Some(f) => Ok(from_formula(&f, &Sx::num(0.0), p)),
        None => {
            let with: Vec<&str> = LIKELIHOODS
                .iter()
                .filter(|o| o.power_integral(beta).is_some())
                .map(|o| o.name())
                .collect();
            Err(format!(
                "`robust(...)` needs ∫ p(y | θ)^(1+β) dy in closed form: available for {}, not yet for `{}`",
                with.join(", "),
                l.name()
            ))
        }
    }
}

/// Which robust divergence replaces the Kullback-Leibler one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Divergence {
    /// The β-divergence (density power divergence), with its `β > 0`.
    Beta(f64),
    /// The γ-divergence (Fujisawa & Eguchi 2008) in the transformed form of seed 003, eq. 4/7,
    /// with its `γ > 0`.
    Gamma(f64),
}

/// The pseudo-log-likelihood of one observation under a robust divergence, from the
/// distribution's log-density `log_density` (`ℓ`) and its parameters, each shifted by a
/// constant so that it tends to `ℓ` itself as the power goes to 0:
/// - β: `((β+1)/β) (exp(β ℓ) − 1) − (∫ p^(1+β) − 1)` (seed 004, "β cross entropy");
/// - γ: `((γ+1)/γ) (exp(γ ℓ) / (∫ p^(1+γ))^(γ/(1+γ)) − 1)` (seed 003, eq. 7, with the sign that
///   makes it a gain; as `γ → 0` it is `ℓ − log ∫ p = ℓ`).
///
/// The constants change no posterior, but without them a small power puts `N (1+β)/β` into the
/// objective (6·10⁷ for 60 points at β = 10⁻⁶), and a convergence test relative to it stops
/// CAVI long before the latents have converged.
pub fn robust_log_density(
    divergence: Divergence,
    likelihood: &dyn Likelihood,
    log_density: Sx,
    params: &[Sx],
) -> Result<Sx, String> {
    // The power is positive and finite: the lowering checks it, where it has the span.
    let (Divergence::Beta(power) | Divergence::Gamma(power)) = divergence;
    let weight = exp(Sx::mul(n(power), log_density));
    let integral = integral(likelihood, params, power)?;
    let gain = |relative: Sx| Sx::mul(n((power + 1.0) / power), Sx::sub(relative, n(1.0)));
    Ok(match divergence {
        Divergence::Beta(_) => Sx::sub(gain(weight), Sx::sub(integral, n(1.0))),
        Divergence::Gamma(g) => gain(Sx::mul(
            weight,
            exp(Sx::neg(Sx::mul(n(g / (1.0 + g)), log(integral)))),
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sx::SymRole;
    use gpm_library::likelihood::lookup;

    fn lik(name: &str) -> &'static dyn Likelihood {
        lookup(name).unwrap().0
    }

    fn log_density(name: &str, y: Sx, p: Vec<Sx>, _labels: Option<&[i64]>) -> Sx {
        crate::library::log_density(lik(name), y, &p, None).unwrap()
    }

    fn eval(e: &Sx, y: f64) -> f64 {
        e.eval(&|_, name| (name == "y").then_some(y)).unwrap()
    }

    fn params(name: &str) -> Vec<f64> {
        match name {
            "normal" => vec![0.3, 1.7],
            "student_t" => vec![3.5, -0.4, 0.8],
            "laplace" => vec![0.2, 0.6],
            "logistic" => vec![-0.5, 1.3],
            _ => unreachable!(),
        }
    }

    /// Every closed-form `∫ p^(1+β)` against quadrature of the library density itself (Simpson's
    /// rule on a wide fine grid: the densities decay at least exponentially, or as
    /// `|y|^(−(ν+1)(1+β))`, beyond ±4000 negligibly).
    #[test]
    fn closed_form_integrals_match_quadrature() {
        for name in ["normal", "student_t", "laplace", "logistic"] {
            for beta in [0.05, 0.2, 0.5, 1.0] {
                let p: Vec<Sx> = params(name).into_iter().map(n).collect();
                let y = Sx::sym(SymRole::Data, "y");
                let ld = log_density(name, y, p.clone(), None);
                let closed = eval(&integral(lik(name), &p, beta).unwrap(), 0.0);
                // Simpson's rule on a grid centred at the location (Laplace's kink is a node).
                let centre = params(name)[if name == "student_t" { 1 } else { 0 }];
                let (lo, k) = (centre - 4000.0, 4_000_000);
                let h = 8000.0 / k as f64;
                let quad: f64 = (0..=k)
                    .map(|j| {
                        let w = if j == 0 || j == k {
                            1.0
                        } else if j % 2 == 1 {
                            4.0
                        } else {
                            2.0
                        };
                        w * ((1.0 + beta) * eval(&ld, lo + h * j as f64)).exp()
                    })
                    .sum::<f64>()
                    * h
                    / 3.0;
                assert!(
                    (closed - quad).abs() < 1e-8 * quad,
                    "{name}, β = {beta}: closed form {closed}, quadrature {quad}"
                );
            }
        }
        // Binary labels: the integral is the sum over the two labels.
        let eta = 0.7;
        let s = |x: f64| 1.0 / (1.0 + (-x).exp());
        for beta in [0.1, 0.5] {
            let closed = eval(
                &integral(lik("bernoulli_logit"), &[n(eta)], beta).unwrap(),
                0.0,
            );
            let sum = s(eta).powf(1.0 + beta) + s(-eta).powf(1.0 + beta);
            assert!((closed - sum).abs() < 1e-14);
        }
    }

    /// `β → 0` gives back the log-likelihood up to a constant: differences between two
    /// parameter values agree with the log-density's.
    #[test]
    fn small_beta_is_the_likelihood() {
        let y = Sx::sym(SymRole::Data, "y");
        let at = |mu: f64, sigma: f64, beta: Option<f64>| {
            let p = vec![n(mu), n(sigma)];
            let ld = log_density("normal", y.clone(), p.clone(), None);
            let e = match beta {
                Some(b) => robust_log_density(Divergence::Beta(b), lik("normal"), ld, &p).unwrap(),
                None => ld,
            };
            eval(&e, 1.3)
        };
        let exact = at(0.2, 0.9, None) - at(-0.4, 1.4, None);
        let robust = at(0.2, 0.9, Some(1e-7)) - at(-0.4, 1.4, Some(1e-7));
        assert!((exact - robust).abs() < 1e-5, "{exact} vs {robust}");
        // The γ-divergence's limit alike.
        let gamma = |mu: f64, sigma: f64| {
            let p = vec![n(mu), n(sigma)];
            let ld = log_density("normal", y.clone(), p.clone(), None);
            eval(
                &robust_log_density(Divergence::Gamma(1e-7), lik("normal"), ld, &p).unwrap(),
                1.3,
            )
        };
        let g = gamma(0.2, 0.9) - gamma(-0.4, 1.4);
        assert!((exact - g).abs() < 1e-5, "{exact} vs γ {g}");
        // And β > 0 bounds an outlier's pull: a point 50σ away moves the robust objective by
        // almost nothing as μ moves, the likelihood by about 50 per unit of μ.
        let far = |mu: f64, beta: Option<f64>| {
            let p = vec![n(mu), n(1.0)];
            let ld = log_density("normal", y.clone(), p.clone(), None);
            let e = match beta {
                Some(b) => robust_log_density(Divergence::Beta(b), lik("normal"), ld, &p).unwrap(),
                None => ld,
            };
            eval(&e, 50.0)
        };
        assert!((far(0.5, None) - far(0.0, None)).abs() > 20.0);
        assert!((far(0.5, Some(0.2)) - far(0.0, Some(0.2))).abs() < 1e-40);
    }

    /// The Poisson's `Σ_k p_k^(1+β)` against the plain sum of the library's own mass function.
    #[test]
    fn poisson_integral_is_the_sum_of_the_powered_mass() {
        let y = Sx::sym(SymRole::Data, "y");
        for (rate, beta) in [(0.4, 0.3), (6.5, 0.5), (120.0, 0.1)] {
            let ld = log_density("poisson", y.clone(), vec![n(rate)], None);
            let closed = eval(&integral(lik("poisson"), &[n(rate)], beta).unwrap(), 0.0);
            let sum: f64 = (0..2000)
                .map(|k| ((1.0 + beta) * eval(&ld, k as f64)).exp())
                .sum();
            assert!(
                (closed - sum).abs() < 1e-12 * sum,
                "λ={rate}: {closed} vs {sum}"
            );
        }
    }

    #[test]
    fn families_without_a_closed_form_are_refused() {
        let y = Sx::sym(SymRole::Data, "y");
        let p = [n(3.0), n(0.2)];
        let ld = log_density("neg_binomial_logit", y, p.to_vec(), None);
        let e = robust_log_density(Divergence::Beta(0.2), lik("neg_binomial_logit"), ld, &p)
            .unwrap_err();
        assert!(e.contains("not yet for `neg_binomial_logit`"), "{e}");
    }
}
