//! The ordered steps of one Gibbs sweep and of one CAVI iteration. The Gibbs executor walks
//! [`crate::schedule::Schedule::gibbs`] step by step; `gpmc check` prints both lists, so a user sees what
//! each method will do before running it.

use crate::blocks::BlockSpec;
use crate::hypers::KernelGroup;
use crate::ids::BlockId;
use serde::Serialize;
use std::collections::BTreeSet;

/// One step of a Gibbs sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum GibbsStep {
    /// Draw a Gaussian block (each column of a matrix GP in turn) given everything else; in the
    /// collapsed phase from its un-augmented conditional (the auxiliaries of the collapsed
    /// factors integrated out). A block with its own kernel or prior-scale hyperparameters
    /// draws them first with the block integrated out.
    Block {
        /// The block.
        block: BlockId,
        /// Whether it is drawn in the collapsed phase.
        collapsed: bool,
    },
    /// An integrated shared-kernel group: every block's curvature, θ with all of them
    /// integrated out, then every block given θ.
    KernelGroup {
        /// Index into [`crate::schedule::Schedule::kernel_groups`].
        group: usize,
    },
    /// A coupled shared-kernel group's lead block: θ with this block (its first column)
    /// integrated out and the group's other blocks given, then the block; its other columns as
    /// in [`GibbsStep::Block`].
    KernelGroupLead {
        /// Index into [`crate::schedule::Schedule::kernel_groups`].
        group: usize,
        /// The lead block.
        block: BlockId,
        /// Whether it is drawn in the collapsed phase.
        collapsed: bool,
    },
    /// Slice-sample the likelihood's non-conjugate hyperparameters given the latents, the
    /// auxiliaries integrated out (their redraw follows).
    LikelihoodHypers,
    /// Draw every auxiliary variable, observation by observation, from its exact conditional.
    Auxiliaries,
    /// Draw the conjugate Gamma hyperparameters.
    ConjugateHypers,
    /// A translation move of a logistic-softmax factor's latent matrix (a generalised Gibbs
    /// step, Liu & Sabatti 2000): `F → F + δ·1` with `δ` slice-sampled from `p(F + δ·1 | y)`,
    /// the auxiliaries integrated out (the GP priors are quadratic in `δ`), then the factor's
    /// auxiliaries redrawn given the moved `F` — unless the sweep's next reader of them is the
    /// next sweep's [`GibbsStep::Auxiliaries`], which draws them afresh without reading the old
    /// ones (the two sweeps are then the same kernel on `F`). The common level of `F` across
    /// classes is what the logistic-softmax pins down least, and the blocked sweep moves it
    /// slowest.
    LevelShift {
        /// The categorical factor.
        factor: crate::ids::FactorId,
        /// The block of its latent matrix (one full GP per column).
        block: BlockId,
        /// Whether the move redraws the factor's auxiliaries itself.
        redraw: bool,
    },
    /// Elliptical slice steps on a full GP block's marginal posterior: its GP prior times its
    /// factors' original log-densities, the auxiliaries integrated out
    /// ([`crate::marginal_elliptical`]); then, if `redraw`, every auxiliary drawn again given
    /// the moved block (else the next sweep's first step draws them before anything reads
    /// them).
    MarginalElliptical {
        /// The block (all its columns at once).
        block: BlockId,
        /// The factors that read it, whose log-densities are the ellipse's likelihood.
        factors: Vec<crate::ids::FactorId>,
        /// Steps per sweep.
        steps: usize,
        /// Whether the step redraws the auxiliaries itself.
        redraw: bool,
        /// The Gaussian whose ellipses the steps follow.
        reference: crate::ellipse_reference::EllipseReference,
    },
    /// One NUTS transition on a block and the scales its prior reads, the others held
    /// ([`crate::nuts_block`]); the auxiliaries of its factors drawn again after it.
    Nuts {
        /// Index into [`crate::schedule::Schedule::nuts_blocks`].
        index: usize,
    },
    /// The generic update of the blocks read by factors with no augmentation: `steps`
    /// elliptical slice sampling steps over all of them jointly (their Gaussian parts are
    /// independent given the auxiliaries, so the ellipse is their product), each block's own
    /// hyperparameters first, given its values.
    Elliptical {
        /// The blocks, updated jointly.
        blocks: Vec<BlockId>,
        /// The factors with no augmentation that read them.
        factors: Vec<crate::ids::FactorId>,
        /// Steps per sweep.
        steps: usize,
        /// Whether the steps follow a Gaussian fitted to the blocks' warm-up draws instead of
        /// their conditional's (generalised elliptical slice sampling, Nishihara, Murray &
        /// Adams 2014): chosen when every block of the group is dense, whose conditional given
        /// the augmented factors is often far wider than its posterior under the generic
        /// factors (a heteroscedastic likelihood's weights).
        fitted: bool,
    },
}

