//! The sweep as a list of moves (issue 51): each [`GibbsStep`] of the schedule compiles to one
//! [`Move`], in a file of its own here, and a sweep applies the list in order — the sampler is
//! the schedule, the prepared model and this list. A move is what the schedule decided for
//! that step (its blocks, factors and settings), bound once; the math it runs is the
//! sampler's (the conditional Gaussian draw, the auxiliaries' conditionals, the slice and
//! elliptical steps), shared with the distributed rounds. Adding a move: a file here, a
//! `GibbsStep` variant, and a line in [`compile`]. Each move also says what it does
//! ([`Move::describe`], what `gpmc check` prints as the sweep's steps), next to what it runs.

use super::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::{GibbsStep, Schedule};
use rand_chacha::ChaCha8Rng;

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

/// One step of a Gibbs sweep.
pub(crate) trait Move: Send + Sync + std::fmt::Debug {
    /// Apply the move to one chain's `state`; `pv` are the predictors at its latents, kept
    /// current when the move changes them.
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError>;

    /// What the move does, for people (`gpmc check`'s Gibbs sweep), from the schedule it was
    /// compiled from.
    fn describe(&self, s: &Schedule) -> String;
}

/// What each step of the schedule's Gibbs sweep does, in order, as its move says.
pub fn describe_sweep(schedule: &Schedule) -> Vec<String> {
    compile(schedule)
        .iter()
        .map(|m| m.describe(schedule))
        .collect()
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
