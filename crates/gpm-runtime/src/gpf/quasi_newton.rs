//! The particles kept the symmetric image of their first draws, `F̃` minimised by L-BFGS.
//!
//! The flow is linear, so the particles stay an affine image of their first draws:
//! `x_j = m + T z_j`, `z_j` the first draws standardised (`(1/P) Σ z_j = 0`,
//! `(1/P) Σ z_j z_jᵀ = I`). Algorithm 2 lets `T` be any matrix. `q = N(m, TTᵀ)` fixes `T` only up
//! to a rotation `T → TQ`, and a rotation changes `F̃` through `φ` alone: it turns the `P`-point
//! quadrature inside `q` towards where it underestimates `E_q[φ]`. For a quadratic `φ` it
//! changes nothing, so `F̃`'s curvature along the `D(D − 1)/2` rotations is only the target's
//! non-Gaussianity — the Euler steps crawl there at a power-law rate (docs/inference.md: the
//! GP classifier's `F̃` fell by 1e-5 a step after 800 steps), and what they reach is the
//! quadrature fitted to `φ`: an optimistic `F̃` and a `q` that predicts worse (measured).
//!
//! Here `T = R` is kept symmetric — the particles are `q`'s symmetric square root applied to
//! the first draws, one configuration per `q`, so `F̃` is a function of `q` alone (the
//! sample-average approximation of the Gaussian free energy with `P` fixed draws). That is a
//! flow of the thesis' family with `A` restricted (ch. 6 Appendix B: any `A` that keeps
//! `tr(Aᵀ(ψ − I)) ≥ 0` decreases `F̃`); with `P ≥ D + 1` it is still exact for a Gaussian target
//! (`F̃` of a quadratic `φ` depends on `m` and `C` only). `F̃(m, R)` is smooth and well
//! conditioned once the rotations are gone, so it is minimised by L-BFGS (Nocedal & Wright 2006,
//! Algorithm 7.4, Armijo backtracking) rather than by Euler steps.
//!
//! Needs `C` of full rank in every group (more particles than coordinates): with fewer the
//! particles span a subspace and the caller runs the affine flow (Theorem 3's low-rank optimum).

use super::{centred, stack, Evaluation, Flow, Progress};
use crate::RuntimeError;
use nalgebra::{DMatrix, DVector};
use std::f64::consts::SQRT_2;

/// Curvature pairs kept (Nocedal & Wright suggest 3-20).
pub(super) const MEMORY: usize = 20;
/// Armijo's sufficient-decrease constant.
const ARMIJO: f64 = 1e-4;

/// One group's standardised first draws and where its blocks' rows sit in the stacked `x`.
struct Group {
    /// `(block, first row)` of each block in the group's coordinates.
    blocks: Vec<(usize, usize)>,
    /// `z_j = C₀^{-1/2} (x_j⁰ − m₀)` (`D × P`).
    z: DMatrix<f64>,
}

impl Group {
    fn dim(&self) -> usize {
        self.z.nrows()
    }
}

/// The parameters per group, in the groups' order: `m`, then `R`'s upper triangle column by
/// column with the off-diagonal entries scaled by `√2` — the Frobenius inner product of
/// symmetric matrices, and `R` symmetric by construction (stored whole, rounding made it drift
/// from symmetric and the rotations' negative curvature of `−log|det R|` amplified the drift).
type Theta = DVector<f64>;

/// Length of a group's parameters.
fn packed_len(d: usize) -> usize {
    d + d * (d + 1) / 2
}

/// `R`'s upper triangle packed (see [`Theta`]).
fn pack(r: &DMatrix<f64>, out: &mut Vec<f64>) {
    for j in 0..r.ncols() {
        for i in 0..=j {
            out.push(if i == j {
                r[(i, j)]
            } else {
                r[(i, j)] * SQRT_2
            });
        }
    }
}

/// The symmetric `R` of packed entries.
fn unpack_symmetric(packed: &[f64], d: usize) -> DMatrix<f64> {
    let mut r = DMatrix::zeros(d, d);
    let mut k = 0;
    for j in 0..d {
        for i in 0..=j {
            let x = if i == j {
                packed[k]
            } else {
                packed[k] / SQRT_2
            };
            r[(i, j)] = x;
            r[(j, i)] = x;
            k += 1;
        }
    }
    r
}

