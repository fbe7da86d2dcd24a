//! Posterior predictive draws `y_rep ~ p(y | θ)` of a library distribution at one observation,
//! given its parameters at a draw: the one place that draws responses (Gibbs's `y_rep` columns,
//! variational draws from q alike).

use gpm_ir::Family;
use rand::Rng;
use rand_distr::{Binomial, Distribution, Gamma, Poisson, StandardNormal, StudentT};

/// A response drawn from `family` with parameters `p` (the library's order); NaN where the
/// parameters are outside the distribution's domain (a scale ≤ 0, a rate that is not finite),
/// so that a bad draw shows in the output rather than stopping the run.
pub fn draw<R: Rng + ?Sized>(family: Family, p: &[f64], rng: &mut R) -> f64 {
    let logistic = gpm_special::logistic;
    let positive = |v: f64| v > 0.0 && v.is_finite();
    match (family, p) {
        (Family::Normal, [mu, sigma]) if positive(*sigma) => {
            mu + sigma * rng.sample::<f64, _>(StandardNormal)
        }
        (Family::StudentT, [nu, mu, sigma]) if positive(*sigma) => match StudentT::new(*nu) {
            Ok(t) => mu + sigma * t.sample(rng),
            Err(_) => f64::NAN,
        },
        // The difference of two unit exponentials is a standard Laplace variate.
        (Family::Laplace, [mu, b]) if positive(*b) => {
            let e = |rng: &mut R| -(1.0 - rng.gen::<f64>()).ln();
            mu + b * (e(rng) - e(rng))
        }
        // Inverse CDF: μ + s log(u / (1 − u)).
        (Family::Logistic, [mu, s]) if positive(*s) => {
            let u: f64 = rng.gen::<f64>().max(f64::MIN_POSITIVE);
            mu + s * (u / (1.0 - u)).ln()
        }
        (Family::BernoulliLogit { one, zero }, [eta]) if !eta.is_nan() => {
            if rng.gen::<f64>() < logistic(*eta) {
                one as f64
            } else {
                zero as f64
            }
        }
        (Family::BinomialLogit, [n, eta]) if *n >= 0.0 && !eta.is_nan() => {
            match Binomial::new(n.round() as u64, logistic(*eta)) {
                Ok(b) => b.sample(rng) as f64,
                Err(_) => f64::NAN,
            }
        }
        (Family::Poisson, [rate]) if *rate == 0.0 => 0.0,
        (Family::Poisson, [rate]) if positive(*rate) => match Poisson::new(*rate) {
            Ok(d) => d.sample(rng),
            Err(_) => f64::NAN,
        },
        // Gamma-Poisson: λ ~ Gamma(r, scale e^η), then y ~ Poisson(λ) has the library's
        // `C(y+r−1, y) σ(η)^y σ(−η)^r`.
        (Family::NegBinomialLogit, [r, eta]) if positive(*r) && eta.is_finite() => {
            match Gamma::new(*r, eta.exp()) {
                Ok(g) => {
                    let rate: f64 = g.sample(rng);
                    if rate == 0.0 {
                        0.0
                    } else {
                        Poisson::new(rate).map_or(f64::NAN, |d| d.sample(rng))
                    }
                }
                Err(_) => f64::NAN,
            }
        }
        _ => f64::NAN,
    }
}

/// A class label `1..=w.len()` drawn with probabilities `w / total` (`total = Σ w`): the
/// logistic-softmax's response.
pub fn draw_class<R: Rng + ?Sized>(w: &[f64], total: f64, rng: &mut R) -> f64 {
    let u = rng.gen::<f64>() * total;
    let (mut k, mut acc) = (0, w[0]);
    while acc < u && k + 1 < w.len() {
        k += 1;
        acc += w[k];
    }
    (k + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Every family's draws have the library density's mean and variance (50 000 draws,
    /// within 5 standard errors).
    #[test]
    fn draws_have_the_distributions_moments() {
        let s = |x: f64| 1.0 / (1.0 + (-x).exp());
        let cases: Vec<(Family, Vec<f64>, f64, f64)> = vec![
            (Family::Normal, vec![0.4, 1.5], 0.4, 2.25),
            (
                Family::StudentT,
                vec![5.0, -1.0, 2.0],
                -1.0,
                4.0 * 5.0 / 3.0,
            ),
            (Family::Laplace, vec![0.3, 0.7], 0.3, 2.0 * 0.49),
            (
                Family::Logistic,
                vec![1.0, 0.5],
                1.0,
                0.25 * std::f64::consts::PI.powi(2) / 3.0,
            ),
            (
                Family::BernoulliLogit { one: 1, zero: -1 },
                vec![0.8],
                2.0 * s(0.8) - 1.0,
                4.0 * s(0.8) * s(-0.8),
            ),
            (
                Family::BinomialLogit,
                vec![12.0, -0.3],
                12.0 * s(-0.3),
                12.0 * s(-0.3) * s(0.3),
            ),
            (Family::Poisson, vec![3.7], 3.7, 3.7),
            // Mean r e^η, variance mean (1 + e^η).
            (
                Family::NegBinomialLogit,
                vec![2.5, 0.4],
                2.5 * 0.4f64.exp(),
                2.5 * 0.4f64.exp() * (1.0 + 0.4f64.exp()),
            ),
        ];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let n = 50_000;
        for (family, p, mean, var) in cases {
            let x: Vec<f64> = (0..n).map(|_| draw(family, &p, &mut rng)).collect();
            let m = x.iter().sum::<f64>() / n as f64;
            let v = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64;
            assert!(
                (m - mean).abs() < 5.0 * (var / n as f64).sqrt(),
                "{family:?}: mean {m} vs {mean}"
            );
            // The variance's standard error, from the fourth moment of the draws.
            let m4 = x.iter().map(|v| (v - m).powi(4)).sum::<f64>() / n as f64;
            let se = ((m4 - v * v) / n as f64).sqrt();
            assert!(
                (v - var).abs() < 5.0 * se,
                "{family:?}: variance {v} vs {var}"
            );
        }
    }

    /// Classes are drawn with their probabilities (50 000 draws, 5 standard errors).
    #[test]
    fn classes_have_their_probabilities() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let w = [0.5, 1.5, 3.0];
        let n = 50_000;
        let mut counts = [0usize; 3];
        for _ in 0..n {
            counts[draw_class(&w, 5.0, &mut rng) as usize - 1] += 1;
        }
        for (k, c) in counts.iter().enumerate() {
            let p = w[k] / 5.0;
            let f = *c as f64 / n as f64;
            assert!(
                (f - p).abs() < 5.0 * (p * (1.0 - p) / n as f64).sqrt(),
                "class {k}: {f} vs {p}"
            );
        }
    }

    #[test]
    fn parameters_outside_the_domain_give_nan() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        assert!(draw(Family::Normal, &[0.0, -1.0], &mut rng).is_nan());
        assert!(draw(Family::Poisson, &[f64::INFINITY], &mut rng).is_nan());
        assert!(draw(Family::NegBinomialLogit, &[0.0, 1.0], &mut rng).is_nan());
        assert_eq!(draw(Family::Poisson, &[0.0], &mut rng), 0.0);
    }
}
