//! Negative binomial `NB(k | r, p) = Γ(k+r)/(Γ(r) k!) p^k (1−p)^r`: the count of the
//! negative-binomial MGF rule (thesis §7.2.2 with a known location).

use crate::{bad, LawError, MixingLaw};
use rand_chacha::ChaCha8Rng;

/// Negative binomial with shape `r > 0` and success probability `p ∈ [0, 1)`.
#[derive(Debug, Clone, Copy)]
pub struct NegativeBinomial;

/// A draw of NB(r, p), exactly, as the Gamma-Poisson mixture `k | g ~ Poisson(g)`,
/// `g ~ Gamma(r, rate (1−p)/p)`.
pub fn sample<R: rand::Rng + ?Sized>(rng: &mut R, shape: f64, p: f64) -> Result<f64, LawError> {
    if !(shape > 0.0 && shape.is_finite() && (0.0..1.0).contains(&p)) {
        return Err(bad("negative binomial", &[shape, p]));
    }
    if p == 0.0 {
        return Ok(0.0);
    }
    let g = crate::gamma::sample(rng, shape, (1.0 - p) / p)?;
    crate::poisson::sample(rng, g)
}

impl MixingLaw for NegativeBinomial {
    fn is_count(&self) -> bool {
        true
    }
    /// `E[e^(−ks)] = ((1 − p)/(1 − p e^(−s)))^r`.
    fn log_laplace(&self, q: &[f64], s: f64) -> Option<f64> {
        let (r, p) = (q[0], q[1]);
        Some(r * ((-p).ln_1p() - (-p * (-s).exp()).ln_1p()))
    }
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        sample(rng, p[0], p[1])
    }
}
