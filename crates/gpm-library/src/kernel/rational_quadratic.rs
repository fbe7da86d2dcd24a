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
    fn profile_at(&self, r2: f64, p: &[f64]) -> Option<f64> {
        Some((1.0 + r2 / (2.0 * p[0])).powf(-p[0]))
    }
}