/// The blocks tied to `b` through factors with no augmentation (a connected component), and
/// those factors, in order.
fn elliptical_group(
    blocks: &[BlockSpec],
    b: BlockId,
    coupled: &BTreeSet<(BlockId, BlockId)>,
) -> (Vec<BlockId>, Vec<crate::ids::FactorId>) {
    let mut members = vec![b];
    let mut factors: Vec<crate::ids::FactorId> = blocks[b.0].elliptical.clone();
    loop {
        let before = members.len() + factors.len();
        for other in blocks {
            if other.elliptical.iter().any(|f| factors.contains(f)) && !members.contains(&other.id)
            {
                members.push(other.id);
                for f in &other.elliptical {
                    if !factors.contains(f) {
                        factors.push(*f);
                    }
                }
            }
        }
        if members.len() + factors.len() == before {
            break;
        }
    }
    members.sort();
    factors.sort();
    // The joint ellipse is the product of the blocks' Gaussian parts only when no augmented
    // factor couples two of them; otherwise each block takes its own steps given the others.
    let is_coupled = members
        .iter()
        .any(|a| members.iter().any(|c| coupled.contains(&(*a, *c))));
    if is_coupled {
        return (vec![b], blocks[b.0].elliptical.clone());
    }
    (members, factors)
}

/// Where a sweep draws block `b` outside the collapsed phase: its own step, or the step of the
/// integrated kernel group it belongs to (which draws θ with the blocks integrated out, then
/// every block). The moves that follow a block's draw go right after it.
pub(crate) fn drawn_at(gibbs: &[GibbsStep], groups: &[KernelGroup], b: BlockId) -> Option<usize> {
    gibbs.iter().position(|s| match s {
        GibbsStep::Block {
            block,
            collapsed: false,
        } => *block == b,
        GibbsStep::KernelGroup { group } => {
            groups[*group].integrated && groups[*group].blocks.contains(&b)
        }
        _ => false,
    })
}

/// One step of a CAVI iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum CaviStep {
    /// Each column of the block in turn: every factor's closed-form local update (`q(ω)`,
    /// `q(n)`, the softmax factors' `q`) at the current moments, then the column's Gaussian `q`
    /// given the local expectations.
    Block {
        /// The block.
        block: BlockId,
    },
    /// The ELBO, and the convergence test.
    Elbo,
}

/// The Gibbs sweep (thesis ch. 5 §3.3.2, §7.2.1, Algorithm 2): blocks read by collapsed
/// predictors first, then the likelihood hyperparameters and the auxiliaries, then the other
/// blocks, then the conjugate hyperparameters.
pub(crate) fn gibbs(
    blocks: &[BlockSpec],
    coupled: &BTreeSet<(BlockId, BlockId)>,
    groups: &[KernelGroup],
    has_likelihood_hypers: bool,
    has_conjugate: bool,
) -> Vec<GibbsStep> {
    let mut out = Vec::new();
    for collapsed in [true, false] {
        if !collapsed {
            if has_likelihood_hypers {
                out.push(GibbsStep::LikelihoodHypers);
            }
            out.push(GibbsStep::Auxiliaries);
        }
        for b in blocks.iter().filter(|b| b.collapsed == collapsed) {
            let integrated = groups
                .iter()
                .position(|g| g.integrated && g.blocks.contains(&b.id));
            let lead = groups.iter().position(|g| g.lead == Some(b.id));
            out.push(match (integrated, lead) {
                // The group goes at its first block; its other blocks have no step.
                (Some(gi), _) if groups[gi].blocks[0] == b.id => {
                    GibbsStep::KernelGroup { group: gi }
                }
                (Some(_), _) => continue,
                (None, Some(gi)) => GibbsStep::KernelGroupLead {
                    group: gi,
                    block: b.id,
                    collapsed,
                },
                (None, None) if !collapsed && !b.elliptical.is_empty() => {
                    let (members, factors) = elliptical_group(blocks, b.id, coupled);
                    if members[0] != b.id {
                        continue;
                    }
                    let fitted = members
                        .iter()
                        .all(|m| blocks[m.0].kind == crate::blocks::BlockKind::Dense);
                    GibbsStep::Elliptical {
                        blocks: members,
                        factors,
                        steps: crate::blocks::ELLIPTICAL_STEPS,
                        fitted,
                    }
                }
                (None, None) => GibbsStep::Block {
                    block: b.id,
                    collapsed,
                },
            });
        }
    }
    if has_conjugate {
        out.push(GibbsStep::ConjugateHypers);
    }
    out
}

/// The CAVI iteration: fresh local steps before every block (the double bound's block weight
/// `1 − γ/E κ` is the joint optimum over `(q(f), q(n))` only at the current `γ`), then the ELBO.
pub(crate) fn cavi(blocks: &[BlockSpec]) -> Vec<CaviStep> {
    let mut out = Vec::new();
    for b in blocks {
        out.push(CaviStep::Block { block: b.id });
    }
    out.push(CaviStep::Elbo);
    out
}

