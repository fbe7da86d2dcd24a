//! `rational_quadratic(ell, alpha)`: `(1 + r²/(2α))^(−α)`, a scale mixture of squared
//! exponentials (GPML eq. 4.19; `sqexp` as α → ∞). Added as the worked example of
//! docs/ARCHITECTURE.md ("Adding a kernel"): this file and its row in `register!`.
use super::{KernelForm, KernelLaw};
use gpm_special::{vectorised, SliceMap};

/// The rational quadratic kernel.
pub struct RationalQuadratic;

struct Profile;

impl SliceMap for Profile {
    #[inline(always)]
    fn apply(v: &mut [f64], p: &[f64]) {
        let alpha = p[0];
        for x in v.iter_mut() {
            *x = (-alpha * (*x / (2.0 * alpha)).ln_1p()).exp();
        }
    }
}

impl KernelLaw for RationalQuadratic {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<Profile>)
    }
    fn d_params(&self, x: &[f64], z: &[f64], _same: bool, p: &[f64], out: &mut [f64]) {
        // k = (1 + u)^(−α), u = r²/(2α): ∂k/∂ℓ = (r²/ℓ)(1 + u)^(−α−1),
        // ∂k/∂α = k (u/(1 + u) − log(1 + u)).
        let (l, alpha) = (p[0], p[1]);
        let r2 = super::scaled_r2(x, z, l);
        let u = r2 / (2.0 * alpha);
        let k = (-alpha * u.ln_1p()).exp();
        out[0] = r2 / l * k / (1.0 + u);
        out[1] = k * (u / (1.0 + u) - u.ln_1p());
    }
    fn profile_at(&self, r2: f64, p: &[f64]) -> Option<f64> {
        Some((1.0 + r2 / (2.0 * p[0])).powf(-p[0]))
    }
}
