//! A Newton start for the flow, from the particles' own estimate of the curvature.
//!
//! The particles start as draws from the prior, whitened: `v ~ N(0, I)`. When the prior is
//! far wider than the posterior (a `normal(0, 1e7)` weight, sd 0.24 given the data) the
//! whitened posterior's covariance is 10⁻¹⁵·I and the flow is stiff: its Euler steps must be
//! about 10⁻¹⁵ long and shrink `C` by a power law, and L-BFGS starts from a gradient 10¹⁵ times
//! too long — the flow stalled at its start, or claimed convergence hundreds of steps later
//! with the variance 2× too large (measured; the extreme scales are in the tests).
//!
//! The particles carry what a Newton step needs: by Stein's identity, for `x ~ N(m, C)`,
//! `E[∇φ(x) (x − m)ᵀ] = E[∇²φ] C`, so the regression of their gradients `G` on their centred
//! positions `Y` — `H = (G Yᵀ/P) C⁻¹`, `C = Y Yᵀ/P` — is the Hessian of a Gaussian target
//! exactly (with `P ≥ D + 1` particles) and an average curvature otherwise. The start moves
//! each group's particles to `m − H⁻¹ ḡ` with covariance `H⁻¹` (`x_j = m* + L_H⁻ᵀ L_C⁻¹ y_j`,
//! the same standardised draws), a Gaussian target's optimum in one step; it is kept only if
//! it lowers `F̃`, so the flow's descent is never undone. Groups with no more particles than
//! coordinates (`C` singular) keep their start.

use super::{centred, stack, Evaluation, Flow};
use crate::linalg::{cholesky, cholesky_solve_vec, matmul, solve_lower, solve_lower_transposed};
use crate::RuntimeError;
use nalgebra::DMatrix;

impl Flow<'_> {
    /// Move the particles `v` (evaluated as `eval`) by one Stein-Newton step where it lowers
    /// `F̃`; whether they moved.
    pub(super) fn stein_newton_start(
        &self,
        v: &mut Vec<DMatrix<f64>>,
        eval: &mut Evaluation,
        hv: &[f64],
        for_flow: bool,
    ) -> Result<bool, RuntimeError> {
        let mut trial = v.clone();
        let mut any = false;
        for group in &self.groups {
            let Some(moved) = newton_positions(&stack(group, v), &stack(group, &eval.grads)) else {
                continue;
            };
            let mut at = 0;
            for &k in group {
                let rows = v[k].nrows();
                trial[k] = moved.rows(at, rows).into_owned();
                at += rows;
            }
            any = true;
        }
        if !any {
            return Ok(false);
        }
        let next = self.evaluate(&trial, hv, for_flow)?;
        if next.free < eval.free {
            *v = trial;
            *eval = next;
            return Ok(true);
        }
        Ok(false)
    }
}

/// How far the particles are from stationary, read from their gradients (not from `F̃`,
/// whose rounding, `|F̃|·10⁻¹⁶`, is many nats where the likelihood is sharp), scale-free:
/// both measures are zero at the flow's fixed point for any target and any scale. `None` when
/// no group has more particles than coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stationarity {
    /// The largest move of a mean, in the particles' own sds, that a Newton step would make:
    /// `max_i |(C ḡ)_i| / sd_i` (`ḡ` the mean gradient, zero at the fixed point).
    pub mean_shift_sd: f64,
    /// The largest entry of the spread's residual, a relative change: for the affine map
    /// `ψ − I` with `ψ = E[g (x − m)ᵀ]` (the thesis' flow stops where `ψ = I`); for the
    /// symmetric map `R sym(K) − I` with `K = E[g zᵀ]`, `R = C^{1/2}` (zero where `F̃`'s
    /// gradient in `R`, `sym(K) − R⁻¹`, is).
    pub spread_residual: f64,
}

impl Stationarity {
    /// The larger of the two measures.
    pub fn worst(&self) -> f64 {
        self.mean_shift_sd.max(self.spread_residual)
    }
}

impl Flow<'_> {
    /// [`Stationarity`] of the particles `v` with gradients in `eval`, moved by `map`, over
    /// the groups with more particles than coordinates.
    pub(super) fn stationarity(
        &self,
        v: &[DMatrix<f64>],
        eval: &Evaluation,
        map: super::ParticleMap,
    ) -> Option<Stationarity> {
        let mut out: Option<Stationarity> = None;
        for group in &self.groups {
            let Some(s) = group_stationarity(&stack(group, v), &stack(group, &eval.grads), map)
            else {
                continue;
            };
            out = Some(match out {
                Some(o) => Stationarity {
                    mean_shift_sd: o.mean_shift_sd.max(s.mean_shift_sd),
                    spread_residual: o.spread_residual.max(s.spread_residual),
                },
                None => s,
            });
        }
        out
    }
}

