//! NUTS on the whole model, as a method (`--method nuts`): the No-U-Turn sampler with Stan's and
//! PyMC's step-size and mass-matrix adaptation, through the `nuts-rs` crate that nutpie is built
//! on, on [`crate::nuts`]'s targets (the original model, or the augmented one). The auxiliaries
//! of the augmentation are not used on the original model: this is the sampler the thesis'
//! §7.3 compares Gibbs with. Chains run in parallel, each from its own seed, and hand rows in the
//! Gibbs layout ([`Sampler::layout`]: `lp__`, every latent, `log_lik`, `y_rep`) to the same
//! sinks, so every output of a Gibbs run — chain files, summaries, prediction — is the same for
//! NUTS. Above both [`crate::gibbs`] (whose sampler binds the model) and [`crate::nuts`].

use crate::gibbs::{ChainTimes, GibbsConfig, RowSink, Sampler};
use crate::nuts::target::Target;
use crate::nuts::{augmented, refusal, NutsStats, On};
use crate::nuts_control::Metric;
use crate::RuntimeError;
use nuts_rs::{
    Chain, CpuLogpFunc, CpuMath, DiagNutsSettings, EuclideanAdaptOptions, LowRankNutsSettings,
    NutsSettings, Settings,
};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// NUTS's settings for a run of `config` with the diagonal metric: Stan's tree depth, and the
/// mass matrix from the draws' variances as Stan and NumPyro estimate it rather than nutpie's
/// default from the draws' and gradients' variances — on the four fixed-kernel benchmark GPs
/// the worst coordinate's ESS per second rose 1.05-2.7× (Student-t GP on diabetes 117 → 317, GP
/// classifier 277 → 404, Laplace GP 47 → 89, Poisson GP 681 → 716; 2 chains × 1 000 after
/// 1 000 warm-up; docs/inference.md, "NUTS"). Shared by NUTS on the model and on a whole
/// Stan log density ([`crate::density_nuts`]).
pub(crate) fn diag_settings(config: &GibbsConfig) -> DiagNutsSettings {
    let mut settings = controlled(DiagNutsSettings::default(), config);
    settings
        .adapt_options
        .mass_matrix_options
        .use_grad_based_estimate = false;
    settings
}

/// The same with the low-rank modified mass matrix ([`crate::nuts_control::Metric::LowRank`]),
/// at nutpie's defaults for it.
pub(crate) fn low_rank_settings(config: &GibbsConfig) -> LowRankNutsSettings {
    controlled(LowRankNutsSettings::default(), config)
}

/// `settings` with the run's lengths, seed and the user's controls.
fn controlled<A>(
    settings: NutsSettings<EuclideanAdaptOptions<A>>,
    config: &GibbsConfig,
) -> NutsSettings<EuclideanAdaptOptions<A>>
where
    A: std::fmt::Debug + Copy + Default + serde::Serialize,
{
    let mut settings = NutsSettings {
        num_tune: config.warmup as u64,
        num_draws: (config.draws * config.thin) as u64,
        maxdepth: config.nuts.max_depth,
        seed: config.seed,
        ..settings
    };
    settings.adapt_options.step_size_settings.target_accept = config.nuts.adapt_delta;
    settings
}

/// A chain's transitions after warm-up, counted as Stan reports them.
pub(crate) struct Transitions {
    stats: NutsStats,
    steps: u64,
    sampled: u64,
}

impl Transitions {
    /// Counting from `stats` (its flags set).
    pub(crate) fn new(stats: NutsStats) -> Transitions {
        Transitions {
            stats,
            steps: 0,
            sampled: 0,
        }
    }

    /// One transition after warm-up.
    pub(crate) fn record(&mut self, info: &nuts_rs::Progress) {
        self.sampled += 1;
        self.steps += info.num_steps;
        self.stats.step_size = info.step_size;
        self.stats.divergences += usize::from(info.diverging);
        let full = 1u64
            .checked_shl(self.stats.max_depth as u32)
            .unwrap_or(u64::MAX);
        self.stats.max_depth_hits += usize::from(info.num_steps + 1 >= full);
    }

