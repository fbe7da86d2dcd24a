//! The pathwise (Matheron) draw of a GP block's conditional without factorising `B`, for a GP
//! whose kernel is fixed: the systems `B w = r`, `B = I + S K S`, solved by conjugate gradients
//! preconditioned with the prior's leading eigenpairs.
//!
//! Why: a Gibbs sweep's draw `f = f₀ + K S B⁻¹ (S⁻¹b' − S f₀ − z)` ([`crate::gaussian::GpBlock`])
//! needs `B⁻¹` applied to two vectors (the draw's and the conditional mean's), and the curvature
//! `S² = diag(a)` changes every sweep, so the factorised path pays a Cholesky of `B` — `N³/3`
//! flops — every sweep. With the kernel fixed, `K = U Λ Uᵀ` is decomposed once; each sweep
//! then builds `P = I + S U_k Λ_k U_kᵀ S` from the `k` leading eigenpairs (`O(N k²)`, its
//! inverse by Woodbury through a `k × k` Cholesky) and runs CG on `P⁻¹ B`, whose eigenvalues lie
//! in `[1, 1 + max(a) λ_{k+1}]` (`B − P = S R S` with `0 ⪯ R ⪯ λ_{k+1} I`, `R = K − U_kΛ_kU_kᵀ`):
//! with `k` chosen so that `max(a) λ_{k+1} ≤ 1` (up to the pairs kept), every iteration shrinks
//! the error by at least `(√2 − 1)/(√2 + 1) ≈ 0.17` in the `B`-norm, and an iteration is one
//! product of `K` with the two right-hand sides (`O(N²)`, one pass over `K`). The whole
//! decomposition is computed once and its leading pairs kept (a Lanczos or randomised Nyström
//! factor of rank `k` would cost `O(N²k)` instead of `O(N³)`: 1.4 s at N = 2 000 here, 25 draws'
//! worth). The answer is `B⁻¹ r` to a relative
//! residual of [`TOLERANCE`] — the draw's distribution is the factorised draw's to that
//! precision — and where CG does not get there in [`MAX_ITERATIONS`] the caller factorises.
//! (Pathwise conditioning: Wilson et al. 2020, "Efficiently sampling functions from Gaussian
//! process posteriors"; CG for GP solves: Gardner et al. 2018, GPyTorch.)

use crate::RuntimeError;
use nalgebra::{DMatrix, DVector};

/// Relative residual `‖B w − r‖ / ‖r‖` at which a column's solve stops.
pub const TOLERANCE: f64 = 1e-10;

/// Iterations after which the solve gives up (the caller then factorises): where the bound
/// above holds, 1e-10 takes at most ~14; measured 7–14 on the bench's classifier at N = 200 to
/// 2 000.
pub const MAX_ITERATIONS: usize = 60;

/// The preconditioner's rank is the smallest `k` with `max(a) λ_{k+1} ≤` this.
const PRECONDITIONED_CURVATURE: f64 = 1.0;

/// The leading eigenpairs of a fixed prior covariance, descending, computed once.
#[derive(Debug, Clone)]
pub struct PriorSpectrum {
    /// `U_r` (N × r), orthonormal columns.
    vectors: DMatrix<f64>,
    /// `λ_1 ≥ … ≥ λ_r`.
    values: Vec<f64>,
}

impl PriorSpectrum {
    /// The `rank` leading eigenpairs of `K` (one symmetric eigendecomposition, `O(N³)` once;
    /// sequential, so the same on every thread count).
    pub fn of(k: &DMatrix<f64>, rank: usize) -> Result<Self, RuntimeError> {
        let (values, vectors) = crate::linalg::symmetric_eigen(k).ok_or_else(|| {
            RuntimeError::Numerical(
                "the eigendecomposition of the GP prior covariance did not converge".into(),
            )
        })?;
        let n = k.nrows();
        let r = rank.min(n);
        // Ascending from the decomposition; the leading ones are the last columns.
        let order: Vec<usize> = (0..n).rev().collect();
        let vectors = DMatrix::from_fn(n, r, |i, j| vectors[(i, order[j])]);
        let values = order[..r].iter().map(|&j| values[j].max(0.0)).collect();
        Ok(PriorSpectrum { vectors, values })
    }

