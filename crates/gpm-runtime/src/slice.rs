//! Univariate slice sampling (Neal 2003, "Slice sampling", §4: stepping out, then shrinkage)
//! for hyperparameters whose prior is not conjugate to the augmented model. The executors give
//! it a log-density on an unconstrained scale; [`Transform`] maps a bounded hyperparameter to
//! that scale and supplies the log-Jacobian.

use gpm_ir::PriorDist;
use rand::Rng;

/// Log-density of a hyperparameter prior up to a constant; `−∞` outside its support.
pub fn log_prior(prior: &PriorDist, x: f64) -> f64 {
    let positive = |v: f64| if x > 0.0 { v } else { f64::NEG_INFINITY };
    match *prior {
        PriorDist::Gamma { shape, rate } => positive((shape - 1.0) * x.ln() - rate * x),
        PriorDist::InvGamma { shape, scale } => positive(-(shape + 1.0) * x.ln() - scale / x),
        PriorDist::LogNormal { mu, sigma } => {
            positive(-x.ln() - 0.5 * ((x.ln() - mu) / sigma).powi(2))
        }
        PriorDist::Normal { mu, sigma } => -0.5 * ((x - mu) / sigma).powi(2),
        PriorDist::HalfNormal { sigma } => {
            if x >= 0.0 {
                -0.5 * (x / sigma).powi(2)
            } else {
                f64::NEG_INFINITY
            }
        }
        PriorDist::Exponential { rate } => {
            if x >= 0.0 {
                -rate * x
            } else {
                f64::NEG_INFINITY
            }
        }
    }
}

/// The unconstrained scale of a hyperparameter: `θ = lower + eᵘ` when it has a lower bound (or
/// a prior on the positive half-line), else `θ = u`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transform {
    /// `θ = lower + eᵘ`, log-Jacobian `u`.
    Lower(f64),
    /// `θ = u`.
    Identity,
}

impl Transform {
    /// The transform for a hyperparameter with this declared lower bound and prior.
    pub fn for_hyper(lower: Option<f64>, prior: &PriorDist) -> Transform {
        match (lower, prior) {
            (Some(l), _) => Transform::Lower(l),
            (None, PriorDist::Normal { .. }) => Transform::Identity,
            (None, _) => Transform::Lower(0.0),
        }
    }
    /// `θ(u)`.
    pub fn to_theta(self, u: f64) -> f64 {
        match self {
            Transform::Lower(l) => l + u.exp(),
            Transform::Identity => u,
        }
    }
    /// `u(θ)`.
    pub fn to_u(self, theta: f64) -> f64 {
        match self {
            Transform::Lower(l) => (theta - l).ln(),
            Transform::Identity => theta,
        }
    }
    /// `log |dθ/du|`.
    pub fn log_jacobian(self, u: f64) -> f64 {
        match self {
            Transform::Lower(_) => u,
            Transform::Identity => 0.0,
        }
    }
}

/// One slice-sampling update of `x0` under the log-density `logp` (which may return `−∞`),
/// with initial bracket width `w` and at most `max_steps` steps out. The update leaves the
/// density invariant whatever `w` is; `w` only sets the cost.
pub fn step<R: Rng + ?Sized>(
    rng: &mut R,
    x0: f64,
    logp: &mut dyn FnMut(f64) -> f64,
    w: f64,
    max_steps: usize,
) -> f64 {
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
    loop {
        let x = left + rng.gen::<f64>() * (right - left);
        if logp(x) > level {
            return x;
        }
        if x < x0 {
            left = x;
        } else {
            right = x;
        }
        // The shrinking bracket always contains x0, whose density is above the level.
        if right - left < 1e-12 * (1.0 + x0.abs()) {
            return x0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn slice_sampling_a_gamma_on_the_log_scale_matches_its_moments() {
        // θ ~ Gamma(3, 2) sampled through u = log θ with the Jacobian: E θ = 1.5, Var θ = 0.75.
        let prior = PriorDist::Gamma {
            shape: 3.0,
            rate: 2.0,
        };
        let t = Transform::for_hyper(Some(0.0), &prior);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut u = 0.0;
        let n = 40_000;
        let mut xs = Vec::with_capacity(n);
        for _ in 0..n {
            u = step(
                &mut rng,
                u,
                &mut |u| log_prior(&prior, t.to_theta(u)) + t.log_jacobian(u),
                1.0,
                20,
            );
            xs.push(t.to_theta(u));
        }
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
        // Slice draws are nearly independent here; allow ~5 standard errors with an ESS of n/3.
        let se = (0.75 / (n as f64 / 3.0)).sqrt();
        assert!((m - 1.5).abs() < 5.0 * se, "mean {m}");
        assert!((v / 0.75 - 1.0).abs() < 0.05, "variance {v}");
    }
}
