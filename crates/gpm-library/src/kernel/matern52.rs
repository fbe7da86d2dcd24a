//! `matern52(ell)`: the Matérn ν = 5/2 kernel, `(1 + √5 r + 5r²/3) exp(−√5 r)`.
use super::{KernelForm, KernelLaw};
use gpm_special::{matern_in_place, vectorised, SliceMap};

/// The Matérn 5/2 kernel.
pub struct Matern52;

struct Profile;

impl SliceMap for Profile {
    #[inline(always)]
    fn apply(v: &mut [f64], _p: &[f64]) {
        matern_in_place(v, 5.0, 1.0 / 3.0);
    }
}

impl KernelLaw for Matern52 {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<Profile>)
    }
    fn d_params(&self, x: &[f64], z: &[f64], _same: bool, p: &[f64], out: &mut [f64]) {
        // k = (1 + a + a²/3) e^(−a), a = √5 r: dk/da = −(a/3)(1 + a) e^(−a), ∂a/∂ℓ = −a/ℓ.
        let a = (5.0 * super::scaled_r2(x, z, p[0])).sqrt();
        out[0] = a * a * (1.0 + a) * (-a).exp() / (3.0 * p[0]);
    }
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        let a = (5.0 * r2).sqrt();
        Some((1.0 + a + a * a / 3.0) * (-a).exp())
    }
}
