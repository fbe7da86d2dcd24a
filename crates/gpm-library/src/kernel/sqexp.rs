//! `sqexp(ell)` (also `rbf`): the squared exponential, `exp(−r²/2)`.
use super::{KernelForm, KernelLaw};
use gpm_special::{exp_in_place, vectorised, SliceMap};

/// The squared-exponential kernel.
pub struct SqExp;

struct Profile;

impl SliceMap for Profile {
    #[inline(always)]
    fn apply(v: &mut [f64], _p: &[f64]) {
        for x in v.iter_mut() {
            *x *= -0.5;
        }
        exp_in_place(v);
    }
}

impl KernelLaw for SqExp {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<Profile>)
    }
    fn json_type(&self) -> &'static str {
        "sq_exp"
    }
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        Some((-0.5 * r2).exp())
    }
}
