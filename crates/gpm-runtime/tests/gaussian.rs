//! The Gaussian block updates agree with the textbook formulas `Σ = (K⁻¹ + diag a)⁻¹`,
//! `m = Σ(K⁻¹μ₀ + b)` computed by explicit inversion (fine for a 6 × 6 test), both in their
//! moments and in the empirical moments of many draws.

use gpm_runtime::gaussian::{DenseBlock, GpBlock};
use gpm_runtime::kernels::{kernel_matrix, HyperValues};
use gpm_schedule::{BoundArg, BoundKernel, Tape};
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

fn sqexp(lengthscale: f64) -> BoundKernel {
    BoundKernel::Base {
        law: gpm_library::kernel::lookup("sqexp").unwrap(),
        args: vec![BoundArg::Scalar(Tape::constant(lengthscale))],
    }
}

fn setup() -> (DMatrix<f64>, Vec<f64>, Vec<f64>) {
    let x = DMatrix::from_column_slice(6, 1, &[-2.0, -1.1, -0.3, 0.4, 1.0, 2.2]);
    let k = BoundKernel::Scale {
        variance: Tape::constant(1.5),
        kernel: Box::new(sqexp(0.8)),
    };
    let km = kernel_matrix(&k, &x, &x, &HyperValues::default()).unwrap();
    let a = vec![0.3, 1.2, 0.05, 2.0, 0.7, 0.4];
    let b = vec![0.5, -1.0, 0.2, 1.5, -0.3, 0.0];
    (km, a, b)
}

fn reference(k: &DMatrix<f64>, mu0: f64, a: &[f64], b: &[f64]) -> (DVector<f64>, DMatrix<f64>) {
    let kinv = k.clone().try_inverse().unwrap();
    let prec = &kinv + DMatrix::from_diagonal(&DVector::from_column_slice(a));
    let cov = prec.try_inverse().unwrap();
    let lin = &kinv * DVector::from_element(a.len(), mu0) + DVector::from_column_slice(b);
    (&cov * lin, cov)
}

#[test]
fn gp_block_moments_match_explicit_inverse() {
    let (k, a, b) = setup();
    let block = GpBlock::new(k.clone(), 0.4).unwrap();
    let m = block.moments(&a, &b).unwrap();
    let (mean, cov) = reference(&block.k, 0.4, &a, &b);
    for i in 0..6 {
        assert!((m.mean[i] - mean[i]).abs() < 1e-9, "mean {i}");
        assert!((m.var[i] - cov[(i, i)]).abs() < 1e-9, "var {i}");
    }
    // KL(N(m, Σ) ‖ N(μ₀, K)) by the textbook formula.
    let kinv = block.k.clone().try_inverse().unwrap();
    let d = &mean - DVector::from_element(6, 0.4);
    let kl = 0.5
        * ((&kinv * &cov).trace() + (d.transpose() * &kinv * &d)[(0, 0)] - 6.0
            + block.k.determinant().ln()
            - cov.determinant().ln());
    assert!((m.kl - kl).abs() < 1e-8, "{} vs {kl}", m.kl);
}

#[test]
fn gp_block_draws_have_the_posterior_moments() {
    let (k, a, b) = setup();
    let block = GpBlock::new(k, -0.2).unwrap();
    let (mean, cov) = reference(&block.k, -0.2, &a, &b);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let n = 40_000;
    let mut s1 = DVector::zeros(6);
    let mut s2 = DMatrix::zeros(6, 6);
    for _ in 0..n {
        let f = block.sample(&a, &b, &mut rng).unwrap();
        s1 += &f;
        s2 += &f * f.transpose();
    }
    let m = s1 / n as f64;
    let c = s2 / n as f64 - &m * m.transpose();
    for i in 0..6 {
        let se = (cov[(i, i)] / n as f64).sqrt();
        assert!(
            (m[i] - mean[i]).abs() < 5.0 * se,
            "mean {i}: {} vs {}",
            m[i],
            mean[i]
        );
        for j in 0..6 {
            let se = ((cov[(i, i)] * cov[(j, j)] + cov[(i, j)].powi(2)) / n as f64).sqrt();
            assert!((c[(i, j)] - cov[(i, j)]).abs() < 5.0 * se, "cov {i},{j}");
        }
    }
}

