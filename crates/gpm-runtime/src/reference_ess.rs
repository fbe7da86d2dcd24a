//! Joint updates of several hyperparameters by elliptical slice sampling about a Gaussian
//! reference fitted during warm-up ([`gpm_schedule::SliceScheme::ReferenceElliptical`]).
//!
//! Write the conditional of the unconstrained values as `π(u) = N(u | m, c²Σ) · ℓ(u)` with
//! `ℓ = π / N(m, c²Σ)`. Elliptical slice sampling (Murray, Adams & MacKay 2010, Fig. 2) treats
//! the Gaussian as a prior and `ℓ` as a likelihood: draw `ν ~ N(0, c²Σ)`, then points
//! `m + (u₀ − m) cos θ + ν sin θ` on the ellipse through the current point, shrinking the angle
//! bracket until one lies above the slice `log ℓ(u) > log ℓ(u₀) + log U`. It leaves `π`
//! invariant for any fixed `m`, `Σ` and `c` (the generalised elliptical slice sampler of
//! Nishihara, Murray & Adams 2014 uses the same split). When `π` is close to Gaussian, `ℓ` is
//! nearly flat and the first point is accepted: a nearly independent draw for two evaluations
//! (the current point, whose density moved with the auxiliaries, and the proposal) — where
//! slice sampling one coordinate at a time with stepping out spends about five per
//! coordinate. `c > 1` keeps `ℓ` from growing in the tails of a conditional wider than the
//! warm-up draws (a tail in which `ℓ` grew without bound would slow mixing, never bias it).
//! `m` and `Σ` change only during warm-up, so every kept draw comes from one exact kernel.

use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::StandardNormal;

/// The Gaussian reference `N(m, Σ)` with `Σ = L Lᵀ`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    mean: DVector<f64>,
    l: DMatrix<f64>,
}

impl Reference {
    /// The mean and regularised covariance of draws (rows of equal length): `Σ = n/(n+5) S +
    /// 10⁻³ · 5/(n+5) I` (the regularisation Stan applies to its warm-up metric); `None` with
    /// fewer than two draws, rows of unequal length, or a covariance that does not factor.
    pub fn from_draws(draws: &[Vec<f64>]) -> Option<Reference> {
        let n = draws.len();
        let d = draws.first()?.len();
        if n < 2 || d == 0 || draws.iter().any(|x| x.len() != d) {
            return None;
        }
        let mean = DVector::from_fn(d, |j, _| draws.iter().map(|x| x[j]).sum::<f64>() / n as f64);
        let mut s = DMatrix::zeros(d, d);
        for x in draws {
            let c = DVector::from_fn(d, |j, _| x[j] - mean[j]);
            s += &c * c.transpose();
        }
        s /= (n - 1) as f64;
        let nf = n as f64;
        let mut cov = s * (nf / (nf + 5.0));
        for j in 0..d {
            cov[(j, j)] += 1e-3 * 5.0 / (nf + 5.0);
        }
        Reference::from_mean_cov(mean, cov)
    }

    /// `N(mean, cov)`; `None` when `cov` does not factor or an entry is not finite.
    pub fn from_mean_cov(mean: DVector<f64>, cov: DMatrix<f64>) -> Option<Reference> {
        let l = crate::linalg::cholesky(cov)?.l();
        (l.iter().all(|v| v.is_finite()) && mean.iter().all(|v| v.is_finite()))
            .then_some(Reference { mean, l })
    }

    /// Its dimension.
    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// `m`.
    pub fn mean(&self) -> &DVector<f64> {
        &self.mean
    }

    /// A draw of `N(0, c²Σ)`: `c L ε`.
    pub fn centred_draw<R: Rng + ?Sized>(&self, rng: &mut R, c: f64) -> DVector<f64> {
        let eps = DVector::from_fn(self.dim(), |_, _| rng.sample::<f64, _>(StandardNormal));
        (&self.l * eps) * c
    }

    /// `log N(u | m, c²Σ)` up to a constant.
    pub fn log_density(&self, u: &[f64], c: f64) -> f64 {
        let r = DVector::from_fn(self.dim(), |i, _| (u[i] - self.mean[i]) / c);
        match self.l.solve_lower_triangular(&r) {
            Some(w) => -0.5 * w.norm_squared(),
            None => f64::NAN,
        }
    }
}

