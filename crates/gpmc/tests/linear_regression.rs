//! Gibbs on the conjugate linear-regression model against closed forms:
//! with the noise precision fixed, the posterior of the weights is Gaussian and known exactly;
//! with τ ~ Gamma(2, 1), p(τ | y) ∝ p(τ) N(y | 0, Φ S₀ Φᵀ + τ⁻¹ I) is one-dimensional and is
//! integrated by quadrature, and E[w | y] = ∫ E[w | τ, y] p(τ | y) dτ.

use crate::common;
use common::four_chains;
use nalgebra::{DMatrix, DVector};
use std::path::Path;

fn load(
    model_src: &str,
) -> (
    gpmc::Checked,
    gpm_runtime::data::Data,
    DMatrix<f64>,
    DVector<f64>,
) {
    let c = gpmc::check("lr.gpm", model_src).unwrap_or_else(|f| panic!("{}", f.render()));
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/linear_regression.data.json");
    let d = gpmc::data::load(&c.model, &[path.as_path()]).unwrap();
    let x = d.matrix("X").unwrap().clone();
    let y = DVector::from_column_slice(d.vector("y").unwrap());
    // Design with the intercept column last, as the draws list w then b.
    let phi = DMatrix::from_fn(x.nrows(), x.ncols() + 1, |i, j| {
        if j < x.ncols() {
            x[(i, j)]
        } else {
            1.0
        }
    });
    (c, d, phi, y)
}

/// Posterior mean and covariance of θ = (w, b) given τ: prior N(0, 100 I).
fn given_tau(phi: &DMatrix<f64>, y: &DVector<f64>, tau: f64) -> (DVector<f64>, DMatrix<f64>) {
    let p = phi.ncols();
    let prec = DMatrix::identity(p, p) / 100.0 + phi.transpose() * phi * tau;
    let cov = prec.try_inverse().unwrap();
    let mean = &cov * phi.transpose() * y * tau;
    (mean, cov)
}

fn summary<'a>(
    r: &'a gpmc::infer::InferResult,
    name: &str,
) -> &'a gpm_runtime::diagnostics::Summary {
    &r.summaries.iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn fixed_precision_matches_the_gaussian_posterior() {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/linear_regression.gpm"),
    )
    .unwrap()
    .replace(
        "tau : real in 0.. ~ gamma(2.0, 1.0);",
        "tau : real in 0.. = 4.0;",
    );
    let (c, d, phi, y) = load(&src);
    let config = four_chains(100, 2500, 3);
    let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
    let (mean, cov) = given_tau(&phi, &y, 4.0);
    for (k, name) in ["w.1", "w.2", "b"].iter().enumerate() {
        let s = summary(&r, name);
        let z = (s.mean - mean[k]) / s.mcse_mean;
        let sd_z = (s.sd / cov[(k, k)].sqrt() - 1.0) / (0.5 / s.ess_bulk).sqrt();
        assert!(
            z.abs() < 4.5 && sd_z.abs() < 4.5,
            "{name}: {} vs {} (z {z}), sd z {sd_z}",
            s.mean,
            mean[k]
        );
        assert!(s.rhat < 1.01);
    }
}

#[test]
fn random_precision_matches_quadrature_over_tau() {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/linear_regression.gpm"),
    )
    .unwrap();
    let (c, d, phi, y) = load(&src);
    let config = four_chains(200, 2500, 5);
    let r = gpmc::infer::run_gibbs(&c, &d, &config, &|_, _| {}).unwrap();
    // log p(τ | y) on a grid: Gamma(2, 1) prior times the marginal likelihood.
    let n = y.len();
    let s0 = &phi * phi.transpose() * 100.0;
    let grid: Vec<f64> = (1..=1600).map(|k| k as f64 * 0.01).collect();
    let logp: Vec<f64> = grid
        .iter()
        .map(|&t| {
            let cov = &s0 + DMatrix::identity(n, n) / t;
            let ch = cov.cholesky().unwrap();
            let a = ch.l().solve_lower_triangular(&y).unwrap();
            let logdet = 2.0 * ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
            t.ln() - t - 0.5 * a.norm_squared() - 0.5 * logdet
        })
        .collect();
    let m = logp.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logp.iter().map(|l| (l - m).exp()).collect();
    let z: f64 = w.iter().sum();
    let e_tau = grid.iter().zip(&w).map(|(t, w)| t * w).sum::<f64>() / z;
    let sd_tau = (grid
        .iter()
        .zip(&w)
        .map(|(t, w)| (t - e_tau).powi(2) * w)
        .sum::<f64>()
        / z)
        .sqrt();
    let e_w1 = grid
        .iter()
        .zip(&w)
        .map(|(t, w)| given_tau(&phi, &y, *t).0[0] * w)
        .sum::<f64>()
        / z;
    let s = summary(&r, "tau");
    let zt = (s.mean - e_tau) / s.mcse_mean;
    let sdz = (s.sd / sd_tau - 1.0) / (0.5 / s.ess_bulk).sqrt();
    assert!(
        zt.abs() < 4.5 && sdz.abs() < 4.5,
        "tau {} vs {e_tau} (z {zt}); sd {} vs {sd_tau} (z {sdz})",
        s.mean,
        s.sd
    );
    let s = summary(&r, "w.1");
    let zw = (s.mean - e_w1) / s.mcse_mean;
    assert!(zw.abs() < 4.5, "w.1 {} vs {e_w1} (z {zw})", s.mean);
}