    /// The statistics, with the mean number of leapfrog steps.
    pub(crate) fn finish(mut self) -> NutsStats {
        self.stats.mean_steps = self.steps as f64 / self.sampled.max(1) as f64;
        self.stats
    }
}

/// The number of coordinates NUTS moves: every latent block's whitened values, then each
/// sampled hyperparameter's unconstrained value in [`Schedule::sampled_hypers`]'s order, then
/// on the augmented model each auxiliary's `log ω` (factor by factor, auxiliary by auxiliary,
/// observation by observation).
pub fn dimension(sampler: &Sampler, on: On) -> Result<usize, RuntimeError> {
    let t = Target::new(sampler, on == On::Augmented)?;
    Ok(CpuLogpFunc::dim(&t))
}

/// NUTS's log density (up to a constant) and its gradient at a position of
/// [`dimension`] coordinates — what the sampler moves on (BridgeStan's
/// `log_density_gradient`), for checks.
pub fn log_density_gradient(
    sampler: &Sampler,
    on: On,
    position: &[f64],
) -> Result<(f64, Vec<f64>), RuntimeError> {
    let t = Target::new(sampler, on == On::Augmented)?;
    let dim = CpuLogpFunc::dim(&t);
    if position.len() != dim {
        return Err(RuntimeError::BadData(format!(
            "a position of NUTS's target has {dim} coordinates, not {}",
            position.len()
        )));
    }
    let mut grad = vec![0.0; dim];
    let lp = t.log_density(position, &mut grad)?;
    Ok((lp, grad))
}

/// Run `config.chains` chains of NUTS in parallel into `sinks` (one per chain): `config.warmup`
/// adaptation draws, then `config.draws × config.thin` draws of which every `thin`-th is kept;
/// `stop` ends every chain after its current draw. Chain `k` starts from a draw of the prior
/// and uses seed `config.seed` with stream `config.first_chain + k`, reproducibly at any
/// thread count. Returns the chains that kept draws, with their times and statistics, and the
/// number of draws each kept.
#[allow(clippy::type_complexity)]
pub fn run_into<S: RowSink>(
    sampler: &Sampler,
    on: On,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<(Vec<(S, ChainTimes, NutsStats)>, usize), RuntimeError> {
    if let Some(why) = refusal(sampler.schedule(), on) {
        return Err(RuntimeError::Unsupported(why));
    }
    crate::gibbs::check_run(config, sinks.len())?;
    let results = sinks
        .into_par_iter()
        .enumerate()
        .map(|(c, sink)| {
            let chain = OneChain {
                target: (sampler, on),
                config,
                c,
                progress,
                stop,
                sink,
            };
            with_metric(config, chain)
        })
        .collect::<Result<Vec<_>, RuntimeError>>()?;
    crate::gibbs::complete_draws(results)
}

/// A chain to run on NUTS's settings, whichever type the metric gives them.
pub(crate) trait ChainTask {
    /// What the chain returns.
    type Output;
    /// Run on `settings`.
    fn run<St: Settings>(self, settings: St) -> Self::Output;
}

/// Run `task` on the settings of `config`'s metric: the one place the metric picks a type.
pub(crate) fn with_metric<T: ChainTask>(config: &GibbsConfig, task: T) -> T::Output {
    match config.nuts.metric {
        Metric::Diag => task.run(diag_settings(config)),
        Metric::LowRank => task.run(low_rank_settings(config)),
    }
}

/// One chain of NUTS on `target` (the model, or a whole log density): which chain, where its
/// progress and rows go.
pub(crate) struct OneChain<'a, T, S> {
    pub(crate) target: T,
    pub(crate) config: &'a GibbsConfig,
    pub(crate) c: usize,
    pub(crate) progress: &'a (dyn Fn(usize, usize) + Sync),
    pub(crate) stop: &'a AtomicBool,
    pub(crate) sink: S,
}

