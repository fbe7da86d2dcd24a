//! Inverse Gamma(shape α, scale β): the mixing law of the Matérn-3/2-type likelihood
//! (`α = 3/2`: `φ(s) = (1 + a√s) e^(−a√s)`, `a = 2√β`). Tilted by `e^(−ωs)` it is a GIG.

use crate::{LawError, MixingLaw};
use rand_chacha::ChaCha8Rng;

/// Inverse Gamma with shape and scale.
#[derive(Debug, Clone, Copy)]
pub struct InverseGamma;

impl MixingLaw for InverseGamma {
    fn log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        let (a, b) = (p[0], p[1]);
        Some(a * b.ln() - gpm_special::lgamma(a) - (a + 1.0) * w.ln() - b / w)
    }
    fn d_log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        Some(-(p[0] + 1.0) / w + p[1] / (w * w))
    }
    fn log_densities(&self, p: &[f64], ws: &[f64], out: &mut Vec<f64>) -> bool {
        let (a, b) = (p[0], p[1]);
        let c = a * b.ln() - gpm_special::lgamma(a);
        out.clear();
        out.extend(ws.iter().map(|&w| c - (a + 1.0) * w.ln() - b / w));
        true
    }
    fn has_tilted(&self) -> bool {
        true
    }
    /// Closed form for the shape 3/2 the augmentation rules produce (other shapes: `None`):
    /// `φ(s) = (1 + q) e^(−q)`, `q = a√s`, `a = 2√β`, `E[ω] = a²/(2(1 + q))`.
    fn tilted(&self, p: &[f64], s: f64) -> Option<(f64, f64)> {
        if (p[0] - 1.5).abs() > 1e-12 {
            return None;
        }
        let a = 2.0 * p[1].sqrt();
        let q = a * s.sqrt();
        Some((a * a / (2.0 * (1.0 + q)), q.ln_1p() - q))
    }
    /// `1/G` with `G ~ Gamma(α, rate β)`.
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        Ok(1.0 / crate::gamma::sample(rng, p[0], p[1])?)
    }
}
