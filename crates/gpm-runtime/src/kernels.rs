//! Covariance functions: the schedule's [`BoundKernel`] evaluated on input matrices (rows are
//! points) with the current hyperparameter values. Each library kernel's own formula is its
//! `gpm_library` entry's [`KernelForm`]; here are the loops around it: a stationary profile
//! over contiguous scaled distances (the upper triangle only for a training covariance), a
//! point-wise kernel entry by entry, and sums, products and variances of kernels.

use crate::RuntimeError;
use gpm_library::KernelForm;
use gpm_schedule::{BoundArg, BoundKernel, HyperId, Tape};
use nalgebra::DMatrix;
use rayon::prelude::*;

/// Current values of the hyperparameters, indexed by [`HyperId`]: a scalar's value (NaN for a
/// vector or a hyperparameter without a value) and a vector's values (empty for a scalar).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HyperValues {
    /// Scalar values by id: the slots every bound parameter's tape reads.
    pub scalars: Vec<f64>,
    /// Vector values by id (ARD lengthscales).
    pub vectors: Vec<Vec<f64>>,
}

impl HyperValues {
    /// `n` hyperparameters, none with a value yet.
    pub fn new(n: usize) -> Self {
        HyperValues {
            scalars: vec![f64::NAN; n],
            vectors: vec![Vec::new(); n],
        }
    }

    /// A scalar's value, if it has one.
    pub fn scalar(&self, h: HyperId) -> Option<f64> {
        self.scalars.get(h.0).copied().filter(|v| !v.is_nan())
    }

    /// Set a scalar.
    pub fn set_scalar(&mut self, h: HyperId, v: f64) {
        self.scalars[h.0] = v;
    }

    /// A vector's values, if it has them.
    pub fn vector(&self, h: HyperId) -> Option<&[f64]> {
        self.vectors
            .get(h.0)
            .filter(|v| !v.is_empty())
            .map(|v| v.as_slice())
    }

    /// Set a vector.
    pub fn set_vector(&mut self, h: HyperId, v: Vec<f64>) {
        self.vectors[h.0] = v;
    }

    /// Evaluate a bound parameter (constants and scalar hyperparameters).
    pub fn eval(&self, p: &Tape) -> Result<f64, RuntimeError> {
        let v = p.eval(&self.scalars, &mut Vec::new());
        if v.is_nan() {
            return Err(RuntimeError::MissingData(
                "a prior parameter evaluates to NaN: a hyperparameter it reads has no value".into(),
            ));
        }
        Ok(v)
    }
}

fn lengthscales(l: &BoundArg, dims: usize, h: &HyperValues) -> Result<Vec<f64>, RuntimeError> {
    let v = match l {
        BoundArg::Scalar(value) => vec![h.eval(value)?; dims],
        BoundArg::Ard(hyper) => h.vector(*hyper).map(|v| v.to_vec()).ok_or_else(|| {
            RuntimeError::MissingData(format!(
                "no value for the ARD lengthscale (hyperparameter #{})",
                hyper.0 + 1
            ))
        })?,
    };
    if v.len() != dims || v.iter().any(|x| !(*x > 0.0) || !x.is_finite()) {
        return Err(RuntimeError::BadData(format!(
            "lengthscales must be {dims} positive numbers, got {v:?}"
        )));
    }
    Ok(v)
}

/// The points of `x` (rows) as contiguous runs of coordinates divided by their lengthscales:
/// the inner loop of a distance then reads memory in order and multiplies nothing.
fn scaled_points(x: &DMatrix<f64>, ls: &[f64]) -> Vec<f64> {
    let d = ls.len();
    let mut out = vec![0.0; x.nrows() * d];
    for (k, l) in ls.iter().enumerate() {
        for (i, v) in x.column(k).iter().enumerate() {
            out[i * d + k] = v / l;
        }
    }
    out
}

/// A stationary kernel's profile `r² ↦ f(r²)` over a slice, at its other parameters.
type Profile = fn(&mut [f64], &[f64]);

/// The coordinates of `x` divided by their lengthscales, coordinate by coordinate (`x`'s own
/// column-major layout): the rows of a kernel matrix's column, one coordinate at a time, are
/// then a contiguous run.
fn scaled_coordinates(x: &DMatrix<f64>, ls: &[f64]) -> Vec<f64> {
    let n = x.nrows();
    let mut out = x.as_slice().to_vec();
    for (k, l) in ls.iter().enumerate() {
        out[k * n..(k + 1) * n].iter_mut().for_each(|v| *v /= l);
    }
    out
}