impl<'a, S: RowSink> ChainTask for OneChain<'a, (&'a Sampler<'a>, On), S> {
    type Output = Result<(S, ChainTimes, NutsStats, usize), RuntimeError>;
    fn run<St: Settings>(self, settings: St) -> Self::Output {
        run_chain(settings, self)
    }
}

/// One chain: its sink, times, statistics and the draws it kept.
fn run_chain<St: Settings, S: RowSink>(
    settings: St,
    task: OneChain<'_, (&Sampler, On), S>,
) -> Result<(S, ChainTimes, NutsStats, usize), RuntimeError> {
    let OneChain {
        target: (sampler, on),
        config,
        c,
        progress,
        stop,
        mut sink,
    } = task;
    use nuts_rs::rand::SeedableRng;
    use rand::SeedableRng as _;
    let stream = (config.first_chain + c) as u64;
    let target = Target::new(sampler, on == On::Augmented)?;
    // The same map kept here to turn positions into latents (`CpuMath` owns `target`).
    let unwhiten = target.clone();
    let dim = CpuLogpFunc::dim(&target);
    let mut rng = nuts_rs::rand::rngs::StdRng::seed_from_u64(config.seed ^ stream.rotate_left(32));
    let mut chain = settings
        .new_chain(stream, CpuMath::new(target), &mut rng)
        .map_err(|e| RuntimeError::Numerical(format!("NUTS could not start: {e}")))?;
    // The start: the latents a draw of their prior (whitened: standard normal), the chain's own
    // stream; the hyperparameters their start values, moved by up to ±1 on the unconstrained
    // scale (Stan's inits are uniform on ±2 there) so that the chains start apart.
    let mut start_rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed);
    start_rng.set_stream(stream);
    let hyper_start = unwhiten.start_u();
    let n_latent = dim - hyper_start.len() - unwhiten.aux_dim();
    let mut start: Vec<f64> = (0..n_latent)
        .map(|_| rand::Rng::sample::<f64, _>(&mut start_rng, rand_distr::StandardNormal))
        .collect();
    for u in hyper_start {
        start.push(u + rand::Rng::gen_range(&mut start_rng, -1.0..1.0));
    }
    start.extend(unwhiten.start_aux(&mut augmented::start_rng(config.seed, stream))?);
    chain
        .set_position(&start)
        .map_err(|e| RuntimeError::Numerical(format!("NUTS could not start: {e}")))?;
    let mut replicate_rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed ^ 0x6e75_7473);
    replicate_rng.set_stream(stream);
    let t0 = std::time::Instant::now();
    let (mut warmup_seconds, mut kept) = (0.0, 0);
    let mut transitions = Transitions::new(NutsStats {
        augmented: on == On::Augmented,
        max_depth: config.nuts.max_depth,
        ..Default::default()
    });
    let total = config.warmup + config.draws * config.thin;
    for s in 0..total {
        // A stop request ends the chain with the draws it has, as Gibbs's chains do (not an
        // error: an interrupted run writes what it drew).
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let (position, info) = chain
            .draw()
            .map_err(|e| RuntimeError::Numerical(format!("NUTS failed: {e}")))?;
        progress(c, s + 1);
        if s + 1 == config.warmup {
            warmup_seconds = t0.elapsed().as_secs_f64();
        }
        if info.tuning || s < config.warmup {
            continue;
        }
        transitions.record(&info);
        if (s + 1 - config.warmup).is_multiple_of(config.thin) {
            let point = unwhiten.point(&position).map_err(|e| {
                RuntimeError::Numerical(format!("NUTS drew a point it cannot map back: {e}"))
            })?;
            let at = (point.latents, point.hypers.as_slice(), point.sparse_v);
            sink.push(sampler.row_at(at, &mut replicate_rng)?)?;
            kept += 1;
        }
    }
    let stats = transitions.finish();
    let times = ChainTimes {
        warmup_seconds,
        sampling_seconds: t0.elapsed().as_secs_f64() - warmup_seconds,
    };
    Ok((sink, times, stats, kept))
}
