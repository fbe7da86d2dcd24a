//! The sweep as a list of moves (issue 51): each [`GibbsStep`] of the schedule compiles to one
//! [`Move`], in a file of its own here, and a sweep applies the list in order — the sampler is
//! the schedule, the prepared model and this list. A move is what the schedule decided for
//! that step (its blocks, factors and settings), bound once; the math it runs is the
//! sampler's (the conditional Gaussian draw, the auxiliaries' conditionals, the slice and
//! elliptical steps), shared with the distributed rounds. Adding a move: a file here, a
//! `GibbsStep` variant, and a line in [`compile`]. Each move also says what it does
//! ([`Move::describe`], what `gpmc check` prints as the sweep's steps), next to what it runs.

use gpm_schedule::{GibbsStep, Schedule};

mod auxiliaries;
mod block;
mod conjugate_hypers;
mod elliptical;
mod hyper_text;
mod kernel_group;
mod kernel_group_lead;
mod level_shift;
mod likelihood_hypers;
mod marginal_elliptical;
mod nuts;
mod traits;
pub(crate) use traits::{Move, MoveState};

/// What each step of the schedule's Gibbs sweep does, in order, as its move says.
pub fn describe_sweep(schedule: &Schedule) -> Vec<String> {
    compile(schedule)
        .iter()
        .map(|m| m.describe(schedule))
        .collect()
}

/// What a chain's NUTS steps did after warm-up, from the moves' own states: their
/// transitions added up, the step size the first one adapted.
pub(crate) fn nuts_stats(states: &[MoveState]) -> super::NutsBlockStats {
    let mut total = super::NutsBlockStats::default();
    let mut first = true;
    for own in states {
        if let MoveState::Nuts(n) = own {
            total.transitions += n.stats.transitions;
            total.divergences += n.stats.divergences;
            total.max_depth_hits += n.stats.max_depth_hits;
            total.leapfrogs += n.stats.leapfrogs;
            if first {
                total.step_size = n.adaptation.as_ref().map_or(0.0, |a| a.step);
                first = false;
            }
        }
    }
    total
}

/// The schedule's Gibbs steps as moves, in order.
pub(crate) fn compile(schedule: &Schedule) -> Vec<Box<dyn Move>> {
    schedule.gibbs.iter().map(one).collect()
}

fn one(step: &GibbsStep) -> Box<dyn Move> {
    match step {
        GibbsStep::LikelihoodHypers => Box::new(likelihood_hypers::LikelihoodHypers),
        GibbsStep::Auxiliaries => Box::new(auxiliaries::Auxiliaries),
        GibbsStep::ConjugateHypers => Box::new(conjugate_hypers::ConjugateHypers),
        GibbsStep::Block { block, collapsed } => Box::new(block::Block {
            block: *block,
            collapsed: *collapsed,
        }),
        GibbsStep::LevelShift {
            factor,
            block,
            redraw,
        } => Box::new(level_shift::LevelShift {
            factor: factor.0,
            block: *block,
            redraw: *redraw,
        }),
        GibbsStep::MarginalElliptical {
            block,
            factors,
            steps,
            redraw,
            reference,
        } => Box::new(marginal_elliptical::MarginalElliptical {
            block: *block,
            factors: factors.iter().map(|f| f.0).collect(),
            steps: *steps,
            redraw: *redraw,
            reference: *reference,
        }),
        GibbsStep::Nuts { index } => Box::new(nuts::Nuts { index: *index }),
        GibbsStep::KernelGroup { group } => Box::new(kernel_group::KernelGroup { group: *group }),
        GibbsStep::Elliptical {
            blocks,
            factors,
            steps,
            fitted,
        } => Box::new(elliptical::Elliptical {
            blocks: blocks.clone(),
            factors: factors.iter().map(|f| f.0).collect(),
            steps: *steps,
            fitted: *fitted,
        }),
        GibbsStep::KernelGroupLead {
            group,
            block,
            collapsed,
        } => Box::new(kernel_group_lead::KernelGroupLead {
            group: *group,
            block: *block,
            collapsed: *collapsed,
        }),
    }
}
