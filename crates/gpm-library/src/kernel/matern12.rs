//! `matern12(ell)`: the Matérn ν = 1/2 (exponential) kernel, `exp(−r)`.
use super::{ExpProfile, Exponent, KernelForm, KernelLaw};
use gpm_special::vectorised;

/// The Matérn 1/2 kernel.
pub struct Matern12;

impl Exponent for Matern12 {
    #[inline(always)]
    fn exponent(r2: f64) -> f64 {
        -r2.sqrt()
    }
}

impl KernelLaw for Matern12 {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<ExpProfile<Self>>)
    }
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        Some(Self::exponent(r2).exp())
    }
}
