//! The executors' samplers: moments against closed forms, Kolmogorov-Smirnov against an
//! independent CDF, and the exactness of the non-integer Pólya-Gamma and GIG draws.

mod common;

use common::ks_two_sample;
use gpm_runtime::draw;
use rand::SeedableRng;

fn moments(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, v)
}

/// z-scores of the sample mean and variance (the variance's standard error from the fourth
/// central moment).
fn z_scores(x: &[f64], mean: f64, var: f64) -> (f64, f64) {
    let n = x.len() as f64;
    let (m, v) = moments(x);
    let m4 = x.iter().map(|t| (t - m).powi(4)).sum::<f64>() / n;
    (
        (m - mean) / (var / n).sqrt(),
        (v - var) / ((m4 - v * v) / n).sqrt(),
    )
}

#[test]
fn polya_gamma_moments_for_integer_and_fractional_shapes() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for &b in &[0.5, 1.0, 3.7, 50.0, 1000.0] {
        for &c in &[0.0, 0.1, 5.0, 50.0] {
            let n = if b > 100.0 {
                1_000
            } else if b > 10.0 {
                4_000
            } else {
                20_000
            };
            let x: Vec<f64> = (0..n).map(|_| draw::pg(&mut rng, b, c).unwrap()).collect();
            let (zm, zv) = z_scores(&x, draw::pg_mean(b, c), draw::pg_var(b, c));
            assert!(
                zm.abs() < 4.5 && zv.abs() < 4.5,
                "PG({b}, {c}): z mean {zm:.2}, z var {zv:.2}"
            );
        }
    }
}

#[test]
fn alternate_method_agrees_with_sums_of_independent_exact_draws() {
    // PG(b, c) by the alternate method (one chunk for b ≤ 4, ⌈b/4⌉ equal chunks above) against
    // the same law built from other samplers: sums of Devroye PG(1, c) draws for integer b, plus
    // one PG(b − ⌊b⌋, c) by Laplace inversion for fractional b.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    let n = 20_000;
    for &b in &[1.5, 2.0, 3.0, 4.0, 6.5, 9.0] {
        for &c in &[0.0, 1.0, 4.0, 30.0] {
            let alt: Vec<f64> = (0..n).map(|_| draw::pg(&mut rng, b, c).unwrap()).collect();
            let reference: Vec<f64> = (0..n)
                .map(|_| {
                    let mut s: f64 = (0..b.floor() as usize)
                        .map(|_| draw::pg(&mut rng, 1.0, c).unwrap())
                        .sum();
                    if b.fract() > 0.0 {
                        s += draw::pg(&mut rng, b.fract(), c).unwrap();
                    }
                    s
                })
                .collect();
            let d = ks_two_sample(alt, reference);
            // Critical value at p = 0.001 for two samples of n.
            assert!(
                d < 1.95 * (2.0 / n as f64).sqrt(),
                "PG({b}, {c}): KS distance {d}"
            );
        }
    }
}

#[test]
fn polya_gamma_is_finite_for_extreme_tilts() {
    // Large |c| once overflowed the mixture weight of Devroye's envelope (e^(2z) Φ(−·)).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
    for &b in &[1.0, 2.5, 40.0] {
        for &c in &[800.0, 3000.0, -5000.0] {
            let x: Vec<f64> = (0..2000)
                .map(|_| draw::pg(&mut rng, b, c).unwrap())
                .collect();
            let (zm, zv) = z_scores(&x, draw::pg_mean(b, c), draw::pg_var(b, c));
            assert!(
                zm.abs() < 4.5 && zv.abs() < 4.5,
                "PG({b}, {c}): z mean {zm:.2}, z var {zv:.2}"
            );
        }
    }
}

#[test]
fn devroye_and_laplace_inversion_agree_by_kolmogorov_smirnov() {
    // PG(1, c) by Devroye against PG(0.5, c) + PG(0.5, c) by inversion: same law, two methods.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    for &c in &[0.0, 2.0] {
        let n = 4000;
        let a: Vec<f64> = (0..n)
            .map(|_| draw::pg(&mut rng, 1.0, c).unwrap())
            .collect();
        let b: Vec<f64> = (0..n)
            .map(|_| draw::pg(&mut rng, 0.5, c).unwrap() + draw::pg(&mut rng, 0.5, c).unwrap())
            .collect();
        let d = ks_two_sample(a, b);
        // Critical value at p = 0.001: 1.95 sqrt(2/n).
        assert!(
            d < 1.95 * (2.0 / n as f64).sqrt(),
            "c = {c}: KS distance {d}"
        );
    }
}

