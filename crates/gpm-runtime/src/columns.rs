//! Products with a wide feature matrix `Φ` (`M × N`, `N ≫ M`: a sparse GP's `L⁻¹K_mx`), a
//! block of [`BLOCK`] columns at a time, the blocks in parallel and the result the same at any
//! thread count.
//!
//! Every sparse method spends its iteration here: the sums `Σ_i w_i φ_i φ_iᵀ`, `Σ_i r_i φ_i`
//! of `q(v)`'s update ([`crate::shard::InducingStats::of`]) and each column's `φ_iᵀ μ` and
//! `‖L_Λ⁻¹ φ_i‖²` of `q(f)`'s marginals ([`crate::sparse::QInducing::marginals`]) — at
//! `N = 2·10⁵`, `M = 100`, `M²N` = 2·10⁹ flops each (the Gram's lower triangle only). Through
//! nalgebra, on one core, with a 160 MB copy of `Φ` per iteration for the solve, they took
//! three times as long; as faer products of column blocks on every core they run at 52–57
//! GFlop/s on a 2-core machine whose large GEMM runs at 147.
//!
//! Reproducibility: the blocks are fixed by `N` alone, each column's numbers are computed by
//! one block, and the sums over columns are [`GROUPS`] partial sums over fixed ranges of
//! blocks, added in their order — never in the order threads finish.

use crate::linalg::{view, view_mut};
use faer::linalg::matmul::triangular::BlockStructure;
use faer::prelude::{IntoConst, Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};
use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

/// Columns per block: `M × BLOCK` doubles stay within a core's L2 cache up to `M ≈ 500`
/// (400 kB at `M = 100`). Measured at `N = 2·10⁵`, `M = 100` (`cargo bench -p gpmc --bench
/// cavi_sparse`), the weighted Gram ran at 59 / 55 / 53 / 45 / 47 GFlop/s with blocks of 256 /
/// 512 / 1 024 / 2 048 / 4 096 columns, the projections at 53–54 up to 2 048 and 48 beyond;
/// 512 is near the best of both for larger `M` too.
pub const BLOCK: usize = 512;

/// Partial sums a reduction over columns keeps (its memory: `GROUPS` `M × M` matrices); fixed
/// by the sizes, so that the sums do not depend on the number of threads.
const GROUPS: usize = 8;

/// The partial sums' memory at the most: fewer groups for a large `M` (8 × 200 MB at
/// `M = 5 000` would be more than the features of many fits).
const PARTIAL_BYTES: usize = 256 << 20;

/// How many partial sums a reduction of `blocks` blocks of an `M`-row matrix keeps.
fn groups(blocks: usize, m: usize) -> usize {
    let per = (8 * m * m).max(1);
    GROUPS.min(blocks).min(PARTIAL_BYTES / per).max(1)
}

/// The column ranges of the blocks of `n` columns.
fn blocks(n: usize) -> Vec<(usize, usize)> {
    (0..n)
        .step_by(BLOCK)
        .map(|start| (start, BLOCK.min(n - start)))
        .collect()
}

/// Columns `start .. start + len` of `phi`, each multiplied by `scale(column)`, into `buf`
/// (reused from block to block: a fresh allocation a block would fault its pages in each time).
fn scaled_block<'b>(
    phi: &DMatrix<f64>,
    (start, len): (usize, usize),
    scale: impl Fn(usize) -> f64,
    buf: &'b mut Vec<f64>,
) -> MatMut<'b, f64> {
    let m = phi.nrows();
    buf.clear();
    buf.extend_from_slice(&phi.as_slice()[start * m..(start + len) * m]);
    if m > 0 {
        for (j, col) in buf.chunks_exact_mut(m).enumerate() {
            let s = scale(start + j);
            col.iter_mut().for_each(|x| *x *= s);
        }
    }
    MatMut::from_column_major_slice_mut(buf.as_mut_slice(), m, len)
}

