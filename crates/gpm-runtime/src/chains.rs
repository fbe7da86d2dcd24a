//! Running chains of a Markov kernel — the one driver of every sampler (NumPyro's `MCMC` over an
//! `MCMCKernel`; BlackJAX's `init`/`step` pair): chains in parallel, each on its own stream
//! (`config.first_chain + k`), warm-up then kept steps, every `thin`-th row handed to the
//! chain's [`RowSink`] as it is made, a stop request ending every chain after its current step,
//! and the chains cut to the same number of draws. The driver knows no kernel: a Gibbs sweep of
//! the schedule's moves ([`crate::gibbs`]), NUTS on the model ([`crate::nuts_run`]) and NUTS on
//! a whole Stan log density ([`crate::density_nuts`]) are each a [`Kernel`] — what a chain
//! starts from, one step, the row it keeps and what it reports. Below all three.

use crate::RuntimeError;
use nalgebra::DVector;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Settings of a run of chains (Gibbs, or NUTS on the model or a whole log density).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GibbsConfig {
    /// Number of chains (run in parallel).
    pub chains: usize,
    /// Warm-up sweeps per chain (discarded).
    pub warmup: usize,
    /// Kept draws per chain.
    pub draws: usize,
    /// Keep every `thin`-th sweep.
    pub thin: usize,
    /// Seed.
    pub seed: u64,
    /// The first chain's number: chain `k` of this run draws from stream `first_chain + k`,
    /// so that runs of a few chains each (tasks on a cluster) make the chains one run of all
    /// of them would.
    pub first_chain: usize,
    /// NUTS's target acceptance and tree depth, where NUTS runs on the whole model (a Gibbs
    /// sweep's NUTS step takes its settings from the schedule).
    pub nuts: crate::nuts_control::NutsControl,
}

/// Where one chain's draws go, row by row as they are made: kept in memory
/// (`Vec<Vec<f64>>`), or written to a file by the caller so that memory stays flat in the
/// number of draws (the runtime never opens a file itself).
pub trait RowSink: Send {
    /// Take one draw row.
    fn push(&mut self, row: Vec<f64>) -> Result<(), RuntimeError>;
    /// Keep only the first `rows` rows (chains of an interrupted run are cut to the shortest).
    fn truncate(&mut self, rows: usize) -> Result<(), RuntimeError>;
    /// The latents' conditional means at the draw just pushed, and which latents have none
    /// ([`crate::gibbs::State::conditional_means`]); a sink that reports Rao-Blackwellised
    /// means keeps them.
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

/// Which part of a chain a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Warm-up step `step` (from 1) of `of`: the kernel adapts.
    Warmup { step: usize, of: usize },
    /// A step after warm-up: the kernel holds what it adapted.
    Sampling,
}

/// A Markov kernel the driver runs chains of.
pub(crate) trait Kernel: Sync {
    /// One chain's state (its position, streams and adaptation).
    type Chain;
    /// What a chain reports besides its draws.
    type Stats: Send;
    /// Its errors (a runtime error among them).
    type Error: From<RuntimeError> + Send;

    /// The state of the chain on stream `stream`, before its first step.
    fn start(&self, stream: u64) -> Result<Self::Chain, Self::Error>;

    /// One step of the chain.
    fn step(&self, chain: &mut Self::Chain, phase: Phase) -> Result<(), Self::Error>;

    /// Hand the chain's current draw to `sink` (a kept step after warm-up).
    fn keep<S: RowSink>(&self, chain: &mut Self::Chain, sink: &mut S) -> Result<(), Self::Error>;

    /// What the chain reports at its end.
    fn finish(&self, chain: Self::Chain) -> Self::Stats;
}

/// What a run of chains returns: the chains that kept draws, each with its sink, times and
/// statistics, and the number of draws each kept (the same for all: cut to the shortest).
pub type Ran<S, X> = (Vec<(S, ChainTimes, X)>, usize);

