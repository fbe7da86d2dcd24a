//! NUTS on a whole Stan log density ([`gpm_density::Model`]): the path of a program with no
//! Gaussian-latent structure. Every parameter moves on its unconstrained scale with the
//! tape's gradient; adaptation, tree depth and the mass-matrix estimate are those of
//! [`crate::nuts`] (Stan's defaults). Chains run in parallel, chain `k` on seed `seed` and
//! stream `first_chain + k`, reproducibly at any thread count; each row is `lp__` then the
//! program's output columns ([`gpm_density::Model::row`]).

use crate::gibbs::{ChainTimes, GibbsConfig, RowSink};
use crate::nuts::NutsStats;
use crate::nuts_run::{with_metric, ChainTask, OneChain, Transitions};
use crate::RuntimeError;
use gpm_density::{EvalError, Model};
use nuts_rs::{Chain, CpuLogpFunc, CpuMath, CpuMathError, HasDims, Settings};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Draws of a start point (uniform on ±2 on the unconstrained scale, as Stan's) tried before
/// the run is refused.
const START_TRIES: usize = 100;

/// Why a log density could not be evaluated: a rejection (the sampler moves on) or an error
/// in the program (the run stops with its message).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String, bool);

impl nuts_rs::LogpError for Failed {
    fn is_recoverable(&self) -> bool {
        self.1
    }
}

struct Target {
    model: Arc<Model>,
    /// The first error that was not a rejection, kept for the message.
    fatal: Arc<Mutex<Option<EvalError>>>,
}

impl HasDims for Target {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        HashMap::from([(
            "unconstrained_parameter".to_string(),
            self.model.dim() as u64,
        )])
    }
}