    /// Rows of the covariance it decomposes.
    pub fn len(&self) -> usize {
        self.vectors.nrows()
    }

    /// Whether it decomposes an empty covariance.
    pub fn is_empty(&self) -> bool {
        self.vectors.nrows() == 0
    }

    /// The rank the preconditioner takes at curvature bound `a_max`: the smallest `k` with
    /// `a_max λ_{k+1} ≤ 1` (all stored pairs when none is small enough; a zero eigenvalue is
    /// never worth a column).
    fn rank_for(&self, a_max: f64) -> usize {
        self.values
            .iter()
            .position(|&l| a_max * l <= PRECONDITIONED_CURVATURE || l <= 0.0)
            .unwrap_or(self.values.len())
    }
}

/// `P⁻¹ = I − W (Λ_k⁻¹ + WᵀW)⁻¹ Wᵀ`, `W = S U_k` (Woodbury), factored once per curvature.
/// (Adding the diagonal of `S R S` to `P` saved at most one iteration in ten on the bench's
/// classifier, and loses the bound above.)
struct Preconditioner {
    w: DMatrix<f64>,
    /// Lower Cholesky factor of `Λ_k⁻¹ + WᵀW`.
    m: DMatrix<f64>,
}

impl Preconditioner {
    fn new(spectrum: &PriorSpectrum, s: &DVector<f64>, k: usize) -> Option<Self> {
        let n = s.len();
        let w = DMatrix::from_fn(n, k, |i, j| s[i] * spectrum.vectors[(i, j)]);
        let mut m = crate::linalg::gram(&w);
        for j in 0..k {
            m[(j, j)] += 1.0 / spectrum.values[j];
        }
        let m = crate::linalg::cholesky(m)?.l_dirty().clone();
        Some(Preconditioner { w, m })
    }

    fn apply(&self, r: &DMatrix<f64>) -> DMatrix<f64> {
        if self.w.ncols() == 0 {
            return r.clone();
        }
        let t = crate::linalg::cholesky_solve(&self.m, crate::linalg::transposed_times(&self.w, r));
        r - crate::linalg::matmul(&self.w, &t)
    }
}

/// `B V = V + S K S V`: one pass over `K` for all the columns.
fn b_times(k: &DMatrix<f64>, s: &DVector<f64>, v: &DMatrix<f64>) -> DMatrix<f64> {
    let mut sv = v.clone();
    for mut col in sv.column_iter_mut() {
        col.component_mul_assign(s);
    }
    let mut out = crate::linalg::matmul(k, &sv);
    for (mut o, vin) in out.column_iter_mut().zip(v.column_iter()) {
        o.component_mul_assign(s);
        o += vin;
    }
    out
}

/// What a solve did: its iterations (for the benches and the crossover measurement).
#[derive(Debug, Clone, Copy)]
pub struct SolveStats {
    /// CG iterations (products with `K`).
    pub iterations: usize,
    /// The preconditioner's rank.
    pub rank: usize,
}

