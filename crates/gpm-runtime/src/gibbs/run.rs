//! Running Gibbs chains: the sweep as a [`Kernel`] of the chain driver ([`crate::chains`]),
//! each chain on its own counter-based stream (ChaCha8, stream = the chain's number).

use super::*;
use crate::chains::{at_once, check_run, run_chains, Kernel, Phase, Ran};
use std::sync::atomic::AtomicBool;

/// What a chain's sweeps did besides drawing: its NUTS steps' transitions (all zero without
/// one) and the seconds each step of the sweep took ([`State::step_seconds`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SweepStats {
    /// The NUTS steps' transitions after warm-up.
    pub nuts: super::NutsBlockStats,
    /// Seconds per step of the sweep, in the schedule's order, warm-up included.
    pub step_seconds: Vec<f64>,
}

/// Run several chains in parallel. `progress(chain, sweep)` is called after every sweep.
pub fn run(
    sampler: &Sampler,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Chain>, RuntimeError> {
    run_until(sampler, config, progress, &AtomicBool::new(false))
}

/// [`run`], stopping early when `stop` is set (an interrupted run): each chain ends after its
/// current sweep and keeps the draws it has; chains with no draw (not started, with more chains
/// than threads) are dropped and the others cut to the shortest, so that every chain has the
/// same number of complete draws.
pub fn run_until(
    sampler: &Sampler,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
) -> Result<Vec<Chain>, RuntimeError> {
    let sinks = (0..config.chains).map(|_| Vec::new()).collect();
    let (chains, _) = run_into(sampler, config, progress, stop, sinks)?;
    let layout = sampler.layout();
    Ok(chains
        .into_iter()
        .map(|(rows, t, _)| Chain::new(layout.clone(), rows, t))
        .collect())
}

/// [`run_until`] with each chain's rows handed to its sink as they are made (one sink per
/// chain, in chain order). Returns the chains that kept draws, each with its sink, times and
/// [`SweepStats`], and the number of draws each kept (the same for all: the sinks are cut to
/// the shortest).
pub fn run_into<S: RowSink>(
    sampler: &Sampler,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<Ran<S, SweepStats>, RuntimeError> {
    check_run(config, sinks.len())?;
    sampler.prepared().memory.refuse_beyond(at_once(config))?;
    let sweeps = Sweeps {
        sampler,
        seed: config.seed,
    };
    run_chains(&sweeps, config, progress, stop, sinks)
}

/// The Gibbs sweep as the driver's kernel: a chain is a sampler's [`State`] with its streams.
struct Sweeps<'s, 'a> {
    sampler: &'s Sampler<'a>,
    seed: u64,
}

/// One Gibbs chain: its state, its stream and the replicated responses' own.
struct GibbsChain {
    state: State,
    rng: ChaCha8Rng,
    replicate_rng: ChaCha8Rng,
}

impl Kernel for Sweeps<'_, '_> {
    type Chain = GibbsChain;
    type Stats = SweepStats;
    type Error = RuntimeError;

    fn start(&self, stream: u64) -> Result<GibbsChain, RuntimeError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(stream);
        let state = self.sampler.start(&mut rng);
        // Replicated responses have a stream of their own, so that asking for them leaves
        // the chain's draws unchanged.
        let mut replicate_rng = ChaCha8Rng::seed_from_u64(self.seed ^ REPLICATE_SEED);
        replicate_rng.set_stream(stream);
        Ok(GibbsChain {
            state,
            rng,
            replicate_rng,
        })
    }

    fn step(&self, chain: &mut GibbsChain, phase: Phase) -> Result<(), RuntimeError> {
        match phase {
            Phase::Warmup { step, of } => {
                self.sampler
                    .warmup_sweep(&mut chain.state, &mut chain.rng, step, of)
            }
            Phase::Sampling => self.sampler.sweep(&mut chain.state, &mut chain.rng),
        }
    }

    fn keep<S: RowSink>(&self, chain: &mut GibbsChain, sink: &mut S) -> Result<(), RuntimeError> {
        let state = &chain.state;
        sink.push(self.sampler.row(state, &mut chain.replicate_rng))?;
        sink.conditional_means(&state.conditional_means, &state.without_mean);
        Ok(())
    }

    fn finish(&self, chain: GibbsChain) -> SweepStats {
        SweepStats {
            nuts: super::moves::nuts_stats(&chain.state.moves),
            step_seconds: chain.state.step_seconds,
        }
    }
}