/// `f(r²_ij)` for the scaled squared distances `r²_ij = Σ_d ((x_id − z_jd)/ℓ_d)²`, `f` applied
/// in place to a column's values at once. For a training covariance (`x` and `z` the same
/// matrix) only the lower triangle is computed and mirrored — half the evaluations of `f`, and
/// a matrix symmetric to the bit. A column's distances are summed one coordinate at a time
/// over all its rows (independent sums, which vectorise), in the order of the coordinates.
fn stationary_matrix(
    x: &DMatrix<f64>,
    z: &DMatrix<f64>,
    ls: &[f64],
    f: Profile,
    p: &[f64],
) -> DMatrix<f64> {
    let (n, m, d) = (x.nrows(), z.nrows(), ls.len());
    let same = std::ptr::eq(x, z);
    let xs = scaled_coordinates(x, ls);
    let zs = scaled_points(z, ls);
    let mut out = DMatrix::zeros(n, m);
    if n == 0 {
        return out;
    }
    // Each column on its own (the same numbers in any order): in parallel, tens of thousands
    // of entries a task at the least, so that small matrices stay on their thread.
    out.as_mut_slice()
        .par_chunks_mut(n)
        .enumerate()
        .with_min_len(crate::parallel::min_items(m, (1 << 16) / n))
        .for_each(|(j, col)| {
            let zj = &zs[j * d..(j + 1) * d];
            let first = if same { j } else { 0 };
            let col = &mut col[first..];
            for (k, zjk) in zj.iter().enumerate() {
                for (o, a) in col.iter_mut().zip(&xs[k * n + first..(k + 1) * n]) {
                    let t = a - zjk;
                    *o += t * t;
                }
            }
            f(col, p);
        });
    if same {
        mirror_lower(&mut out);
    }
    out
}

/// Copy the lower triangle of a square matrix onto the upper, in 32 × 32 tiles (entry by entry,
/// a column-major transpose strides through memory).
pub fn mirror_lower(m: &mut DMatrix<f64>) {
    const TILE: usize = 32;
    let n = m.nrows();
    let a = m.as_mut_slice();
    for jt in (0..n).step_by(TILE) {
        for it in (jt..n).step_by(TILE) {
            for j in jt..(jt + TILE).min(n) {
                for i in it.max(j + 1)..(it + TILE).min(n) {
                    a[j + i * n] = a[i + j * n];
                }
            }
        }
    }
}

/// A stationary kernel's lengthscale, profile and other arguments (`None` for the others).
fn stationary(k: &BoundKernel) -> Option<(&BoundArg, Profile, &[BoundArg])> {
    match k {
        BoundKernel::Base { law, args } => match law.form() {
            KernelForm::Stationary(f) => Some((&args[0], f, &args[1..])),
            KernelForm::Pointwise(_) => None,
        },
        _ => None,
    }
}

/// Scalar arguments' values (an ARD vector is a lengthscale's only, which the lowering enforces).
fn scalars(args: &[BoundArg], h: &HyperValues) -> Result<Vec<f64>, RuntimeError> {
    args.iter()
        .map(|a| match a {
            BoundArg::Scalar(t) => h.eval(t),
            BoundArg::Ard(_) => Err(RuntimeError::Inconsistent(
                "a vector argument where a kernel takes a scalar".into(),
            )),
        })
        .collect()
}

/// The covariance matrix `k(x_i, z_j)`.
pub fn kernel_matrix(
    k: &BoundKernel,
    x: &DMatrix<f64>,
    z: &DMatrix<f64>,
    h: &HyperValues,
) -> Result<DMatrix<f64>, RuntimeError> {
    let (n, m, dims) = (x.nrows(), z.nrows(), x.ncols());
    if let Some((l, f, rest)) = stationary(k) {
        let ls = lengthscales(l, dims, h)?;
        return Ok(stationary_matrix(x, z, &ls, f, &scalars(rest, h)?));
    }
    Ok(match k {
        BoundKernel::Base { law, args } => {
            let KernelForm::Pointwise(f) = law.form() else {
                return Err(RuntimeError::Inconsistent(
                    "a stationary kernel without a profile".into(),
                ));
            };
            let p = scalars(args, h)?;
            // White noise is between a training point and itself: the same matrix, same row.
            let same = std::ptr::eq(x, z);
            let ones = vec![1.0; dims];
            let xs = scaled_points(x, &ones);
            let zs = if same {
                Vec::new()
            } else {
                scaled_points(z, &ones)
            };
            let zs = if same { &xs } else { &zs };
            DMatrix::from_fn(n, m, |i, j| {
                let (xi, zj) = (&xs[i * dims..(i + 1) * dims], &zs[j * dims..(j + 1) * dims]);
                f(xi, zj, same && i == j, &p)
            })
        }
        BoundKernel::Sum(left, right) => {
            kernel_matrix(left, x, z, h)? + kernel_matrix(right, x, z, h)?
        }
        BoundKernel::Product(left, right) => {
            kernel_matrix(left, x, z, h)?.component_mul(&kernel_matrix(right, x, z, h)?)
        }
        BoundKernel::Scale { variance, kernel } => {
            scaled(kernel_matrix(kernel, x, z, h)?, h.eval(variance)?)?
        }
    })
}

