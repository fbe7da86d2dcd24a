//! `gamma_exponential(ell, gamma)`: `exp(−r^γ)`, positive semi-definite for `0 < γ ≤ 2` only
//! (GPML eq. 4.18; `matern12` at γ = 1, `sqexp`'s shape at γ = 2). Added as the worked example
//! of a kernel with a bounded parameter in docs/ARCHITECTURE.md ("Adding a kernel"): this file
//! and its row in `register!`, whose `half_open(0.0, 2.0)` the lowering checks a literal, a
//! fixed value or a hyperparameter's range against.
use super::{KernelForm, KernelLaw};
use gpm_special::{vectorised, SliceMap};

/// The γ-exponential kernel.
pub struct GammaExponential;

struct Profile;

impl SliceMap for Profile {
    #[inline(always)]
    fn apply(v: &mut [f64], p: &[f64]) {
        // r^γ = (r²)^(γ/2).
        let half_gamma = 0.5 * p[0];
        for x in v.iter_mut() {
            *x = (-x.powf(half_gamma)).exp();
        }
    }
}

impl KernelLaw for GammaExponential {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<Profile>)
    }
    fn d_params(&self, x: &[f64], z: &[f64], _same: bool, p: &[f64], out: &mut [f64]) {
        // k = exp(−u), u = (r²)^(γ/2), r² ∝ ℓ⁻²: ∂k/∂ℓ = k γ u / ℓ, ∂k/∂γ = −k u log(r²) / 2
        // (0 at r = 0, where u log r² → 0).
        let (l, gamma) = (p[0], p[1]);
        let r2 = super::scaled_r2(x, z, l);
        if r2 == 0.0 {
            out[0] = 0.0;
            out[1] = 0.0;
            return;
        }
        let u = r2.powf(0.5 * gamma);
        let k = (-u).exp();
        out[0] = k * gamma * u / l;
        out[1] = -0.5 * k * u * r2.ln();
    }
    fn profile_at(&self, r2: f64, p: &[f64]) -> Option<f64> {
        Some((-r2.powf(0.5 * p[0])).exp())
    }
}
