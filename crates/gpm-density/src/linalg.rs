//! The few factorisations a Stan program calls, on the tape entry by entry (the programs NUTS
//! runs on here are small; a GP of size N is the Gaussian-latent path's, with its own linear
//! algebra).

use crate::ad::{Tape, R};
use crate::error::{Eval, EvalError};
use crate::value::Mat;

/// The lower Cholesky factor of a symmetric positive-definite matrix (Cholesky–Banachiewicz).
pub fn cholesky(t: &mut Tape, a: &Mat) -> Eval<Mat> {
    if a.rows != a.cols {
        return Err(EvalError::new(format!(
            "cholesky_decompose of a {} × {} matrix",
            a.rows, a.cols
        )));
    }
    let n = a.rows;
    let mut l = Mat::filled(n, n, R::c(0.0));
    for i in 0..n {
        for j in 0..=i {
            let row_i: Vec<R> = (0..j).map(|k| l.at(i, k)).collect();
            let row_j: Vec<R> = (0..j).map(|k| l.at(j, k)).collect();
            let s = t.dot(&row_i, &row_j);
            let d = t.sub(a.at(i, j), s);
            let v = if i == j {
                if d.v <= 0.0 || !d.v.is_finite() {
                    return Err(EvalError::reject(
                        "cholesky_decompose: the matrix is not positive definite",
                    ));
                }
                t.sqrt(d)
            } else {
                t.div(d, l.at(j, j))
            };
            l.data[i + j * n] = v;
        }
    }
    Ok(l)
}

/// `L⁻¹ b` for a lower-triangular `L` (forward substitution).
pub fn solve_lower(t: &mut Tape, l: &Mat, b: &[R]) -> Eval<Vec<R>> {
    if l.rows != l.cols || l.rows != b.len() {
        return Err(EvalError::new(format!(
            "a lower-triangular solve of a {} × {} matrix with {} values",
            l.rows,
            l.cols,
            b.len()
        )));
    }
    let mut x: Vec<R> = Vec::with_capacity(b.len());
    for (i, &bi) in b.iter().enumerate() {
        let row: Vec<R> = (0..i).map(|k| l.at(i, k)).collect();
        let s = t.dot(&row, &x);
        let d = t.sub(bi, s);
        x.push(t.div(d, l.at(i, i)));
    }
    Ok(x)
}

/// The eigenvalues (ascending, as Stan orders them) and eigenvectors (columns) of a symmetric
/// matrix of data: no derivative, so a parameter here is an error rather than a wrong
/// gradient.
pub fn eigen_sym(a: &Mat) -> Eval<(Vec<R>, Mat)> {
    if a.data.iter().any(|r| !r.is_constant()) {
        return Err(EvalError::new(
            "eigenvalues_sym / eigenvectors_sym are evaluated on data only (no derivative yet), and here the matrix depends on a parameter",
        ));
    }
    if a.rows != a.cols {
        return Err(EvalError::new(
            "an eigendecomposition of a matrix that is not square",
        ));
    }
    let n = a.rows;
    let m = nalgebra::DMatrix::from_fn(n, n, |i, j| a.at(i, j).v);
    let e = nalgebra::SymmetricEigen::new(m);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| e.eigenvalues[i].total_cmp(&e.eigenvalues[j]));
    let values = order.iter().map(|&k| R::c(e.eigenvalues[k])).collect();
    let mut vectors = Mat::filled(n, n, R::c(0.0));
    for (j, &k) in order.iter().enumerate() {
        for i in 0..n {
            vectors.data[i + j * n] = R::c(e.eigenvectors[(i, k)]);
        }
    }
    Ok((values, vectors))
}