/// `Σ_i w_i φ_i φ_iᵀ` and `Σ_i r_i φ_i` over the columns of `phi`, for weights `w ≥ 0`: each
/// block's `Φ_B diag(√w_B)` times its transpose, only the lower triangle (a symmetric rank-`B`
/// update: half a GEMM's flops), mirrored at the end.
pub fn weighted_gram(phi: &DMatrix<f64>, w: &[f64], r: &[f64]) -> (DMatrix<f64>, DVector<f64>) {
    let m = phi.nrows();
    let all = blocks(phi.ncols());
    let groups = groups(all.len(), m);
    let partial = |g: usize| {
        let (lo, hi) = (g * all.len() / groups, (g + 1) * all.len() / groups);
        let mut gram = DMatrix::zeros(m, m);
        let mut linear = DMatrix::zeros(m, 1);
        let mut buf = Vec::with_capacity(m * BLOCK);
        for &b in &all[lo..hi] {
            let root = scaled_block(phi, b, |i| w[i].sqrt(), &mut buf).into_const();
            faer::linalg::matmul::triangular::matmul(
                view_mut(&mut gram),
                BlockStructure::TriangularLower,
                Accum::Add,
                root,
                BlockStructure::Rectangular,
                root.transpose(),
                BlockStructure::Rectangular,
                1.0,
                Par::Seq,
            );
            let rb = MatRef::from_column_major_slice(&r[b.0..b.0 + b.1], b.1, 1);
            let cols =
                MatRef::from_column_major_slice(&phi.as_slice()[b.0 * m..(b.0 + b.1) * m], m, b.1);
            faer::linalg::matmul::matmul(
                view_mut(&mut linear),
                Accum::Add,
                cols,
                rb,
                1.0,
                Par::Seq,
            );
        }
        (gram, linear)
    };
    let parts: Vec<(DMatrix<f64>, DMatrix<f64>)> = (0..groups)
        .into_par_iter()
        .with_min_len(crate::parallel::min_items(groups, 1))
        .map(partial)
        .collect();
    let mut gram = DMatrix::zeros(m, m);
    let mut linear = DVector::zeros(m);
    for (g, l) in &parts {
        gram += g;
        linear += l.column(0);
    }
    for j in 0..m {
        for i in 0..j {
            gram[(i, j)] = gram[(j, i)];
        }
    }
    (gram, linear)
}

/// Per column of `phi`: `φ_iᵀ μ` and `‖L⁻¹ φ_i‖²` for a lower-triangular `L` (`M × M`): each
/// block solved in place (a blocked triangular solve), then its columns' squared norms.
pub fn projections(
    phi: &DMatrix<f64>,
    l: &DMatrix<f64>,
    mu: &DVector<f64>,
) -> (Vec<f64>, Vec<f64>) {
    let (m, n) = (phi.nrows(), phi.ncols());
    let mut mean = vec![0.0; n];
    let mut norms = vec![0.0; n];
    mean.par_chunks_mut(BLOCK)
        .zip(norms.par_chunks_mut(BLOCK))
        .enumerate()
        .with_min_len(crate::parallel::min_items(n.div_ceil(BLOCK), 1))
        .for_each_init(
            || Vec::with_capacity(m * BLOCK),
            |buf, (k, (mean, norms))| {
                let b = (k * BLOCK, mean.len());
                let mut block = scaled_block(phi, b, |_| 1.0, buf);
                faer::linalg::matmul::matmul(
                    MatMut::from_column_major_slice_mut(mean, b.1, 1),
                    Accum::Replace,
                    block.rb().transpose(),
                    MatRef::from_column_major_slice(mu.as_slice(), m, 1),
                    1.0,
                    Par::Seq,
                );
                faer::linalg::triangular_solve::solve_lower_triangular_in_place(
                    view(l),
                    block.rb_mut(),
                    Par::Seq,
                );
                for (o, col) in norms.iter_mut().zip(buf.chunks_exact(m.max(1))) {
                    *o = col.iter().map(|x| x * x).sum();
                }
            },
        );
    (mean, norms)
}