/// [`Stationarity`] of one group's particles `x` with gradients `g`.
fn group_stationarity(
    x: &DMatrix<f64>,
    g: &DMatrix<f64>,
    map: super::ParticleMap,
) -> Option<Stationarity> {
    let (d, p) = x.shape();
    if p <= d {
        return None;
    }
    let n = p as f64;
    let (y, _) = centred(x);
    let c = matmul(&y, &y.transpose()) / n;
    let gbar = g.column_sum() / n;
    let shift = crate::linalg::matvec(&c, &gbar);
    let mean_shift_sd = (0..d)
        .map(|i| shift[i].abs() / c[(i, i)].sqrt())
        .fold(0.0, f64::max);
    let psi = matmul(g, &y.transpose()) / n;
    let residual = match map {
        super::ParticleMap::Affine => psi - DMatrix::identity(d, d),
        super::ParticleMap::Symmetric => {
            // R = C^{1/2} (symmetric), Z = R⁻¹ Y: K = G Zᵀ/P = ψ R⁻¹. R sym(K) − I has the
            // eigenvalues of R^{1/2} sym(K) R^{1/2} − I, symmetric: its largest |eigenvalue| is
            // the relative error of the spread in its worst direction.
            let (r, r_inv) = super::quasi_newton::symmetric_roots(c.clone())?;
            let (half, _) = super::quasi_newton::symmetric_roots(r)?;
            let k = matmul(&psi, &r_inv);
            let sym = (&k + k.transpose()) * 0.5;
            let similar = matmul(&half, &matmul(&sym, &half)) - DMatrix::identity(d, d);
            let largest = similar.symmetric_eigenvalues().amax();
            DMatrix::from_element(1, 1, largest)
        }
    };
    let spread_residual = residual.amax();
    (mean_shift_sd.is_finite() && spread_residual.is_finite()).then_some(Stationarity {
        mean_shift_sd,
        spread_residual,
    })
}

/// The particles `x` (`D × P`, gradients `g`) moved to the Newton step's Gaussian, or `None`
/// where `C` or the estimated Hessian is not positive definite (or `P ≤ D`).
fn newton_positions(x: &DMatrix<f64>, g: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let (d, p) = x.shape();
    if p <= d {
        return None;
    }
    let n = p as f64;
    let (y, m) = centred(x);
    let gbar = g.column_sum() / n;
    let c = cholesky(matmul(&y, &y.transpose()) / n)?;
    let lc = c.l();
    // Hᵀ = C⁻¹ ψᵀ with ψ = G Yᵀ / P; symmetrised (a Gaussian target's is symmetric already).
    let psi_t = matmul(&y, &g.transpose()) / n;
    let h_t = crate::linalg::cholesky_solve(&lc, psi_t);
    let h = (&h_t + h_t.transpose()) * 0.5;
    let lh = cholesky(h)?.l();
    let mean = m - cholesky_solve_vec(&lh, &gbar);
    // Standardised draws `L_C⁻¹ y_j`, mapped by a square root of `H⁻¹` (`L_H⁻ᵀ`).
    let mut out = solve_lower_transposed(&lh, solve_lower(&lc, y));
    for mut col in out.column_iter_mut() {
        col += &mean;
    }
    out.iter().all(|v| v.is_finite()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For a Gaussian target `φ(x) = ½ (x − μ)ᵀ A (x − μ)` the step lands on `N(μ, A⁻¹)`: the
    /// particles' mean is `μ` and their covariance `A⁻¹`, whatever the scale of the start.
    #[test]
    fn one_step_reaches_a_gaussian_targets_optimum_at_any_scale() {
        let a = DMatrix::from_row_slice(2, 2, &[4e14, 1e14, 1e14, 9e14]);
        let mu = nalgebra::DVector::from_column_slice(&[1e-7, -3e-7]);
        let x = DMatrix::from_row_slice(2, 4, &[0.3, -1.2, 0.8, 1.9, -0.5, 0.7, 1.4, -0.2]);
        let mut g = DMatrix::zeros(2, 4);
        for j in 0..4 {
            g.set_column(j, &(&a * (x.column(j) - &mu)));
        }
        let moved = newton_positions(&x, &g).unwrap();
        let (y, m) = centred(&moved);
        let cov = &y * y.transpose() / 4.0;
        let target = a.clone().try_inverse().unwrap();
        for i in 0..2 {
            // Within 10⁻⁶ posterior sd (the start's scale, O(1), bounds the rounding).
            let sd = target[(i, i)].sqrt();
            assert!((m[i] - mu[i]).abs() < 1e-6 * sd, "{m} vs {mu}");
            for j in 0..2 {
                assert!(
                    (cov[(i, j)] - target[(i, j)]).abs() < 1e-9 * target.amax(),
                    "{cov} vs {target}"
                );
            }
        }
        // Fewer particles than needed for C: no step.
        assert!(
            newton_positions(&x.columns(0, 2).into_owned(), &g.columns(0, 2).into_owned())
                .is_none()
        );
    }
}
