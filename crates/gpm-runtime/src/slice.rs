//! Univariate slice sampling (Neal 2003, "Slice sampling", §4: stepping out, then shrinkage)
//! for hyperparameters whose prior is not conjugate to the augmented model. The executors give
//! it a log-density on an unconstrained scale; [`Transform`] maps a bounded hyperparameter to
//! that scale and supplies the log-Jacobian; the prior's log-density is the library's
//! (`HyperPrior::log_density`).

use gpm_library::HyperPrior;
use rand::Rng;

/// The unconstrained scale of a hyperparameter, from the range of its (truncated) prior:
/// `θ = lower + eᵘ` with only a lower end, `θ = upper − eᵘ` with only an upper end,
/// `θ = lower + (upper − lower)·σ(u)` with both, else `θ = u`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transform {
    /// `θ = lower + eᵘ`, log-Jacobian `u`.
    Lower(f64),
    /// `θ = upper − eᵘ`, log-Jacobian `u`.
    Upper(f64),
    /// `θ = lo + (hi − lo) σ(u)`, log-Jacobian `log(hi − lo) + log σ(u) + log σ(−u)`.
    Interval(f64, f64),
    /// `θ = u`.
    Identity,
}

impl Transform {
    /// The transform for a hyperparameter with this prior (already truncated to the declared
    /// range).
    pub fn for_hyper(prior: &HyperPrior) -> Transform {
        let (lo, hi) = (prior.lower(), prior.upper());
        match (lo.is_finite(), hi.is_finite()) {
            (true, true) => Transform::Interval(lo, hi),
            (true, false) => Transform::Lower(lo),
            (false, true) => Transform::Upper(hi),
            (false, false) => Transform::Identity,
        }
    }
    /// `θ(u)`.
    pub fn to_theta(self, u: f64) -> f64 {
        match self {
            Transform::Lower(l) => l + u.exp(),
            Transform::Upper(h) => h - u.exp(),
            // σ(u) computed on the side where it does not lose digits to 1 − small.
            Transform::Interval(lo, hi) if u >= 0.0 => hi - (hi - lo) * gpm_special::logistic(-u),
            Transform::Interval(lo, hi) => lo + (hi - lo) * gpm_special::logistic(u),
            Transform::Identity => u,
        }
    }
    /// `u(θ)`.
    pub fn to_u(self, theta: f64) -> f64 {
        match self {
            Transform::Lower(l) => (theta - l).ln(),
            Transform::Upper(h) => (h - theta).ln(),
            Transform::Interval(lo, hi) => ((theta - lo) / (hi - theta)).ln(),
            Transform::Identity => theta,
        }
    }
    /// `log |dθ/du|`.
    pub fn log_jacobian(self, u: f64) -> f64 {
        match self {
            Transform::Lower(_) | Transform::Upper(_) => u,
            Transform::Interval(lo, hi) => {
                (hi - lo).ln() - gpm_special::softplus(-u) - gpm_special::softplus(u)
            }
            Transform::Identity => 0.0,
        }
    }
    /// `dθ/du`.
    pub fn dtheta_du(self, u: f64) -> f64 {
        match self {
            Transform::Lower(_) => u.exp(),
            Transform::Upper(_) => -u.exp(),
            Transform::Interval(lo, hi) => {
                (hi - lo) * gpm_special::logistic(u) * gpm_special::logistic(-u)
            }
            Transform::Identity => 1.0,
        }
    }
    /// `d log |dθ/du| / du`.
    pub fn d_log_jacobian(self, u: f64) -> f64 {
        match self {
            Transform::Lower(_) | Transform::Upper(_) => 1.0,
            // d/du [−softplus(−u) − softplus(u)] = σ(−u) − σ(u).
            Transform::Interval(..) => gpm_special::logistic(-u) - gpm_special::logistic(u),
            Transform::Identity => 0.0,
        }
    }
}