/// `C₀^{1/2}` and `C₀^{-1/2}` of a full-rank covariance, by its eigendecomposition.
pub(super) fn symmetric_roots(c: DMatrix<f64>) -> Option<(DMatrix<f64>, DMatrix<f64>)> {
    let eig = c.symmetric_eigen();
    if eig
        .eigenvalues
        .iter()
        .any(|&l| !(l > 0.0) || !l.is_finite())
    {
        return None;
    }
    let scaled = |p: f64| {
        let mut u = eig.eigenvectors.clone();
        for (j, mut col) in u.column_iter_mut().enumerate() {
            col *= eig.eigenvalues[j].powf(p);
        }
        crate::linalg::matmul(&u, &eig.eigenvectors.transpose())
    };
    Some((scaled(0.5), scaled(-0.5)))
}

/// The groups' standardised draws and the `θ` that reproduces the particles `v`; `None` when a
/// group has no more particles than coordinates (or its particles are degenerate).
fn start(flow: &Flow<'_>, v: &[DMatrix<f64>]) -> Option<(Vec<Group>, Theta)> {
    let mut groups = Vec::new();
    let mut parts: Vec<f64> = Vec::new();
    for members in &flow.groups {
        let (y, m0) = centred(&stack(members, v));
        let (d, n) = y.shape();
        if n <= d {
            return None;
        }
        let c = crate::linalg::matmul(&y, &y.transpose()) / n as f64;
        let (root, inv_root) = symmetric_roots(c)?;
        let mut at = 0;
        let blocks = members
            .iter()
            .map(|&k| {
                at += v[k].nrows();
                (k, at - v[k].nrows())
            })
            .collect();
        groups.push(Group {
            blocks,
            z: crate::linalg::matmul(&inv_root, &y),
        });
        parts.extend(m0.iter());
        pack(&root, &mut parts);
    }
    Some((groups, DVector::from_vec(parts)))
}

/// Group `g`'s `(m, R)` inside `θ`, starting at `at`.
fn unpack(theta: &Theta, at: usize, d: usize) -> (DVector<f64>, DMatrix<f64>) {
    let packed = &theta.as_slice()[at + d..at + packed_len(d)];
    (theta.rows(at, d).into_owned(), unpack_symmetric(packed, d))
}

/// The particles of every block at `θ`: `x_j = m + R z_j` per group.
fn positions(groups: &[Group], theta: &Theta, like: &[DMatrix<f64>]) -> Vec<DMatrix<f64>> {
    let mut v: Vec<DMatrix<f64>> = like.to_vec();
    let mut at = 0;
    for g in groups {
        let d = g.dim();
        let (m, r) = unpack(theta, at, d);
        at += packed_len(d);
        let mut x = crate::linalg::matmul(&r, &g.z);
        for mut c in x.column_iter_mut() {
            c += &m;
        }
        for &(k, row) in &g.blocks {
            v[k] = x.rows(row, v[k].nrows()).into_owned();
        }
    }
    v
}

/// `∇_θ F̃`: `ḡ` and, packed, `sym((1/P) Σ_j g_j z_jᵀ) − R⁻¹` per group (the last from
/// `−½ log|C| = −log|det R|`); `None` where `R` is singular.
fn gradient(groups: &[Group], theta: &Theta, e: &Evaluation) -> Option<Theta> {
    let mut out = DVector::zeros(theta.len());
    let mut at = 0;
    for g in groups {
        let d = g.dim();
        let members: Vec<usize> = g.blocks.iter().map(|b| b.0).collect();
        let grads = stack(&members, &e.grads);
        let n = grads.ncols() as f64;
        out.rows_mut(at, d).copy_from(&(grads.column_sum() / n));
        let (_, r) = unpack(theta, at, d);
        // R⁻¹ is the gradient of log|det R| itself, so it is formed (by an LU solve).
        let r_inv = r.lu().solve(&DMatrix::identity(d, d))?;
        let gz = crate::linalg::matmul(&grads, &g.z.transpose()) / n;
        let dr = (&gz + gz.transpose()) * 0.5 - r_inv;
        let mut packed = Vec::with_capacity(packed_len(d) - d);
        pack(&dr, &mut packed);
        out.rows_mut(at + d, packed.len()).copy_from_slice(&packed);
        at += packed_len(d);
    }
    out.iter().all(|x| x.is_finite()).then_some(out)
}

