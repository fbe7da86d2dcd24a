//! Every registered likelihood at its own example parameters: its density normalises, its
//! power integral is the integral, and its draws have its mean and variance (and, for a real
//! response, its quantiles).

use super::*;
use rand::SeedableRng;

/// `∫ dy` of `g` over `(−∞, upper)` by the trapezoid rule in `u = atan(y)`, so that heavy
/// tails (the horseshoe's and the Cauchy's `~ y^(−2)`) are integrated to the end.
fn real_integral(g: &dyn Fn(f64) -> f64, upper: f64) -> f64 {
    let (a, b) = (-std::f64::consts::FRAC_PI_2, upper.atan());
    let m = 800_000;
    let h = (b - a) / m as f64;
    let at = |u: f64| {
        let y = u.tan();
        g(y) * (1.0 + y * y)
    };
    // The end at −π/2 contributes 0 for an integrable g; the upper end is weighted ½.
    let inner: f64 = (1..m).map(|k| at(a + k as f64 * h)).sum();
    let top = if upper.is_finite() { 0.5 * at(b) } else { 0.0 };
    (inner + top) * h
}

/// `Σ_y` or `∫ dy` of `g(y)` over the response's support (over the real line in `atan(y)`;
/// counts to 400 or the trials; both labels).
fn total(l: &dyn Likelihood, labels: Labels, g: &dyn Fn(f64) -> f64) -> f64 {
    let p = l.example();
    match l.response() {
        ResponseKind::Real => real_integral(g, f64::INFINITY),
        // Over (0, ∞) in t = log y: ∫ g(e^t) e^t dt over the real line.
        ResponseKind::Positive => real_integral(&|t| in_log(g, t), f64::INFINITY),
        ResponseKind::Count => {
            let top = l.trials().map_or(400, |t| p[t] as usize);
            (0..=top).map(|k| g(k as f64)).sum()
        }
        ResponseKind::Binary => {
            let (one, zero) = binary_labels(labels);
            g(one) + g(zero)
        }
        ResponseKind::Category => (1..=p.len()).map(|k| g(k as f64)).sum(),
    }
}

fn label_sets(l: &dyn Likelihood) -> Vec<Labels<'static>> {
    if l.response() == ResponseKind::Binary {
        vec![Some(&[0, 1]), Some(&[-1, 1])]
    } else {
        vec![None]
    }
}

#[test]
fn every_density_normalises() {
    for l in LIKELIHOODS {
        for labels in label_sets(*l) {
            let Some(f) = l.log_density(labels) else {
                continue;
            };
            let s = total(*l, labels, &|y| f.eval(y, l.example()).exp());
            let tol = if is_continuous(*l) { 2e-4 } else { 1e-10 };
            assert!((s - 1.0).abs() < tol, "{}: {s}", l.name());
        }
    }
}

#[test]
fn every_power_integral_is_the_integral() {
    for l in LIKELIHOODS {
        for labels in label_sets(*l) {
            let (Some(f), Some(i)) = (l.log_density(labels), l.power_integral(0.3)) else {
                continue;
            };
            let numeric = total(*l, labels, &|y| (1.3 * f.eval(y, l.example())).exp());
            let closed = i.eval(0.0, l.example());
            assert!(
                (numeric - closed).abs() < 2e-4 * closed,
                "{}: {numeric} vs {closed}",
                l.name()
            );
        }
    }
}

