//! How far a prior's scale is from the data's, for NUTS on the original model: it whitens each
//! latent by its prior and starts chains at prior draws, so a prior far wider than what the
//! data allow leaves warm-up to cross the gap, and it does not (measured on the logistic
//! regression: fine with a prior sd of 10³, chains stuck at w ≈ 2·10⁵ with R-hat 1.8 at 10⁶;
//! Gibbs, which conditions exactly, held to 10²⁰). Read before sampling, so that the run can
//! say why, not only that its chains did not mix.

use crate::kernels::HyperValues;
use crate::prepared::{Block, Prepared};
use crate::RuntimeError;
use gpm_schedule::Schedule;
use nalgebra::DVector;

/// Above this whitened curvature (the data's precision in units of the prior's: the prior sd
/// over the posterior's, squared) NUTS from prior draws is warned of: 10¹⁰, a posterior 10⁵
/// times narrower than the prior (the logistic regression measured 2·10⁷ at a prior sd of 10³,
/// where NUTS mixed, and 8·10¹⁰ at 10⁶, where it did not).
pub const WHITENED_CURVATURE_WARNED: f64 = 1e10;

/// A latent whose prior is far wider than the data allow.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleGap {
    /// The latent's name.
    pub latent: String,
    /// Its largest prior sd.
    pub prior_sd: f64,
    /// The largest whitened curvature of the log-likelihood among its coordinates.
    pub whitened_curvature: f64,
}

/// The dense latents whose whitened curvature at the prior's mean exceeds
/// [`WHITENED_CURVATURE_WARNED`]: per coordinate `sd² · (g(μ − h) − g(μ + h)) / 2h`, a secant of
/// the log-likelihood's gradient over a thousandth of the prior sd each side (a lower bound
/// on the curvature where the likelihood saturates, as a logistic one does).
pub fn gaps(
    prep: &Prepared,
    schedule: &Schedule,
    hv: &HyperValues,
) -> Result<Vec<ScaleGap>, RuntimeError> {
    let mut out: Vec<ScaleGap> = Vec::new();
    let zeros: Vec<DVector<f64>> = prep.latents.iter().map(|l| DVector::zeros(l.1)).collect();
    for b in &prep.blocks {
        let Block::Dense {
            parts,
            prior_mean,
            prior_sd,
        } = b
        else {
            continue;
        };
        for (k, &sd) in prior_sd.iter().enumerate() {
            if !(sd.is_finite() && sd > 0.0) {
                continue;
            }
            let h = 1e-3 * sd;
            let at = |shift: f64| -> Result<f64, RuntimeError> {
                let mut theta = prior_mean.clone();
                theta[k] += shift;
                let mut latents = zeros.clone();
                crate::prepared::scatter_dense(parts, &theta, &mut latents);
                let (_, grad) = crate::whitened::log_lik_grad(prep, schedule, &latents, hv)?;
                let theta_grad = crate::prepared::gather_dense(parts, prior_mean.len(), &grad);
                Ok(theta_grad[k])
            };
            let curvature = sd * sd * (at(-h)? - at(h)?) / (2.0 * h);
            if !(curvature > WHITENED_CURVATURE_WARNED) {
                continue;
            }
            let latent = parts
                .iter()
                .find(|&&(_, off, len)| (off..off + len).contains(&k))
                .map_or_else(String::new, |&(li, ..)| prep.latents[li].0.clone());
            match out.iter_mut().find(|g| g.latent == latent) {
                Some(g) => {
                    g.prior_sd = g.prior_sd.max(sd);
                    g.whitened_curvature = g.whitened_curvature.max(curvature);
                }
                None => out.push(ScaleGap {
                    latent,
                    prior_sd: sd,
                    whitened_curvature: curvature,
                }),
            }
        }
    }
    Ok(out)
}
