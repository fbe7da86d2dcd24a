//! `matern12(ell)`: the Matérn ν = 1/2 (exponential) kernel, `exp(−r)`.
use super::{KernelForm, KernelLaw};
use gpm_special::{exp_in_place, vectorised, SliceMap};

/// The Matérn 1/2 kernel.
pub struct Matern12;

struct Profile;

impl SliceMap for Profile {
    #[inline(always)]
    fn apply(v: &mut [f64], _p: &[f64]) {
        for x in v.iter_mut() {
            *x = -x.sqrt();
        }
        exp_in_place(v);
    }
}

impl KernelLaw for Matern12 {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<Profile>)
    }
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        Some((-r2.sqrt()).exp())
    }
}
