//! `∂K/∂h`: a bound kernel's training covariance differentiated in one hyperparameter — each
//! library kernel's own `∂k/∂p` ([`gpm_library::KernelLaw::d_params`]) through the language's
//! sums, products and variances. What NUTS follows when a GP's kernel hyperparameters are
//! sampled ([`crate::nuts`]). A parameter must be the hyperparameter itself (`sqexp(ell)`, not
//! `sqexp(2 * ell)`) and a scalar: [`differentiable`] says where it is not.

use crate::kernels::{kernel_matrix, HyperValues};
use crate::RuntimeError;
use gpm_library::kernel::KernelForm;
use gpm_schedule::{BoundArg, BoundKernel, HyperId, Tape};
use nalgebra::DMatrix;

/// Why `∂K/∂h` cannot be formed for kernel `k` (`None`: it can).
pub fn differentiable(k: &BoundKernel, h: HyperId) -> Option<String> {
    let tape = |t: &Tape| {
        (t.slots().any(|s| s == h.0) && t.as_slot() != Some(h.0))
            .then(|| "a kernel parameter computed from a hyperparameter (write the hyperparameter itself)".to_string())
    };
    match k {
        BoundKernel::Base { args, .. } => args.iter().find_map(|a| match a {
            BoundArg::Scalar(t) => tape(t),
            BoundArg::Ard(v) if *v == h => Some("an ARD lengthscale".into()),
            BoundArg::Ard(_) => None,
        }),
        BoundKernel::Sum(a, b) | BoundKernel::Product(a, b) => {
            differentiable(a, h).or_else(|| differentiable(b, h))
        }
        BoundKernel::Scale { variance, kernel } => {
            tape(variance).or_else(|| differentiable(kernel, h))
        }
    }
}

/// Whether `k` reads `h`.
fn reads(k: &BoundKernel, h: HyperId) -> bool {
    let mut read = Vec::new();
    k.hypers(&mut read);
    read.contains(&h)
}

/// `∂t/∂h` of a parameter that is `h` itself or does not read it.
fn d_tape(t: &Tape, h: HyperId) -> f64 {
    if t.as_slot() == Some(h.0) {
        1.0
    } else {
        0.0
    }
}

/// `∂K/∂h` on the rows of `x` at values `hv` (`None`: `K` does not read `h`).
pub fn training_gradient(
    k: &BoundKernel,
    x: &DMatrix<f64>,
    hv: &HyperValues,
    h: HyperId,
) -> Result<Option<DMatrix<f64>>, RuntimeError> {
    if !reads(k, h) {
        return Ok(None);
    }
    if let Some(why) = differentiable(k, h) {
        return Err(RuntimeError::Unsupported(format!(
            "no derivative of the kernel in its hyperparameter: {why}"
        )));
    }
    Ok(Some(match k {
        BoundKernel::Base { law, args } => base(*law, args, x, hv, h)?,
        BoundKernel::Sum(a, b) => match (
            training_gradient(a, x, hv, h)?,
            training_gradient(b, x, hv, h)?,
        ) {
            (Some(da), Some(db)) => da + db,
            (Some(d), None) | (None, Some(d)) => d,
            (None, None) => unreachable!("the sum reads h"),
        },
        BoundKernel::Product(a, b) => {
            // ∂(A ∘ B) = ∂A ∘ B + A ∘ ∂B.
            let n = x.nrows();
            let mut d = DMatrix::zeros(n, n);
            if let Some(da) = training_gradient(a, x, hv, h)? {
                d += da.component_mul(&kernel_matrix(b, x, x, hv)?);
            }
            if let Some(db) = training_gradient(b, x, hv, h)? {
                d += kernel_matrix(a, x, x, hv)?.component_mul(&db);
            }
            d
        }
        BoundKernel::Scale { variance, kernel } => {
            // ∂(s K) = (∂s) K + s ∂K.
            let n = x.nrows();
            let mut d = DMatrix::zeros(n, n);
            let ds = d_tape(variance, h);
            if ds != 0.0 {
                d += kernel_matrix(kernel, x, x, hv)? * ds;
            }
            if let Some(dk) = training_gradient(kernel, x, hv, h)? {
                d += dk * hv.eval(variance)?;
            }
            d
        }
    }))
}

