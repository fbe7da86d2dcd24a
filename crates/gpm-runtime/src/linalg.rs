//! Dense factorisations of the latent blocks, the one O(N³) step of a Gibbs sweep and of a
//! CAVI block update. The factorisation itself is faer's blocked, vectorised Cholesky (5-7×
//! nalgebra's column algorithm at N = 500-1000 on one core); the factor is handed back as
//! nalgebra's `Cholesky`, so the rest of the runtime keeps one matrix type. Sequential (no
//! thread pool): chains already run in parallel, and a fixed seed must reproduce a run.

use nalgebra::{Cholesky, DMatrix, Dyn};

/// Below this size nalgebra's own factorisation is as fast (no packing overhead).
const BLOCKED_FROM: usize = 48;

/// The Cholesky factor `L` of a symmetric positive-definite matrix (its lower triangle is
/// read), or `None` when it is not positive definite or not finite. The stored factor has a
/// zero upper triangle, so `l_dirty()` is `L` without the copy `l()` makes.
pub fn cholesky(a: DMatrix<f64>) -> Option<Cholesky<f64, Dyn>> {
    let n = a.nrows();
    if n != a.ncols() {
        return None;
    }
    if n < BLOCKED_FROM {
        // `unpack` zeroes the upper triangle, so `l_dirty()` is the clean factor either way.
        return Cholesky::new(a).map(|c| Cholesky::pack_dirty(c.unpack()));
    }
    let view = faer::MatRef::from_column_major_slice(a.as_slice(), n, n);
    let llt = view.llt(faer::Side::Lower).ok()?;
    let l = llt.L();
    let mut out = a;
    for j in 0..n {
        for i in 0..j {
            out[(i, j)] = 0.0;
        }
        for i in j..n {
            out[(i, j)] = l[(i, j)];
        }
    }
    // faer stops at a non-positive pivot; a NaN entry can slip through as a NaN factor.
    if (0..n).any(|i| !(out[(i, i)] > 0.0 && out[(i, i)].is_finite())) {
        return None;
    }
    Some(Cholesky::pack_dirty(out))
}

/// `L⁻¹` of a lower-triangular factor (blocked; the upper triangle of the result is zero).
pub fn lower_triangular_inverse(l: &DMatrix<f64>) -> DMatrix<f64> {
    let n = l.nrows();
    let mut out = DMatrix::zeros(n, n);
    let src = faer::MatRef::from_column_major_slice(l.as_slice(), n, n);
    let dst = faer::MatMut::from_column_major_slice_mut(out.as_mut_slice(), n, n);
    faer::linalg::triangular_inverse::invert_lower_triangular(dst, src, faer::Par::Seq);
    out
}

/// `L⁻¹ B` for a lower-triangular `L` and a matrix right-hand side (blocked; the `M × N`
/// solves of sparse GPs, `N` up to millions, and the test-point solves of prediction).
pub fn solve_lower(l: &DMatrix<f64>, rhs: DMatrix<f64>) -> DMatrix<f64> {
    let (n, k) = (rhs.nrows(), rhs.ncols());
    assert_eq!(l.nrows(), n, "solve_lower: L and B have different rows");
    let mut out = rhs;
    let tri = faer::MatRef::from_column_major_slice(l.as_slice(), n, n);
    let dst = faer::MatMut::from_column_major_slice_mut(out.as_mut_slice(), n, k);
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(tri, dst, faer::Par::Seq);
    out
}

/// The product `A B` (blocked, vectorised).
pub fn matmul(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    assert_eq!(k, b.nrows(), "matmul: inner dimensions differ");
    let mut out = DMatrix::zeros(m, n);
    let lhs = faer::MatRef::from_column_major_slice(a.as_slice(), m, k);
    let rhs = faer::MatRef::from_column_major_slice(b.as_slice(), k, n);
    let dst = faer::MatMut::from_column_major_slice_mut(out.as_mut_slice(), m, n);
    faer::linalg::matmul::matmul(dst, faer::Accum::Replace, lhs, rhs, 1.0, faer::Par::Seq);
    out
}

/// `L B` for a lower-triangular `L` (its upper triangle is not read): half the work of a full
/// product.
pub fn lower_times(l: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    use faer::linalg::matmul::triangular::{matmul, BlockStructure};
    let (m, k, n) = (l.nrows(), l.ncols(), b.ncols());
    assert!(m == k && k == b.nrows(), "lower_times: dimensions differ");
    let mut out = DMatrix::zeros(m, n);
    let lhs = faer::MatRef::from_column_major_slice(l.as_slice(), m, k);
    let rhs = faer::MatRef::from_column_major_slice(b.as_slice(), k, n);
    let dst = faer::MatMut::from_column_major_slice_mut(out.as_mut_slice(), m, n);
    matmul(
        dst,
        BlockStructure::Rectangular,
        faer::Accum::Replace,
        lhs,
        BlockStructure::TriangularLower,
        rhs,
        BlockStructure::Rectangular,
        1.0,
        faer::Par::Seq,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked factor equals nalgebra's, and failures are reported, on both sides of the
    /// size threshold.
    #[test]
    fn agrees_with_nalgebra_and_refuses_what_it_must() {
        for n in [5usize, 47, 48, 130] {
            let a = DMatrix::from_fn(n, n, |i, j| {
                (-((i as f64 - j as f64) / 7.0).powi(2)).exp() + if i == j { 0.5 } else { 0.0 }
            });
            let ours = cholesky(a.clone()).unwrap().l_dirty().clone();
            let theirs = Cholesky::new(a.clone()).unwrap().l();
            let err = (&ours - &theirs).amax();
            assert!(err < 1e-12, "n = {n}: {err}");
            let mut bad = a.clone();
            bad[(n / 2, n / 2)] = -1.0;
            assert!(cholesky(bad).is_none(), "n = {n}: indefinite accepted");
            let l = cholesky(a.clone()).unwrap().l_dirty().clone();
            let li = lower_triangular_inverse(&l);
            let eye = DMatrix::<f64>::identity(n, n);
            let err = (matmul(&li, &l) - &eye).amax();
            assert!(err < 1e-12, "n = {n}: L⁻¹L − I = {err}");
            assert!((0..n).all(|j| (0..j).all(|i| li[(i, j)] == 0.0)));
            let b = DMatrix::from_fn(n, 3, |i, j| (i * 7 + j) as f64 / 10.0);
            let x = solve_lower(&l, b.clone());
            assert!((&l * &x - &b).amax() < 1e-9, "n = {n}: L X ≠ B");
            assert!((matmul(&a, &b) - &a * &b).amax() < 1e-9);
            let mut dirty = li.clone();
            dirty[(0, n - 1)] = 7.0; // the upper triangle must not be read
            assert!((lower_times(&dirty, &a) - &li * &a).amax() < 1e-9);
            let mut nan = a.clone();
            nan[(n - 1, n / 3)] = f64::NAN;
            nan[(n / 3, n - 1)] = f64::NAN;
            assert!(cholesky(nan).is_none(), "n = {n}: NaN accepted");
        }
    }
}