/// One elliptical slice-sampling update of `u0` under the log-density `logp` (which may return
/// `−∞`) about the reference inflated by `c`. Returns the new point and the number of
/// evaluations of `logp` it took.
pub fn step<R: Rng + ?Sized>(
    rng: &mut R,
    u0: &[f64],
    logp: &mut dyn FnMut(&[f64]) -> f64,
    reference: &Reference,
    c: f64,
) -> (Vec<f64>, usize) {
    let d = u0.len();
    let log_l = |logp: &mut dyn FnMut(&[f64]) -> f64, u: &[f64]| {
        let v = logp(u) - reference.log_density(u, c);
        if v.is_nan() {
            f64::NEG_INFINITY
        } else {
            v
        }
    };
    let level = log_l(logp, u0) + rng.gen::<f64>().ln();
    let mut evaluations = 1;
    let nu = reference.centred_draw(rng, c);
    let tau = std::f64::consts::TAU;
    let mut theta = rng.gen::<f64>() * tau;
    let (mut lo, mut hi) = (theta - tau, theta);
    let mut u = vec![0.0; d];
    loop {
        let (cos, sin) = (theta.cos(), theta.sin());
        for i in 0..d {
            let m = reference.mean[i];
            u[i] = m + (u0[i] - m) * cos + nu[i] * sin;
        }
        evaluations += 1;
        if log_l(logp, &u) > level {
            return (u, evaluations);
        }
        // The bracket always contains θ = 0 (the current point, above the level).
        if theta < 0.0 {
            lo = theta;
        } else {
            hi = theta;
        }
        if hi - lo < 1e-12 {
            return (u0.to_vec(), evaluations);
        }
        theta = lo + rng.gen::<f64>() * (hi - lo);
    }
}

/// Warm-up adaptation of one joint move: the draws of the current window, and the reference
/// set at the end of the last one.
#[derive(Debug, Clone, Default)]
pub struct Adaptation {
    window: Vec<Vec<f64>>,
    /// The reference, once a window has ended.
    pub reference: Option<Reference>,
}

impl Adaptation {
    /// Record the draw `u` of warm-up sweep `sweep` (counted from 1); at a window's end
    /// (`ends`), its draws set the reference and the next window starts empty.
    pub fn record(&mut self, sweep: usize, ends: &[usize], u: Vec<f64>) {
        self.window.push(u);
        if ends.contains(&sweep) {
            if let Some(r) = Reference::from_draws(&self.window) {
                self.reference = Some(r);
            }
            self.window.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A correlated 2-D Gaussian: means 1 and −2, sds 0.5 and 2, correlation 0.9.
    fn gaussian(u: &[f64]) -> f64 {
        let (a, b) = ((u[0] - 1.0) / 0.5, (u[1] + 2.0) / 2.0);
        let rho: f64 = 0.9;
        -(a * a - 2.0 * rho * a * b + b * b) / (2.0 * (1.0 - rho * rho))
    }

    fn exact_gaussian(n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (z0, z1): (f64, f64) = (rng.sample(StandardNormal), rng.sample(StandardNormal));
                vec![
                    1.0 + 0.5 * z0,
                    -2.0 + 2.0 * (0.9 * z0 + (1.0f64 - 0.81).sqrt() * z1),
                ]
            })
            .collect()
    }