/// A curvature pair `(s, y, 1/sᵀy)`.
type Pair = (Theta, Theta, f64);

/// The L-BFGS direction `−H ∇F̃` from the stored pairs (two-loop recursion, Nocedal & Wright
/// Algorithm 7.4), `H₀ = γ I` with `γ = sᵀy / yᵀy` of the newest pair (their eq. 7.20).
fn direction(grad: &Theta, pairs: &[Pair]) -> Theta {
    let mut q = grad.clone();
    let mut alphas = Vec::with_capacity(pairs.len());
    for (s, y, rho) in pairs.iter().rev() {
        let alpha = rho * s.dot(&q);
        q.axpy(-alpha, y, 1.0);
        alphas.push(alpha);
    }
    if let Some((s, y, _)) = pairs.last() {
        q *= s.dot(y) / y.dot(y);
    }
    for ((s, y, rho), alpha) in pairs.iter().zip(alphas.into_iter().rev()) {
        let beta = rho * y.dot(&q);
        q.axpy(alpha - beta, s, 1.0);
    }
    -q
}

/// Where the line search ended.
enum Search {
    /// A point with sufficient decrease: its `θ`, particles, evaluation and gradient.
    Accepted(Theta, Vec<DMatrix<f64>>, Evaluation, Theta),
    /// No step (halved until it no longer moves `θ`) decreased `F̃` enough.
    Stalled,
}

