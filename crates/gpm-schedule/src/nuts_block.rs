//! Where a Gibbs sweep updates a block by NUTS ([`GibbsStep::Nuts`]), a Gibbs step like
//! NumPyro's `HMCGibbs`: one NUTS transition on the block's values whitened by their prior and
//! the hyperparameters that only its prior reads (on their unconstrained scales), the other
//! blocks and hyperparameters held, the auxiliaries of the factors that read it integrated
//! out (redrawn after, given the moved block).
//!
//! Chosen for a dense block with the generic update whose prior's scales are sampled — a
//! hierarchical model whose likelihood no rule augments. There the sweep's alternative is
//! elliptical slice sampling of the weights and slice sampling of the scales given them,
//! Neal's funnel, which the non-centred and Laplace-standardised moves only partly undo
//! ([`crate::hypers::DenseScaleUpdate`]); NUTS on the non-centred joint `(v, log σ)` follows the
//! posterior's curvature with the gradients the CAS already takes, and its adaptation runs
//! in the warm-up sweeps. Measured in docs/inference.md ("NUTS as a block of the sweep").
//! Not chosen where the block is read by a logistic-softmax factor (no CAS gradient in the
//! latent matrix's class sum here), or where the flow's conditions fail (a factor without a
//! gradient, a flat prior).

use crate::blocks::{BlockKind, BlockSpec};
use crate::hypers::{factors_reading, GibbsUpdate, HyperPlan};
use crate::ids::{BlockId, FactorId, HyperId};
use crate::prior::BoundPrior;
use crate::program::FactorProgram;
use crate::steps::GibbsStep;
use gpm_ir::Model;
use serde::Serialize;

/// The largest tree depth of a NUTS block's transitions (Stan's default).
pub const NUTS_BLOCK_MAX_DEPTH: usize = 10;

/// A block the sweep updates by NUTS.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NutsBlock {
    /// The block.
    pub block: BlockId,
    /// The sampled hyperparameters moved with it (only its prior reads them).
    pub hypers: Vec<HyperId>,
    /// The factors that read the block: the target's likelihood, their original
    /// log-densities.
    pub factors: Vec<FactorId>,
    /// Whether a factor among them has auxiliaries, drawn again after each transition.
    pub redraw: bool,
    /// The largest tree depth.
    pub max_depth: usize,
    /// Why NUTS, for `gpmc check`.
    pub why: String,
}

/// Whether the sweep may choose NUTS blocks at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// NUTS for the blocks this module chooses (`false`: elliptical and slice steps only).
    pub nuts_blocks: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { nuts_blocks: true }
    }
}

/// The NUTS blocks of a sweep: each generic-update step on one dense block whose prior reads
/// sampled scales is replaced by a [`GibbsStep::Nuts`], its scales' updates marked
/// [`GibbsUpdate::Nuts`] and their slice plan dropped.
pub(crate) fn nuts_blocks(
    model: &Model,
    factors: &[FactorProgram],
    (blocks, priors): (&[BlockSpec], &[BoundPrior]),
    flow_ok: bool,
    plan: &mut HyperPlan,
    gibbs: &mut [GibbsStep],
) -> Vec<NutsBlock> {
    let mut out = Vec::new();
    if !flow_ok {
        return out;
    }
    for step in gibbs.iter_mut() {
        let GibbsStep::Elliptical { blocks: group, .. } = &*step else {
            continue;
        };
        let [b] = group.as_slice() else { continue };
        let spec = &blocks[b.0];
        if spec.kind != BlockKind::Dense || spec.collapsed {
            continue;
        }
        let Some(d) = plan.dense.iter().position(|d| d.block == *b) else {
            continue;
        };
        let hypers = plan.dense[d].hypers.clone();
        let scalar = hypers
            .iter()
            .all(|h| plan.steps.iter().any(|s| s.hyper == *h && s.scalar));
        let differentiable = spec.latents.iter().all(|l| {
            !matches!(
                &priors[l.0],
                BoundPrior::Normal {
                    gradient: Err(_),
                    ..
                }
            )
        });
        let mut reading: Vec<FactorId> = spec
            .latents
            .iter()
            .flat_map(|&l| factors_reading(model, factors, l))
            .collect();
        reading.sort();
        reading.dedup();
        let categorical = reading.iter().any(|f| factors[f.0].categorical.is_some());
        if !scalar || !differentiable || categorical || reading.is_empty() {
            continue;
        }
        plan.dense.remove(d);
        for s in plan.steps.iter_mut().filter(|s| hypers.contains(&s.hyper)) {
            s.gibbs = GibbsUpdate::Nuts { block: *b };
        }
        let names: Vec<&str> = hypers
            .iter()
            .map(|h| model.hypers[h.0].name.as_str())
            .collect();
        out.push(NutsBlock {
            block: *b,
            redraw: reading.iter().any(|f| !factors[f.0].aux.is_empty()),
            factors: reading,
            max_depth: NUTS_BLOCK_MAX_DEPTH,
            why: format!(
                "the weights take the generic update and their prior's scales ({}) are sampled: slice sampling a scale given its weights is a funnel, NUTS on the non-centred weights and log-scales follows it",
                names.join(", ")
            ),
            hypers,
        });
        *step = GibbsStep::Nuts {
            index: out.len() - 1,
        };
    }
    out
}
