//! NUTS on the original model (the No-U-Turn sampler of Hoffman & Gelman 2014, with Stan's
//! and PyMC's step-size and diagonal mass-matrix adaptation, through the `nuts-rs` crate that
//! nutpie is built on): the latents in coordinates whitened by their priors
//! ([`crate::whitened`]: `f = μ + L v`, `θ = μ + σ ⊙ v`), where the target is
//! `log p(y | x(v)) − ½|v|²` and its gradient `Lᵀ∇ₓ log p − v` comes from the CAS's derivative
//! of every factor — analytic, no finite differences. The auxiliaries of the augmentation are
//! not used: this is the sampler the thesis' §7.3 compares Gibbs with. Chains run in parallel,
//! each from its own seed, and hand rows in the Gibbs layout ([`Sampler::layout`]: `lp__`,
//! every latent, `log_lik`, `y_rep`) to the same sinks, so every output of a Gibbs run —
//! chain files, summaries, prediction — is the same for NUTS.

use crate::gibbs::{ChainTimes, GibbsConfig, RowSink, Sampler};
use crate::prepared::Prepared;
use crate::whitened::WhitenedBlock;
use crate::RuntimeError;
use gpm_schedule::Schedule;
use nalgebra::{DMatrix, DVector};
use nuts_rs::{Chain, CpuLogpFunc, CpuMath, CpuMathError, DiagNutsSettings, HasDims, Settings};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest tree depth (Stan's default: at most 2¹⁰ − 1 leapfrog steps a draw).
pub const MAX_DEPTH: u64 = 10;

/// What one chain's transitions did, as Stan reports them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NutsStats {
    /// Divergent transitions after warm-up.
    pub divergences: usize,
    /// Transitions after warm-up that reached the largest tree depth.
    pub max_depth_hits: usize,
    /// The adapted step size.
    pub step_size: f64,
    /// Mean leapfrog steps per draw after warm-up.
    pub mean_steps: f64,
}

/// Why NUTS cannot run this model (`None`: it can): it needs the gradient of every factor and
/// full GP or dense blocks (the particle flow's conditions, [`crate::gpf::steps`]), and its
/// hyperparameters fixed or learned.
pub fn refusal(schedule: &Schedule) -> Option<String> {
    // The flow's schedule says where a factor's gradient or a full prior is missing.
    if let Err(why) = &schedule.gpf {
        return Some(format!(
            "NUTS needs every factor's gradient and full GP or normal priors: {why}; use --method gibbs"
        ));
    }
    let sampled = schedule.sampled_hypers();
    if let Some(h) = sampled.first() {
        return Some(format!(
            "NUTS with sampled hyperparameters (`{}` has a prior) is not built yet: fix them or declare them `learn(...)` (type-II ML before sampling), or use --method gibbs",
            schedule.hyper_decls[h.0].name
        ));
    }
    None
}

/// The whitened target of one chain. Cloned cheaply: the blocks (each a GP's `N × N` factor)
/// are shared between `CpuMath`'s copy and the one that maps draws back to latents.
#[derive(Clone)]
struct Target<'a> {
    prep: &'a Prepared,
    schedule: &'a Schedule,
    blocks: std::sync::Arc<Vec<WhitenedBlock<'a>>>,
    hypers: Vec<f64>,
}

/// A position where the log density is not finite: the transition is a divergence.
#[derive(Debug, thiserror::Error)]
#[error("the log density is not finite here")]
struct NotFinite;

impl nuts_rs::LogpError for NotFinite {
    fn is_recoverable(&self) -> bool {
        true
    }
}

impl<'a> Target<'a> {
    fn new(sampler: &'a Sampler) -> Result<Self, RuntimeError> {
        let prep = sampler.prepared();
        Ok(Target {
            prep,
            schedule: sampler.schedule(),
            blocks: std::sync::Arc::new(
                prep.blocks
                    .iter()
                    .map(WhitenedBlock::new)
                    .collect::<Result<_, _>>()?,
            ),
            hypers: prep.hypers.clone(),
        })
    }

    /// The latents at the whitened position.
    fn latents(&self, position: &[f64]) -> Vec<DVector<f64>> {
        let mut latents: Vec<DVector<f64>> = self
            .prep
            .latents
            .iter()
            .map(|l| DVector::zeros(l.1))
            .collect();
        let mut at = 0;
        for b in self.blocks.iter() {
            let d = b.dim();
            let v = DMatrix::from_column_slice(d, 1, &position[at..at + d]);
            b.coords
                .set(&mut latents, &b.values(&v).column(0).into_owned());
            at += d;
        }
        latents
    }
}

impl HasDims for Target<'_> {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        HashMap::from([("unconstrained_parameter".to_string(), self.dim() as u64)])
    }
}

