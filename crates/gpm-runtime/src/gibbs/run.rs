//! Running chains: each on its own counter-based stream (ChaCha8, stream = the chain's number),
//! in parallel, warm-up then kept sweeps, each row handed to the chain's [`RowSink`] as it is
//! made; a stop request ends every chain after its current sweep.

use super::*;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where one chain's draws go, row by row as they are made: kept in memory
/// (`Vec<Vec<f64>>`), or written to a file by the caller so that memory stays flat in the
/// number of draws (the runtime never opens a file itself).
pub trait RowSink: Send {
    /// Take one draw row.
    fn push(&mut self, row: Vec<f64>) -> Result<(), RuntimeError>;
    /// Keep only the first `rows` rows (chains of an interrupted run are cut to the shortest).
    fn truncate(&mut self, rows: usize) -> Result<(), RuntimeError>;
    /// The latents' conditional means at the draw just pushed, and which latents have none
    /// ([`State::conditional_means`]); a sink that reports Rao-Blackwellised means keeps them.
    fn conditional_means(&mut self, _means: &[DVector<f64>], _without: &[bool]) {}
}

impl RowSink for Vec<Vec<f64>> {
    fn push(&mut self, row: Vec<f64>) -> Result<(), RuntimeError> {
        Vec::push(self, row);
        Ok(())
    }
    fn truncate(&mut self, rows: usize) -> Result<(), RuntimeError> {
        Vec::truncate(self, rows);
        Ok(())
    }
}

/// What a chain did, besides its draws.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ChainTimes {
    /// Seconds spent in warm-up.
    pub warmup_seconds: f64,
    /// Seconds spent sampling.
    pub sampling_seconds: f64,
}

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
#[allow(clippy::type_complexity)]
pub fn run_into<S: RowSink>(
    sampler: &Sampler,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<(Vec<(S, ChainTimes, SweepStats)>, usize), RuntimeError> {
    let stopped = || stop.load(Ordering::Relaxed);
    check_run(config, sinks.len())?;
    sampler.prepared().memory.refuse_beyond(at_once(config))?;
    let results = sinks
        .into_par_iter()
        .enumerate()
        .map(|(c, mut sink)| {
            let stream = (config.first_chain + c) as u64;
            let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
            rng.set_stream(stream);
            let mut state = sampler.start(&mut rng);
            // Replicated responses have a stream of their own, so that asking for them leaves
            // the chain's draws unchanged.
            let mut replicate_rng = ChaCha8Rng::seed_from_u64(config.seed ^ REPLICATE_SEED);
            replicate_rng.set_stream(stream);
            let t0 = std::time::Instant::now();
            for s in 0..config.warmup {
                if stopped() {
                    break;
                }
                sampler.warmup_sweep(&mut state, &mut rng, s + 1, config.warmup)?;
                progress(c, s + 1);
            }
            let warmup_seconds = t0.elapsed().as_secs_f64();
            let t1 = std::time::Instant::now();
            let mut kept = 0;
            for s in 0..config.draws * config.thin {
                if stopped() {
                    break;
                }
                sampler.sweep(&mut state, &mut rng)?;
                if (s + 1) % config.thin == 0 {
                    sink.push(sampler.row(&state, &mut replicate_rng))?;
                    sink.conditional_means(&state.conditional_means, &state.without_mean);
                    kept += 1;
                }
                progress(c, config.warmup + s + 1);
            }
            let times = ChainTimes {
                warmup_seconds,
                sampling_seconds: t1.elapsed().as_secs_f64(),
            };
            let stats = SweepStats {
                nuts: super::moves::nuts_stats(&state.moves),
                step_seconds: state.step_seconds,
            };
            Ok((sink, times, stats, kept))
        })
        .collect::<Result<Vec<_>, RuntimeError>>()?;
    complete_draws(results)
}

/// How many chains run at once: one per thread of the pool, at most the chains.
pub(crate) fn at_once(config: &GibbsConfig) -> usize {
    config.chains.min(rayon::current_num_threads())
}

/// The settings of a run of chains and its sinks, checked before any chain starts (Gibbs's and
/// NUTS's runners).
pub(crate) fn check_run(config: &GibbsConfig, sinks: usize) -> Result<(), RuntimeError> {
    if config.chains == 0 || config.draws == 0 || config.thin == 0 {
        return Err(RuntimeError::Settings(
            "chains, draws and thin must be at least 1".into(),
        ));
    }
    if sinks != config.chains {
        return Err(RuntimeError::Inconsistent(format!(
            "{sinks} sinks for {} chains",
            config.chains
        )));
    }
    Ok(())
}

/// Chains that kept draws, each cut to the shortest, and that number: with more chains than
/// threads the last ones may not have started when a run is stopped, and every chain must have
/// the same number of complete draws. Each result is `(sink, times, what else, draws kept)`.
#[allow(clippy::type_complexity)]
pub(crate) fn complete_draws<S: RowSink, X>(
    results: Vec<(S, ChainTimes, X, usize)>,
) -> Result<(Vec<(S, ChainTimes, X)>, usize), RuntimeError> {
    let kept = results
        .iter()
        .map(|r| r.3)
        .filter(|&k| k > 0)
        .min()
        .unwrap_or(0);
    let mut chains = Vec::with_capacity(results.len());
    for (mut sink, times, x, k) in results {
        if k == 0 {
            continue;
        }
        sink.truncate(kept)?;
        chains.push((sink, times, x));
    }
    Ok((chains, kept))
}
