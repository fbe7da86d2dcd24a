//! The learning phase: what runs before a method's own iterations — the `learn()`
//! hyperparameters set by type-II maximum likelihood, then held — for Gibbs, NUTS, CAVI and the
//! particle flow alike (SVI learns its positive scalars along the way instead). Decided here
//! from the hyperparameters' updates ([`crate::hypers`]), carried out by the front end through
//! `gpm_runtime::learn` and CAVI, printed by `gpmc check`.

use crate::hypers::{GibbsUpdate, HyperStep, VariationalUpdate};
use crate::ids::HyperId;
use serde::Serialize;

/// ELBO evaluations the BFGS search may take (each a CAVI run resumed from the last optimum;
/// `gpm_runtime::learn`).
pub const MAX_EVALUATIONS: usize = 400;

/// The phase before sampling or fitting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Learning {
    /// Learned by BFGS on the converged CAVI ELBO in log θ (each entry of an ARD vector one
    /// coordinate), at most [`Learning::max_evaluations`] evaluations.
    pub by_gradient: Vec<HyperId>,
    /// A scaled logistic-softmax's class scales: the closed-form maximiser of one CAVI run's
    /// ELBO given `q(f)` (thesis §7.4.3), normalised to mean 1.
    pub class_scales: Vec<HyperId>,
    /// Declared `learn()` but held at their initial values: some factor's augmentation has no
    /// closed-form CAVI, whose ELBO type-II ML maximises.
    pub unavailable: Vec<HyperId>,
    /// See [`MAX_EVALUATIONS`].
    pub max_evaluations: usize,
}

impl Learning {
    /// The phase the hyperparameters' updates call for.
    pub fn from_steps(steps: &[HyperStep]) -> Learning {
        let ids = |keep: &dyn Fn(&HyperStep) -> bool| {
            steps.iter().filter(|s| keep(s)).map(|s| s.hyper).collect()
        };
        let class_scales =
            |s: &HyperStep| matches!(s.variational, VariationalUpdate::ClassScales { .. });
        Learning {
            by_gradient: ids(&|s| s.gibbs == GibbsUpdate::TypeIiMl && !class_scales(s)),
            class_scales: ids(&|s| s.gibbs == GibbsUpdate::TypeIiMl && class_scales(s)),
            unavailable: ids(&|s| s.gibbs == GibbsUpdate::LearnUnavailable),
            max_evaluations: MAX_EVALUATIONS,
        }
    }

    /// Whether the phase does nothing.
    pub fn is_empty(&self) -> bool {
        self.by_gradient.is_empty() && self.class_scales.is_empty() && self.unavailable.is_empty()
    }

    /// Its steps for people, one line each, naming the hyperparameters by `names` (a
    /// schedule's [`crate::Schedule::hyper_names`]).
    pub fn describe(&self, names: &dyn Fn(&[HyperId]) -> String) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.by_gradient.is_empty() {
            lines.push(format!(
                "type-II ML of {}: the converged CAVI ELBO maximised over their logarithms by \
                 BFGS (its gradient by the envelope theorem; at most {} evaluations), then held",
                names(&self.by_gradient),
                self.max_evaluations
            ));
        }
        if !self.class_scales.is_empty() {
            lines.push(format!(
                "class scales {}: one CAVI run, each step followed by their closed-form \
                 maximiser of the ELBO (thesis §7.4.3), normalised to mean 1, then held",
                names(&self.class_scales)
            ));
        }
        if !self.unavailable.is_empty() {
            lines.push(format!(
                "{} held at their initial values: type-II ML needs closed-form CAVI, not yet \
                 available for this augmentation",
                names(&self.unavailable)
            ));
        }
        lines
    }
}