/// `Σ_j (∂p_j/∂h) ∂k/∂p_j` of a library kernel on every pair of rows (the upper triangle,
/// mirrored), the white kernel's "same point" on the diagonal as in [`kernel_matrix`].
fn base(
    law: gpm_library::KernelRef,
    args: &[BoundArg],
    x: &DMatrix<f64>,
    hv: &HyperValues,
    h: HyperId,
) -> Result<DMatrix<f64>, RuntimeError> {
    let mut p = Vec::with_capacity(args.len());
    let mut dp = Vec::with_capacity(args.len());
    for a in args {
        let BoundArg::Scalar(t) = a else {
            return Err(RuntimeError::Unsupported(
                "no derivative of a kernel with an ARD lengthscale".into(),
            ));
        };
        p.push(hv.eval(t)?);
        dp.push(d_tape(t, h));
    }
    let (n, dims) = (x.nrows(), x.ncols());
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..dims).map(|d| x[(i, d)]).collect())
        .collect();
    let stationary = matches!(law.form(), KernelForm::Stationary(_));
    if stationary && !(p[0] > 0.0) {
        return Err(RuntimeError::BadData(format!(
            "a lengthscale must be positive, got {}",
            p[0]
        )));
    }
    let mut out = DMatrix::zeros(n, n);
    let mut d = vec![0.0; p.len()];
    for j in 0..n {
        for i in 0..=j {
            law.d_params(&rows[i], &rows[j], i == j, &p, &mut d);
            let v: f64 = d.iter().zip(&dp).map(|(a, b)| a * b).sum();
            out[(i, j)] = v;
            out[(j, i)] = v;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tape_slot(k: usize, _n: usize) -> Tape {
        Tape::slot(k)
    }

    /// `variance · sqexp(ℓ) · periodic(ℓp, p) + linear(c)`, each parameter a hyperparameter:
    /// `∂K/∂h` against central differences of `K`.
    #[test]
    fn kernel_gradients_match_differences() {
        let lookup = |n: &str| gpm_library::kernel::lookup(n).unwrap();
        let arg = |k| BoundArg::Scalar(tape_slot(k, 5));
        let k = BoundKernel::Sum(
            Box::new(BoundKernel::Scale {
                variance: tape_slot(0, 5),
                kernel: Box::new(BoundKernel::Product(
                    Box::new(BoundKernel::Base {
                        law: lookup("sqexp"),
                        args: vec![arg(1)],
                    }),
                    Box::new(BoundKernel::Base {
                        law: lookup("periodic"),
                        args: vec![arg(2), arg(3)],
                    }),
                )),
            }),
            Box::new(BoundKernel::Base {
                law: lookup("linear"),
                args: vec![arg(4)],
            }),
        );
        let x = DMatrix::from_fn(7, 2, |i, j| ((i * 3 + j * 5) as f64 * 0.37).sin());
        let mut hv = HyperValues::new(5);
        hv.scalars = vec![1.3, 0.8, 1.1, 1.7, 0.4];
        for h in 0..5 {
            let d = training_gradient(&k, &x, &hv, HyperId(h)).unwrap().unwrap();
            let at = |e: f64| {
                let mut v = hv.clone();
                v.scalars[h] += e;
                kernel_matrix(&k, &x, &x, &v).unwrap()
            };
            let numeric = (at(1e-6) - at(-1e-6)) / 2e-6;
            assert!((d - numeric).abs().max() < 1e-6, "hyperparameter {h}");
        }
        assert!(training_gradient(&k, &x, &hv, HyperId(7))
            .unwrap()
            .is_none());
    }
}
