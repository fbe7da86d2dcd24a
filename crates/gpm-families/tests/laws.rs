//! Every law against itself, by independent routes: the closed-form Laplace transform against
//! quadrature of the density, CAVI's tilted moments against the Laplace transform and its
//! numerical derivative, and the sampler's mean against `−d/ds log L(0)` (Monte Carlo, 5 SE) —
//! or, for the Lévy law whose mean is infinite, a KS test against its CDF.

use gpm_families::{log_laplace_quadrature, MixingLaw, LAWS};
use rand::SeedableRng;

/// The parameters each law's row in `register!` names for its tests.
fn params(law: &dyn MixingLaw) -> Vec<f64> {
    law.example().to_vec()
}

#[test]
fn laplace_transforms_match_quadrature_of_the_densities() {
    let mut checked = 0;
    for law in LAWS {
        let p = params(*law);
        assert_eq!(p.len(), law.params().len(), "{}", law.name());
        if law.log_density(&p, 1.0).is_none() {
            continue;
        }
        for s in [0.0, 0.3, 2.0, 7.5] {
            let Some(closed) = law.log_laplace(&p, s) else {
                continue;
            };
            let quad =
                log_laplace_quadrature(&|w| law.log_density(&p, w).unwrap_or(f64::NEG_INFINITY), s);
            assert!(
                (closed - quad).abs() < 1e-6 * (1.0 + closed.abs()),
                "{} at s = {s}: closed form {closed} vs quadrature {quad}",
                law.name()
            );
            checked += 1;
        }
    }
    assert!(checked >= 12, "{checked}");
}

#[test]
fn tilted_moments_are_the_laplace_transform_and_its_derivative() {
    for law in LAWS.iter().filter(|l| l.has_tilted()) {
        let mut p = params(*law);
        // (Pólya-Gamma is tested at c = 0.7; CAVI tilts the prior PG(b, 0).)
        if law.name() == "inverse Gamma" {
            p[0] = 1.5; // the closed form CAVI uses
        }
        // log φ(s) by quadrature of the density where there is one, else the closed form.
        let log_l = |s: f64| match law.log_density(&p, 1.0) {
            Some(_) => {
                log_laplace_quadrature(&|w| law.log_density(&p, w).unwrap(), s)
                    - log_laplace_quadrature(&|w| law.log_density(&p, w).unwrap(), 0.0)
            }
            None => law.log_laplace(&p, s).unwrap(),
        };
        for s in [0.2, 1.0, 4.0] {
            let (mean, log_phi) = law.tilted(&p, s).expect("has_tilted");
            assert!(
                (log_phi - log_l(s)).abs() < 1e-6,
                "{}: log φ({s}) = {log_phi} vs {}",
                law.name(),
                log_l(s)
            );
            let h = 1e-4;
            let deriv = -(log_l(s + h) - log_l(s - h)) / (2.0 * h);
            assert!(
                (mean - deriv).abs() < 1e-5 * (1.0 + mean.abs()),
                "{}: E[ω | s = {s}] = {mean} vs −d log φ/ds = {deriv}",
                law.name()
            );
        }
    }
}

#[test]
fn sampler_means_match_the_laplace_derivative() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    for law in LAWS {
        let p = params(*law);
        // The mean −d/ds log L at 0, from the closed form or the density's quadrature.
        let expected = match law.name() {
            "Lévy" | "generalised inverse Gaussian" => continue,
            "inverse Gamma" => p[1] / (p[0] - 1.0),
            _ => {
                let h = 1e-5;
                let l = |s: f64| law.log_laplace(&p, s).unwrap();
                -(l(h) - l(-h)) / (2.0 * h)
            }
        };
        let n = 200_000;
        let draws: Vec<f64> = (0..n).map(|_| law.sample(&mut rng, &p).unwrap()).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let se = (var / n as f64).sqrt();
        assert!(
            (mean - expected).abs() < 5.0 * se,
            "{}: sample mean {mean} vs {expected} (se {se})",
            law.name()
        );
    }
}

/// The Kolmogorov-Smirnov statistic of sorted draws against a CDF.
fn ks_statistic(sorted: &[f64], cdf: &dyn Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = cdf(v);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// The truncated normal's sampler in both regimes (plain rejection, and Robert's exponential
/// proposal far in the tail): KS against `1 − Φ(μ − x)/Φ(μ)`, 20 000 draws each.
#[test]
fn truncated_normal_sampler_passes_ks_in_both_regimes() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    for mu in [1.2, -0.3, -0.7, -6.0] {
        let n = 20_000;
        let mut x: Vec<f64> = (0..n)
            .map(|_| gpm_families::truncated_normal::sample(&mut rng, mu).unwrap())
            .collect();
        x.sort_by(|u, v| u.partial_cmp(v).unwrap());
        let tail = gpm_special::log_normal_cdf(mu);
        let cdf = |v: f64| 1.0 - (gpm_special::log_normal_cdf(mu - v) - tail).exp();
        let d = ks_statistic(&x, &cdf);
        assert!(d < 1.63 / (n as f64).sqrt(), "mean {mu}: KS D = {d}");
    }
}

/// The Lévy law with scale `a` has CDF `erfc(a / (2√x))`; KS with 20 000 draws.
#[test]
fn levy_sampler_passes_ks() {
    let law = gpm_families::levy::Levy;
    let a = 0.9;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let n = 20_000;
    let mut x: Vec<f64> = (0..n)
        .map(|_| law.sample(&mut rng, &[a]).unwrap())
        .collect();
    x.sort_by(|u, v| u.partial_cmp(v).unwrap());
    let cdf = |v: f64| statrs::function::erf::erfc(a / (2.0 * v.sqrt()));
    let d = ks_statistic(&x, &cdf);
    // 1 % critical value 1.63/√n.
    assert!(d < 1.63 / (n as f64).sqrt(), "KS D = {d}");
}

#[test]
fn invalid_parameters_are_errors_not_panics() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for law in LAWS {
        let bad = vec![f64::NAN; law.params().len()];
        assert!(law.sample(&mut rng, &bad).is_err(), "{}", law.name());
    }
}

/// Every law with a closed-form density: its `d log p/dω` against central differences of the
/// log-density (what NUTS on the augmented model follows), and one for each such law.
#[test]
fn density_derivatives_match_differences() {
    let mut checked = 0;
    for law in LAWS {
        let p = params(*law);
        if law.log_density(&p, 1.0).is_none() {
            continue;
        }
        for w in [0.05, 0.4, 1.3, 4.0] {
            let d = law
                .d_log_density(&p, w)
                .unwrap_or_else(|| panic!("{} has a density but no derivative", law.name()));
            let h = 1e-6 * w;
            let at = |x: f64| law.log_density(&p, x).unwrap();
            let numeric = (at(w + h) - at(w - h)) / (2.0 * h);
            assert!(
                (d - numeric).abs() < 1e-6 * (1.0 + numeric.abs()),
                "{} at ω = {w}: {d} vs difference {numeric}",
                law.name()
            );
        }
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
}
