//! Dense factorisations of the latent blocks, the one O(N³) step of a Gibbs sweep and of a
//! CAVI block update. The factorisation itself is faer's blocked, vectorised Cholesky (5-7×
//! nalgebra's column algorithm at N = 500-1000 on one core); the factor is handed back as
//! nalgebra's `Cholesky`, so the rest of the runtime keeps one matrix type. Sequential (no
//! thread pool): chains already run in parallel, and a fixed seed must reproduce a run.

use faer::linalg::matmul::triangular::BlockStructure::{Rectangular, TriangularLower};
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};

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
    // Factored in place in the matrix's own buffer (faer's `llt()` would allocate a copy,
    // zero it, copy the lower triangle in and out again: three more O(N²) passes per sweep).
    let mut out = a;
    {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::linalg::cholesky::llt::factor;
        let par = faer::Par::Seq;
        let mut mem = MemBuffer::new(factor::cholesky_in_place_scratch::<f64>(
            n,
            par,
            Default::default(),
        ));
        let view = faer::MatMut::from_column_major_slice_mut(out.as_mut_slice(), n, n);
        factor::cholesky_in_place(
            view,
            Default::default(),
            par,
            MemStack::new(&mut mem),
            Default::default(),
        )
        .ok()?;
    }
    for (j, col) in out.as_mut_slice().chunks_exact_mut(n).enumerate() {
        col[..j].fill(0.0);
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

/// `L⁻ᵀ B` for a lower-triangular `L` (blocked).
pub fn solve_lower_transposed(l: &DMatrix<f64>, rhs: DMatrix<f64>) -> DMatrix<f64> {
    let (n, k) = (rhs.nrows(), rhs.ncols());
    assert_eq!(
        l.nrows(),
        n,
        "solve_lower_transposed: L and B have different rows"
    );
    let mut out = rhs;
    let tri = faer::MatRef::from_column_major_slice(l.as_slice(), n, n);
    let dst = faer::MatMut::from_column_major_slice_mut(out.as_mut_slice(), n, k);
    faer::linalg::triangular_solve::solve_upper_triangular_in_place(
        tri.transpose(),
        dst,
        faer::Par::Seq,
    );
    out
}

/// `A⁻¹ B = L⁻ᵀ L⁻¹ B` for `A = L Lᵀ` with `L` lower-triangular (blocked, both solves in
/// place): the O(N²) solves of a Gibbs draw, where nalgebra's column-by-column solve costs
/// several times more.
pub fn cholesky_solve(l: &DMatrix<f64>, rhs: DMatrix<f64>) -> DMatrix<f64> {
    let (n, k) = (rhs.nrows(), rhs.ncols());
    assert_eq!(l.nrows(), n, "cholesky_solve: L and B have different rows");
    let mut out = rhs;
    let tri = faer::MatRef::from_column_major_slice(l.as_slice(), n, n);
    let mut dst = faer::MatMut::from_column_major_slice_mut(out.as_mut_slice(), n, k);
    faer::linalg::triangular_solve::solve_lower_triangular_in_place(
        tri,
        dst.as_mut(),
        faer::Par::Seq,
    );
    faer::linalg::triangular_solve::solve_upper_triangular_in_place(
        tri.transpose(),
        dst,
        faer::Par::Seq,
    );
    out
}

/// `L⁻¹ v` for a lower-triangular `L` and one right-hand side ([`solve_lower`]).
pub fn solve_lower_vec(l: &DMatrix<f64>, v: &DVector<f64>) -> DVector<f64> {
    let x = solve_lower(l, DMatrix::from_column_slice(v.len(), 1, v.as_slice()));
    DVector::from_column_slice(x.as_slice())
}

/// `A⁻¹ v` from `A`'s Cholesky factor ([`cholesky_solve`]).
pub fn cholesky_solve_vec(l: &DMatrix<f64>, v: &DVector<f64>) -> DVector<f64> {
    let x = cholesky_solve(l, DMatrix::from_column_slice(v.len(), 1, v.as_slice()));
    DVector::from_column_slice(x.as_slice())
}

/// `L v` for a lower-triangular `L` ([`lower_times`]).
pub fn lower_times_vec(l: &DMatrix<f64>, v: &DVector<f64>) -> DVector<f64> {
    let x = lower_times(l, &DMatrix::from_column_slice(v.len(), 1, v.as_slice()));
    DVector::from_column_slice(x.as_slice())
}

/// `A v` ([`matmul`]).
pub fn matvec(a: &DMatrix<f64>, v: &DVector<f64>) -> DVector<f64> {
    let x = matmul(a, &DMatrix::from_column_slice(v.len(), 1, v.as_slice()));
    DVector::from_column_slice(x.as_slice())
}

/// faer's view of a column-major nalgebra matrix (no copy).
pub(crate) fn view(a: &DMatrix<f64>) -> faer::MatRef<'_, f64> {
    faer::MatRef::from_column_major_slice(a.as_slice(), a.nrows(), a.ncols())
}

