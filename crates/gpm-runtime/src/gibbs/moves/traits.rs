//! What a step of the sweep is to the sampler: the [`Move`] trait every move file implements,
//! and a move's own per-chain state ([`MoveState`]).

use crate::gibbs::{Sampler, State};
use crate::RuntimeError;
use gpm_schedule::Schedule;
use rand_chacha::ChaCha8Rng;

/// A move's own state in one chain: what it adapts in warm-up and counts after, kept in
/// [`State`] one per move, in the sweep's order. A move with state of its own adds a variant.
#[derive(Debug, Clone, Default)]
pub(crate) enum MoveState {
    /// The move keeps nothing between sweeps.
    #[default]
    Stateless,
    /// A NUTS step's adaptation and transitions.
    Nuts(Box<crate::gibbs::nuts_block::NutsState>),
}

/// One step of a Gibbs sweep.
pub(crate) trait Move: Send + Sync + std::fmt::Debug {
    /// Its state in a chain that has not swept yet.
    fn init(&self) -> MoveState {
        MoveState::Stateless
    }

    /// Apply the move to one chain's `state`, with its own state `own`; `pv` are the
    /// predictors at its latents, kept current when the move changes them.
    fn apply(
        &self,
        s: &Sampler<'_>,
        state: &mut State,
        own: &mut MoveState,
        pv: &mut Vec<Vec<f64>>,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError>;

    /// Before warm-up sweep `sweep` (from 1): what the move's adaptation opens.
    fn before_warmup_sweep(&self, _s: &Sampler<'_>, _state: &mut State, _sweep: usize) {}

    /// After warm-up sweep `sweep` (from 1) of `warmup`: the move adapts what it follows (a
    /// fitted reference) from the chain's state; after warm-up it holds it.
    fn adapt(&self, _s: &Sampler<'_>, _state: &mut State, _sweep: usize, _warmup: usize) {}

    /// What the move does, for people (`gpmc check`'s Gibbs sweep), from the schedule it was
    /// compiled from.
    fn describe(&self, s: &Schedule) -> String;
}
