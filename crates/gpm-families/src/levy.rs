//! Lévy with scale `a`: density `a/(2√π) ω^(−3/2) e^(−a²/(4ω))`, Laplace transform `e^(−a√s)` —
//! the mixing law of the Laplace likelihood, `e^(−a|r|) = ∫ e^(−ωr²) Lévy(ω | a) dω`. Tilted
//! by `e^(−ωs)` it is the inverse Gaussian `IG(a/(2√s), a²/2)`.

use crate::{LawError, MixingLaw};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Lévy with scale `a > 0`.
#[derive(Debug, Clone, Copy)]
pub struct Levy;

impl MixingLaw for Levy {
    fn log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        let a = p[0];
        Some(a.ln() - (2.0 * std::f64::consts::PI.sqrt()).ln() - 1.5 * w.ln() - a * a / (4.0 * w))
    }
    fn d_log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        let a = p[0];
        Some(-1.5 / w + a * a / (4.0 * w * w))
    }
    fn log_densities(&self, p: &[f64], ws: &[f64], out: &mut Vec<f64>) -> bool {
        let a = p[0];
        let c = a.ln() - (2.0 * std::f64::consts::PI.sqrt()).ln();
        out.clear();
        out.extend(ws.iter().map(|&w| c - 1.5 * w.ln() - a * a / (4.0 * w)));
        true
    }
    fn log_laplace(&self, p: &[f64], s: f64) -> Option<f64> {
        Some(-p[0] * s.max(0.0).sqrt())
    }
    fn has_tilted(&self) -> bool {
        true
    }
    /// `φ(s) = e^(−a√s)`, `E[ω] = a/(2√s)`.
    fn tilted(&self, p: &[f64], s: f64) -> Option<(f64, f64)> {
        let a = p[0];
        Some((a / (2.0 * s.sqrt()), -a * s.sqrt()))
    }
    /// The standard Lévy law with `c = a²/2`: `c/Z²`, `Z ~ N(0, 1)`.
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        let a = p[0];
        if !(a > 0.0 && a.is_finite()) {
            return Err(crate::bad("Lévy", p));
        }
        let z: f64 = rng.sample(StandardNormal);
        Ok(a * a / (2.0 * z * z))
    }
}
