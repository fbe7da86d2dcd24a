//! The horseshoe's mixing law: density `∝ e^(−sω) / (c + ω)` on `ω > 0`.
//!
//! The horseshoe prior `β | τ ~ N(0, λ²τ²)`, `λ ~ C⁺(0, 1)` (Carvalho, Polson & Scott 2010)
//! integrates to `p(β | τ) = e^x E₁(x) / (π τ √(2π))`, `x = β²/(2τ²)`. In the precision
//! `ω = c/λ²` with `c = 1/(2τ²)`, `e^(cr) E₁(cr) = ∫ e^(−rω) dω / (c + ω)`: a scale mixture
//! (`r = β²`) whose mixing measure `1/(c + ω)` is improper (`φ(0) = ∞`, the horseshoe's pole
//! at the origin). Tilted by `e^(−sω)`, `s > 0`, it is a proper law — the complete conditional
//! of `ω` — with normaliser `Z(c, s) = e^(cs) E₁(cs)`. With `s = 0` the parameters name the
//! improper prior itself, whose Laplace transform is `Z(c, ·)` unnormalised.

use crate::{bad, LawError, MixingLaw};
use gpm_special::{e1_inverse_from, e1_scaled, e2_scaled};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// `∝ e^(−sω)/(c + ω)`, parameters `c > 0`, `s ≥ 0` (`s = 0`: the improper prior).
#[derive(Debug, Clone, Copy)]
pub struct Horseshoe;

/// `log Z(c, s)` for `s > 0`, and 0 for the improper `s = 0` (whose measure is used as it is).
fn log_normaliser(c: f64, s: f64) -> f64 {
    if s > 0.0 {
        e1_scaled(c * s).ln()
    } else {
        0.0
    }
}

impl MixingLaw for Horseshoe {
    fn log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        let (c, s) = (p[0], p[1]);
        Some(-s * w - (c + w).ln() - log_normaliser(c, s))
    }
    fn d_log_density(&self, p: &[f64], w: f64) -> Option<f64> {
        Some(-p[1] - 1.0 / (p[0] + w))
    }
    /// `log ∫ e^(−tω) p(ω) dω = log Z(c, s + t) − log Z(c, s)`.
    fn log_laplace(&self, p: &[f64], t: f64) -> Option<f64> {
        let (c, s) = (p[0], p[1]);
        Some(e1_scaled(c * (s + t)).ln() - log_normaliser(c, s))
    }
    fn has_tilted(&self) -> bool {
        true
    }
    /// `E[ω] = −d/dt log Z(c, s + t) = E₂(x) / ((s + t) E₁(x))` at `x = c(s + t)` (from
    /// `d/dx e^x E₁(x) = e^x E₁(x) − 1/x` and `e^x E₂(x) = 1 − x e^x E₁(x)`).
    fn tilted(&self, p: &[f64], t: f64) -> Option<(f64, f64)> {
        let (c, s) = (p[0], p[1]);
        let u = s + t;
        if !(u > 0.0 && c > 0.0) {
            return None;
        }
        let x = c * u;
        let e1 = e1_scaled(x);
        Some((e2_scaled(x) / (u * e1), e1.ln() - log_normaliser(c, s)))
    }
    /// Exact, by inversion: `x = c s + s ω` has density `∝ e^(−x)/x` on `(cs, ∞)`, whose
    /// survival function is `E₁(x)/E₁(cs)`.
    fn sample(&self, rng: &mut ChaCha8Rng, p: &[f64]) -> Result<f64, LawError> {
        // A tilt that underflowed to 0 (a coefficient of |β| < 1e-154 squared) is taken at the
        // smallest positive double, the nearest the true tilt can be represented.
        let (c, s) = (p[0], if p[1] == 0.0 { f64::MIN_POSITIVE } else { p[1] });
        if !(c > 0.0 && s > 0.0 && c.is_finite() && s.is_finite()) {
            return Err(bad("horseshoe (s > 0: the prior itself is improper)", p));
        }
        let t = c * s;
        let v: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
        let x = e1_inverse_from(t, v.ln());
        if !x.is_finite() {
            return Err(bad("horseshoe", p));
        }
        let w = ((x - t) / s).max(0.0);
        if !w.is_finite() {
            // A precision beyond double range: the coefficient has collapsed onto 0.
            return Err(bad("horseshoe (the draw overflows: the coefficient is 0 to double precision)", p));
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    /// 40 000 draws pass a KS test against the CDF by quadrature of the density.
    #[test]
    fn draws_pass_ks_against_the_density() {
        for (c, s) in [(0.7, 0.5), (50.0, 0.01), (0.01, 30.0)] {
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let mut d: Vec<f64> = (0..40_000)
                .map(|_| Horseshoe.sample(&mut rng, &[c, s]).unwrap())
                .collect();
            d.sort_by(|a, b| a.partial_cmp(b).unwrap());
            // CDF(ω) = 1 − E₁(c s + s ω)/E₁(c s).
            let cdf = |w: f64| {
                let t = c * s;
                1.0 - (gpm_special::log_e1(t + s * w) - gpm_special::log_e1(t)).exp()
            };
            let n = d.len() as f64;
            let ks = d
                .iter()
                .enumerate()
                .map(|(i, &w)| {
                    let f = cdf(w);
                    (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
                })
                .fold(0.0, f64::max);
            // 1.63/√n: the 1 % critical value.
            assert!(ks < 1.63 / n.sqrt(), "c {c} s {s}: KS {ks}");
        }
    }
}
