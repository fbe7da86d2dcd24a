//! Compiling a model's certified plans into its [`Schedule`]: each factor's program, the
//! conjugate hyperparameters, the blocks (and which the generic update moves), every
//! hyperparameter's plan, the steps of a Gibbs sweep (with the level shifts, marginal elliptical
//! and NUTS steps where they apply), of a CAVI and a particle-flow iteration, and the priors bound
//! to ids. Above every other file of the crate: it calls them, none calls it.

use crate::blocks::{self, BlockKind, BlockSpec};
use crate::conjugate::conjugate_hypers;
use crate::error::ScheduleError;
use crate::factor::compile_factor;
use crate::hyper_plan;
use crate::hypers::{self, KernelGroup};
use crate::ids::{BlockId, FactorId, LatentId};
use crate::learning::Learning;
use crate::marginal_elliptical;
use crate::nuts_block::{self, Options};
use crate::prior::{self, BoundPrior};
use crate::program::FactorProgram;
use crate::schedule::Schedule;
use crate::steps::{self, GibbsStep};
use gpm_augment::Plan;
use gpm_ir::Model;
use std::collections::BTreeSet;

/// Compile a model's plans.
pub fn build(model: &Model, plans: &[Plan]) -> Result<Schedule, ScheduleError> {
    build_with(model, plans, Options::default())
}

/// [`build`] with the sweep's choices limited by `options`.
pub fn build_with(
    model: &Model,
    plans: &[Plan],
    options: Options,
) -> Result<Schedule, ScheduleError> {
    let mut factors = Vec::new();
    let mut collapsed = BTreeSet::new();
    for plan in plans {
        factors.push(compile_factor(model, plan, &mut collapsed)?);
    }
    let hypers = conjugate_hypers(model, &factors, plans)?;
    let collapsed_latents = blocks::collapsed_latents(model, &collapsed);
    let mut blocks = blocks::blocks(model, &collapsed_latents);
    elliptical_blocks(model, &factors, &mut blocks)?;
    let mut plan = hyper_plan::plan(model, &factors, &hypers, &collapsed, &blocks);
    crate::pathwise::pathwise_draws(&mut blocks, &plan.kernels, &plan.groups);
    let coupled = coupled_blocks(model, &factors, &blocks);
    let mut gibbs = steps::gibbs(
        &blocks,
        &coupled,
        &plan.groups,
        !plan.likelihood.is_empty(),
        !hypers.is_empty(),
    );
    level_shifts(model, &factors, &blocks, &plan.groups, &mut gibbs);
    marginal_elliptical::marginal_ellipticals(
        model,
        &factors,
        &blocks,
        &plan.kernels,
        &plan.groups,
        &mut gibbs,
    );
    marginal_elliptical::set_redraws(&mut gibbs);
    let cavi = steps::cavi(&blocks);
    let gpf = steps::gpf(model, &blocks, &factors);
    let priors = bind_priors(model)?;
    let nuts_blocks = if options.nuts_blocks {
        nuts_block::nuts_blocks(
            model,
            &factors,
            (&blocks, &priors),
            gpf.is_ok(),
            &mut plan,
            &mut gibbs,
        )
    } else {
        vec![]
    };
    Ok(Schedule {
        latents: model.latents.clone(),
        priors,
        predictors: model.predictors.clone(),
        hyper_decls: model.hypers.clone(),
        factors,
        hypers,
        collapsed,
        blocks,
        learning: Learning::from_steps(&plan.steps),
        hyper_steps: plan.steps,
        likelihood_hypers: plan.likelihood,
        kernel_updates: plan.kernels,
        kernel_groups: plan.groups,
        dense_updates: plan.dense,
        nuts_blocks,
        gibbs,
        cavi,
        gpf,
    })
}

/// Every latent's prior bound to typed hyperparameter ids.
fn bind_priors(model: &Model) -> Result<Vec<BoundPrior>, ScheduleError> {
    let binder = prior::Binder {
        hypers: &model.hypers,
    };
    model
        .latents
        .iter()
        .map(|z| {
            binder
                .prior(&z.prior)
                .map_err(|message| ScheduleError::Prior {
                    latent: z.name.clone(),
                    message,
                })
        })
        .collect::<Result<Vec<_>, _>>()
}