/// [`view`], writable.
pub(crate) fn view_mut(a: &mut DMatrix<f64>) -> faer::MatMut<'_, f64> {
    let (r, c) = (a.nrows(), a.ncols());
    faer::MatMut::from_column_major_slice_mut(a.as_mut_slice(), r, c)
}

/// `lhs rhs` into a new matrix, `lhs` of the given structure (blocked, vectorised, sequential).
fn product(
    lhs: faer::MatRef<'_, f64>,
    structure: faer::linalg::matmul::triangular::BlockStructure,
    rhs: faer::MatRef<'_, f64>,
) -> DMatrix<f64> {
    use faer::linalg::matmul::triangular::{matmul, BlockStructure};
    let mut out = DMatrix::zeros(lhs.nrows(), rhs.ncols());
    matmul(
        view_mut(&mut out),
        BlockStructure::Rectangular,
        faer::Accum::Replace,
        lhs,
        structure,
        rhs,
        BlockStructure::Rectangular,
        1.0,
        faer::Par::Seq,
    );
    out
}

/// The product `A B` (blocked, vectorised).
pub fn matmul(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(a.ncols(), b.nrows(), "matmul: inner dimensions differ");
    product(view(a), Rectangular, view(b))
}

/// `Aᵀ B` (blocked; no transposed copy of `A`).
pub fn transposed_times(a: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    assert_eq!(
        a.nrows(),
        b.nrows(),
        "transposed_times: inner dimensions differ"
    );
    product(view(a).transpose(), Rectangular, view(b))
}

/// `Aᵀ A` ([`transposed_times`]).
pub fn gram(a: &DMatrix<f64>) -> DMatrix<f64> {
    transposed_times(a, a)
}

/// The eigenvalues (ascending) and eigenvectors (columns, orthonormal) of a symmetric matrix
/// (its lower triangle is read), or `None` when the decomposition fails. Sequential, like the
/// factorisations.
pub fn symmetric_eigen(a: &DMatrix<f64>) -> Option<(Vec<f64>, DMatrix<f64>)> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::evd;
    let n = a.nrows();
    if n != a.ncols() {
        return None;
    }
    let par = faer::Par::Seq;
    let mut values = faer::diag::Diag::<f64>::zeros(n);
    let mut vectors = DMatrix::zeros(n, n);
    let mut mem = MemBuffer::new(evd::self_adjoint_evd_scratch::<f64>(
        n,
        evd::ComputeEigenvectors::Yes,
        par,
        Default::default(),
    ));
    evd::self_adjoint_evd(
        faer::MatRef::from_column_major_slice(a.as_slice(), n, n),
        values.as_mut(),
        Some(faer::MatMut::from_column_major_slice_mut(
            vectors.as_mut_slice(),
            n,
            n,
        )),
        par,
        MemStack::new(&mut mem),
        Default::default(),
    )
    .ok()?;
    let values: Vec<f64> = (0..n).map(|i| values[i]).collect();
    values
        .iter()
        .all(|v| v.is_finite())
        .then_some((values, vectors))
}

/// `L B` for a lower-triangular `L` (its upper triangle is not read): half the work of a full
/// product.
pub fn lower_times(l: &DMatrix<f64>, b: &DMatrix<f64>) -> DMatrix<f64> {
    let (m, k) = (l.nrows(), l.ncols());
    assert!(m == k && k == b.nrows(), "lower_times: dimensions differ");
    product(view(l), TriangularLower, view(b))
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
            // Only the lower triangle is read (b_factor scales no more than that).
            let mut upper_garbage = a.clone();
            for j in 1..n {
                upper_garbage[(0, j)] = 1e9 + j as f64;
            }
            assert_eq!(cholesky(upper_garbage).unwrap().l_dirty(), &ours, "n = {n}");
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
            let x = cholesky_solve(&l, b.clone());
            assert!((&a * &x - &b).amax() < 1e-9, "n = {n}: A X ≠ B");
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
