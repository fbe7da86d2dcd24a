//! `linear()` or `linear(c)`: `x·x' + c`.
use super::{KernelForm, KernelLaw};

/// The linear (dot-product) kernel with an offset.
pub struct Linear;

fn k(x: &[f64], z: &[f64], _same: bool, p: &[f64]) -> f64 {
    x.iter().zip(z).map(|(a, b)| a * b).sum::<f64>() + p[0]
}

impl KernelLaw for Linear {
    fn form(&self) -> KernelForm {
        KernelForm::Pointwise(k)
    }
    fn d_params(&self, _x: &[f64], _z: &[f64], _same: bool, _p: &[f64], out: &mut [f64]) {
        out[0] = 1.0;
    }
}
