//! Covariance functions: the IR's [`Kernel`] evaluated on input matrices (rows are points) with
//! the current hyperparameter values.

use crate::RuntimeError;
use gpm_ir::{Kernel, Lengthscale, Sx, SymRole};
use nalgebra::DMatrix;
use std::collections::BTreeMap;

/// Current values of the hyperparameters: scalars, and vectors for ARD lengthscales.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HyperValues {
    /// Scalar hyperparameters.
    pub scalars: BTreeMap<String, f64>,
    /// Vector hyperparameters.
    pub vectors: BTreeMap<String, Vec<f64>>,
}

impl HyperValues {
    /// Evaluate a parameter expression (constants and scalar hyperparameters).
    pub fn eval(&self, p: &Sx) -> Result<f64, RuntimeError> {
        p.eval(&|role, name| match role {
            SymRole::Hyper => self.scalars.get(name).copied(),
            _ => None,
        })
        .ok_or_else(|| RuntimeError::Inconsistent(format!("cannot evaluate the parameter `{p}`")))
    }
}

fn lengthscales(l: &Lengthscale, dims: usize, h: &HyperValues) -> Result<Vec<f64>, RuntimeError> {
    let v = match l {
        Lengthscale::Scalar { value } => vec![h.eval(value)?; dims],
        Lengthscale::Ard { hyper } => h.vectors.get(hyper).cloned().ok_or_else(|| {
            RuntimeError::MissingData(format!("no value for the ARD lengthscale `{hyper}`"))
        })?,
    };
    if v.len() != dims || v.iter().any(|x| !(*x > 0.0) || !x.is_finite()) {
        return Err(RuntimeError::BadData(format!(
            "lengthscales must be {dims} positive numbers, got {v:?}"
        )));
    }
    Ok(v)
}

/// Scaled squared distance Σ_d ((x_d − z_d)/ℓ_d)².
fn sqdist(x: &DMatrix<f64>, i: usize, z: &DMatrix<f64>, j: usize, ls: &[f64]) -> f64 {
    let mut s = 0.0;
    for (d, l) in ls.iter().enumerate() {
        let t = (x[(i, d)] - z[(j, d)]) / l;
        s += t * t;
    }
    s
}

/// The covariance matrix `k(x_i, z_j)`.
pub fn kernel_matrix(
    k: &Kernel,
    x: &DMatrix<f64>,
    z: &DMatrix<f64>,
    h: &HyperValues,
) -> Result<DMatrix<f64>, RuntimeError> {
    let (n, m, dims) = (x.nrows(), z.nrows(), x.ncols());
    let stationary =
        |l: &Lengthscale, f: &dyn Fn(f64) -> f64| -> Result<DMatrix<f64>, RuntimeError> {
            let ls = lengthscales(l, dims, h)?;
            Ok(DMatrix::from_fn(n, m, |i, j| f(sqdist(x, i, z, j, &ls))))
        };
    Ok(match k {
        Kernel::SqExp { lengthscale } => stationary(lengthscale, &|r2| (-0.5 * r2).exp())?,
        Kernel::Matern12 { lengthscale } => stationary(lengthscale, &|r2| (-r2.sqrt()).exp())?,
        Kernel::Matern32 { lengthscale } => stationary(lengthscale, &|r2| {
            let a = (3.0 * r2).sqrt();
            (1.0 + a) * (-a).exp()
        })?,
        Kernel::Matern52 { lengthscale } => stationary(lengthscale, &|r2| {
            let a = (5.0 * r2).sqrt();
            (1.0 + a + a * a / 3.0) * (-a).exp()
        })?,
        Kernel::Linear { offset } => {
            let c = h.eval(offset)?;
            DMatrix::from_fn(n, m, |i, j| {
                (0..dims).map(|d| x[(i, d)] * z[(j, d)]).sum::<f64>() + c
            })
        }
        Kernel::Periodic {
            lengthscale,
            period,
        } => {
            let (l, p) = (h.eval(lengthscale)?, h.eval(period)?);
            let ones = vec![1.0; dims];
            DMatrix::from_fn(n, m, |i, j| {
                let r = sqdist(x, i, z, j, &ones).sqrt();
                let s = (std::f64::consts::PI * r / p).sin();
                (-2.0 * s * s / (l * l)).exp()
            })
        }
        Kernel::Constant => DMatrix::from_element(n, m, 1.0),
        Kernel::White => DMatrix::from_fn(n, m, |i, j| {
            // Identity between identical points of the same set (training covariance only).
            if i == j && std::ptr::eq(x, z) {
                1.0
            } else {
                0.0
            }
        }),
        Kernel::Sum { left, right } => {
            kernel_matrix(left, x, z, h)? + kernel_matrix(right, x, z, h)?
        }
        Kernel::Product { left, right } => {
            kernel_matrix(left, x, z, h)?.component_mul(&kernel_matrix(right, x, z, h)?)
        }
        Kernel::Scale { variance, kernel } => {
            let s = h.eval(variance)?;
            if !(s >= 0.0) {
                return Err(RuntimeError::BadData(format!(
                    "a kernel variance is negative ({s})"
                )));
            }
            kernel_matrix(kernel, x, z, h)? * s
        }
    })
}

/// The diagonal `k(x_i, x_i)` (for predictive variances without forming the matrix).
pub fn kernel_diag(
    k: &Kernel,
    x: &DMatrix<f64>,
    h: &HyperValues,
) -> Result<Vec<f64>, RuntimeError> {
    let n = x.nrows();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let row = x.rows(i, 1).into_owned();
        let v = kernel_matrix(k, &row, &row, h)?;
        out.push(v[(0, 0)]);
    }
    Ok(out)
}
