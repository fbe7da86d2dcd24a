//! Poisson(rate): the count of the Poisson-MGF rule, `e^(κ(e^x − 1)) = Σ_n Po(n | κ) e^(nx)`.

use crate::{bad, LawError, MixingLaw};
use rand_chacha::ChaCha8Rng;
use rand_distr::Distribution;

/// Poisson with a rate.
#[derive(Debug, Clone, Copy)]
pub struct Poisson;

/// A draw of Poisson(rate); rate 0 gives 0.
pub fn sample<R: rand::Rng + ?Sized>(rng: &mut R, rate: f64) -> Result<f64, LawError> {
    if rate == 0.0 {
        return Ok(0.0);
    }
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(bad("Poisson", &[rate]));
    }
    let p = rand_distr::Poisson::new(rate).map_err(|_| bad("Poisson", &[rate]))?;
    Ok(p.sample(rng))
}

impl MixingLaw for Poisson {
    fn is_count(&self) -> bool {
        true
    }
    fn log_laplace(&self, p: &[f64], s: f64) -> Option<f64> {
        Some(p[0] * ((-s).exp() - 1.0))
    }
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        sample(rng, p[0])
    }
}
