//! `white()`: 1 between a training point and itself, 0 otherwise (i.i.d. noise on the latent;
//! nothing between training and test points).
use super::{KernelForm, KernelLaw, KernelParam};

/// The white-noise kernel.
pub struct White;

fn k(_x: &[f64], _z: &[f64], same: bool, _p: &[f64]) -> f64 {
    if same {
        1.0
    } else {
        0.0
    }
}

impl KernelLaw for White {
    fn name(&self) -> &'static str {
        "white"
    }
    fn params(&self) -> &'static [KernelParam] {
        &[]
    }
    fn formula(&self) -> &'static str {
        "1 if the same training point, else 0"
    }
    fn form(&self) -> KernelForm {
        KernelForm::Pointwise(k)
    }
    fn example(&self) -> &'static [f64] {
        &[]
    }
}