/// Most points for which [`squared_distances`] are kept (`N²` values: 134 MB at this size).
pub const MAX_KEPT_DISTANCES: usize = 4096;

/// Whether kernel `k` has a stationary part whose lengthscale is one scalar (the kept squared
/// distances of [`training_matrix`] serve it).
pub fn uses_scalar_distances(k: &BoundKernel) -> bool {
    if let Some((l, _, _)) = stationary(k) {
        return matches!(l, BoundArg::Scalar(_));
    }
    match k {
        BoundKernel::Sum(a, b) | BoundKernel::Product(a, b) => {
            uses_scalar_distances(a) || uses_scalar_distances(b)
        }
        BoundKernel::Scale { kernel, .. } => uses_scalar_distances(kernel),
        _ => false,
    }
}

/// The unscaled squared distances `‖x_i − x_j‖²` between the rows of `x`, computed once per
/// input set: a kernel with one scalar lengthscale is then `f(d²/ℓ²)` entry by entry — no
/// pass over the `D` coordinates at each evaluation (30 of them for the breast-cancer data).
pub fn squared_distances(x: &DMatrix<f64>) -> DMatrix<f64> {
    fn identity(_: &mut [f64], _: &[f64]) {}
    let ones = vec![1.0; x.ncols()];
    stationary_matrix(x, x, &ones, identity, &[])
}

/// The training covariance `k(x_i, x_j)` at values `h`, with the squared distances of `x` kept
/// ([`squared_distances`]) where the kernel's lengthscale is one scalar, else as
/// [`kernel_matrix`] forms it.
pub fn training_matrix(
    k: &BoundKernel,
    x: &DMatrix<f64>,
    d2: &DMatrix<f64>,
    h: &HyperValues,
) -> Result<DMatrix<f64>, RuntimeError> {
    let mut out = training_lower(k, x, d2, h)?;
    mirror_lower(&mut out);
    Ok(out)
}

/// [`training_matrix`]'s lower triangle, the diagonal included — what a factorisation and a
/// symmetric product read ([`crate::gaussian::gp_log_marginal_scaled`]): the same numbers
/// there, without the pass that mirrors them. Above the diagonal: zeros or the mirror.
pub fn training_lower(
    k: &BoundKernel,
    x: &DMatrix<f64>,
    d2: &DMatrix<f64>,
    h: &HyperValues,
) -> Result<DMatrix<f64>, RuntimeError> {
    if let Some((l @ BoundArg::Scalar(_), f, rest)) = stationary(k) {
        let ls = lengthscales(l, 1, h)?[0];
        let p = scalars(rest, h)?;
        let inv = 1.0 / (ls * ls);
        let n = d2.nrows();
        // Column j's rows j.. as plain slices (contiguous, so the profile vectorises): half the
        // exponentials, and, mirrored, a matrix symmetric to the bit. Each entry is written
        // once (zeros above the diagonal): no pass to zero the matrix first.
        let d2 = d2.as_slice();
        let mut k = Vec::with_capacity(n * n);
        for j in 0..n {
            k.resize(j * n + j, 0.0);
            k.extend(d2[j * n + j..(j + 1) * n].iter().map(|d| d * inv));
            f(&mut k[j * n + j..], &p);
        }
        return Ok(DMatrix::from_vec(n, n, k));
    }
    Ok(match k {
        BoundKernel::Sum(a, b) => training_lower(a, x, d2, h)? + training_lower(b, x, d2, h)?,
        BoundKernel::Product(a, b) => {
            training_lower(a, x, d2, h)?.component_mul(&training_lower(b, x, d2, h)?)
        }
        BoundKernel::Scale { variance, kernel } => {
            scaled(training_lower(kernel, x, d2, h)?, h.eval(variance)?)?
        }
        other => kernel_matrix(other, x, x, h)?,
    })
}

/// `s · k`, the covariance of a kernel scaled by the variance `s` (which must not be negative).
pub fn scaled(k: DMatrix<f64>, s: f64) -> Result<DMatrix<f64>, RuntimeError> {
    check_variance(s)?;
    let mut k = k;
    k *= s;
    Ok(k)
}

/// A kernel variance must not be negative (nor NaN): the error names it.
pub(crate) fn check_variance(s: f64) -> Result<(), RuntimeError> {
    if !(s >= 0.0) {
        return Err(RuntimeError::BadData(format!(
            "a kernel variance is negative ({s})"
        )));
    }
    Ok(())
}

