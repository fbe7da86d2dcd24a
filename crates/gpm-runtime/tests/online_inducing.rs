//! Inducing points added online (thesis Appendix A): a point joins with `q(v) ⊗ N(0, 1)` in the
//! whitened coordinates, which is `q(u_old) p(u_new | u_old)` — so the marginals of `f` at any
//! input and `KL(q ‖ p)` are what they were (checked here to 1e-10 at random `q`), which is
//! what lets SVI grow its points without losing what it learned.

use gpm_runtime::kernels::HyperValues;
use gpm_runtime::sparse::{Online, QInducing, SparseGp};
use gpm_schedule::{BoundArg, BoundKernel, Tape};
use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};

#[test]
fn a_new_point_leaves_q_of_f_and_the_kl_as_they_were() {
    let k = BoundKernel::Scale {
        variance: Tape::constant(1.7),
        kernel: Box::new(BoundKernel::Base {
            law: gpm_library::kernel::lookup("sqexp").unwrap(),
            args: vec![BoundArg::Scalar(Tape::constant(0.6))],
        }),
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let x = DMatrix::from_fn(60, 2, |_, _| rng.gen_range(-2.0..2.0));
    let test = DMatrix::from_fn(25, 2, |_, _| rng.gen_range(-2.5..2.5));
    let online = Online { rho: 0.5, max: 40 };
    let mut sp = SparseGp::first_online(&k, &HyperValues::default(), &x, 0.3, online).unwrap();
    sp.offer(&x, 1..10).unwrap();
    let m = sp.m();
    // A random q(v): precision I + B Bᵀ, random h.
    let b = DMatrix::from_fn(m, m, |_, _| rng.gen_range(-1.0..1.0));
    let prec = DMatrix::identity(m, m) + &b * b.transpose();
    let h = DVector::from_fn(m, |_, _| rng.gen_range(-1.0..1.0));
    let q = QInducing::from_natural(prec, h).unwrap();
    let (phi, kt) = sp.features(&test).unwrap();
    let before = q.marginals(&phi, &kt, sp.mean).unwrap();
    let kl = q.kl().unwrap();
    let added = sp.offer(&x, 10..x.nrows()).unwrap();
    assert!(added > 2, "{added} points added");
    let grown = q.extended(added).unwrap();
    let (phi, kt) = sp.features(&test).unwrap();
    let after = grown.marginals(&phi, &kt, sp.mean).unwrap();
    for i in 0..test.nrows() {
        assert!((before.0[i] - after.0[i]).abs() < 1e-10, "mean {i}");
        assert!((before.1[i] - after.1[i]).abs() < 1e-10, "variance {i}");
    }
    assert!((kl - grown.kl().unwrap()).abs() < 1e-10);
}