impl CpuLogpFunc for Target<'_> {
    type LogpError = NotFinite;
    type ExpandedVector = Vec<f64>;
    type FlowParameters = ();

    fn dim(&self) -> usize {
        self.blocks.iter().map(WhitenedBlock::dim).sum()
    }

    /// `log p(y | x(v)) − ½|v|²` and `Lᵀ∇ₓ log p(y | x) − v`, block by block.
    fn logp(&mut self, position: &[f64], grad: &mut [f64]) -> Result<f64, NotFinite> {
        let latents = self.latents(position);
        let (ll, g) =
            crate::whitened::log_lik_grad(self.prep, self.schedule, &latents, &self.hypers)
                .map_err(|_| NotFinite)?;
        let mut at = 0;
        for b in self.blocks.iter() {
            let d = b.dim();
            let gx = b.coords.get(&g);
            let gv = b.pullback(&DMatrix::from_column_slice(d, 1, gx.as_slice()));
            for i in 0..d {
                grad[at + i] = gv[(i, 0)] - position[at + i];
            }
            at += d;
        }
        let lp = ll - 0.5 * position.iter().map(|v| v * v).sum::<f64>();
        if lp.is_finite() && grad.iter().all(|x| x.is_finite()) {
            Ok(lp)
        } else {
            Err(NotFinite)
        }
    }

    fn expand_vector<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        position: &[f64],
    ) -> Result<Vec<f64>, CpuMathError> {
        Ok(position.to_vec())
    }
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
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<(Vec<(S, ChainTimes, NutsStats)>, usize), RuntimeError> {
    if let Some(why) = refusal(sampler.schedule()) {
        return Err(RuntimeError::Unsupported(why));
    }
    crate::gibbs::check_run(config, sinks.len())?;
    let results = sinks
        .into_par_iter()
        .enumerate()
        .map(|(c, sink)| run_chain(sampler, config, c, progress, stop, sink))
        .collect::<Result<Vec<_>, RuntimeError>>()?;
    crate::gibbs::complete_draws(results)
}

/// One chain: its sink, times, statistics and the draws it kept.
fn run_chain<S: RowSink>(
    sampler: &Sampler,
    config: &GibbsConfig,
    c: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    mut sink: S,
) -> Result<(S, ChainTimes, NutsStats, usize), RuntimeError> {
    use nuts_rs::rand::SeedableRng;
    use rand::SeedableRng as _;
    let stream = (config.first_chain + c) as u64;
    let target = Target::new(sampler)?;
    // The same map kept here to turn positions into latents (`CpuMath` owns `target`).
    let unwhiten = target.clone();
    let dim = CpuLogpFunc::dim(&target);
    let mut settings = DiagNutsSettings::default();
    settings.num_tune = config.warmup as u64;
    settings.num_draws = (config.draws * config.thin) as u64;
    settings.maxdepth = MAX_DEPTH;
    settings.seed = config.seed;
    let mut rng = nuts_rs::rand::rngs::StdRng::seed_from_u64(config.seed ^ stream.rotate_left(32));
    let mut chain = settings
        .new_chain(stream, CpuMath::new(target), &mut rng)
        .map_err(|e| RuntimeError::Numerical(format!("NUTS could not start: {e}")))?;
    // The start: a draw of the prior (whitened: standard normal), the chain's own stream.
    let mut start_rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed);
    start_rng.set_stream(stream);
    let start: Vec<f64> = (0..dim)
        .map(|_| rand::Rng::sample::<f64, _>(&mut start_rng, rand_distr::StandardNormal))
        .collect();
    chain
        .set_position(&start)
        .map_err(|e| RuntimeError::Numerical(format!("NUTS could not start: {e}")))?;
    let mut replicate_rng = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed ^ 0x6e75_7473);
    replicate_rng.set_stream(stream);
    let t0 = std::time::Instant::now();
    let (mut warmup_seconds, mut kept) = (0.0, 0);
    let mut stats = NutsStats::default();
    let (mut steps, mut sampled) = (0u64, 0u64);
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
        sampled += 1;
        steps += info.num_steps;
        stats.step_size = info.step_size;
        stats.divergences += usize::from(info.diverging);
        stats.max_depth_hits += usize::from(info.num_steps + 1 >= 1 << MAX_DEPTH);
        if (s + 1 - config.warmup) % config.thin == 0 {
            let latents = unwhiten.latents(&position);
            sink.push(sampler.row_at(latents, &mut replicate_rng))?;
            kept += 1;
        }
    }
    stats.mean_steps = steps as f64 / sampled.max(1) as f64;
    let times = ChainTimes {
        warmup_seconds,
        sampling_seconds: t0.elapsed().as_secs_f64() - warmup_seconds,
    };
    Ok((sink, times, stats, kept))
}
