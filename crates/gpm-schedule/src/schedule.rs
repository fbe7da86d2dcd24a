//! The compiled model ([`Schedule`]): everything the runtime needs to run it — latents, priors
//! bound to ids, factor programs, blocks, every hyperparameter's updates, the learning phase and
//! the steps of each method — so that the runtime never reads `gpm_ir::Model`.

use crate::blocks::BlockSpec;
use crate::hypers::{DenseScaleUpdate, GibbsUpdate, GpKernelUpdate, HyperStep, KernelGroup};
use crate::ids::{BlockId, HyperId};
use crate::learning::Learning;
use crate::nuts_block::NutsBlock;
use crate::prior::{BoundKernel, BoundPrior};
use crate::program::{FactorProgram, HyperProgram};
use crate::steps::{CaviStep, GibbsStep, GpfStep};
use std::collections::BTreeSet;

/// The compiled model: everything the runtime needs to run it, so that the runtime never reads
/// `gpm_ir::Model` (stanc3's lesson: the middle IR says everything the back ends need).
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The latents (names, declared shapes, priors), indexed by [`LatentId`].
    pub latents: Vec<gpm_ir::Latent>,
    /// Each latent's prior with its parameters bound to hyperparameter ids, indexed by
    /// [`LatentId`]: what the runtime evaluates (never `latents[_].prior`).
    pub priors: Vec<BoundPrior>,
    /// The linear predictors, indexed by [`PredictorId`].
    pub predictors: Vec<gpm_ir::Predictor>,
    /// The hyperparameters as declared (shape, lower bound, fixed / learn / prior), indexed by
    /// [`HyperId`].
    pub hyper_decls: Vec<gpm_ir::Hyper>,
    /// One program per factor.
    pub factors: Vec<FactorProgram>,
    /// Hyperparameters sampled by conjugate Gamma updates.
    pub hypers: Vec<HyperProgram>,
    /// Predictors whose latents are sampled from collapsed conditionals first in a sweep.
    pub collapsed: BTreeSet<String>,
    /// The Gaussian blocks, in the order the runtime forms them.
    pub blocks: Vec<BlockSpec>,
    /// Every hyperparameter's start value and updates, in declaration order.
    pub hyper_steps: Vec<HyperStep>,
    /// The phase before a method's iterations: the `learn()` hyperparameters' type-II ML.
    pub learning: Learning,
    /// Likelihood hyperparameters slice sampled given the latents, in update order.
    pub likelihood_hypers: Vec<HyperId>,
    /// Hyperparameters of one full GP block, sampled with it integrated out.
    pub kernel_updates: Vec<GpKernelUpdate>,
    /// Hyperparameters shared by several full GP blocks.
    pub kernel_groups: Vec<KernelGroup>,
    /// Hyperparameters of the normal priors of one dense block.
    pub dense_updates: Vec<DenseScaleUpdate>,
    /// The blocks a sweep updates by NUTS ([`GibbsStep::Nuts`]).
    pub nuts_blocks: Vec<NutsBlock>,
    /// The steps of one Gibbs sweep.
    pub gibbs: Vec<GibbsStep>,
    /// The steps of one CAVI iteration.
    pub cavi: Vec<CaviStep>,
    /// The steps of one Gaussian particle flow iteration, or why the model cannot take it.
    pub gpf: Result<Vec<GpfStep>, String>,
}

impl Schedule {
    /// The hyperparameters the variance of block `b`'s GP prior reads, where that prior is
    /// `variance · k(…)` (empty otherwise): what a variance-only non-centred move moves.
    pub fn kernel_variance_hypers(&self, b: BlockId) -> Vec<HyperId> {
        let Some(li) = self.blocks[b.0].latents.first() else {
            return vec![];
        };
        match &self.priors[li.0] {
            BoundPrior::Gp {
                kernel: BoundKernel::Scale { variance, .. },
                ..
            } => variance.slots().map(HyperId).collect(),
            _ => vec![],
        }
    }

    /// Hyperparameters Gibbs samples, in the order of the draws' columns: conjugate ones, then
    /// the likelihood's, one GP's, shared-kernel groups', dense blocks', class scales.
    pub fn sampled_hypers(&self) -> Vec<HyperId> {
        self.hypers
            .iter()
            .map(|c| c.hyper)
            .chain(self.likelihood_hypers.iter().copied())
            .chain(
                self.kernel_updates
                    .iter()
                    .flat_map(|k| k.hypers.iter().copied()),
            )
            .chain(
                self.kernel_groups
                    .iter()
                    .flat_map(|g| g.hypers.iter().copied()),
            )
            .chain(
                self.dense_updates
                    .iter()
                    .flat_map(|d| d.hypers.iter().copied()),
            )
            .chain(
                self.nuts_blocks
                    .iter()
                    .flat_map(|n| n.hypers.iter().copied()),
            )
            .chain(
                self.hyper_steps
                    .iter()
                    .filter(|s| matches!(s.gibbs, GibbsUpdate::ClassScales { .. }))
                    .map(|s| s.hyper),
            )
            .collect()
    }
}
