//! `white()`: 1 between a training point and itself, 0 otherwise (i.i.d. noise on the latent;
//! nothing between training and test points).
use super::{KernelForm, KernelLaw};

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
    fn form(&self) -> KernelForm {
        KernelForm::Pointwise(k)
    }
    fn d_params(&self, _x: &[f64], _z: &[f64], _same: bool, _p: &[f64], _out: &mut [f64]) {}
}