    fn run(
        target: &dyn Fn(&[f64]) -> f64,
        reference: &Reference,
        c: f64,
        u0: Vec<f64>,
        n: usize,
        seed: u64,
    ) -> (Vec<Vec<f64>>, usize) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut u = u0;
        let (mut out, mut evals) = (Vec::with_capacity(n), 0);
        for _ in 0..n {
            let (next, e) = step(&mut rng, &u, &mut |x| target(x), reference, c);
            u = next;
            evals += e;
            out.push(u.clone());
        }
        (out, evals)
    }

    fn mean_sd(xs: &[Vec<f64>], j: usize) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().map(|x| x[j]).sum::<f64>() / n;
        let v = xs.iter().map(|x| (x[j] - m).powi(2)).sum::<f64>() / n;
        (m, v.sqrt())
    }

    #[test]
    fn a_correlated_gaussian_is_left_invariant_about_any_reference() {
        // A reference fitted to exact draws and a badly placed one (shifted, isotropic): both
        // must give the target's moments; only their cost differs.
        let fitted = Reference::from_draws(&exact_gaussian(4000, 9)).expect("a covariance");
        let off = Reference {
            mean: DVector::from_vec(vec![3.0, 1.0]),
            l: DMatrix::identity(2, 2),
        };
        for (reference, c) in [(&fitted, 2.0), (&off, 1.5)] {
            let (xs, _) = run(&gaussian, reference, c, vec![0.0, 0.0], 60_000, 4);
            let xs = &xs[1000..];
            let ((m0, s0), (m1, s1)) = (mean_sd(xs, 0), mean_sd(xs, 1));
            let n = xs.len() as f64;
            let r = xs.iter().map(|x| (x[0] - m0) * (x[1] - m1)).sum::<f64>() / n / (s0 * s1);
            // About 5 Monte Carlo sds at an ESS of a tenth of the draws.
            assert!((m0 - 1.0).abs() < 0.05, "mean 0 {m0}");
            assert!((m1 + 2.0).abs() < 0.2, "mean 1 {m1}");
            assert!((s0 - 0.5).abs() < 0.04, "sd 0 {s0}");
            assert!((s1 - 2.0).abs() < 0.15, "sd 1 {s1}");
            assert!((r - 0.9).abs() < 0.03, "correlation {r}");
        }
    }

    #[test]
    fn a_skewed_target_is_left_invariant() {
        // u = log θ, θ ~ Gamma(2, 1): log-density 2u − eᵘ; E θ = 2, Var θ = 2. The reference
        // is a Gaussian of roughly the right place and spread only.
        let target = |u: &[f64]| 2.0 * u[0] - u[0].exp();
        let reference = Reference {
            mean: DVector::from_vec(vec![0.6]),
            l: DMatrix::from_element(1, 1, 0.7),
        };
        let (xs, _) = run(&target, &reference, 2.0, vec![0.0], 80_000, 5);
        let thetas: Vec<Vec<f64>> = xs[1000..].iter().map(|u| vec![u[0].exp()]).collect();
        let (m, s) = mean_sd(&thetas, 0);
        assert!((m - 2.0).abs() < 0.05, "mean {m}");
        assert!((s * s - 2.0).abs() < 0.15, "variance {}", s * s);
    }

    #[test]
    fn a_fitted_reference_gives_nearly_independent_draws_for_few_evaluations() {
        let fitted = Reference::from_draws(&exact_gaussian(2000, 1)).expect("a covariance");
        let (xs, evals) = run(&gaussian, &fitted, 2.0, vec![1.0, -2.0], 20_000, 2);
        let m = xs.iter().map(|x| x[1]).sum::<f64>() / xs.len() as f64;
        let v: f64 = xs.iter().map(|x| (x[1] - m).powi(2)).sum();
        let lag1: f64 = xs
            .windows(2)
            .map(|w| (w[0][1] - m) * (w[1][1] - m))
            .sum::<f64>()
            / v;
        let per_move = evals as f64 / 20_000.0;
        assert!(per_move < 3.5, "{per_move} evaluations per move");
        assert!(lag1 < 0.4, "lag-1 autocorrelation {lag1}");
    }

    #[test]
    fn a_reference_needs_two_draws_of_one_length() {
        assert!(Reference::from_draws(&[]).is_none());
        assert!(Reference::from_draws(&[vec![1.0]]).is_none());
        assert!(Reference::from_draws(&[vec![1.0], vec![1.0, 2.0]]).is_none());
        // Equal draws: the regularisation alone (a tiny diagonal).
        let r = Reference::from_draws(&[vec![1.0], vec![1.0]]).unwrap();
        assert!((r.l[(0, 0)] - (1e-3f64 * 5.0 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn windows_set_the_reference_at_their_ends_only() {
        let mut a = Adaptation::default();
        let ends = [3, 6];
        for s in 1..=2 {
            a.record(s, &ends, vec![s as f64]);
            assert!(a.reference.is_none());
        }
        a.record(3, &ends, vec![3.0]);
        let first = a.reference.clone().expect("set at sweep 3");
        a.record(4, &ends, vec![10.0]);
        a.record(5, &ends, vec![20.0]);
        assert_eq!(a.reference.as_ref(), Some(&first));
        a.record(6, &ends, vec![30.0]);
        assert!(a.reference.as_ref().unwrap().l[(0, 0)] > first.l[(0, 0)]);
    }
}
