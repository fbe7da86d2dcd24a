//! `constant()`: 1 everywhere (a random intercept shared by every point).
use super::{KernelForm, KernelLaw};

/// The constant kernel.
pub struct Constant;

fn k(_x: &[f64], _z: &[f64], _same: bool, _p: &[f64]) -> f64 {
    1.0
}

impl KernelLaw for Constant {
    fn form(&self) -> KernelForm {
        KernelForm::Pointwise(k)
    }
    fn d_params(&self, _x: &[f64], _z: &[f64], _same: bool, _p: &[f64], _out: &mut [f64]) {}
}
