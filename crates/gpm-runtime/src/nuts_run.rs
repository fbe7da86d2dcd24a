//! NUTS on the whole model, as a method (`--method nuts`): the No-U-Turn sampler with Stan's and
//! PyMC's step-size and mass-matrix adaptation, through the `nuts-rs` crate that nutpie is built
//! on, on [`crate::nuts`]'s targets (the original model, or the augmented one). The auxiliaries
//! of the augmentation are not used on the original model: this is the sampler the thesis'
//! §7.3 compares Gibbs with. Chains run in parallel, each from its own seed, and hand rows in the
//! Gibbs layout ([`Sampler::layout`]: `lp__`, every latent, `log_lik`, `y_rep`) to the same
//! sinks, so every output of a Gibbs run — chain files, summaries, prediction — is the same for
//! NUTS. Above both [`crate::gibbs`] (whose sampler binds the model) and [`crate::nuts`].

use crate::chains::{run_chains, Kernel, Phase, Ran};
use crate::gibbs::{GibbsConfig, RowSink, Sampler};
use crate::nuts::target::Target;
use crate::nuts::{augmented, refusal, NutsStats, On};
use crate::nuts_control::Metric;
use crate::RuntimeError;
use nuts_rs::{
    Chain, CpuLogpFunc, CpuMath, DiagNutsSettings, EuclideanAdaptOptions, LowRankNutsSettings,
    NutsSettings, Settings,
};
use std::sync::atomic::AtomicBool;

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
pub fn run_into<S: RowSink>(
    sampler: &Sampler,
    on: On,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<Ran<S, NutsStats>, RuntimeError> {
    if let Some(why) = refusal(sampler.schedule(), on) {
        return Err(RuntimeError::Unsupported(why));
    }
    let run = Run {
        target: (sampler, on),
        config,
        progress,
        stop,
        sinks,
    };
    with_metric(config, run)
}

/// A run to start on NUTS's settings, whichever type the metric gives them.
pub(crate) trait MetricTask {
    /// What the run returns.
    type Output;
    /// Run on `settings`.
    fn run<St: Settings>(self, settings: St) -> Self::Output;
}

/// Run `task` on the settings of `config`'s metric: the one place the metric picks a type.
pub(crate) fn with_metric<T: MetricTask>(config: &GibbsConfig, task: T) -> T::Output {
    match config.nuts.metric {
        Metric::Diag => task.run(diag_settings(config)),
        Metric::LowRank => task.run(low_rank_settings(config)),
    }
}

/// A run of NUTS chains on `target` (the model, or a whole log density) into `sinks`.
pub(crate) struct Run<'a, T, S> {
    pub(crate) target: T,
    pub(crate) config: &'a GibbsConfig,
    pub(crate) progress: &'a (dyn Fn(usize, usize) + Sync),
    pub(crate) stop: &'a AtomicBool,
    pub(crate) sinks: Vec<S>,
}

impl<'a, S: RowSink> MetricTask for Run<'a, (&'a Sampler<'a>, On), S> {
    type Output = Result<Ran<S, NutsStats>, RuntimeError>;
    fn run<St: Settings>(self, settings: St) -> Self::Output {
        let (sampler, on) = self.target;
        let kernel = OnModel {
            settings,
            sampler,
            on,
            config: self.config,
        };
        run_chains(&kernel, self.config, self.progress, self.stop, self.sinks)
    }
}

/// One NUTS chain of nuts-rs and what the driver needs of it: its last position and its
/// transitions after warm-up (the chains on the model and on a whole log density alike).
pub(crate) struct NutsChain<C> {
    chain: C,
    /// The position of the last draw.
    pub(crate) position: Box<[f64]>,
    transitions: Transitions,
}

/// A chain of `settings` on `math`, on stream `stream` of `seed`, at `start`, counting its
/// transitions into `stats`.
pub(crate) fn nuts_chain<St: Settings, M: nuts_rs::Math>(
    settings: &St,
    (seed, stream): (u64, u64),
    math: M,
    start: &[f64],
    stats: NutsStats,
) -> Result<NutsChain<St::Chain<M>>, RuntimeError> {
    use nuts_rs::rand::SeedableRng;
    let mut rng = nuts_rs::rand::rngs::StdRng::seed_from_u64(seed ^ stream.rotate_left(32));
    let could_not = |e: String| RuntimeError::Numerical(format!("NUTS could not start: {e}"));
    let mut chain = settings
        .new_chain(stream, math, &mut rng)
        .map_err(|e| could_not(e.to_string()))?;
    chain
        .set_position(start)
        .map_err(|e| could_not(e.to_string()))?;
    Ok(NutsChain {
        chain,
        position: start.into(),
        transitions: Transitions::new(stats),
    })
}

