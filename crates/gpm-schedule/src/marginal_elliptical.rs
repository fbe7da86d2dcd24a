//! Where a Gibbs sweep adds elliptical slice steps on a GP block's *marginal* posterior
//! ([`GibbsStep::MarginalElliptical`]): the block's GP prior times its factors' original
//! log-densities, the auxiliaries integrated out.
//!
//! Why: the blocked sweep `f | ω`, `ω | f` moves slowly where `f` and `ω` are strongly coupled
//! (GP classification: minimum bulk ESS per draw ~0.1). Elliptical slice sampling (Murray, Adams
//! & MacKay 2010) moves `f` along directions drawn from the prior, which the sweep moves least,
//! and with the prior's Cholesky factor already at hand a step costs one `O(N²)` product and a
//! few `O(N)` likelihood evaluations, against the sweep's `O(N³)` factorisation. Each step
//! leaves `p(f | y, rest)` invariant; the auxiliaries are then stale, so the step redraws them
//! unless nothing reads them before the next sweep's first step draws them afresh.

use crate::blocks::{BlockKind, BlockSpec};
pub use crate::ellipse_reference::{EllipseReference, ADAPTED_INFLATION};
use crate::hypers::{factors_reading, GpKernelUpdate, KernelGroup};
use crate::ids::FactorId;
use crate::program::FactorProgram;
use crate::steps::GibbsStep;
use gpm_ir::Model;

/// Elliptical slice steps per sweep (measured: docs/inference.md, "Marginal elliptical steps").
pub const MARGINAL_ELLIPTICAL_STEPS: usize = 10;

/// Elliptical slice steps per sweep where every factor reading the block has a binary or a
/// categorical response: one bit of a label per observation leaves the posterior of `f` wide
/// along many directions, which the blocked sweep moves least (10 steps: min bulk ESS per draw
/// 0.16–0.21 on the 3-class GP, 0.31–0.47 on the breast-cancer classifier, against 0.66–0.87 on
/// the Poisson and Student-t GPs). Measured, min-ESS per second over 2 × 1 000 draws, 10 / 30 /
/// 60 steps: the 3-class GP 230–304 / 441–454 / 354–415, the classifier 153–229 / 247–261 /
/// 161–173; at 30 the Poisson GP fell to 0.71× and the Student-t GP to 0.82×, so they keep 10.
/// With the kernel sampled the gain did not hold: the minimum hyperparameter ESS per second of a
/// synthetic 200-point classifier (D = 10) went 107–109 → 81–82 (the variance's ESS 569–603 →
/// 337–408), the 3-class GP's 48–49 → 39–56 and the breast-cancer subset's 98–108 → 108–117;
/// a sampled kernel keeps 10.
pub const MARGINAL_ELLIPTICAL_STEPS_LABELS: usize = 30;

/// The steps of a block read by `reading`: [`MARGINAL_ELLIPTICAL_STEPS_LABELS`] where every one
/// of them is categorical or has a binary response and the block's kernel is fixed (`moving`:
/// a hyperparameter of it is sampled), else [`MARGINAL_ELLIPTICAL_STEPS`].
fn steps_for(factors: &[FactorProgram], reading: &[FactorId], moving: bool) -> usize {
    let labels = !moving
        && reading.iter().all(|f| {
            let fp = &factors[f.0];
            fp.categorical.is_some()
                || fp
                    .replicate
                    .as_ref()
                    .is_some_and(|r| r.likelihood.response() == gpm_library::ResponseKind::Binary)
        });
    if labels {
        MARGINAL_ELLIPTICAL_STEPS_LABELS
    } else {
        MARGINAL_ELLIPTICAL_STEPS
    }
}

/// The reference of a block's steps: a fitted one where its posterior holds still enough for
/// one Gaussian to follow it — one column (the columns of a matrix latent under a categorical
/// factor are coupled a posteriori, along the level all classes share: fitted one by one,
/// measured 420-429 → 213-341 min ESS on the 3-class GP) and a prior no hyperparameter moves
/// (a fixed fit against a moving `K(θ)`: min ESS 467-604 → 445-507 on the full-Bayes GP
/// classifier); elsewhere the prior's ellipses.
fn reference_for(b: &BlockSpec, moving: bool) -> EllipseReference {
    if b.per_column || b.latents.len() != 1 || moving {
        EllipseReference::Prior
    } else {
        EllipseReference::adapted()
    }
}

