//! Online inducing-point selection (thesis Appendix A, Algorithm 1, "OIPS"): a row joins the
//! inducing inputs when its kernel correlation with every one of them is below a threshold ρ,
//! up to a largest number of points. The rule sees each row once, in the order rows come — as
//! SVI's minibatches arrive, or in one pass over the data — and costs one row of `K_xZ` per
//! row offered (what the features need anyway). A point joins without refactoring `K_mm`: its
//! Cholesky factor gains one row.

use super::SparseGp;
use crate::kernels::{kernel_diag, kernel_matrix};
use crate::RuntimeError;
use nalgebra::DMatrix;

/// Rows whose kernel rows [`SparseGp::offer`] makes at once.
const CHUNK: usize = 256;

/// The rule's settings (`inducing = adaptive(rho, max)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Online {
    /// The correlation threshold ρ in (0, 1): a row whose largest kernel correlation with the
    /// inducing inputs is below ρ joins them.
    pub rho: f64,
    /// The largest number of inducing points.
    pub max: usize,
}

impl SparseGp {
    /// The first row of `x` alone as inducing input, under the rule `online`.
    pub fn first_online(
        kernel: &gpm_schedule::BoundKernel,
        hypers: &crate::kernels::HyperValues,
        x: &DMatrix<f64>,
        mean: f64,
        online: Online,
    ) -> Result<SparseGp, RuntimeError> {
        if x.nrows() == 0 {
            return Err(RuntimeError::BadData(
                "no rows to choose inducing points from".into(),
            ));
        }
        let mut sp = SparseGp::new(kernel, hypers, x.rows(0, 1).into_owned(), mean)?;
        sp.online = Some(online);
        Ok(sp)
    }

    /// The same prior with row `row` of `x` alone as inducing input (the online rule's start).
    pub fn restarted(&self, x: &DMatrix<f64>, row: usize) -> Result<SparseGp, RuntimeError> {
        let mut sp = SparseGp::new(
            &self.kernel,
            &self.hypers,
            x.rows(row, 1).into_owned(),
            self.mean,
        )?;
        sp.alpha = self.alpha;
        sp.online = self.online;
        Ok(sp)
    }

    /// Offer `rows` of `x`, in that order, to the rule (Algorithm 1): each whose largest
    /// correlation `k(x, z_j)/√(k(x, x) k(z_j, z_j))` with the current inducing inputs is below
    /// ρ joins them, until there are `max`. Returns the number of points added; none without a
    /// rule. The kernel rows are made [`CHUNK`] rows at a time (one kernel matrix against the
    /// points there were at the chunk's start, then a row's correlations with the points added
    /// within the chunk): the same decisions as row by row, at the cost of matrix products.
    pub fn offer(
        &mut self,
        x: &DMatrix<f64>,
        rows: impl IntoIterator<Item = usize>,
    ) -> Result<usize, RuntimeError> {
        let Some(rule) = self.online else {
            return Ok(0);
        };
        let mut zdiag = kernel_diag(&self.kernel, &self.z, &self.hypers)?;
        let rows: Vec<usize> = rows.into_iter().collect();
        let mut added = 0;
        for chunk in rows.chunks(CHUNK) {
            if self.m() >= rule.max {
                break;
            }
            let block = DMatrix::from_fn(chunk.len(), x.ncols(), |r, c| x[(chunk[r], c)]);
            let start = self.m();
            let kzx = kernel_matrix(&self.kernel, &self.z, &block, &self.hypers)?;
            let kxx = kernel_diag(&self.kernel, &block, &self.hypers)?;
            for r in 0..chunk.len() {
                if self.m() >= rule.max {
                    break;
                }
                let row = block.rows(r, 1).into_owned();
                // Against the points of the chunk's start, then those added since.
                let mut nearest = (0..start)
                    .map(|j| kzx[(j, r)] / (kxx[r] * zdiag[j]).sqrt())
                    .fold(f64::NEG_INFINITY, f64::max);
                let mut kz = kzx.view((0, r), (start, 1)).into_owned();
                if self.m() > start {
                    let new = self.z.rows(start, self.m() - start).into_owned();
                    let knew = kernel_matrix(&self.kernel, &new, &row, &self.hypers)?;
                    for j in 0..knew.nrows() {
                        nearest = nearest.max(knew[(j, 0)] / (kxx[r] * zdiag[start + j]).sqrt());
                    }
                    kz = DMatrix::from_fn(self.m(), 1, |j, _| {
                        if j < start {
                            kzx[(j, r)]
                        } else {
                            knew[(j - start, 0)]
                        }
                    });
                }
                if nearest < rule.rho && self.push_point(&row, &kz, kxx[r])? {
                    zdiag.push(kxx[r]);
                    added += 1;
                }
            }
        }
        Ok(added)
    }

