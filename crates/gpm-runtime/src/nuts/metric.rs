//! The metric of the sweep's NUTS step ([`super::transition`]): the inverse mass matrix `Σ`,
//! kinetic energy `½ pᵀ Σ p`, momenta drawn from `N(0, Σ⁻¹)` — diagonal, or dense (Stan's
//! `dense_e`) for a block of at most [`DENSE_MAX`] coordinates, where an intercept and the mean
//! of non-centred group effects trade off along a direction no diagonal metric follows.

use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The largest block whose metric is dense: its estimate from a window of a few hundred
/// transitions has `d(d+1)/2` entries, and each leapfrog step multiplies by it (`O(d²)`).
pub(crate) const DENSE_MAX: usize = 100;

/// `Σ`, with its Cholesky factor where it is dense.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// `Σ = diag(σ²)`.
    Diagonal(Vec<f64>),
    /// `Σ` and `L`, `LLᵀ = Σ`.
    Dense {
        cov: DMatrix<f64>,
        chol: DMatrix<f64>,
    },
}

impl Metric {
    /// The unit metric of a `dim`-dimensional block, dense where it may be.
    pub(crate) fn unit(dim: usize) -> Metric {
        if dim <= DENSE_MAX {
            Metric::Dense {
                cov: DMatrix::identity(dim, dim),
                chol: DMatrix::identity(dim, dim),
            }
        } else {
            Metric::Diagonal(vec![1.0; dim])
        }
    }

    /// A dense metric from a covariance (`None` where it is not positive definite).
    pub(crate) fn dense(cov: DMatrix<f64>) -> Option<Metric> {
        let chol = crate::linalg::cholesky(cov.clone())?.l();
        Some(Metric::Dense { cov, chol })
    }

    /// A momentum from `N(0, Σ⁻¹)`: `p = L⁻ᵀ z`.
    pub(crate) fn momentum(&self, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let mut z = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| rng.sample::<f64, _>(rand_distr::StandardNormal))
                .collect()
        };
        match self {
            Metric::Diagonal(s) => z(s.len())
                .into_iter()
                .zip(s)
                .map(|(z, s)| z / s.sqrt())
                .collect(),
            Metric::Dense { chol, .. } => {
                let z = DMatrix::from_column_slice(chol.nrows(), 1, &z(chol.nrows()));
                crate::linalg::solve_lower_transposed(chol, z)
                    .as_slice()
                    .to_vec()
            }
        }
    }

    /// `Σ p`.
    pub(crate) fn velocity(&self, p: &[f64]) -> Vec<f64> {
        match self {
            Metric::Diagonal(s) => p.iter().zip(s).map(|(p, s)| p * s).collect(),
            Metric::Dense { cov, .. } => (cov * DVector::from_column_slice(p)).as_slice().to_vec(),
        }
    }

    /// `½ pᵀ Σ p`.
    pub(crate) fn kinetic(&self, p: &[f64]) -> f64 {
        0.5 * p
            .iter()
            .zip(self.velocity(p))
            .map(|(p, v)| p * v)
            .sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Momenta from a dense metric have covariance `Σ⁻¹`.
    #[test]
    fn dense_momenta_have_the_inverse_covariance() {
        let cov = DMatrix::from_row_slice(2, 2, &[4.0, 1.8, 1.8, 1.0]);
        let m = Metric::dense(cov.clone()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = 200_000;
        let mut s = DMatrix::zeros(2, 2);
        for _ in 0..n {
            let p = DVector::from_vec(m.momentum(&mut rng));
            s += &p * p.transpose() / n as f64;
        }
        let target = cov.try_inverse().unwrap();
        assert!((s - &target).amax() < 0.03 * target.amax(), "{target}");
        let p = [0.3, -1.0];
        let v = m.velocity(&p);
        assert!((v[0] - (4.0 * 0.3 - 1.8)).abs() < 1e-12);
        assert!((m.kinetic(&p) - 0.5 * (0.3 * v[0] - v[1])).abs() < 1e-12);
    }
}