/// The diagonal `k(x_i, x_i)` (for predictive variances without forming the matrix): what
/// [`kernel_matrix`] has on its diagonal, the stationary parts `f(0)` at once.
pub fn kernel_diag(
    k: &BoundKernel,
    x: &DMatrix<f64>,
    h: &HyperValues,
) -> Result<Vec<f64>, RuntimeError> {
    let (n, dims) = (x.nrows(), x.ncols());
    if let Some((l, f, rest)) = stationary(k) {
        lengthscales(l, dims, h)?;
        let mut out = vec![0.0; n];
        f(&mut out, &scalars(rest, h)?);
        return Ok(out);
    }
    let both = |a: &BoundKernel, b: &BoundKernel, op: fn(f64, f64) -> f64| {
        let (a, b) = (kernel_diag(a, x, h)?, kernel_diag(b, x, h)?);
        Ok::<_, RuntimeError>(a.iter().zip(&b).map(|(a, b)| op(*a, *b)).collect())
    };
    match k {
        BoundKernel::Base { law, args } => {
            let KernelForm::Pointwise(f) = law.form() else {
                return Err(RuntimeError::Inconsistent(
                    "a stationary kernel without a profile".into(),
                ));
            };
            let p = scalars(args, h)?;
            let mut xi = vec![0.0; dims];
            Ok((0..n)
                .map(|i| {
                    xi.iter_mut().enumerate().for_each(|(d, v)| *v = x[(i, d)]);
                    f(&xi, &xi, true, &p)
                })
                .collect())
        }
        BoundKernel::Sum(a, b) => both(a, b, |a, b| a + b),
        BoundKernel::Product(a, b) => both(a, b, |a, b| a * b),
        BoundKernel::Scale { variance, kernel } => {
            let s = h.eval(variance)?;
            let d = DMatrix::from_vec(n, 1, kernel_diag(kernel, x, h)?);
            Ok(scaled(d, s)?.as_slice().to_vec())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpm_schedule::Tape;

    #[test]
    fn kept_distances_give_the_kernel_matrix() {
        let x = DMatrix::from_fn(7, 3, |i, j| ((i * 3 + j * 5) % 11) as f64 * 0.37 - 1.0);
        let h = HyperValues::new(0);
        let base = |name: &str, args: &[f64]| BoundKernel::Base {
            law: gpm_library::kernel::lookup(name).unwrap(),
            args: args
                .iter()
                .map(|a| BoundArg::Scalar(Tape::constant(*a)))
                .collect(),
        };
        let kernels = [
            base("sqexp", &[1.7]),
            BoundKernel::Scale {
                variance: Tape::constant(2.5),
                kernel: Box::new(base("matern32", &[1.7])),
            },
            BoundKernel::Sum(
                Box::new(base("matern52", &[1.7])),
                Box::new(base("linear", &[0.3])),
            ),
            BoundKernel::Product(
                Box::new(base("matern12", &[1.7])),
                Box::new(base("white", &[])),
            ),
            base("rational_quadratic", &[1.7, 0.8]),
        ];
        let d2 = squared_distances(&x);
        for k in &kernels {
            assert!(uses_scalar_distances(k));
            let want = kernel_matrix(k, &x, &x, &h).unwrap();
            let got = training_matrix(k, &x, &d2, &h).unwrap();
            assert!((want - &got).amax() < 1e-12, "{k:?}");
            assert_eq!(got, got.transpose());
            // The lower triangle alone is the whole matrix's, to the bit.
            let lower = training_lower(k, &x, &d2, &h).unwrap();
            for j in 0..got.ncols() {
                for i in j..got.nrows() {
                    assert_eq!(lower[(i, j)].to_bits(), got[(i, j)].to_bits(), "{k:?}");
                }
            }
        }
        assert!(!uses_scalar_distances(&base("linear", &[0.3])));
        assert!(!uses_scalar_distances(&base("periodic", &[0.3, 1.0])));
        // The diagonal alone is the matrix's, to the bit (white noise included), and a
        // cross-covariance's columns are those of the stacked training matrix.
        for k in kernels.iter().chain([&base("periodic", &[0.3, 1.0])]) {
            let full = kernel_matrix(k, &x, &x, &h).unwrap();
            assert_eq!(
                kernel_diag(k, &x, &h).unwrap(),
                full.diagonal().as_slice(),
                "{k:?}"
            );
        }
        let full = kernel_matrix(&kernels[0], &x, &x, &h).unwrap();
        assert!(scaled(full.clone(), -1.0).is_err());
        let z = x.rows(2, 3).into_owned();
        let cross = kernel_matrix(&kernels[0], &z, &x, &h).unwrap();
        assert!((cross - full.rows(2, 3)).amax() < 1e-15);
    }
}
