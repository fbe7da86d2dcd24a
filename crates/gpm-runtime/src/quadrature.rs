//! Gauss-Hermite quadrature for expectations under a normal: the generic CAVI sites' `E_q[ℓ']`,
//! `E_q[ℓ'']` and prediction's integrals over `q(f*)` share one rule.

use nalgebra::{DMatrix, SymmetricEigen};

/// Nodes and weights (summing to 1) of the `n`-point Gauss-Hermite rule for `N(0, 1)`, by the
/// Golub-Welsch eigenvalue method on the Jacobi matrix of the probabilists' Hermite polynomials.
pub fn gauss_hermite(n: usize) -> (Vec<f64>, Vec<f64>) {
    let j = DMatrix::from_fn(n, n, |r, c| {
        if r + 1 == c || c + 1 == r {
            (r.max(c) as f64).sqrt()
        } else {
            0.0
        }
    });
    let e = SymmetricEigen::new(j);
    let mut pairs: Vec<(f64, f64)> = (0..n)
        .map(|k| (e.eigenvalues[k], e.eigenvectors[(0, k)].powi(2)))
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    pairs.into_iter().unzip()
}