/// After the uncollapsed draw of each logistic-softmax factor's latent matrix, a translation
/// move of it ([`GibbsStep::LevelShift`]) — where the matrix is one full GP block drawn on its
/// own or with its kernel's hyperparameters (not by the generic update, not as a coupled
/// group's lead) and no other factor reads it, so that
/// `p(F | y)` is the GP prior times this factor alone.
fn level_shifts(
    model: &Model,
    factors: &[FactorProgram],
    blocks: &[blocks::BlockSpec],
    groups: &[KernelGroup],
    gibbs: &mut Vec<GibbsStep>,
) {
    for (f, fp) in factors.iter().enumerate() {
        let Some(c) = &fp.categorical else { continue };
        let Some(b) = blocks.iter().find(|b| b.latents.contains(&c.latent_id)) else {
            continue;
        };
        let alone = b.latents.len() == 1
            && b.kind == blocks::BlockKind::FullGp
            && b.elliptical.is_empty()
            && !b.collapsed
            && hypers::factors_reading(model, factors, c.latent_id)
                .iter()
                .all(|r| r.0 == f);
        let at = steps::drawn_at(gibbs, groups, b.id);
        if let (true, Some(at)) = (alone, at) {
            // Whether it redraws the factor's auxiliaries itself: `set_redraws`, once every
            // move is in place.
            gibbs.insert(
                at + 1,
                GibbsStep::LevelShift {
                    factor: FactorId(f),
                    block: b.id,
                    redraw: true,
                },
            );
        }
    }
}

/// Pairs of blocks whose Gaussian conditionals an augmented factor couples: one of its
/// predictors with a Gaussian term reads latents of both.
fn coupled_blocks(
    model: &Model,
    factors: &[FactorProgram],
    blocks: &[BlockSpec],
) -> BTreeSet<(BlockId, BlockId)> {
    let block_of = |name: &str| blocks::block_holding(model, blocks, name).map(|b| blocks[b].id);
    let mut out = BTreeSet::new();
    for fp in factors {
        for cv in fp.curvature.iter().chain(&fp.collapsed) {
            let read: Vec<BlockId> = model.predictors[cv.pred.0]
                .terms
                .iter()
                .filter_map(|t| block_of(&t.latent))
                .collect();
            for &a in &read {
                for &b in &read {
                    if a != b {
                        out.insert((a, b));
                    }
                }
            }
        }
    }
    out
}

/// Mark every block read by a factor with no augmentation for the generic update, and refuse
/// the combinations it cannot run.
fn elliptical_blocks(
    model: &Model,
    factors: &[FactorProgram],
    blocks: &mut [BlockSpec],
) -> Result<(), ScheduleError> {
    for (fi, fp) in factors.iter().enumerate() {
        let Some(g) = &fp.generic else { continue };
        for p in &g.predictors {
            for t in &model.predictors[p.0].terms {
                let Some(b) = blocks::block_holding(model, blocks, &t.latent) else {
                    continue;
                };
                let b = &mut blocks[b];
                let refuse = |message: String| ScheduleError::Factor {
                    factor: fp.factor,
                    message,
                };
                if b.kind == BlockKind::SparseGp {
                    return Err(refuse(format!("it has no augmentation and reads the sparse GP `{}`: the generic update needs a full GP (drop `inducing`)", t.latent)));
                }
                if b.collapsed {
                    return Err(refuse(format!("it has no augmentation and reads `{}`, which another factor samples from a collapsed conditional; write the two factors with separate latents", t.latent)));
                }
                // A flat latent needs an augmented (Gaussian-conditional) factor of its own for
                // the ellipse — its heavy-tailed prior's factor, or an augmented likelihood;
                // whether that informs every coordinate is checked when the block is factored.
                let augmented_reader = |l: &LatentId| {
                    hypers::factors_reading(model, factors, *l)
                        .iter()
                        .any(|f| factors[f.0].generic.is_none())
                };
                if let Some(flat) = b.latents.iter().find(|l| {
                    model.latents[l.0].prior == gpm_ir::LatentPrior::Flat && !augmented_reader(l)
                }) {
                    return Err(refuse(format!("it has no augmentation and reads the block of `{}`, whose prior is flat: the generic update moves along the prior's ellipses, which an improper prior does not have; give `{}` a proper prior (e.g. `normal(0, 10)`)", model.latents[flat.0].name, model.latents[flat.0].name)));
                }
                if !b.elliptical.contains(&FactorId(fi)) {
                    b.elliptical.push(FactorId(fi));
                }
            }
        }
    }
    Ok(())
}