/// 50 000 draws at the example parameters: mean and variance within 5 standard errors (the
/// variance's from the fourth moment of the draws).
#[test]
fn every_draw_has_the_mean_and_variance() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for l in LIKELIHOODS {
        for labels in label_sets(*l) {
            let p = l.example();
            let n = 50_000;
            let x: Vec<f64> = (0..n).map(|_| l.draw(p, labels, &mut rng)).collect();
            assert!(x.iter().all(|v| v.is_finite()), "{}", l.name());
            let m = x.iter().sum::<f64>() / n as f64;
            let c = |k: i32| x.iter().map(|v| (v - m).powi(k)).sum::<f64>() / n as f64;
            let (v, m4) = (c(2), c(4));
            // (A law without a variance, the horseshoe's, is checked by its quantiles below.)
            let (Some(mean), Some(var)) = (l.mean(p, labels), l.variance(p, labels)) else {
                continue;
            };
            let se_m = (var / n as f64).sqrt();
            let se_v = ((m4 - v * v) / n as f64).sqrt();
            assert!(
                (m - mean).abs() < 5.0 * se_m,
                "{}: mean {m} vs {mean}",
                l.name()
            );
            assert!(
                (v - var).abs() < 5.0 * se_v,
                "{}: variance {v} vs {var}",
                l.name()
            );
        }
    }
}

/// `g(e^t) e^t`, the integrand in `t = log y`; 0 where `e^t` under- or overflows (the
/// quadrature's ends, `|t| > 700`, where a density on `(0, ∞)` has no mass).
fn in_log(g: &dyn Fn(f64) -> f64, t: f64) -> f64 {
    let y = t.exp();
    if y > 0.0 && y.is_finite() {
        g(y) * y
    } else {
        0.0
    }
}

/// A density on the real line or the positive half-line (integrated by quadrature).
fn is_continuous(l: &dyn Likelihood) -> bool {
    matches!(l.response(), ResponseKind::Real | ResponseKind::Positive)
}

/// `∫ g` over the support up to `q` (a continuous response).
fn cdf(l: &dyn Likelihood, g: &dyn Fn(f64) -> f64, q: f64) -> f64 {
    if l.response() == ResponseKind::Positive {
        real_integral(&|t| in_log(g, t), q.ln())
    } else {
        real_integral(g, q)
    }
}

/// 50 000 draws of every continuous response: at the draws' 5 %, 10 %, ..., 95 % quantiles the
/// density's integral is the quantile's level within 5 binomial standard errors.
#[test]
fn every_continuous_draw_has_the_distribution_of_its_density() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
    for l in LIKELIHOODS.iter().filter(|l| is_continuous(**l)) {
        let (p, f) = (l.example(), l.log_density(None).expect("a density"));
        let n = 50_000;
        let mut x: Vec<f64> = (0..n).map(|_| l.draw(p, None, &mut rng)).collect();
        x.sort_by(|a, b| a.partial_cmp(b).expect("finite draws"));
        for k in 1..20 {
            let level = k as f64 / 20.0;
            let q = x[(level * n as f64) as usize];
            let cdf = cdf(*l, &|y| f.eval(y, p).exp(), q);
            let se = (level * (1.0 - level) / n as f64).sqrt();
            assert!(
                (cdf - level).abs() < 5.0 * se,
                "{}: F(q{k}) = {cdf} vs {level}",
                l.name()
            );
        }
    }
}

/// Draws outside the domain are NaN, never a panic.
#[test]
fn draws_outside_the_domain_are_nan() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for l in LIKELIHOODS {
        let bad: Vec<f64> = vec![f64::NAN; l.example().len()];
        assert!(l.draw(&bad, None, &mut rng).is_nan(), "{}", l.name());
        assert!(l.draw(&[], None, &mut rng).is_nan(), "{}", l.name());
    }
}

#[test]
fn names_are_unique_and_found() {
    for (k, l) in LIKELIHOODS.iter().enumerate() {
        assert!(LIKELIHOODS[..k].iter().all(|o| o.name() != l.name()));
        assert_eq!(lookup(l.name()).map(|r| r.name()), Some(l.name()));
        assert_eq!(l.params().len(), l.example().len().min(l.params().len()));
        // Each parameter has its constraint, and the example satisfies it.
        assert_eq!(l.constraints().len(), l.params().len(), "{}", l.name());
        for (c, v) in l.constraints().iter().zip(l.example()) {
            assert!(
                c.contains(*v),
                "{}: example {v} not {}",
                l.name(),
                c.describe()
            );
        }
    }
    assert!(lookup("nonesuch").is_none());
}