impl CpuLogpFunc for Target {
    type LogpError = Failed;
    type ExpandedVector = Vec<f64>;
    type FlowParameters = ();

    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn logp(&mut self, position: &[f64], grad: &mut [f64]) -> Result<f64, Failed> {
        match self.model.log_density_gradient(position, grad) {
            Ok(lp) if lp.is_finite() && grad.iter().all(|g| g.is_finite()) => Ok(lp),
            Ok(_) => Err(Failed("not finite".into(), true)),
            Err(e) if e.rejection => Err(Failed(e.message, true)),
            Err(e) => {
                let message = e.message.clone();
                if let Ok(mut f) = self.fatal.lock() {
                    f.get_or_insert(e);
                }
                Err(Failed(message, false))
            }
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

/// Why the run failed: the program's own error (with its span) or the sampler's.
#[derive(Debug)]
pub enum DensityRunError {
    /// The program could not be evaluated (an index out of range, sizes that do not match).
    Program(EvalError),
    /// Anything else.
    Runtime(RuntimeError),
}

impl From<RuntimeError> for DensityRunError {
    fn from(e: RuntimeError) -> Self {
        DensityRunError::Runtime(e)
    }
}

/// Run `config.chains` chains into `sinks`; `stop` ends every chain after its current draw.
/// Returns the chains that kept draws with their times and statistics, and the draws each kept.
#[allow(clippy::type_complexity)]
pub fn run_into<S: RowSink>(
    model: &Arc<Model>,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<(Vec<(S, ChainTimes, NutsStats)>, usize), DensityRunError> {
    crate::gibbs::check_run(config, sinks.len())?;
    let results = sinks
        .into_par_iter()
        .enumerate()
        .map(|(c, sink)| {
            let chain = OneChain {
                target: model,
                config,
                c,
                progress,
                stop,
                sink,
            };
            with_metric(config, chain)
        })
        .collect::<Result<Vec<_>, DensityRunError>>()?;
    Ok(crate::gibbs::complete_draws(results)?)
}

/// A start point with a finite log density: Stan's uniform(−2, 2) on every coordinate.
fn start(model: &Model, seed: u64, stream: u64) -> Result<Vec<f64>, DensityRunError> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    let mut grad = vec![0.0; model.dim()];
    let mut last = None;
    for _ in 0..START_TRIES {
        let u: Vec<f64> = (0..model.dim()).map(|_| rng.gen_range(-2.0..2.0)).collect();
        match model.log_density_gradient(&u, &mut grad) {
            Ok(lp) if lp.is_finite() && grad.iter().all(|g| g.is_finite()) => return Ok(u),
            Ok(_) => {}
            Err(e) if e.rejection => last = Some(e),
            Err(e) => return Err(DensityRunError::Program(e)),
        }
    }
    Err(DensityRunError::Runtime(RuntimeError::Numerical(format!(
        "no start point with a finite log density in {START_TRIES} tries (uniform on ±2 on the unconstrained scale){}",
        last.map(|e| format!("; the last: {}", e.message)).unwrap_or_default()
    ))))
}

impl<S: RowSink> ChainTask for OneChain<'_, &Arc<Model>, S> {
    type Output = Result<(S, ChainTimes, NutsStats, usize), DensityRunError>;
    fn run<St: Settings>(self, settings: St) -> Self::Output {
        run_chain(settings, self)
    }
}

fn run_chain<St: Settings, S: RowSink>(
    settings: St,
    task: OneChain<'_, &Arc<Model>, S>,
) -> Result<(S, ChainTimes, NutsStats, usize), DensityRunError> {
    let OneChain {
        target: model,
        config,
        c,
        progress,
        stop,
        mut sink,
    } = task;
    use nuts_rs::rand::SeedableRng;
    let stream = (config.first_chain + c) as u64;
    let fatal = Arc::new(Mutex::new(None));
    let target = Target {
        model: Arc::clone(model),
        fatal: Arc::clone(&fatal),
    };
    let mut rng = nuts_rs::rand::rngs::StdRng::seed_from_u64(config.seed ^ stream.rotate_left(32));
    let mut chain = settings
        .new_chain(stream, CpuMath::new(target), &mut rng)
        .map_err(|e| RuntimeError::Numerical(format!("NUTS could not start: {e}")))?;
    let init = start(model, config.seed, stream)?;
    chain
        .set_position(&init)
        .map_err(|e| RuntimeError::Numerical(format!("NUTS could not start: {e}")))?;
    let failed = |e: String| match fatal.lock().ok().and_then(|mut f| f.take()) {
        Some(err) => DensityRunError::Program(err),
        None => DensityRunError::Runtime(RuntimeError::Numerical(format!("NUTS failed: {e}"))),
    };
    // The generated quantities' draws: the chain's own stream, apart from NUTS's.
    let mut generated_rng = {
        use rand::SeedableRng as _;
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(config.seed ^ 0x6765_6e65_7261_7465);
        r.set_stream(stream);
        r
    };
    let t0 = std::time::Instant::now();
    let (mut warmup_seconds, mut kept) = (0.0, 0);
    let mut transitions = Transitions::new(NutsStats {
        max_depth: config.nuts.max_depth,
        ..Default::default()
    });
    let total = config.warmup + config.draws * config.thin;
    for s in 0..total {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let (position, info) = chain.draw().map_err(|e| failed(e.to_string()))?;
        progress(c, s + 1);
        if s + 1 == config.warmup {
            warmup_seconds = t0.elapsed().as_secs_f64();
        }
        if info.tuning || s < config.warmup {
            continue;
        }
        transitions.record(&info);
        if (s + 1 - config.warmup).is_multiple_of(config.thin) {
            let mut grad = vec![0.0; model.dim()];
            let lp = model
                .log_density_gradient(&position, &mut grad)
                .map_err(DensityRunError::Program)?;
            let mut row = vec![lp];
            row.extend(
                model
                    .row(&position, &mut generated_rng)
                    .map_err(DensityRunError::Program)?,
            );
            sink.push(row)?;
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
