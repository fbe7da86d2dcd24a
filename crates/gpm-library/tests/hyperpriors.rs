//! Every hyperparameter prior: its log-density, distribution function and quantile function
//! agree (the density integrated by quadrature between two quantiles gives their probability,
//! up to the one normalising constant of an unnormalised density), and truncation behaves as in
//! Stan.
use gpm_library::{HyperPrior, PriorStart, HYPER_PRIORS};

/// Every proper law's own test parameters ([`gpm_library::HyperPriorLaw::example`]).
fn params(name: &str) -> Vec<f64> {
    gpm_library::hyperprior::lookup(name)
        .map(|l| l.example().to_vec())
        .unwrap_or_else(|| panic!("no law `{name}`"))
}

/// ∫ exp(log p) over [a, b] by composite Simpson's rule.
fn integral(p: &HyperPrior, a: f64, b: f64) -> f64 {
    let n = 4000;
    let h = (b - a) / n as f64;
    let f = |x: f64| p.log_density(x).exp();
    let mut s = f(a) + f(b);
    for k in 1..n {
        s += f(a + k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

#[test]
fn density_cdf_and_quantile_agree() {
    for law in HYPER_PRIORS.iter().filter(|l| l.name() != "flat") {
        let p = HyperPrior::new(law.name(), params(law.name()), (None, None)).unwrap();
        // Quantile inverts the distribution function.
        for u in [0.05, 0.3, 0.5, 0.8, 0.95] {
            let x = p.quantile(u);
            let back = law.cdf(p.params(), x).unwrap();
            assert!(
                (back - u).abs() < 1e-6,
                "{}: F(Q({u})) = {back}",
                law.name()
            );
        }
        // The unnormalised density's integral over two intervals is proportional to their
        // probabilities with one constant.
        let (q1, q2, q3) = (p.quantile(0.1), p.quantile(0.5), p.quantile(0.9));
        let r1 = integral(&p, q1, q2) / 0.4;
        let r2 = integral(&p, q2, q3) / 0.4;
        assert!(
            (r1 / r2 - 1.0).abs() < 1e-5,
            "{}: density and cdf disagree ({r1} vs {r2})",
            law.name()
        );
        // The mean, where it exists, is the density's first moment.
        if let Some(m) = law.mean(p.params()) {
            let (a, b) = (p.quantile(1e-9), p.quantile(1.0 - 1e-9));
            let n = 200_000;
            let h = (b - a) / n as f64;
            let (mut z, mut s) = (0.0, 0.0);
            for k in 0..n {
                let x = a + (k as f64 + 0.5) * h;
                let w = p.log_density(x).exp();
                z += w;
                s += w * x;
            }
            let sd = (p.quantile(0.84) - p.quantile(0.16)) / 2.0;
            assert!(
                ((s / z - m) / sd).abs() < 2e-3,
                "{}: mean {m} but the density's is {}",
                law.name(),
                s / z
            );
        }
    }
}

#[test]
fn half_cauchy_is_cauchy_on_the_positive_half_line() {
    let p = HyperPrior::new("cauchy", vec![0.0, 5.0], (Some(0.0), None)).unwrap();
    assert!(p.is_truncated());
    assert_eq!(p.log_density(-0.1), f64::NEG_INFINITY);
    // The half-Cauchy's median is its scale.
    let (v, how) = p.start();
    assert_eq!(how, PriorStart::TruncatedMedian);
    assert!((v - 5.0).abs() < 1e-9, "{v}");
    assert!(p.conjugate_gamma().is_none());
    assert_eq!(p.to_string(), "cauchy(mu 0, sigma 5) on [0, ∞)");
    // PyMC's HalfCauchy is the same law: the same log-density up to a constant, start and
    // quantiles, and no truncation of its own support.
    let h = HyperPrior::new("half_cauchy", vec![5.0], (Some(0.0), None)).unwrap();
    assert!(!h.is_truncated());
    let (v, how) = h.start();
    assert!((v - 5.0).abs() < 1e-12 && how == PriorStart::TruncatedMedian);
    let d = |x: f64| h.log_density(x) - p.log_density(x);
    assert!((d(0.3) - d(7.0)).abs() < 1e-12);
    assert!((h.quantile(0.9) - p.quantile(0.9)).abs() < 1e-9);
}

#[test]
fn truncated_quantiles_stay_in_the_range() {
    let p = HyperPrior::new("normal", vec![0.0, 1.0], (Some(0.5), Some(2.0))).unwrap();
    for k in 1..20 {
        let x = p.quantile(k as f64 / 20.0);
        assert!((0.5..=2.0).contains(&x));
    }
    // P(X ≤ Q(u)) = u under the truncated law.
    let (f, lo, hi) = (|x: f64| p.law().cdf(p.params(), x).unwrap(), 0.5, 2.0);
    let x = p.quantile(0.3);
    assert!(((f(x) - f(lo)) / (f(hi) - f(lo)) - 0.3).abs() < 1e-9);
}

#[test]
fn start_values() {
    let s = |n: &str, p: Vec<f64>, r| HyperPrior::new(n, p, r).unwrap().start();
    assert_eq!(
        s("gamma", vec![2.0, 4.0], (Some(0.0), None)),
        (0.5, PriorStart::Mean)
    );
    assert_eq!(
        s("inv_gamma", vec![0.5, 3.0], (None, None)),
        (2.0, PriorStart::Mode)
    );
    assert_eq!(
        s("uniform", vec![0.0, 1.0], (Some(0.0), Some(1.0))),
        (0.5, PriorStart::Mean)
    );
    assert_eq!(
        s("flat", vec![], (Some(0.0), Some(4.0))),
        (2.0, PriorStart::FlatRange)
    );
    assert_eq!(
        s("flat", vec![], (Some(1.0), None)),
        (2.0, PriorStart::FlatRange)
    );
    assert_eq!(
        s("flat", vec![], (None, None)),
        (0.0, PriorStart::FlatRange)
    );
    assert_eq!(
        s("cauchy", vec![1.0, 2.0], (None, None)),
        (1.0, PriorStart::Mode)
    );
}

#[test]
fn bad_priors_are_errors() {
    use gpm_library::hyperprior::PriorError;
    assert!(matches!(
        HyperPrior::new("gamma", vec![-1.0, 1.0], (None, None)),
        Err(PriorError::Param { index: 0, .. })
    ));
    assert!(matches!(
        HyperPrior::new("uniform", vec![2.0, 1.0], (None, None)),
        Err(PriorError::Params(_))
    ));
    // A Gamma on a negative range: no overlap.
    assert!(matches!(
        HyperPrior::new("gamma", vec![2.0, 1.0], (Some(-5.0), Some(-1.0))),
        Err(PriorError::NoMass(_))
    ));
    // A normal far outside the range: no mass to speak of.
    assert!(matches!(
        HyperPrior::new("normal", vec![0.0, 1.0], (Some(50.0), None)),
        Err(PriorError::NoMass(_))
    ));
    assert!(matches!(
        HyperPrior::new("gama", vec![1.0, 1.0], (None, None)),
        Err(PriorError::Unknown(_))
    ));
}

/// A law whose row says its support depends on its parameters (`BY_PARAMS`) gives its own: the
/// trait's fallback, the whole line, would be wrong for it.
#[test]
fn a_support_set_by_the_parameters_is_the_laws_own() {
    let mut checked = 0;
    for law in HYPER_PRIORS
        .iter()
        .filter(|l| l.signature().support.is_none())
    {
        let (lo, hi) = law.support(law.example());
        assert!(
            lo.is_finite() && hi.is_finite() && lo < hi,
            "{}: [{lo}, {hi}]",
            law.name()
        );
        checked += 1;
    }
    assert!(checked >= 1, "uniform's support is set by its parameters");
}

/// Each law's `d log p / dx` against a central difference of its log-density at interior
/// quantiles (a sign or factor slip in one law shows as a relative error of order 1).
#[test]
fn log_density_derivatives_match_differences() {
    for law in HYPER_PRIORS.iter().filter(|l| l.name() != "flat") {
        let p = HyperPrior::new(law.name(), params(law.name()), (None, None)).unwrap();
        for u in [0.1, 0.35, 0.6, 0.9] {
            let x = p.quantile(u);
            let h = 1e-5 * x.abs().max(1e-2);
            let numeric = (p.log_density(x + h) - p.log_density(x - h)) / (2.0 * h);
            let exact = p.d_log_density(x);
            assert!(
                (exact - numeric).abs() < 1e-6 * numeric.abs().max(1.0),
                "{} at {x}: d log p = {exact}, difference {numeric}",
                law.name()
            );
        }
    }
    let flat = HyperPrior::new("flat", vec![], (Some(0.0), None)).unwrap();
    assert_eq!(flat.d_log_density(2.0), 0.0);
    assert!(flat.d_log_density(-1.0).is_nan());
}