impl Flow<'_> {
    /// Backtrack from `alpha` along `p` until Armijo's condition holds (`rejected` counts the
    /// trials that failed it).
    #[allow(clippy::too_many_arguments)]
    fn line_search(
        &self,
        groups: &[Group],
        theta: &Theta,
        at: (&[DMatrix<f64>], &Evaluation),
        p: &Theta,
        slope: f64,
        mut alpha: f64,
        hv: &[f64],
        rejected: &mut usize,
    ) -> Result<(Search, f64), RuntimeError> {
        let (v, eval) = at;
        // Halved until the step no longer moves `θ` by more than its rounding: a floor on
        // the scale of the problem — with a prior 10⁷ times wider than the posterior the
        // whitened curvature is 10¹⁴ and the first step that lowers `F̃` is about 1e-15,
        // below a fixed floor of 1e-14 (the flow stalled at its start).
        let floor = f64::EPSILON * theta.amax().max(1.0) / p.amax().max(f64::MIN_POSITIVE);
        while alpha >= floor {
            let trial = theta + p * alpha;
            let tv = positions(groups, &trial, v);
            let next = self.evaluate(&tv, hv, false)?;
            if next.free <= eval.free + ARMIJO * alpha * slope {
                if let Some(g) = gradient(groups, &trial, &next) {
                    return Ok((Search::Accepted(trial, tv, next, g), alpha));
                }
            }
            *rejected += 1;
            alpha *= 0.5;
        }
        Ok((Search::Stalled, alpha))
    }

    /// Minimise `F̃` over the symmetric images of the particles `v` (whose evaluation is
    /// `eval`) until the flow's convergence test or `max_iter` accepted iterations; `v` and
    /// `eval` end at the last accepted point. `None` when a group has no more particles than
    /// coordinates: the caller runs the affine flow.
    pub(super) fn symmetric(
        &self,
        v: &mut Vec<DMatrix<f64>>,
        eval: &mut Evaluation,
        hv: &[f64],
        config: &super::GpfConfig,
    ) -> Result<Option<Progress>, RuntimeError> {
        let Some((groups, mut theta)) = start(self, v) else {
            return Ok(None);
        };
        let Some(mut grad) = gradient(&groups, &theta, eval) else {
            return Ok(None);
        };
        let mut trace = vec![eval.free];
        let (mut rejected, mut converged, mut last) = (0usize, false, config.step);
        let mut pairs: Vec<Pair> = Vec::new();
        while trace.len() <= config.max_iter {
            crate::stop::check("particle flow")?;
            let mut p = direction(&grad, &pairs);
            let mut slope = p.dot(&grad);
            if !(slope < 0.0) {
                // Not a descent direction: start again from the gradient.
                pairs.clear();
                p = -&grad;
                slope = p.dot(&grad);
            }
            // Without curvature pairs the first trial is the flow's own Euler step.
            let first = if pairs.is_empty() { config.step } else { 1.0 };
            let (search, alpha) = self.line_search(
                &groups,
                &theta,
                (v, eval),
                &p,
                slope,
                first,
                hv,
                &mut rejected,
            )?;
            let Search::Accepted(next_theta, next_v, next_eval, next_grad) = search else {
                if !pairs.is_empty() {
                    // A stale curvature model: start again from the gradient.
                    pairs.clear();
                    continue;
                }
                // No step lowers F̃ along the gradient: a fixed point up to rounding when the
                // predicted decrease is below F̃'s rounding; otherwise F̃ and its gradient
                // disagree, and the run stops unconverged rather than claim a fixed point.
                converged = grad.norm_squared() <= 1e-10 * eval.free.abs().max(1.0);
                break;
            };
            let s = &next_theta - &theta;
            let y = &next_grad - &grad;
            let sy = s.dot(&y);
            // Kept only with positive curvature, so H stays positive definite.
            if sy > 1e-12 * s.norm() * y.norm() {
                if pairs.len() == MEMORY {
                    pairs.remove(0);
                }
                pairs.push((s, y, 1.0 / sy));
            }
            (theta, grad, *v, *eval, last) = (next_theta, next_grad, next_v, next_eval, alpha);
            trace.push(eval.free);
            crate::progress::emit(crate::progress::Event::FlowStep {
                step: trace.len() - 1,
                max_steps: config.max_iter,
                free_energy: eval.free,
            });
            if super::settled(&trace, config.tolerance) {
                converged = true;
                break;
            }
        }
        Ok(Some(Progress {
            trace,
            rejected,
            eps: last,
            converged,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symmetric(d: usize, seed: usize) -> DMatrix<f64> {
        let a = DMatrix::from_fn(d, d, |i, j| {
            (((i * 7 + j * 3 + seed) % 11) as f64 - 5.0) / 3.0
        });
        &a + a.transpose()
    }

    /// Packing keeps every entry and the Frobenius inner product of symmetric matrices, so
    /// L-BFGS's dot products on packed vectors are those of the matrices.
    #[test]
    fn packing_is_an_isometry_of_symmetric_matrices() {
        let (a, b) = (symmetric(5, 1), symmetric(5, 4));
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        pack(&a, &mut pa);
        pack(&b, &mut pb);
        assert_eq!(pa.len(), 15);
        assert!((unpack_symmetric(&pa, 5) - &a).amax() < 1e-15);
        let dot: f64 = pa.iter().zip(&pb).map(|(x, y)| x * y).sum();
        assert!((dot - a.dot(&b)).abs() < 1e-12 * a.norm() * b.norm());
    }

    #[test]
    fn symmetric_roots_square_to_the_matrix_and_its_inverse() {
        let a = symmetric(4, 2);
        let c = &a * &a + DMatrix::identity(4, 4);
        let (root, inv_root) = symmetric_roots(c.clone()).unwrap();
        let (e1, e2) = (
            (&root * &root - &c).amax() / c.amax(),
            (&root * &inv_root - DMatrix::identity(4, 4)).amax(),
        );
        assert!(e1 < 1e-11 && e2 < 1e-11, "{e1} {e2}");
        assert!((&root - root.transpose()).amax() < 1e-14);
        assert!(symmetric_roots(-c).is_none());
    }

    /// The two-loop recursion with one pair from a quadratic `½ xᵀ H x` reproduces `H⁻¹ g` in
    /// the pair's direction (the secant equation) and `γ g` orthogonal to it.
    #[test]
    fn the_two_loop_recursion_satisfies_the_secant_equation() {
        let h = DMatrix::from_row_slice(2, 2, &[4.0, 1.0, 1.0, 3.0]);
        let s = DVector::from_vec(vec![1.0, 0.5]);
        let y = &h * &s;
        let pairs = vec![(s.clone(), y.clone(), 1.0 / s.dot(&y))];
        // −H·(direction of y) = s: the inverse-Hessian model maps y to s.
        let p = direction(&y, &pairs);
        assert!((p + &s).amax() < 1e-12);
    }
}
