//! `sqexp(ell)` (also `rbf`): the squared exponential, `exp(−r²/2)`.
use super::{ExpProfile, Exponent, KernelForm, KernelLaw};
use gpm_special::vectorised;

/// The squared-exponential kernel.
pub struct SqExp;

impl Exponent for SqExp {
    #[inline(always)]
    fn exponent(r2: f64) -> f64 {
        -0.5 * r2
    }
}

impl KernelLaw for SqExp {
    fn form(&self) -> KernelForm {
        KernelForm::Stationary(vectorised::<ExpProfile<Self>>)
    }
    fn d_params(&self, x: &[f64], z: &[f64], _same: bool, p: &[f64], out: &mut [f64]) {
        // k = exp(−r²/2), r² = d²/ℓ²: ∂k/∂ℓ = k r²/ℓ.
        let r2 = super::scaled_r2(x, z, p[0]);
        out[0] = (-0.5 * r2).exp() * r2 / p[0];
    }
    fn json_type(&self) -> &'static str {
        "sq_exp"
    }
    fn profile_at(&self, r2: f64, _p: &[f64]) -> Option<f64> {
        Some(Self::exponent(r2).exp())
    }
}
