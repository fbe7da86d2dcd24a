//! Every registered likelihood at its own example parameters: its density normalises, its
//! power integral is the integral, and its draws have its mean and variance.

use super::*;
use rand::SeedableRng;

/// `Σ_y` or `∫ dy` of `g(y)` over the response's support (trapezoid on ±400 for a real one;
/// counts to 400 or the trials; both labels).
fn total(l: &dyn Likelihood, labels: Labels, g: &dyn Fn(f64) -> f64) -> f64 {
    let p = l.example();
    match l.response() {
        ResponseKind::Real => {
            let (a, b, m) = (-400.0, 400.0, 800_000);
            let h = (b - a) / m as f64;
            (0..=m)
                .map(|k| {
                    let w = if k == 0 || k == m { 0.5 } else { 1.0 };
                    w * g(a + k as f64 * h)
                })
                .sum::<f64>()
                * h
        }
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
            let tol = if l.response() == ResponseKind::Real {
                2e-4
            } else {
                1e-10
            };
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
            let (mean, var) = (l.mean(p, labels).unwrap(), l.variance(p, labels).unwrap());
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
    }
    assert!(lookup("nonesuch").is_none());
}