/// The most shrinkages of one slice step: a bracket of doubles halves its width about every
/// 1.4 shrinkages, so a step that has not ended after this many never would.
pub const MAX_SHRINKS: usize = 10_000;

/// Why a slice step found no point: the start is not a finite number, or the density is not
/// above the slice level anywhere the bracket shrank to.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("the slice step from {start} found no point in {MAX_SHRINKS} shrinkages (last bracket [{left}, {right}] on the unconstrained scale)")]
pub struct NoPoint {
    /// Where the step started.
    pub start: f64,
    /// The last bracket.
    pub left: f64,
    /// The last bracket.
    pub right: f64,
}

/// One slice-sampling update of `x0` under the log-density `logp` (which may return `−∞`),
/// with initial bracket width `w` and at most `max_steps` steps out. The update leaves the
/// density invariant whatever `w` is; `w` only sets the cost. At most [`MAX_SHRINKS`]
/// shrinkages: a start that is not finite (an unconstrained image of a range end) is an error,
/// not a loop.
pub fn step<R: Rng + ?Sized>(
    rng: &mut R,
    x0: f64,
    logp: &mut dyn FnMut(f64) -> f64,
    w: f64,
    max_steps: usize,
) -> Result<f64, NoPoint> {
    let no_point = |left, right| NoPoint {
        start: x0,
        left,
        right,
    };
    if !(x0.is_finite() && w > 0.0 && w.is_finite()) {
        return Err(no_point(x0, x0));
    }
    let level = logp(x0) + rng.gen::<f64>().ln();
    let mut left = x0 - w * rng.gen::<f64>();
    let mut right = left + w;
    // Neal's random split of the step budget between the two sides keeps the move reversible.
    let max_steps = max_steps.max(1);
    let mut j = ((rng.gen::<f64>() * max_steps as f64) as usize).min(max_steps - 1);
    let mut k = max_steps - 1 - j;
    while j > 0 && logp(left) > level {
        left -= w;
        j -= 1;
    }
    while k > 0 && logp(right) > level {
        right += w;
        k -= 1;
    }
    for _ in 0..MAX_SHRINKS {
        let x = left + rng.gen::<f64>() * (right - left);
        if logp(x) > level {
            return Ok(x);
        }
        if x < x0 {
            left = x;
        } else {
            right = x;
        }
        // The shrinking bracket always contains x0, whose density is above the level.
        if right - left < 1e-12 * (1.0 + x0.abs()) {
            return Ok(x0);
        }
    }
    Err(no_point(left, right))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Slice-samples `prior` through its transform and returns the draws.
    fn draws(prior: &HyperPrior, seed: u64, n: usize) -> Vec<f64> {
        let t = Transform::for_hyper(prior);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut u = t.to_u(prior.start().0);
        (0..n)
            .map(|_| {
                u = step(
                    &mut rng,
                    u,
                    &mut |u| prior.log_density(t.to_theta(u)) + t.log_jacobian(u),
                    1.0,
                    20,
                )
                .unwrap();
                t.to_theta(u)
            })
            .collect()
    }

    /// `dθ/du` and the log-Jacobian's derivative against central differences, each transform.
    /// A start that is not finite (the image of a range end) and a density that is nowhere
    /// above the level end with an error, not a loop.
    #[test]
    fn a_step_that_cannot_end_is_an_error() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for x0 in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let e = step(&mut rng, x0, &mut |_| 0.0, 1.0, 20).unwrap_err();
            assert!(e.to_string().contains("found no point"), "{e}");
        }
        // The bracket shrinks to the start and the step stays there.
        let x = step(
            &mut rng,
            0.5,
            &mut |x| if x == 0.5 { 0.0 } else { -1e300 },
            1.0,
            20,
        );
        assert_eq!(x, Ok(0.5));
    }

    #[test]
    fn transform_derivatives_match_differences() {
        let ts = [
            Transform::Lower(0.5),
            Transform::Upper(2.0),
            Transform::Interval(-1.0, 3.0),
            Transform::Identity,
        ];
        for t in ts {
            for u in [-2.3, -0.4, 0.0, 0.7, 1.9] {
                let h = 1e-6;
                let d = (t.to_theta(u + h) - t.to_theta(u - h)) / (2.0 * h);
                let dj = (t.log_jacobian(u + h) - t.log_jacobian(u - h)) / (2.0 * h);
                assert!((t.dtheta_du(u) - d).abs() < 1e-7, "{t:?} at {u}");
                assert!((t.d_log_jacobian(u) - dj).abs() < 1e-7, "{t:?} at {u}");
            }
        }
    }

    fn moments(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        (m, xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n)
    }

    #[test]
    fn slice_sampling_a_gamma_on_the_log_scale_matches_its_moments() {
        // θ ~ Gamma(3, 2) sampled through u = log θ with the Jacobian: E θ = 1.5, Var θ = 0.75.
        let prior = HyperPrior::new("gamma", vec![3.0, 2.0], (Some(0.0), None)).unwrap();
        assert_eq!(Transform::for_hyper(&prior), Transform::Lower(0.0));
        let n = 40_000;
        let (m, v) = moments(&draws(&prior, 3, n));
        // Slice draws are nearly independent here; allow ~5 standard errors with an ESS of n/3.
        let se = (0.75 / (n as f64 / 3.0)).sqrt();
        assert!((m - 1.5).abs() < 5.0 * se, "mean {m}");
        assert!((v / 0.75 - 1.0).abs() < 0.05, "variance {v}");
    }

    #[test]
    fn bounded_priors_through_the_logit_and_the_upper_transform() {
        // Beta(2, 3) on [0, 1]: E = 0.4, Var = 0.04.
        let beta = HyperPrior::new("beta", vec![2.0, 3.0], (Some(0.0), Some(1.0))).unwrap();
        assert_eq!(Transform::for_hyper(&beta), Transform::Interval(0.0, 1.0));
        let n = 40_000;
        let xs = draws(&beta, 5, n);
        assert!(xs.iter().all(|x| (0.0..=1.0).contains(x)));
        let (m, v) = moments(&xs);
        let se = (0.04 / (n as f64 / 3.0)).sqrt();
        assert!((m - 0.4).abs() < 5.0 * se, "mean {m}");
        assert!((v / 0.04 - 1.0).abs() < 0.05, "variance {v}");
        // N(0, 1) truncated to (−∞, 0]: E = −√(2/π), Var = 1 − 2/π.
        let neg = HyperPrior::new("normal", vec![0.0, 1.0], (None, Some(0.0))).unwrap();
        assert_eq!(Transform::for_hyper(&neg), Transform::Upper(0.0));
        let (m, v) = moments(&draws(&neg, 6, n));
        let (m0, v0) = (
            -(2.0 / std::f64::consts::PI).sqrt(),
            1.0 - 2.0 / std::f64::consts::PI,
        );
        assert!(
            (m - m0).abs() < 5.0 * (v0 / (n as f64 / 3.0)).sqrt(),
            "mean {m}"
        );
        assert!((v / v0 - 1.0).abs() < 0.05, "variance {v}");
    }

    #[test]
    fn interval_transform_round_trips_and_its_jacobian_is_the_derivative() {
        let t = Transform::Interval(-1.0, 3.0);
        for u in [-30.0, -2.0, 0.0, 0.7, 5.0, 30.0] {
            let th = t.to_theta(u);
            assert!((-1.0..=3.0).contains(&th));
            if u.abs() < 10.0 {
                assert!((t.to_u(th) - u).abs() < 1e-9);
                let h = 1e-6;
                let d = (t.to_theta(u + h) - t.to_theta(u - h)) / (2.0 * h);
                assert!((d.ln() - t.log_jacobian(u)).abs() < 1e-6, "u = {u}");
            }
        }
    }
}
