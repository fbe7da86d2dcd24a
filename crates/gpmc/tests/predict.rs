//! Prediction against a closed form: for linear regression with a fixed noise precision the
//! posterior predictive is Gaussian, y* ~ N(φ*ᵀm, φ*ᵀSφ* + 1/τ); the Monte Carlo log predictive
//! densities from the Gibbs draws must match it.

use gpm_runtime::gibbs::GibbsConfig;
use nalgebra::{DMatrix, DVector};
use std::path::Path;

#[test]
fn predictive_density_matches_the_gaussian_closed_form() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let src = std::fs::read_to_string(root.join("linear_regression.gpm"))
        .unwrap()
        .replace(
            "tau : real in 0.. ~ gamma(2.0, 1.0);",
            "tau : real in 0.. = 4.0;",
        );
    let c = gpmc::check("lr.gpm", &src).unwrap();
    let train = gpmc::data::load(
        &c.model,
        &[root.join("linear_regression.data.json").as_path()],
    )
    .unwrap();
    let test = gpmc::data::load(
        &c.model,
        &[root.join("linear_regression.test.json").as_path()],
    )
    .unwrap();
    let config = GibbsConfig {
        first_chain: 0,
        chains: 2,
        warmup: 100,
        draws: 2000,
        thin: 1,
        seed: 9,
        nuts: Default::default(),
    };
    let r = gpmc::infer::run_gibbs(&c, &train, &config, &|_, _| {}).unwrap();
    let (csv, metrics) = gpmc::infer::predict(&c, &train, &test, &r, 1).unwrap();
    // Closed form.
    let design = |d: &gpm_runtime::data::Data| {
        let x = d.matrix("X").unwrap();
        DMatrix::from_fn(x.nrows(), x.ncols() + 1, |i, j| {
            if j < x.ncols() {
                x[(i, j)]
            } else {
                1.0
            }
        })
    };
    let (phi, phis) = (design(&train), design(&test));
    let y = DVector::from_column_slice(train.vector("y").unwrap());
    let ys = test.vector("y").unwrap();
    let prec = DMatrix::identity(3, 3) / 100.0 + phi.transpose() * &phi * 4.0;
    let s = prec.try_inverse().unwrap();
    let m = &s * phi.transpose() * y * 4.0;
    let mut exact = 0.0;
    for i in 0..ys.len() {
        let row = phis.row(i);
        let mu = (row * &m)[(0, 0)];
        let v = (row * &s * row.transpose())[(0, 0)] + 0.25;
        exact += -0.5 * (2.0 * std::f64::consts::PI * v).ln() - 0.5 * (ys[i] - mu).powi(2) / v;
    }
    let lpd = metrics["log_predictive_density"].as_f64().unwrap();
    // 1000 draws: the Monte Carlo error of each pointwise average is well below 1 %.
    assert!(
        (lpd - exact).abs() < 0.02 * exact.abs(),
        "lpd {lpd} vs exact {exact}"
    );
    assert_eq!(csv.lines().count(), ys.len() + 1);
    assert_eq!(metrics["points"], ys.len());
}
