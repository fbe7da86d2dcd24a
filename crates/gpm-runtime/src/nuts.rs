//! NUTS's machinery (the No-U-Turn sampler of Hoffman & Gelman 2014): the targets it moves on
//! — the latents in coordinates whitened by their priors ([`crate::whitened`]: `f = μ + L v`,
//! `θ = μ + σ ⊙ v`), where the target is `log p(y | x(v)) − ½|v|²` and its gradient
//! `Lᵀ∇ₓ log p − v` comes from the CAS's derivative of every factor, analytic; sampled
//! hyperparameters read by the factors and by normal priors on their unconstrained scales
//! ([`target`]: a hierarchical model's scales non-centred); optionally the augmentation's
//! auxiliaries as coordinates `log ω` ([`augmented`]) — and the transition and warm-up
//! adaptation a Gibbs sweep's NUTS step runs ([`transition`], [`adapt`]). Which models it can
//! run ([`refusal`]) and what a chain reports ([`NutsStats`]). NUTS as a method on the whole
//! model — chains through the `nuts-rs` crate that nutpie is built on — is
//! [`crate::nuts_run`]; this module knows nothing of the samplers that use it.

pub(crate) mod adapt;
pub mod augmented;
pub(crate) mod block;
mod gp_hypers;
pub(crate) mod metric;
pub(crate) mod target;
pub(crate) mod transition;
pub use adapt::Adaptation;

use gpm_schedule::Schedule;

pub use crate::nuts_control::{NutsControl, MAX_DEPTH, MAX_TREEDEPTH};

/// What one chain's transitions did, as Stan reports them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NutsStats {
    /// Divergent transitions after warm-up.
    pub divergences: usize,
    /// Transitions after warm-up that reached the largest tree depth.
    pub max_depth_hits: usize,
    /// That largest tree depth.
    pub max_depth: u64,
    /// The adapted step size.
    pub step_size: f64,
    /// Mean leapfrog steps per draw after warm-up.
    pub mean_steps: f64,
    /// Whether the chain ran on the augmented model.
    pub augmented: bool,
    /// Whether these are the transitions of a NUTS step inside Gibbs sweeps
    /// ([`gpm_schedule::GibbsStep::Nuts`]) rather than of NUTS on the whole model.
    pub in_gibbs: bool,
}

/// Which model NUTS samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum On {
    /// The model as written (the auxiliaries integrated out).
    #[default]
    Original,
    /// The augmented model: each auxiliary `ω` a coordinate `log ω` ([`augmented`]).
    Augmented,
}

/// Why NUTS cannot run this model (`None`: it can): it needs the gradient of every factor and
/// full GP or dense blocks (the particle flow's conditions, [`crate::gpf::steps`]), and its
/// sampled hyperparameters read by factors and normal priors only ([`target::hyper_refusal`]);
/// on the augmented model, a closed-form augmented joint for every factor with auxiliaries
/// ([`augmented::refusal`]).
pub fn refusal(schedule: &Schedule, on: On) -> Option<String> {
    if on == On::Augmented {
        if let Some(why) = augmented::refusal(schedule) {
            return Some(why);
        }
    }
    // The flow's schedule says where a factor's gradient or a full prior is missing.
    if let Err(why) = &schedule.gpf {
        return Some(format!(
            "NUTS needs every factor's gradient and full GP or normal priors: {why}; use --method gibbs"
        ));
    }
    target::hyper_refusal(schedule)
}