    /// Append the row `x` (with `k(Z, x)` and `k(x, x)` already made) to the inducing inputs:
    /// `L` gains the row `(l₂₁ᵀ, l₂₂)`, `l₂₁ = L⁻¹k(Z, x)`, `l₂₂² = k(x, x) + jitter − ‖l₂₁‖²`,
    /// which is the Cholesky factor of the extended `K_mm`. `false` (nothing added) when `x` is
    /// so close to the span of the points that `l₂₂²` is not positive.
    fn push_point(
        &mut self,
        x: &DMatrix<f64>,
        kzx: &DMatrix<f64>,
        kxx: f64,
    ) -> Result<bool, RuntimeError> {
        let l21 = crate::linalg::solve_lower(&self.l, kzx.clone());
        let l22_sq = kxx + self.jitter - l21.norm_squared();
        if !(l22_sq > 1e-10 * kxx.abs().max(f64::MIN_POSITIVE)) {
            return Ok(false);
        }
        let m = self.m();
        let mut l = DMatrix::zeros(m + 1, m + 1);
        l.view_mut((0, 0), (m, m)).copy_from(&self.l);
        for j in 0..m {
            l[(m, j)] = l21[(j, 0)];
        }
        l[(m, m)] = l22_sq.sqrt();
        let mut z = DMatrix::zeros(m + 1, self.z.ncols());
        z.view_mut((0, 0), (m, self.z.ncols())).copy_from(&self.z);
        z.row_mut(m).copy_from(&x.row(0));
        self.l = l;
        self.z = z;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::HyperValues;
    use gpm_schedule::{BoundArg, BoundKernel, Tape};

    fn kernel() -> BoundKernel {
        BoundKernel::Scale {
            variance: Tape::constant(2.0),
            kernel: Box::new(BoundKernel::Base {
                law: gpm_library::kernel::lookup("sqexp").unwrap(),
                args: vec![BoundArg::Scalar(Tape::constant(0.5))],
            }),
        }
    }

    /// The factor grown a row at a time is the Cholesky factor of the grown `K_mm`; every
    /// accepted point's correlation with the earlier ones is below ρ and every refused row has
    /// one at or above it; the cap holds.
    #[test]
    fn the_rule_keeps_the_factor_exact_and_accepts_only_far_rows() {
        let x = DMatrix::from_fn(700, 2, |i, j| {
            ((i * 7 + j * 13) % 37) as f64 / 9.0 - 2.0 + i as f64 * 1e-3
        });
        let (rho, max) = (0.6, 60);
        let start = || {
            SparseGp::first_online(
                &kernel(),
                &HyperValues::default(),
                &x,
                0.0,
                Online { rho, max },
            )
            .unwrap()
        };
        let mut sp = start();
        let added = sp.offer(&x, 1..x.nrows()).unwrap();
        assert_eq!(added + 1, sp.m());
        // Chunked, the same choice as one row at a time.
        let mut one = start();
        for i in 1..x.nrows() {
            one.offer(&x, [i]).unwrap();
        }
        assert_eq!(one.z, sp.z);
        // Points were added in later chunks too (the test covers the chunks' seams).
        let last = sp.z.row(sp.m() - 1).into_owned();
        let at = (0..x.nrows()).find(|&i| x.row(i) == last).unwrap();
        assert!(at > 256, "the last point came from row {at}");
        assert!(sp.m() <= max && sp.m() > 3, "{} points", sp.m());
        let fresh = SparseGp::new(&kernel(), &HyperValues::default(), sp.z.clone(), 0.0).unwrap();
        assert!((&fresh.l - &sp.l).abs().max() < 1e-10);
        let corr = |a: &[f64], b: &[f64]| {
            let d2: f64 = a.iter().zip(b).map(|(p, q)| (p - q).powi(2)).sum();
            (-d2 / (2.0 * 0.25)).exp()
        };
        let z: Vec<Vec<f64>> = (0..sp.m())
            .map(|j| sp.z.row(j).iter().copied().collect())
            .collect();
        for j in 1..z.len() {
            for k in 0..j {
                assert!(corr(&z[j], &z[k]) < rho, "points {k} and {j}");
            }
        }
        if sp.m() < max {
            for i in 0..x.nrows() {
                let r: Vec<f64> = x.row(i).iter().copied().collect();
                let best = z.iter().map(|zj| corr(&r, zj)).fold(0.0, f64::max);
                assert!(
                    best >= rho - 1e-12,
                    "row {i} was left out at correlation {best}"
                );
            }
        }
    }
}