#[test]
fn gig_moments_match_the_bessel_closed_form() {
    // E[GIG(p, a, b)] = √(b/a) K_{p+1}(z)/K_p(z), z = √(ab), with the half-integer Bessel
    // functions in closed form: K_{1/2} ∝ 1, K_{3/2} ∝ 1 + 1/z, K_{5/2} ∝ 1 + 3/z + 3/z².
    // X ~ GIG(−3/2, a, b): E[X] = √(b/a)/(1 + 1/z); 1/X ~ GIG(3/2, b, a):
    // E[1/X] = √(a/b)(1 + 3/z + 3/z²)/(1 + 1/z).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for &(a, b) in &[(0.5, 2.0), (8.0, 0.3), (0.01, 5.0), (30.0, 30.0)] {
        let n = 20_000;
        let x: Vec<f64> = (0..n)
            .map(|_| draw::gig(&mut rng, -1.5, a, b).unwrap())
            .collect();
        let z = (a * b).sqrt();
        let mean = (b / a).sqrt() / (1.0 + 1.0 / z);
        let inv_mean = (a / b).sqrt() * (1.0 + 3.0 / z + 3.0 / (z * z)) / (1.0 + 1.0 / z);
        let (m, v) = moments(&x);
        let zm = (m - mean) / (v / n as f64).sqrt();
        let inv: Vec<f64> = x.iter().map(|t| 1.0 / t).collect();
        let (mi, vi) = moments(&inv);
        let zi = (mi - inv_mean) / (vi / n as f64).sqrt();
        assert!(
            zm.abs() < 4.5 && zi.abs() < 4.5,
            "GIG(-1.5, {a}, {b}): z {zm:.2}, z(1/X) {zi:.2}"
        );
    }
    // p = −1/2 is the inverse Gaussian with mean √(b/a).
    let x: Vec<f64> = (0..20_000)
        .map(|_| draw::gig(&mut rng, -0.5, 2.0, 3.0).unwrap())
        .collect();
    let (m, v) = moments(&x);
    assert!(((m - (1.5f64).sqrt()) / (v / 20_000.0).sqrt()).abs() < 4.5);
}

#[test]
fn inverse_gaussian_moments() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let (mu, lam) = (0.7, 2.5);
    let x: Vec<f64> = (0..40_000)
        .map(|_| draw::inverse_gaussian(&mut rng, mu, lam).unwrap())
        .collect();
    let (zm, zv) = z_scores(&x, mu, mu.powi(3) / lam);
    assert!(zm.abs() < 4.5 && zv.abs() < 4.5, "{zm} {zv}");
}

#[test]
fn invalid_parameters_are_errors_not_panics() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    assert!(draw::pg(&mut rng, -1.0, 0.0).is_err());
    assert!(draw::pg(&mut rng, 1.0, f64::NAN).is_err());
    assert!(draw::gamma(&mut rng, 0.0, 1.0).is_err());
    assert!(draw::poisson(&mut rng, -2.0).is_err());
    assert!(draw::gig(&mut rng, 1.0, 0.0, 0.0).is_err());
    assert_eq!(draw::pg(&mut rng, 0.0, 3.0).unwrap(), 0.0);
}

#[test]
fn generic_inverse_laplace_sampler_agrees_with_the_named_laws() {
    // The tilted law of φ = exp(−ψ), drawn by Laplace inversion, against the named sampler of
    // the same law: ψ = p log(1 + r/ν) (Student-t's Gamma mixture) tilted at c² is
    // Gamma(p, ν + c²); ψ = a√r (Laplace's Lévy mixture) tilted is inverse Gaussian with mean
    // a/(2c) and shape a²/2.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
    let n = 4000;
    let crit = 1.95 * (2.0 / n as f64).sqrt();
    for &c2 in &[0.3, 4.0] {
        for case in ["gamma", "levy"] {
            let psi_text = match case {
                "gamma" => "(* 2.5 (log (+ 1 (/ r 3))))",
                _ => "(* 1.5 (sqrt r))",
            };
            let psi = gpm_cas::parse(psi_text).unwrap();
            let bind = |e: &gpm_cas::Expr| gpm_cas::SlotExpr::bind(e, &["r"]).unwrap();
            let tilted = gpm_schedule::Tilted {
                dpsi: bind(&gpm_cas::derivative(&psi, "r")),
                psi: bind(&psi),
                c2: gpm_schedule::Tape::constant(c2),
                params: vec![],
            };
            let mut stack = Vec::new();
            let generic: Vec<f64> = (0..n)
                .map(|_| draw::tilted(&mut rng, &tilted, &[], &mut stack).unwrap())
                .collect();
            let named: Vec<f64> = (0..n)
                .map(|_| match case {
                    "gamma" => draw::gamma(&mut rng, 2.5, 3.0 + c2).unwrap(),
                    _ => {
                        let c = f64::sqrt(c2);
                        draw::inverse_gaussian(&mut rng, 1.5 / (2.0 * c), 1.5 * 1.5 / 2.0).unwrap()
                    }
                })
                .collect();
            let d = ks_two_sample(generic, named);
            assert!(d < crit, "{case} at c² = {c2}: KS distance {d}");
        }
    }
}

#[test]
fn negative_binomial_moments() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(22);
    for &(r, p) in &[(2.5, 0.3), (0.7, 0.9), (40.0, 0.05)] {
        let x: Vec<f64> = (0..40_000)
            .map(|_| draw::negative_binomial(&mut rng, r, p).unwrap())
            .collect();
        let (mean, var) = (r * p / (1.0 - p), r * p / (1.0 - p).powi(2));
        let (zm, zv) = z_scores(&x, mean, var);
        assert!(zm.abs() < 4.5 && zv.abs() < 4.5, "NB({r}, {p}): {zm} {zv}");
    }
    assert!(draw::negative_binomial(&mut rng, 1.0, 1.0).is_err());
}