/// `B⁻¹ R` column by column by preconditioned CG (the columns share each product with `K`),
/// `S = diag(s)`, or `None` where a column did not reach [`TOLERANCE`] in [`MAX_ITERATIONS`]
/// (or the preconditioner did not factor): then the caller factorises `B`.
pub fn solve_b(
    k: &DMatrix<f64>,
    s: &DVector<f64>,
    spectrum: &PriorSpectrum,
    rhs: &DMatrix<f64>,
) -> Option<(DMatrix<f64>, SolveStats)> {
    let (n, m) = (rhs.nrows(), rhs.ncols());
    let a_max = s.iter().fold(0.0f64, |acc, v| acc.max(v * v));
    let rank = spectrum.rank_for(a_max);
    let precond = Preconditioner::new(spectrum, s, rank)?;
    let target: Vec<f64> = rhs.column_iter().map(|c| TOLERANCE * c.norm()).collect();
    let mut x = DMatrix::zeros(n, m);
    let mut r = rhs.clone();
    let mut z = precond.apply(&r);
    let mut p = z.clone();
    let mut rz: Vec<f64> = (0..m).map(|j| r.column(j).dot(&z.column(j))).collect();
    let mut active: Vec<bool> = (0..m).map(|j| r.column(j).norm() > target[j]).collect();
    let mut iterations = 0;
    while active.iter().any(|&a| a) {
        if iterations == MAX_ITERATIONS {
            return None;
        }
        iterations += 1;
        let bp = b_times(k, s, &p);
        for j in 0..m {
            if !active[j] {
                continue;
            }
            let curvature = p.column(j).dot(&bp.column(j));
            if !(curvature > 0.0) {
                return None;
            }
            let alpha = rz[j] / curvature;
            x.column_mut(j).axpy(alpha, &p.column(j), 1.0);
            r.column_mut(j).axpy(-alpha, &bp.column(j), 1.0);
            active[j] = r.column(j).norm() > target[j];
        }
        if !active.iter().any(|&a| a) {
            break;
        }
        z = precond.apply(&r);
        for j in (0..m).filter(|&j| active[j]) {
            let rz_new = r.column(j).dot(&z.column(j));
            let beta = rz_new / rz[j];
            rz[j] = rz_new;
            let zj = z.column(j).into_owned();
            p.column_mut(j).axpy(1.0, &zj, beta);
        }
    }
    Some((x, SolveStats { iterations, rank }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqexp(n: usize, ell: f64) -> DMatrix<f64> {
        let x: Vec<f64> = (0..n).map(|i| -3.0 + 6.0 * i as f64 / n as f64).collect();
        DMatrix::from_fn(n, n, |i, j| {
            2.0 * (-0.5 * ((x[i] - x[j]) / ell).powi(2)).exp() + if i == j { 1e-6 } else { 0.0 }
        })
    }

    /// The CG answer is the factorised one to the tolerance, at curvatures from tiny to large,
    /// with the preconditioner at any rank (full, partial, none).
    #[test]
    fn solves_agree_with_the_factorisation() {
        let n = 120;
        let k = sqexp(n, 0.7);
        for rank in [0usize, 5, 40, n] {
            let spectrum = PriorSpectrum::of(&k, rank).unwrap();
            for scale in [1e-4, 0.25, 30.0] {
                let s = DVector::from_fn(n, |i, _| (scale * (0.2 + (i % 7) as f64 / 4.0)).sqrt());
                let rhs = DMatrix::from_fn(n, 2, |i, j| ((i * 13 + j * 5) % 11) as f64 - 5.0);
                let (x, stats) = solve_b(&k, &s, &spectrum, &rhs).unwrap();
                let lb = crate::gaussian::b_factor(&k, &s).unwrap();
                let exact = crate::linalg::cholesky_solve(lb.l_dirty(), rhs.clone());
                let err = (&x - &exact).amax() / exact.amax();
                assert!(err < 1e-8, "rank {rank}, scale {scale}: {err} ({stats:?})");
            }
        }
    }

    /// The spectrum's pairs are eigenpairs of `K`, descending.
    #[test]
    fn spectrum_is_the_leading_eigenpairs() {
        let k = sqexp(60, 1.0);
        let sp = PriorSpectrum::of(&k, 10).unwrap();
        for j in 0..10 {
            let u = sp.vectors.column(j).into_owned();
            let ku = &k * &u;
            assert!((ku - u * sp.values[j]).amax() < 1e-9 * sp.values[0]);
            if j > 0 {
                assert!(sp.values[j] <= sp.values[j - 1]);
            }
        }
    }
}
