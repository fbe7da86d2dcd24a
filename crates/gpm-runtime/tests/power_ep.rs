//! Sparse Gibbs at a Power-EP power α (thesis §7.5, Algorithm 6; Bui, Yan & Turner 2017): the
//! draw of the whitened inducing values `v` given Gaussian sites `exp(b_i f_i − ½ a_i f_i²)` is
//! the Power-EP optimum `q*(u) ∝ p(u) Π_i N(b_i/a_i | φ_iᵀv + μ₀, 1/a_i + α k̃_i)` — computed here
//! by its textbook formula with explicit inverses (a 3 × 3 test) — which at α = 1 is FITC's
//! posterior (the exact posterior under the `N × N` FITC covariance) and at α = 0 Titsias' /
//! SVGP's optimal `q(u)` (CAVI's, [`SparseColumn::q`]); the values `f_i | v` come from the
//! tilted conditional `p(f_i | v) N(b_i/a_i | f_i, 1/a_i)^α`.

use gpm_runtime::block::SparseColumn;
use gpm_runtime::kernels::HyperValues;
use gpm_runtime::natural::NaturalParams;
use gpm_runtime::sparse::SparseGp;
use gpm_schedule::{BoundArg, BoundKernel, Tape};
use nalgebra::{DMatrix, DVector};

const MU0: f64 = 0.4;

fn prior(alpha: f64) -> (SparseGp, DMatrix<f64>, Vec<f64>) {
    let x = DMatrix::from_column_slice(6, 1, &[-2.0, -1.1, -0.3, 0.4, 1.0, 2.2]);
    let z = DMatrix::from_column_slice(3, 1, &[-1.5, 0.0, 1.4]);
    let k = BoundKernel::Scale {
        variance: Tape::constant(1.5),
        kernel: Box::new(BoundKernel::Base {
            law: gpm_library::kernel::lookup("sqexp").unwrap(),
            args: vec![BoundArg::Scalar(Tape::constant(0.8))],
        }),
    };
    let mut sp = SparseGp::new(&k, &HyperValues::default(), z, MU0).unwrap();
    sp.alpha = alpha;
    let (phi, kt) = sp.features(&x).unwrap();
    (sp, phi, kt)
}

const A: [f64; 6] = [0.3, 1.2, 0.05, 2.0, 0.7, 0.4];
const B: [f64; 6] = [0.5, -1.0, 0.2, 1.5, -0.3, 0.0];

/// `(mean, covariance)` of `v` under the Power-EP optimum, by explicit inversion.
fn reference(phi: &DMatrix<f64>, kt: &[f64], alpha: f64) -> (DVector<f64>, DMatrix<f64>) {
    let m = phi.nrows();
    let mut prec = DMatrix::identity(m, m);
    let mut h = DVector::zeros(m);
    for i in 0..phi.ncols() {
        let var = 1.0 / A[i] + alpha * kt[i];
        let target = B[i] / A[i] - MU0;
        let p = phi.column(i);
        prec += p * p.transpose() / var;
        h += p * (target / var);
    }
    let cov = prec.try_inverse().unwrap();
    (&cov * h, cov)
}

fn drawn(sp: &SparseGp, phi: &DMatrix<f64>, kt: &[f64]) -> (DVector<f64>, DMatrix<f64>) {
    let (chol, lin) = sp.fitc_stats(phi, kt, &A, &B).unwrap().factor().unwrap();
    (chol.solve(&lin), chol.inverse())
}

fn close(a: &DMatrix<f64>, b: &DMatrix<f64>, tol: f64) -> bool {
    (a - b).abs().max() < tol
}

#[test]
fn the_inducing_draw_is_the_power_ep_optimum_for_every_alpha() {
    for alpha in [0.0, 0.25, 0.5, 1.0] {
        let (sp, phi, kt) = prior(alpha);
        let (m, c) = drawn(&sp, &phi, &kt);
        let (rm, rc) = reference(&phi, &kt, alpha);
        assert!(
            (&m - &rm).abs().max() < 1e-10,
            "α = {alpha}: mean {m} vs {rm}"
        );
        assert!(close(&c, &rc, 1e-10), "α = {alpha}: covariance");
    }
}

