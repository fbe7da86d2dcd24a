//! `student_t(nu, mu, sigma)`.
use super::formula::{n, p, y};
use super::{Formula, Labels, Likelihood};
use rand::RngCore;
use rand_distr::Distribution;

/// Student's t with `ν` degrees of freedom, location `μ` and scale `σ`.
pub struct StudentT;

impl Likelihood for StudentT {
    fn log_density(&self, _labels: Labels) -> Option<Formula> {
        let z = (y() - p(1)) / p(2);
        let nu1 = (p(0) + n(1.0)) / n(2.0);
        let norm = nu1.clone().lgamma()
            - (p(0) / n(2.0)).lgamma()
            - (p(0) * n(std::f64::consts::PI)).log() / n(2.0)
            - p(2).log();
        let kernel = nu1 * (n(1.0) + z.pow(n(2.0)) / p(0)).log();
        Some(norm - kernel)
    }
    /// `C^(1+β) σ √(νπ) Γ(a − ½)/Γ(a)`, `C = Γ((ν+1)/2) / (Γ(ν/2) √(νπ) σ)`,
    /// `a = (1+β)(ν+1)/2`: `∫ (1 + z²/ν)^(−a) dz = √ν B(½, a − ½)`.
    fn power_integral(&self, beta: f64) -> Option<Formula> {
        let b1 = 1.0 + beta;
        let half_nu1 = (p(0) + n(1.0)) / n(2.0);
        let log_nu_pi = (p(0) * n(std::f64::consts::PI)).log();
        let log_c = half_nu1.clone().lgamma()
            - (p(0) / n(2.0)).lgamma()
            - log_nu_pi.clone() / n(2.0)
            - p(2).log();
        let a = n(b1) * half_nu1;
        Some(
            (n(b1) * log_c + (p(2).log() + log_nu_pi / n(2.0))
                + ((a.clone() - n(0.5)).lgamma() - a.lgamma()))
            .exp(),
        )
    }
    fn draw(&self, p: &[f64], _labels: Labels, rng: &mut dyn RngCore) -> f64 {
        match p {
            [nu, mu, sigma] if *sigma > 0.0 && sigma.is_finite() => {
                match rand_distr::StudentT::new(*nu) {
                    Ok(t) => mu + sigma * t.sample(rng),
                    Err(_) => f64::NAN,
                }
            }
            _ => f64::NAN,
        }
    }
    fn mean(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        (p[0] > 1.0).then_some(p[1])
    }
    fn variance(&self, p: &[f64], _labels: Labels) -> Option<f64> {
        (p[0] > 2.0).then(|| p[2] * p[2] * p[0] / (p[0] - 2.0))
    }
}
