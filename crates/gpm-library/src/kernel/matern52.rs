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
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        let a = (5.0 * r2).sqrt();
        Some((1.0 + a + a * a / 3.0) * (-a).exp())
    }
}
