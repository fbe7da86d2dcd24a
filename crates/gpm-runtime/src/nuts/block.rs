//! The target of a Gibbs sweep's NUTS step (the sweep's `nuts_block`): the whole-model
//! target of [`super::target`] restricted to one block and the hyperparameters it moves, the
//! other latents and hyperparameters held at the chain's current values.

use super::target::{Bound, Scope, Target};
use crate::kernels::HyperValues;
use crate::RuntimeError;
use gpm_schedule::HyperId;
use nalgebra::DVector;

/// One NUTS step's conditional target.
pub(crate) struct NutsBlockTarget<'a> {
    target: Target<'a>,
}

impl<'a> NutsBlockTarget<'a> {
    /// Runtime blocks `blocks` and hyperparameters `hypers` moved; `latents` and `hv` the
    /// chain's current values; `only` marks the factors that read the blocks.
    pub(crate) fn new(
        sampler: &'a dyn Bound,
        (blocks, hypers): (&[usize], &[HyperId]),
        latents: &[DVector<f64>],
        hv: HyperValues,
        only: Vec<bool>,
    ) -> Result<Self, RuntimeError> {
        let scope = Scope {
            blocks: blocks.to_vec(),
            hypers: hypers.to_vec(),
            base: hv,
            held: Some((latents, only)),
        };
        Ok(NutsBlockTarget {
            target: Target::conditional(sampler, scope)?,
        })
    }

    /// The position of the current values.
    pub(crate) fn position(&self) -> Result<Vec<f64>, RuntimeError> {
        self.target.position_at_held()
    }

    /// The log density and its gradient; `None` where either is not finite (the transition
    /// treats it as a divergence).
    pub(crate) fn log_density(&self, position: &[f64], grad: &mut [f64]) -> Option<f64> {
        let lp = self.target.log_density(position, grad).ok()?;
        (lp.is_finite() && grad.iter().all(|g| g.is_finite())).then_some(lp)
    }

    /// Every latent's and every scalar hyperparameter's value at a position.
    pub(crate) fn point(
        &self,
        position: &[f64],
    ) -> Result<(Vec<DVector<f64>>, Vec<f64>), RuntimeError> {
        let p = self.target.point(position)?;
        Ok((p.latents, p.hypers))
    }
}