/// One step of a Gaussian particle flow iteration (thesis ch. 6, Algorithm 2), with the
/// structured mean-field of its §3.5 between the groups of blocks no factor couples: one flow
/// matrix `A` per group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum GpfStep {
    /// `∇_x log p(y | x)` at every particle: each factor's `∂ℓ/∂η` (taken by the CAS) at the
    /// particle's predictors, carried back to the latents through the predictors' designs.
    Gradients,
    /// Move the particles of these blocks jointly, in coordinates whitened by their priors
    /// (`x = μ + L v`), over all their coordinates (every column of a matrix latent): with more
    /// particles than coordinates and the symmetric particle map (the default) the particles
    /// are `m + R z`, `R` symmetric, `z` their first draws standardised, and `(m, R)` take an
    /// L-BFGS step on `F̃` (the runtime's `gpf/quasi_newton.rs` says why); otherwise the thesis'
    /// Euler step `v ← v − ε ḡ − ε A (v − m)`, `A = (1/N) Σ_j g_j (v_j − m)ᵀ − I` (eq. 13). The blocks a
    /// likelihood factor reads together move as one: with a flow matrix per block (the
    /// structured mean field of §3.5) their posterior correlation — an intercept and a GP's
    /// level, a heteroscedastic model's mean and log-scale, the classes of a softmax — relaxes
    /// one block at a time, and the flow crawled (1 000 steps were not enough on seven
    /// examples; docs/inference.md).
    Flow {
        /// The blocks, in order.
        blocks: Vec<BlockId>,
    },
    /// The empirical free energy `E_q̂[φ] − ½ Σ_blocks log|C|` (regularised: zero eigenvalues
    /// dropped); an L-BFGS step backtracks until it decreased enough (Armijo), an Euler step
    /// that raised it is undone and `ε` halved (otherwise `ε` grows); then the convergence test.
    FreeEnergy,
}

/// The particle-flow iteration, or why the model cannot take it: every factor needs a compiled
/// gradient and every block a proper prior to whiten with (a sparse GP's FITC prior: its
/// whitened inducing values and residuals).
pub(crate) fn gpf(
    model: &gpm_ir::Model,
    blocks: &[BlockSpec],
    factors: &[crate::program::FactorProgram],
) -> Result<Vec<GpfStep>, String> {
    if let Some(z) = model
        .latents
        .iter()
        .find(|z| z.prior == gpm_ir::LatentPrior::Flat)
    {
        return Err(format!(
            "`{}` has a flat prior: the flow whitens every latent by its prior, which an improper prior cannot do (give it a proper prior, or use Gibbs / CAVI)",
            z.name
        ));
    }
    if let Some((f, why)) = factors
        .iter()
        .find_map(|f| f.gradient.as_ref().err().map(|w| (f.factor, w)))
    {
        return Err(format!("factor #{}: {why}", f + 1));
    }
    let mut out = vec![GpfStep::Gradients];
    out.extend(
        flow_groups(model, blocks, factors)
            .into_iter()
            .map(|blocks| GpfStep::Flow { blocks }),
    );
    out.push(GpfStep::FreeEnergy);
    Ok(out)
}

/// The blocks that move together under the flow: the connected components of "a factor reads
/// both" (any of its predictors), in the order of their first block.
fn flow_groups(
    model: &gpm_ir::Model,
    blocks: &[BlockSpec],
    factors: &[crate::program::FactorProgram],
) -> Vec<Vec<BlockId>> {
    let mut group: Vec<usize> = (0..blocks.len()).collect();
    fn root(group: &mut [usize], mut b: usize) -> usize {
        while group[b] != b {
            group[b] = group[group[b]];
            b = group[b];
        }
        b
    }
    for fp in factors {
        let read: BTreeSet<usize> = fp
            .slots
            .iter()
            .filter_map(|s| match s {
                crate::source::Source::Predictor(p) => Some(p),
                _ => None,
            })
            .flat_map(|p| model.predictors[p.0].terms.iter())
            .filter_map(|t| crate::blocks::block_holding(model, blocks, &t.latent))
            .collect();
        let mut read = read.into_iter();
        if let Some(first) = read.next() {
            for b in read {
                let (ra, rb) = (root(&mut group, first), root(&mut group, b));
                group[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    let mut out: Vec<Vec<BlockId>> = Vec::new();
    let mut at: Vec<Option<usize>> = vec![None; blocks.len()];
    for b in 0..blocks.len() {
        let r = root(&mut group, b);
        match at[r] {
            Some(k) => out[k].push(blocks[b].id),
            None => {
                at[r] = Some(out.len());
                out.push(vec![blocks[b].id]);
            }
        }
    }
    out
}