/// α = 1: the exact posterior of `Φᵀv` under the FITC prior `ΦᵀΦ + diag(k̃)` (the full `N × N`
/// Gaussian conditioned on the sites, then projected on `v`): today's sparse Gibbs.
#[test]
fn alpha_one_is_the_fitc_posterior() {
    let (sp, phi, kt) = prior(1.0);
    let (m, c) = drawn(&sp, &phi, &kt);
    // Joint prior of (v, f): v ~ N(0, I), f = μ₀ + Φᵀv + ε. Posterior of v given the sites:
    // precision I + Φ (diag(k̃) + diag(1/a))⁻¹ Φᵀ — the same algebra, so check instead the
    // posterior mean of f against the dense FITC computation.
    let n = phi.ncols();
    let kf = phi.transpose() * &phi + DMatrix::from_diagonal(&DVector::from_column_slice(&kt));
    let a = DMatrix::from_diagonal(&DVector::from_column_slice(&A));
    let post_cov = (kf.clone().try_inverse().unwrap() + &a)
        .try_inverse()
        .unwrap();
    let b = DVector::from_column_slice(&B);
    let mean_f = &post_cov * (kf.try_inverse().unwrap() * DVector::from_element(n, MU0) + b);
    // E[f] = μ₀ + Φᵀ E[v] + E[ε | v] averaged: with sample_given_inducing at the mean of v and
    // zero noise, E[f | v] is affine in v, so E[f] is it at E[v].
    let f = sp
        .sample_given_inducing(&phi, &kt, &A, &B, &m, |_| 0.0)
        .unwrap();
    assert!((&f - &mean_f).abs().max() < 1e-10, "{f} vs {mean_f}");
    // And Cov(Φᵀv) + the conditional variances, through the draws' formula:
    // Var(f_i) = φ_iᵀ C φ_i (1 − a_i/p_i)² + 1/p_i with p_i = 1/k̃_i + a_i.
    for i in 0..n {
        let p = 1.0 / kt[i] + A[i];
        let s = 1.0 - A[i] / p;
        let ph = phi.column(i);
        let var = (ph.transpose() * &c * ph)[(0, 0)] * s * s + 1.0 / p;
        assert!(
            (var - post_cov[(i, i)]).abs() < 1e-10,
            "{i}: {var} vs {}",
            post_cov[(i, i)]
        );
    }
}

/// α = 0: Titsias' optimal `q(u)` given the sites — CAVI's — and `f | v` is the prior's
/// conditional `p(f | u)`, whatever the sites.
#[test]
fn alpha_zero_is_titsias_q_and_the_prior_conditional() {
    let (sp, phi, kt) = prior(0.0);
    let (m, c) = drawn(&sp, &phi, &kt);
    let np = NaturalParams {
        a: A.to_vec(),
        b: B.to_vec(),
    };
    let col = SparseColumn {
        sp: &sp,
        phi: &phi,
        kt: &kt,
    };
    let q = col.q(&np).unwrap();
    assert!((&m - &q.mean).abs().max() < 1e-10, "{m} vs {}", q.mean);
    assert!(close(&c, &q.prec.clone().try_inverse().unwrap(), 1e-10));
    let mut k = 0;
    let f = sp
        .sample_given_inducing(&phi, &kt, &A, &B, &m, |_| {
            k += 1;
            1.0
        })
        .unwrap();
    let prior_mean = phi.tr_mul(&m).add_scalar(MU0);
    for i in 0..f.len() {
        let expected = prior_mean[i] + kt[i].sqrt();
        assert!(
            (f[i] - expected).abs() < 1e-12,
            "{i}: {} vs {expected}",
            f[i]
        );
    }
    assert_eq!(k, f.len());
}