#[test]
fn dense_block_matches_explicit_posterior() {
    let design = DMatrix::from_row_slice(4, 2, &[1.0, 0.5, 1.0, -1.0, 1.0, 2.0, 1.0, 0.0]);
    let block = DenseBlock {
        design: design.clone(),
        prior_mean: DVector::from_column_slice(&[0.0, 1.0]),
        prior_sd: DVector::from_column_slice(&[2.0, 0.5]),
    };
    let a = [0.5, 1.0, 2.0, 0.1];
    let b = [1.0, -0.5, 0.3, 0.2];
    let (m, cov) = block.moments(&a, &b).unwrap();
    let prec = DMatrix::from_diagonal(&DVector::from_column_slice(&[0.25, 4.0]))
        + design.transpose() * DMatrix::from_diagonal(&DVector::from_column_slice(&a)) * &design;
    let h = DVector::from_column_slice(&[0.0, 4.0])
        + design.transpose() * DVector::from_column_slice(&b);
    let c2 = prec.clone().try_inverse().unwrap();
    let m2 = &c2 * h;
    assert!((m.mean - m2).norm() < 1e-12 && (cov - c2).norm() < 1e-12);
}

#[test]
fn jitter_is_added_only_when_needed_and_reported() {
    let ok = GpBlock::new(DMatrix::identity(3, 3), 0.0).unwrap();
    assert_eq!(ok.jitter, 0.0);
    let singular = DMatrix::from_element(3, 3, 1.0);
    let fixed = GpBlock::new(singular, 0.0).unwrap();
    assert!(fixed.jitter > 0.0 && fixed.jitter <= 1e-3);
    let nan = DMatrix::from_element(2, 2, f64::NAN);
    assert!(GpBlock::new(nan, 0.0).is_err());
}

/// Every block type through the `GaussianBlock` trait: the sparse column's marginal likelihood
/// (computed in `O(NM² + M³)` without forming `N × N`) equals the full GP's on the FITC
/// covariance `ΦᵀΦ + diag(k̃)`; the trait's full-GP and dense paths equal the inherent methods
/// they wrap.
#[test]
fn gaussian_blocks_agree_through_the_trait() {
    use gpm_runtime::block::{GaussianBlock, SparseColumn};
    use gpm_runtime::natural::NaturalParams;
    use gpm_runtime::sparse::SparseGp;
    let x = DMatrix::from_column_slice(6, 1, &[-2.0, -1.1, -0.3, 0.4, 1.0, 2.2]);
    let z = DMatrix::from_column_slice(3, 1, &[-1.5, 0.0, 1.4]);
    let k = BoundKernel::Scale {
        variance: Tape::constant(1.5),
        kernel: Box::new(sqexp(0.8)),
    };
    let sp = SparseGp::new(&k, &HyperValues::default(), z, 0.4).unwrap();
    let (phi, kt) = sp.features(&x).unwrap();
    let fitc = phi.transpose() * &phi + DMatrix::from_diagonal(&DVector::from_column_slice(&kt));
    let np = NaturalParams {
        a: vec![0.3, 1.2, 0.05, 2.0, 0.7, 0.4],
        b: vec![0.5, -1.0, 0.2, 1.5, -0.3, 0.0],
    };
    let col = SparseColumn {
        sp: &sp,
        phi: &phi,
        kt: &kt,
    };
    let full = GpBlock::new(fitc.clone(), 0.4).unwrap();
    let (ls, lf) = (
        col.log_marginal(&np).unwrap(),
        GaussianBlock::log_marginal(&full, &np).unwrap(),
    );
    assert!((ls - lf).abs() < 1e-9, "sparse {ls} vs FITC {lf}");
    // A draw carries the inducing coordinates prediction needs.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let d = col.sample(&np, &mut rng).unwrap();
    assert_eq!((d.values.len(), d.inducing.map(|v| v.len())), (6, Some(3)));
    // The trait's GP and dense paths are the inherent methods.
    let (km, a, b) = setup();
    let gp = GpBlock::new(km, 0.4).unwrap();
    let np = NaturalParams {
        a: a.clone(),
        b: b.clone(),
    };
    assert_eq!(
        GaussianBlock::moments(&gp, &np).unwrap().mean,
        gp.moments(&a, &b).unwrap().mean
    );
    let dense = DenseBlock {
        design: DMatrix::from_fn(6, 2, |i, j| ((i + 2 * j) as f64 * 0.37).sin()),
        prior_mean: DVector::from_vec(vec![0.1, -0.2]),
        prior_sd: DVector::from_vec(vec![1.3, 0.6]),
    };
    assert_eq!(
        GaussianBlock::log_marginal(&dense, &np).unwrap(),
        dense.log_marginal(&a, &b).unwrap()
    );
}
