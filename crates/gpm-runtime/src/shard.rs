//! The shard primitive (issue 33): what a set of observations contributes to the update of a
//! sparse GP's inducing values, as sums of `O(M²)` numbers that add up across shards.
//!
//! Every update of the whitened inducing values `v` (`u = L v`, prior `N(0, I)`) the sparse
//! methods make is Gaussian in `v` with precision `I + Σ_i w_i φ_i φ_iᵀ` and linear term
//! `Σ_i r_i φ_i`, one pseudo-observation `(w_i, r_i)` per observation `i` at its feature column
//! `φ_i = L⁻¹ k(Z, x_i)`:
//! - CAVI and SVI's natural-gradient target (thesis ch. 5, Algorithm 3): `w_i = a_i`,
//!   `r_i = b_i − a_i μ₀` from the local step's curvature `a` and linear term `b`, each
//!   observation counted `N/|B|` times in a minibatch;
//! - sparse Gibbs under the FITC prior: `w_i = a_i/(1 + a_i k̃_i)`, `r_i = (b_i − a_i μ₀)/(1 +
//!   a_i k̃_i)` once every `ε_i` is integrated out (`crate::sparse`).
//!
//! A shard computes its [`InducingStats`] from its own rows — its features, its auxiliaries or
//! local factors, given the global state — and the sums reduce by [`InducingStats::add`]: the
//! single-process methods are one shard, a cluster sums many in a fixed order
//! ([`crate::svi::shard_stats`] makes a CAVI step's, [`crate::cluster`] reduces them).

use crate::RuntimeError;
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};
use rand::Rng;

/// What one shard returns for a CAVI step: per sparse block its [`InducingStats`], and the sum
/// of its observations' local ELBO terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardStats {
    /// Per sparse block (as [`crate::prepared::Prepared::blocks`]).
    pub blocks: Vec<InducingStats>,
    /// `Σ_i E_q[log p(y_i | f_i, ω_i)] − KL(q(ω_i) ‖ p(ω_i))` at the local optimum.
    pub local: f64,
}

impl ShardStats {
    /// Add another shard's statistics (a reduction's step: a tree of these, in a fixed shape,
    /// gives the same sums wherever each addition runs).
    pub fn add(&mut self, other: &ShardStats) -> Result<(), RuntimeError> {
        if self.blocks.len() != other.blocks.len() {
            return Err(RuntimeError::Inconsistent(
                "statistics of shards with different blocks".into(),
            ));
        }
        for (a, b) in self.blocks.iter_mut().zip(&other.blocks) {
            a.add_checked(b)?;
        }
        self.local += other.local;
        Ok(())
    }
}

/// One shard's pseudo-observation sums for one sparse block.
#[derive(Debug, Clone, PartialEq)]
pub struct InducingStats {
    /// `Σ_i w_i φ_i φ_iᵀ` (`M × M`).
    pub curvature: DMatrix<f64>,
    /// `Σ_i r_i φ_i` (`M`).
    pub linear: DVector<f64>,
    /// Observations summed.
    pub rows: usize,
}

impl InducingStats {
    /// Nothing yet, for `m` inducing values.
    pub fn zeros(m: usize) -> Self {
        InducingStats {
            curvature: DMatrix::zeros(m, m),
            linear: DVector::zeros(m),
            rows: 0,
        }
    }

    /// The sums over the columns of `phi` (`M × n`) with weights `w ≥ 0` and linear terms `r`
    /// ([`crate::columns::weighted_gram`]: a block of columns at a time, in parallel).
    pub fn of(phi: &DMatrix<f64>, w: &[f64], r: &[f64]) -> Result<Self, RuntimeError> {
        let n = phi.ncols();
        if w.len() != n || r.len() != n {
            return Err(RuntimeError::Inconsistent(
                "pseudo-observations of the wrong length for the features".into(),
            ));
        }
        if let Some(i) = (0..n).find(|&i| !(w[i] >= 0.0 && w[i].is_finite() && r[i].is_finite())) {
            return Err(RuntimeError::Numerical(format!(
                "observation {}: pseudo-observation weight {} and linear term {} (a weight must \
                 be finite and non-negative)",
                i + 1,
                w[i],
                r[i]
            )));
        }
        let (curvature, linear) = crate::columns::weighted_gram(phi, w, r);
        Ok(InducingStats {
            curvature,
            linear,
            rows: n,
        })
    }

    /// The sums for CAVI's and SVI's update of `q(v)` from the local factors' curvature `a` and
    /// linear term `b` at the columns of `phi`: `w = a`, `r = b − a μ₀`.
    pub fn of_sites(
        phi: &DMatrix<f64>,
        a: &[f64],
        b: &[f64],
        mean0: f64,
    ) -> Result<Self, RuntimeError> {
        crate::gaussian::check_curvature(a, b)?;
        let r: Vec<f64> = a.iter().zip(b).map(|(ai, bi)| bi - ai * mean0).collect();
        Self::of(phi, a, &r)
    }

