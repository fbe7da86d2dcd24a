//! `matern32(ell)`: the Matérn ν = 3/2 kernel, `(1 + √3 r) exp(−√3 r)`.
use super::{KernelForm, KernelLaw};
use gpm_special::{matern_in_place, vectorised, SliceMap};

/// The Matérn 3/2 kernel.
pub struct Matern32;

struct Profile;

impl SliceMap for Profile {
    #[inline(always)]
    fn apply(v: &mut [f64], _p: &[f64]) {
        matern_in_place(v, 3.0, 0.0);
    }
}

impl KernelLaw for Matern32 {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<Profile>)
    }
    fn d_params(&self, x: &[f64], z: &[f64], _same: bool, p: &[f64], out: &mut [f64]) {
        // k = (1 + a) e^(−a), a = √3 r: dk/da = −a e^(−a), ∂a/∂ℓ = −a/ℓ.
        let a = (3.0 * super::scaled_r2(x, z, p[0])).sqrt();
        out[0] = a * a * (-a).exp() / p[0];
    }
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        let a = (3.0 * r2).sqrt();
        Some((1.0 + a) * (-a).exp())
    }
}