impl<C> NutsChain<C> {
    /// One draw (an adaptation draw in warm-up), its transition counted after warm-up; an
    /// error is nuts-rs's message.
    pub(crate) fn draw<M: nuts_rs::Math>(&mut self, phase: Phase) -> Result<(), String>
    where
        C: Chain<M>,
    {
        let (position, info) = self.chain.draw().map_err(|e| e.to_string())?;
        self.position = position;
        if phase == Phase::Sampling && !info.tuning {
            self.transitions.record(&info);
        }
        Ok(())
    }

    /// The statistics of its transitions after warm-up.
    pub(crate) fn finish(self) -> NutsStats {
        self.transitions.finish()
    }
}

/// NUTS on the model as the chain driver's kernel.
struct OnModel<'s, 'a, St> {
    settings: St,
    sampler: &'s Sampler<'a>,
    on: On,
    config: &'s GibbsConfig,
}

/// One chain on the model: nuts-rs's chain, the map from its positions back to the model's
/// variables, and the replicated responses' stream.
struct ModelChain<'s, C> {
    nuts: NutsChain<C>,
    unwhiten: Target<'s>,
    replicate_rng: rand_chacha::ChaCha8Rng,
}

impl<'s, 'a: 's, St: Settings> Kernel for OnModel<'s, 'a, St> {
    type Chain = ModelChain<'s, St::Chain<CpuMath<Target<'s>>>>;
    type Stats = NutsStats;
    type Error = RuntimeError;

    fn start(&self, stream: u64) -> Result<Self::Chain, RuntimeError> {
        use rand::SeedableRng;
        let seed = self.config.seed;
        let target = Target::new(self.sampler, self.on == On::Augmented)?;
        // The same map kept here to turn positions into latents (`CpuMath` owns `target`).
        let unwhiten = target.clone();
        let start = self.start_position(&unwhiten, stream)?;
        let stats = NutsStats {
            augmented: self.on == On::Augmented,
            max_depth: self.config.nuts.max_depth,
            ..Default::default()
        };
        let math = CpuMath::new(target);
        let nuts = nuts_chain(&self.settings, (seed, stream), math, &start, stats)?;
        let mut replicate_rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6e75_7473);
        replicate_rng.set_stream(stream);
        Ok(ModelChain {
            nuts,
            unwhiten,
            replicate_rng,
        })
    }

    fn step(&self, chain: &mut Self::Chain, phase: Phase) -> Result<(), RuntimeError> {
        chain
            .nuts
            .draw(phase)
            .map_err(|e| RuntimeError::Numerical(format!("NUTS failed: {e}")))
    }

    fn keep<S: RowSink>(&self, chain: &mut Self::Chain, sink: &mut S) -> Result<(), RuntimeError> {
        let point = chain.unwhiten.point(&chain.nuts.position).map_err(|e| {
            RuntimeError::Numerical(format!("NUTS drew a point it cannot map back: {e}"))
        })?;
        let at = (point.latents, point.hypers.as_slice(), point.sparse_v);
        sink.push(self.sampler.row_at(at, &mut chain.replicate_rng)?)
    }

    fn finish(&self, chain: Self::Chain) -> NutsStats {
        chain.nuts.finish()
    }
}

impl<St> OnModel<'_, '_, St> {
    /// Chain `stream`'s start: the latents a draw of their prior (whitened: standard normal),
    /// the chain's own stream; the hyperparameters their start values, moved by up to ±1 on
    /// the unconstrained scale (Stan's inits are uniform on ±2 there) so that the chains start
    /// apart; on the augmented model, the auxiliaries from their own stream.
    fn start_position(&self, target: &Target<'_>, stream: u64) -> Result<Vec<f64>, RuntimeError> {
        use rand::SeedableRng;
        let seed = self.config.seed;
        let mut start_rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        start_rng.set_stream(stream);
        let hyper_start = target.start_u();
        let n_latent = CpuLogpFunc::dim(target) - hyper_start.len() - target.aux_dim();
        let mut start: Vec<f64> = (0..n_latent)
            .map(|_| rand::Rng::sample::<f64, _>(&mut start_rng, rand_distr::StandardNormal))
            .collect();
        for u in hyper_start {
            start.push(u + rand::Rng::gen_range(&mut start_rng, -1.0..1.0));
        }
        start.extend(target.start_aux(&mut augmented::start_rng(seed, stream))?);
        Ok(start)
    }
}