/// After each full GP block drawn on its own or with its kernel group's hyperparameters (not as
/// a coupled group's lead, not by the generic update, not in the collapsed phase) whose factors all have a log-density the runtime can evaluate and
/// one of which is augmented: `MARGINAL_ELLIPTICAL_STEPS` elliptical slice steps on its
/// marginal posterior, placed after the block's draw (and after its level move, if any).
pub(crate) fn marginal_ellipticals(
    model: &Model,
    factors: &[FactorProgram],
    blocks: &[BlockSpec],
    kernels: &[GpKernelUpdate],
    groups: &[KernelGroup],
    gibbs: &mut Vec<GibbsStep>,
) {
    for b in blocks {
        if b.kind != BlockKind::FullGp || !b.elliptical.is_empty() || b.collapsed {
            continue;
        }
        let mut reading: Vec<FactorId> = Vec::new();
        for &l in &b.latents {
            for f in factors_reading(model, factors, l) {
                if !reading.contains(&f) {
                    reading.push(f);
                }
            }
        }
        // A categorical factor reads its latent matrix directly, not through a predictor.
        for (f, fp) in factors.iter().enumerate() {
            let reads = fp
                .categorical
                .as_ref()
                .is_some_and(|c| b.latents.contains(&c.latent_id));
            if reads && !reading.contains(&FactorId(f)) {
                reading.push(FactorId(f));
            }
        }
        reading.sort();
        // A factor that also reads a block drawn from its collapsed conditional (the
        // heteroscedastic GP's mean) is evaluated as written too: the steps read no auxiliary,
        // and they redraw them all (measured on the precision GP `g`: min bulk ESS 243 → 912 and
        // 532 → 1594 on the heteroscedastic Student-t and Gaussian GPs, 1.2–1.4× the sweep).
        let evaluable = reading.iter().all(|f| {
            let fp = &factors[f.0];
            let categorical_of_block = fp
                .categorical
                .as_ref()
                .is_some_and(|c| b.latents.contains(&c.latent_id));
            categorical_of_block
                || (fp.categorical.is_none() && fp.log_density_in_predictors.is_some())
        });
        // Only where the blocked sweep mixes slowly (`MixingLaw::slow_blocked_mixing`, and the
        // logistic-softmax's Pólya-Gamma chain): a Gaussian factor's block is drawn from its
        // marginal exactly already, and under the scale mixtures the steps only cost.
        // Whether some auxiliary of a factor reading the block has a mixing law with `property`.
        let some_law = |property: fn(&dyn gpm_families::MixingLaw) -> bool| {
            reading.iter().any(|f| {
                factors[f.0].aux.iter().any(
                    |a| matches!(&a.kind, crate::aux::AuxKind::Law { law, .. } if property(*law)),
                )
            })
        };
        let slow = reading.iter().any(|f| factors[f.0].categorical.is_some())
            || some_law(|law| law.slow_blocked_mixing());
        // Or where they pay along a fitted reference only (the Student-t's Gamma scale mixture),
        // and one is fitted.
        let moving = crate::hypers::kernel_moves(b.id, kernels, groups);
        let reference = reference_for(b, moving);
        let fitted_pays = matches!(reference, EllipseReference::Adapted { .. })
            && some_law(|law| law.gains_from_fitted_steps());
        if !evaluable || !(slow || fitted_pays) || reading.is_empty() {
            continue;
        }
        let Some(mut at) = crate::steps::drawn_at(gibbs, groups, b.id) else {
            continue;
        };
        while matches!(gibbs.get(at + 1), Some(GibbsStep::LevelShift { block, .. }) if *block == b.id)
        {
            at += 1;
        }
        gibbs.insert(
            at + 1,
            GibbsStep::MarginalElliptical {
                block: b.id,
                steps: steps_for(factors, &reading, moving),
                factors: reading,
                redraw: true,
                reference,
            },
        );
    }
}

/// A move that leaves the marginal posterior of its latents invariant without reading the
/// auxiliaries (a level move, a marginal elliptical step) must have them redrawn before anything
/// reads them: by itself, by a later marginal elliptical step (which redraws every auxiliary),
/// or by the next sweep's opening draw of every auxiliary (which does not read the old ones, so
/// the sweeps are the same kernel) when only such moves follow it.
pub(crate) fn set_redraws(gibbs: &mut [GibbsStep]) {
    // Walking back from the end: whether the auxiliaries are drawn afresh before any reader.
    let mut covered = gibbs.first() == Some(&GibbsStep::Auxiliaries);
    for step in gibbs.iter_mut().rev() {
        match step {
            GibbsStep::LevelShift { redraw, .. } => {
                // It redraws its own factor's auxiliaries only: the others stay as covered as
                // they were.
                *redraw = !covered;
            }
            GibbsStep::MarginalElliptical { redraw, .. } => {
                *redraw = !covered;
                covered = true;
            }
            _ => covered = false,
        }
    }
}