    /// Add another shard's sums (the reduction; summed in a fixed order, the result does not
    /// depend on which worker made which shard).
    pub fn add(&mut self, other: &InducingStats) {
        self.curvature += &other.curvature;
        self.linear += &other.linear;
        self.rows += other.rows;
    }

    /// The sums of several shards' statistics of one block, added in the order given.
    pub fn sum(parts: &[InducingStats]) -> Result<InducingStats, RuntimeError> {
        let first = parts
            .first()
            .ok_or_else(|| RuntimeError::Inconsistent("no shard's statistics to add up".into()))?;
        let mut total = InducingStats::zeros(first.linear.len());
        for p in parts {
            total.add_checked(p)?;
        }
        Ok(total)
    }

    /// [`InducingStats::add`], refusing the sums of a block of another size.
    pub fn add_checked(&mut self, other: &InducingStats) -> Result<(), RuntimeError> {
        if self.linear.len() != other.linear.len() {
            return Err(RuntimeError::Inconsistent(format!(
                "statistics of blocks of {} and {} inducing points",
                self.linear.len(),
                other.linear.len()
            )));
        }
        self.add(other);
        Ok(())
    }

    /// The update's natural parameters with every observation counted `scale` times:
    /// precision `I + scale Σ wφφᵀ`, linear term `scale Σ rφ`.
    pub fn natural(&self, scale: f64) -> (DMatrix<f64>, DVector<f64>) {
        let mut prec = &self.curvature * scale;
        for k in 0..prec.nrows() {
            prec[(k, k)] += 1.0;
        }
        (prec, &self.linear * scale)
    }

    /// The Cholesky factor of the precision `P = I + Σ wφφᵀ` and the linear term `Σ rφ`.
    pub fn factor(&self) -> Result<(Cholesky<f64, Dyn>, DVector<f64>), RuntimeError> {
        let (prec, lin) = self.natural(1.0);
        let chol = crate::linalg::cholesky(prec)
            .ok_or_else(|| RuntimeError::Numerical("I + Φ W Φᵀ is not positive definite".into()))?;
        Ok((chol, lin))
    }

    /// An exact draw of `v ~ N(P⁻¹ Σrφ, P⁻¹)`, the whitened inducing values given the
    /// pseudo-observations (sparse Gibbs; summed over shards on a cluster): `m` standard
    /// normals `z`, `v = P⁻¹Σrφ + L⁻ᵀz` with `P = LLᵀ`.
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<DVector<f64>, RuntimeError> {
        use rand_distr::StandardNormal;
        let (chol, lin) = self.factor()?;
        let mean = chol.solve(&lin);
        let z = DVector::from_fn(lin.len(), |_, _| rng.sample::<f64, _>(StandardNormal));
        let noise = chol
            .l_dirty()
            .tr_solve_lower_triangular(&z)
            .ok_or_else(|| RuntimeError::Numerical("triangular solve failed".into()))?;
        Ok(mean + noise)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sums over any partition of the observations into shards, added in any grouping,
    /// equal the sums over all of them (to rounding), and the natural parameters are
    /// `I + scale ΦWΦᵀ`, `scale Φr`.
    #[test]
    fn shards_add_up_to_the_whole() {
        let (m, n) = (4, 23);
        let phi = DMatrix::from_fn(m, n, |r, c| ((r * 7 + c * 3) as f64 * 0.37).sin());
        let w: Vec<f64> = (0..n).map(|i| 0.1 + (i as f64 * 0.5).cos().abs()).collect();
        let r: Vec<f64> = (0..n).map(|i| (i as f64 * 0.9).sin()).collect();
        let whole = InducingStats::of(&phi, &w, &r).unwrap();
        for cuts in [vec![0, 23], vec![0, 5, 23], vec![0, 1, 9, 10, 17, 23]] {
            let mut sum = InducingStats::zeros(m);
            for k in 0..cuts.len() - 1 {
                let (a, b) = (cuts[k], cuts[k + 1]);
                let part = phi.columns(a, b - a).into_owned();
                sum.add(&InducingStats::of(&part, &w[a..b], &r[a..b]).unwrap());
            }
            assert_eq!(sum.rows, n);
            assert!((&sum.curvature - &whole.curvature).amax() < 1e-12);
            assert!((&sum.linear - &whole.linear).amax() < 1e-12);
        }
        let (prec, h) = whole.natural(2.0);
        let direct = DMatrix::from_fn(m, m, |i, j| {
            let s: f64 = (0..n).map(|k| w[k] * phi[(i, k)] * phi[(j, k)]).sum();
            2.0 * s + if i == j { 1.0 } else { 0.0 }
        });
        assert!((prec - direct).amax() < 1e-12);
        let lin = DVector::from_fn(m, |i, _| {
            2.0 * (0..n).map(|k| r[k] * phi[(i, k)]).sum::<f64>()
        });
        assert!((h - lin).amax() < 1e-12);
    }

    #[test]
    fn a_negative_weight_is_refused_with_the_observation() {
        let phi = DMatrix::from_element(2, 3, 1.0);
        let e = InducingStats::of(&phi, &[1.0, -0.5, 1.0], &[0.0; 3]).unwrap_err();
        assert!(format!("{e}").contains("observation 2"), "{e}");
    }
}
