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
    fn d_params(&self, x: &[f64], z: &[f64], _same: bool, p: &[f64], out: &mut [f64]) {
        // k = exp(−r), ∂r/∂ℓ = −r/ℓ: ∂k/∂ℓ = k r/ℓ.
        let r = super::scaled_r2(x, z, p[0]).sqrt();
        out[0] = (-r).exp() * r / p[0];
    }
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        Some(Self::exponent(r2).exp())
    }
}