/// Run `config.chains` chains of `kernel` in parallel into `sinks` (one per chain, in chain
/// order): `config.warmup` warm-up steps, then `config.draws × config.thin` steps of which every
/// `thin`-th is kept; `progress(chain, step)` after every step; `stop` ends every chain after
/// its current step, and the chains keep the draws they have ([`complete_draws`]).
pub(crate) fn run_chains<K: Kernel, S: RowSink>(
    kernel: &K,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<Ran<S, K::Stats>, K::Error> {
    check_run(config, sinks.len())?;
    let results = sinks
        .into_par_iter()
        .enumerate()
        .map(|(c, sink)| one_chain(kernel, config, (c, sink), progress, stop))
        .collect::<Result<Vec<_>, K::Error>>()?;
    Ok(complete_draws(results)?)
}

/// Chain `c` into its sink: its sink, times, statistics and the draws it kept.
fn one_chain<K: Kernel, S: RowSink>(
    kernel: &K,
    config: &GibbsConfig,
    (c, mut sink): (usize, S),
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
) -> Result<(S, ChainTimes, K::Stats, usize), K::Error> {
    let mut chain = kernel.start((config.first_chain + c) as u64)?;
    let t0 = std::time::Instant::now();
    let (mut warmup_seconds, mut warmed, mut kept) = (0.0, config.warmup == 0, 0);
    for s in 0..config.warmup + config.draws * config.thin {
        // A stop request ends the chain with the draws it has (not an error: an interrupted
        // run writes what it drew).
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let phase = if s < config.warmup {
            Phase::Warmup {
                step: s + 1,
                of: config.warmup,
            }
        } else {
            Phase::Sampling
        };
        kernel.step(&mut chain, phase)?;
        if s + 1 == config.warmup {
            warmup_seconds = t0.elapsed().as_secs_f64();
            warmed = true;
        }
        if s >= config.warmup && (s + 1 - config.warmup).is_multiple_of(config.thin) {
            kernel.keep(&mut chain, &mut sink)?;
            kept += 1;
        }
        progress(c, s + 1);
    }
    if !warmed {
        // Stopped in warm-up: all its time was warm-up.
        warmup_seconds = t0.elapsed().as_secs_f64();
    }
    let times = ChainTimes {
        warmup_seconds,
        sampling_seconds: t0.elapsed().as_secs_f64() - warmup_seconds,
    };
    Ok((sink, times, kernel.finish(chain), kept))
}

/// How many chains run at once: one per thread of the pool, at most the chains.
pub(crate) fn at_once(config: &GibbsConfig) -> usize {
    config.chains.min(rayon::current_num_threads())
}

/// The settings of a run of chains and its sinks, checked before any chain starts.
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
pub(crate) fn complete_draws<S: RowSink, X>(
    results: Vec<(S, ChainTimes, X, usize)>,
) -> Result<Ran<S, X>, RuntimeError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel whose chain counts its steps: a kept row is `[stream, warm-up steps seen,
    /// sampling steps seen]`, so the driver's phases, thinning and streams can be read off.
    struct Counter;

    impl Kernel for Counter {
        type Chain = (u64, usize, usize);
        type Stats = usize;
        type Error = RuntimeError;
        fn start(&self, stream: u64) -> Result<Self::Chain, RuntimeError> {
            Ok((stream, 0, 0))
        }
        fn step(&self, chain: &mut Self::Chain, phase: Phase) -> Result<(), RuntimeError> {
            match phase {
                Phase::Warmup { step, of } => {
                    assert_eq!(step, chain.1 + 1);
                    assert_eq!(of, 3);
                    chain.1 += 1;
                }
                Phase::Sampling => chain.2 += 1,
            }
            Ok(())
        }
        fn keep<S: RowSink>(&self, c: &mut Self::Chain, sink: &mut S) -> Result<(), RuntimeError> {
            sink.push(vec![c.0 as f64, c.1 as f64, c.2 as f64])
        }
        fn finish(&self, chain: Self::Chain) -> usize {
            chain.1 + chain.2
        }
    }

    fn config(chains: usize) -> GibbsConfig {
        GibbsConfig {
            chains,
            warmup: 3,
            draws: 4,
            thin: 2,
            seed: 1,
            first_chain: 5,
            nuts: Default::default(),
        }
    }

    #[test]
    fn warm_up_then_every_thin_th_step_on_each_chains_stream() {
        let sinks = vec![Vec::new(), Vec::new()];
        let stop = AtomicBool::new(false);
        let (chains, kept) = run_chains(&Counter, &config(2), &|_, _| {}, &stop, sinks).unwrap();
        assert_eq!(kept, 4);
        for (k, (rows, _, steps)) in chains.iter().enumerate() {
            assert_eq!(*steps, 3 + 8);
            let expected: Vec<Vec<f64>> = (1..=4)
                .map(|d| vec![(5 + k) as f64, 3.0, (2 * d) as f64])
                .collect();
            assert_eq!(rows, &expected);
        }
    }

    #[test]
    fn a_stop_keeps_complete_draws_and_a_bad_setting_is_refused() {
        let stop = AtomicBool::new(false);
        // Stop after the chain's sixth step: warm-up 3, then 3 sampling steps, one kept.
        let progress = |_: usize, s: usize| {
            if s == 6 {
                stop.store(true, Ordering::Relaxed);
            }
        };
        let (chains, kept) =
            run_chains(&Counter, &config(1), &progress, &stop, vec![Vec::new()]).unwrap();
        assert_eq!(kept, 1);
        assert_eq!(chains[0].0, vec![vec![5.0, 3.0, 2.0]]);
        let mut bad = config(1);
        bad.thin = 0;
        let refused = run_chains(
            &Counter,
            &bad,
            &|_, _| {},
            &stop,
            vec![Vec::<Vec<f64>>::new()],
        );
        assert!(matches!(refused, Err(RuntimeError::Settings(_))));
    }
}
