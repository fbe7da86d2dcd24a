//! Covariance functions: the schedule's [`BoundKernel`] evaluated on input matrices (rows are
//! points) with the current hyperparameter values.

use crate::RuntimeError;
use gpm_schedule::{BoundKernel, BoundLengthscale, HyperId, Tape};
use nalgebra::DMatrix;

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

fn lengthscales(
    l: &BoundLengthscale,
    dims: usize,
    h: &HyperValues,
) -> Result<Vec<f64>, RuntimeError> {
    let v = match l {
        BoundLengthscale::Scalar(value) => vec![h.eval(value)?; dims],
        BoundLengthscale::Ard(hyper) => h.vector(*hyper).map(|v| v.to_vec()).ok_or_else(|| {
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

/// Scaled squared distance Σ_d ((x_d − z_d)/ℓ_d)².
fn sqdist(x: &DMatrix<f64>, i: usize, z: &DMatrix<f64>, j: usize, ls: &[f64]) -> f64 {
    let mut s = 0.0;
    for (d, l) in ls.iter().enumerate() {
        let t = (x[(i, d)] - z[(j, d)]) / l;
        s += t * t;
    }
    s
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

/// `f(r²_ij)` for the scaled squared distances `r²_ij = Σ_d ((x_id − z_jd)/ℓ_d)²`, `f` applied
/// in place to a column's values at once ([`Profile`]). For a training covariance (`x` and `z`
/// the same matrix) only the upper triangle is computed and mirrored — half the evaluations of
/// `f`, and a matrix symmetric to the bit.
fn stationary_matrix(x: &DMatrix<f64>, z: &DMatrix<f64>, ls: &[f64], f: Profile) -> DMatrix<f64> {
    let (n, m, d) = (x.nrows(), z.nrows(), ls.len());
    let same = std::ptr::eq(x, z);
    let xs = scaled_points(x, ls);
    let zs = if same {
        Vec::new()
    } else {
        scaled_points(z, ls)
    };
    let zs = if same { &xs } else { &zs };
    let mut out = DMatrix::zeros(n, m);
    for j in 0..m {
        let zj = &zs[j * d..(j + 1) * d];
        let rows = if same { j + 1 } else { n };
        let col = &mut out.column_mut(j);
        let col = &mut col.as_mut_slice()[..rows];
        for (i, o) in col.iter_mut().enumerate() {
            let xi = &xs[i * d..(i + 1) * d];
            *o = xi.iter().zip(zj).map(|(a, b)| (a - b) * (a - b)).sum();
        }
        f.apply(col);
    }
    if same {
        mirror_upper(&mut out);
    }
    out
}

/// Copy the upper triangle of a square matrix onto the lower, in 32 × 32 tiles (entry by entry,
/// a column-major transpose strides through memory).
fn mirror_upper(m: &mut DMatrix<f64>) {
    const TILE: usize = 32;
    let n = m.nrows();
    let a = m.as_mut_slice();
    for jt in (0..n).step_by(TILE) {
        for it in (jt..n).step_by(TILE) {
            for j in jt..(jt + TILE).min(n) {
                for i in it.max(j + 1)..(it + TILE).min(n) {
                    a[i + j * n] = a[j + i * n];
                }
            }
        }
    }
}

/// A stationary kernel's profile `r² ↦ f(r²)`, applied in place to a slice of scaled squared
/// distances ([`Profile::apply`]): slices, so that the exponentials vectorise
/// ([`gpm_special::exp_in_place`]). The one place each profile is written.
#[derive(Debug, Clone, Copy)]
enum Profile {
    /// `e^(−r²/2)`.
    SqExp,
    /// `e^(−r)`.
    Matern12,
    /// `(1 + √3 r) e^(−√3 r)`.
    Matern32,
    /// `(1 + √5 r + 5r²/3) e^(−√5 r)`.
    Matern52,
    /// `r²` itself (the squared distances).
    Identity,
}

impl Profile {
    /// `f` over `v` in place, compiled for the widest instruction set the CPU has (AVX2 + FMA
    /// where present, else the baseline), chosen at run time by faer's dispatcher (`pulp`): the
    /// build targets baseline x86-64, and four lanes run the exponentials 2.3× faster.
    fn apply(self, v: &mut [f64]) {
        pulp::Arch::new().dispatch(InPlace { profile: self, v })
    }
}

/// [`Profile::apply`]'s body, in the form `pulp` compiles per instruction set (a closure would
/// not be inlined into the dispatched function, and would run at the baseline width).
struct InPlace<'a> {
    profile: Profile,
    v: &'a mut [f64],
}

impl pulp::WithSimd for InPlace<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let v = self.v;
        match self.profile {
            Profile::SqExp => {
                for x in v.iter_mut() {
                    *x *= -0.5;
                }
                gpm_special::exp_in_place(v);
            }
            Profile::Matern12 => {
                for x in v.iter_mut() {
                    *x = -x.sqrt();
                }
                gpm_special::exp_in_place(v);
            }
            Profile::Matern32 => matern(v, 3.0, 0.0),
            Profile::Matern52 => matern(v, 5.0, 1.0 / 3.0),
            Profile::Identity => {}
        }
    }
}

/// `(1 + a + b·a²)·e^(−a)` with `a = √(c·r²)` in place: the Matérn 3/2 (`b = 0`) and 5/2
/// (`b = 1/3`) profiles, in chunks that keep `a` beside its exponential.
#[inline(always)]
fn matern(v: &mut [f64], c: f64, b: f64) {
    let mut e = [0.0; 64];
    for chunk in v.chunks_mut(64) {
        let e = &mut e[..chunk.len()];
        for (a, ei) in chunk.iter_mut().zip(e.iter_mut()) {
            *a = (c * *a).sqrt();
            *ei = -*a;
        }
        gpm_special::exp_in_place(e);
        for (a, ei) in chunk.iter_mut().zip(e.iter()) {
            *a = (1.0 + *a + b * *a * *a) * ei;
        }
    }
}

/// A stationary kernel's lengthscale and its profile in the scaled squared distance (`None`
/// for the other kernels).
fn stationary_profile(k: &BoundKernel) -> Option<(&BoundLengthscale, Profile)> {
    match k {
        BoundKernel::SqExp(l) => Some((l, Profile::SqExp)),
        BoundKernel::Matern12(l) => Some((l, Profile::Matern12)),
        BoundKernel::Matern32(l) => Some((l, Profile::Matern32)),
        BoundKernel::Matern52(l) => Some((l, Profile::Matern52)),
        _ => None,
    }
}

/// The covariance matrix `k(x_i, z_j)`.
pub fn kernel_matrix(
    k: &BoundKernel,
    x: &DMatrix<f64>,
    z: &DMatrix<f64>,
    h: &HyperValues,
) -> Result<DMatrix<f64>, RuntimeError> {
    let (n, m, dims) = (x.nrows(), z.nrows(), x.ncols());
    if let Some((l, f)) = stationary_profile(k) {
        let ls = lengthscales(l, dims, h)?;
        return Ok(stationary_matrix(x, z, &ls, f));
    }
    Ok(match k {
        BoundKernel::SqExp(_)
        | BoundKernel::Matern12(_)
        | BoundKernel::Matern32(_)
        | BoundKernel::Matern52(_) => {
            return Err(RuntimeError::Inconsistent(
                "a stationary kernel without a profile".into(),
            ))
        }
        BoundKernel::Linear { offset } => {
            let c = h.eval(offset)?;
            DMatrix::from_fn(n, m, |i, j| {
                (0..dims).map(|d| x[(i, d)] * z[(j, d)]).sum::<f64>() + c
            })
        }
        BoundKernel::Periodic {
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
        BoundKernel::Constant => DMatrix::from_element(n, m, 1.0),
        BoundKernel::White => DMatrix::from_fn(n, m, |i, j| {
            // Identity between identical points of the same set (training covariance only).
            if i == j && std::ptr::eq(x, z) {
                1.0
            } else {
                0.0
            }
        }),
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
    if let Some((l, _)) = stationary_profile(k) {
        return matches!(l, BoundLengthscale::Scalar(_));
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
    let ones = vec![1.0; x.ncols()];
    stationary_matrix(x, x, &ones, Profile::Identity)
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
    if let Some((BoundLengthscale::Scalar(l), f)) = stationary_profile(k) {
        let ls = lengthscales(&BoundLengthscale::Scalar(l.clone()), 1, h)?[0];
        let inv = 1.0 / (ls * ls);
        let n = d2.nrows();
        let mut out = DMatrix::zeros(n, n);
        // The upper triangle column by column (contiguous, so the profile vectorises), then
        // mirrored: half the exponentials, and a matrix symmetric to the bit.
        let (d2, k) = (d2.as_slice(), out.as_mut_slice());
        for j in 0..n {
            // Column j's rows 0..=j, as plain slices (nalgebra's strided iterators do not
            // vectorise).
            let col = &mut k[j * n..j * n + j + 1];
            for (o, d) in col.iter_mut().zip(&d2[j * n..j * n + j + 1]) {
                *o = d * inv;
            }
            f.apply(col);
        }
        mirror_upper(&mut out);
        return Ok(out);
    }
    Ok(match k {
        BoundKernel::Sum(a, b) => training_matrix(a, x, d2, h)? + training_matrix(b, x, d2, h)?,
        BoundKernel::Product(a, b) => {
            training_matrix(a, x, d2, h)?.component_mul(&training_matrix(b, x, d2, h)?)
        }
        BoundKernel::Scale { variance, kernel } => {
            scaled(training_matrix(kernel, x, d2, h)?, h.eval(variance)?)?
        }
        other => kernel_matrix(other, x, x, h)?,
    })
}

/// `s · k`, the covariance of a kernel scaled by the variance `s` (which must not be negative).
pub fn scaled(k: DMatrix<f64>, s: f64) -> Result<DMatrix<f64>, RuntimeError> {
    if !(s >= 0.0) {
        return Err(RuntimeError::BadData(format!(
            "a kernel variance is negative ({s})"
        )));
    }
    Ok(k * s)
}

/// The diagonal `k(x_i, x_i)` (for predictive variances without forming the matrix).
pub fn kernel_diag(
    k: &BoundKernel,
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

#[cfg(test)]
mod tests {
    use super::*;
    use gpm_schedule::Tape;

    /// Each profile over a slice (vectorised exponentials) against its formula with libm's
    /// `exp`, over the distances a kernel meets, at lengths that leave a remainder after the
    /// blocks of eight and chunks of 64.
    #[test]
    fn profiles_match_their_formulas() {
        let r2: Vec<f64> = (0..203).map(|i| (i as f64) * 0.173).collect();
        let formulas: [(Profile, fn(f64) -> f64); 5] = [
            (Profile::SqExp, |r2| (-0.5 * r2).exp()),
            (Profile::Matern12, |r2| (-r2.sqrt()).exp()),
            (Profile::Matern32, |r2| {
                let a = (3.0 * r2).sqrt();
                (1.0 + a) * (-a).exp()
            }),
            (Profile::Matern52, |r2| {
                let a = (5.0 * r2).sqrt();
                (1.0 + a + a * a / 3.0) * (-a).exp()
            }),
            (Profile::Identity, |r2| r2),
        ];
        for (profile, formula) in formulas {
            let mut v = r2.clone();
            profile.apply(&mut v);
            for (x, got) in r2.iter().zip(&v) {
                let want = formula(*x);
                assert!(
                    (got - want).abs() <= 8.0 * f64::EPSILON * want.abs(),
                    "{profile:?} at r² = {x}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn kept_distances_give_the_kernel_matrix() {
        let x = DMatrix::from_fn(7, 3, |i, j| ((i * 3 + j * 5) % 11) as f64 * 0.37 - 1.0);
        let h = HyperValues::new(0);
        let ls = || BoundLengthscale::Scalar(Tape::constant(1.7));
        let kernels = [
            BoundKernel::SqExp(ls()),
            BoundKernel::Scale {
                variance: Tape::constant(2.5),
                kernel: Box::new(BoundKernel::Matern32(ls())),
            },
            BoundKernel::Sum(
                Box::new(BoundKernel::Matern52(ls())),
                Box::new(BoundKernel::Linear {
                    offset: Tape::constant(0.3),
                }),
            ),
            BoundKernel::Product(
                Box::new(BoundKernel::Matern12(ls())),
                Box::new(BoundKernel::White),
            ),
        ];
        let d2 = squared_distances(&x);
        for k in &kernels {
            assert!(uses_scalar_distances(k));
            let want = kernel_matrix(k, &x, &x, &h).unwrap();
            let got = training_matrix(k, &x, &d2, &h).unwrap();
            assert!((want - &got).amax() < 1e-12, "{k:?}");
            assert_eq!(got, got.transpose());
        }
        assert!(!uses_scalar_distances(&BoundKernel::Linear {
            offset: Tape::constant(0.3)
        }));
    }
}