/// `L⁻¹ A` in place for a lower-triangular `L` (`M × M`) and a wide `A` (`M × N`), the blocks
/// of columns in parallel.
pub fn solve_lower_in_place(l: &DMatrix<f64>, a: &mut DMatrix<f64>) {
    let m = a.nrows();
    if m == 0 {
        return;
    }
    let blocks = a.ncols().div_ceil(BLOCK);
    a.as_mut_slice()
        .par_chunks_mut(BLOCK * m)
        .with_min_len(crate::parallel::min_items(blocks, 1))
        .for_each(|cols| {
            let len = cols.len() / m;
            faer::linalg::triangular_solve::solve_lower_triangular_in_place(
                view(l),
                MatMut::from_column_major_slice_mut(cols, m, len),
                Par::Seq,
            );
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phi(m: usize, n: usize) -> DMatrix<f64> {
        DMatrix::from_fn(m, n, |r, c| ((r * 7 + c * 3) as f64 * 0.37).sin())
    }

    /// Against the sums written out, across sizes that leave partial blocks and fewer blocks
    /// than groups.
    #[test]
    fn weighted_gram_is_the_sum_over_columns() {
        for n in [1, 5, BLOCK - 1, BLOCK + 3, 3 * BLOCK + 17, 11 * BLOCK + 5] {
            let m = 6;
            let p = phi(m, n);
            let w: Vec<f64> = (0..n).map(|i| 0.1 + (i as f64 * 0.5).cos().abs()).collect();
            let r: Vec<f64> = (0..n).map(|i| (i as f64 * 0.9).sin()).collect();
            let (gram, linear) = weighted_gram(&p, &w, &r);
            let direct = DMatrix::from_fn(m, m, |i, j| {
                (0..n).map(|k| w[k] * p[(i, k)] * p[(j, k)]).sum::<f64>()
            });
            let lin = DVector::from_fn(m, |i, _| (0..n).map(|k| r[k] * p[(i, k)]).sum::<f64>());
            let scale = n as f64;
            assert!((&gram - &direct).amax() < 1e-12 * scale, "n = {n}");
            assert!((&linear - &lin).amax() < 1e-12 * scale, "n = {n}");
            assert_eq!(gram, gram.transpose(), "n = {n}");
        }
    }

    #[test]
    fn partial_sums_are_bounded_in_number_and_memory() {
        assert_eq!(groups(0, 100), 1);
        assert_eq!(groups(3, 100), 3);
        assert_eq!(groups(400, 100), GROUPS);
        assert_eq!(groups(400, 3_000), 3);
        assert_eq!(groups(400, 10_000), 1);
    }

    #[test]
    fn projections_are_each_columns_own() {
        let (m, n) = (5, 2 * BLOCK + 9);
        let p = phi(m, n);
        let l = DMatrix::from_fn(m, m, |i, j| match i.cmp(&j) {
            std::cmp::Ordering::Less => 0.0,
            std::cmp::Ordering::Equal => 1.5 + i as f64,
            std::cmp::Ordering::Greater => 0.3 * (i + 2 * j) as f64,
        });
        let mu = DVector::from_fn(m, |i, _| 0.5 - i as f64);
        let (mean, norms) = projections(&p, &l, &mu);
        for i in [0, 1, BLOCK - 1, BLOCK, n - 1] {
            let col = p.column(i).into_owned();
            assert!((mean[i] - col.dot(&mu)).abs() < 1e-12);
            let x = l.solve_lower_triangular(&col).unwrap();
            assert!((norms[i] - x.norm_squared()).abs() < 1e-12 * (1.0 + norms[i]));
        }
        let mut a = p.clone();
        solve_lower_in_place(&l, &mut a);
        let whole = l.solve_lower_triangular(&p).unwrap();
        assert!((a - whole).amax() < 1e-12);
    }

    /// The sums and projections are bit for bit the same split across the global pool's
    /// threads (called from outside it) and as one task (inside a pool of one thread, and of
    /// four, where a chain would call them).
    #[test]
    fn the_results_do_not_depend_on_the_threads() {
        let n = 9 * BLOCK + 100;
        let p = phi(7, n);
        let w: Vec<f64> = (0..n).map(|i| (i as f64 * 0.3).sin().abs()).collect();
        let r: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).cos()).collect();
        let l = DMatrix::from_fn(7, 7, |i, j| {
            if i >= j {
                1.0 + (i * j) as f64 * 0.1
            } else {
                0.0
            }
        });
        let mu = DVector::from_fn(7, |i, _| i as f64 - 3.0);
        let all = || (weighted_gram(&p, &w, &r), projections(&p, &l, &mu));
        let split = all();
        for threads in [1, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(all), split, "{threads} threads");
        }
    }
}
