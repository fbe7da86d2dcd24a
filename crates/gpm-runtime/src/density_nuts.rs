//! NUTS on a whole Stan log density ([`gpm_density::Model`]): the path of a program with no
//! Gaussian-latent structure. Every parameter moves on its unconstrained scale with the
//! tape's gradient; adaptation, tree depth and the mass-matrix estimate are those of
//! [`crate::nuts`] (Stan's defaults). Chains run in parallel, chain `k` on seed `seed` and
//! stream `first_chain + k`, reproducibly at any thread count; each row is `lp__` then the
//! program's output columns ([`gpm_density::Model::row`]).

use crate::chains::{run_chains, Kernel, Phase, Ran};
use crate::gibbs::{GibbsConfig, RowSink};
use crate::nuts::NutsStats;
use crate::nuts_run::{nuts_chain, with_metric, MetricTask, NutsChain, Run};
use crate::RuntimeError;
use gpm_density::{EvalError, Model};
use nuts_rs::{CpuLogpFunc, CpuMath, CpuMathError, HasDims, Settings};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
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
pub fn run_into<S: RowSink>(
    model: &Arc<Model>,
    config: &GibbsConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &AtomicBool,
    sinks: Vec<S>,
) -> Result<Ran<S, NutsStats>, DensityRunError> {
    let run = Run {
        target: model,
        config,
        progress,
        stop,
        sinks,
    };
    with_metric(config, run)
}

impl<S: RowSink> MetricTask for Run<'_, &Arc<Model>, S> {
    type Output = Result<Ran<S, NutsStats>, DensityRunError>;
    fn run<St: Settings>(self, settings: St) -> Self::Output {
        let kernel = OnDensity {
            settings,
            model: self.target,
            config: self.config,
        };
        run_chains(&kernel, self.config, self.progress, self.stop, self.sinks)
    }
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

/// NUTS on a whole log density as the chain driver's kernel.
struct OnDensity<'a, St> {
    settings: St,
    model: &'a Arc<Model>,
    config: &'a GibbsConfig,
}

/// One chain on the log density: nuts-rs's chain, the first error of the program that was not
/// a rejection, and the generated quantities' stream.
struct DensityChain<C> {
    nuts: NutsChain<C>,
    fatal: Arc<Mutex<Option<EvalError>>>,
    generated_rng: rand_chacha::ChaCha8Rng,
}

impl<St: Settings> Kernel for OnDensity<'_, St> {
    type Chain = DensityChain<St::Chain<CpuMath<Target>>>;
    type Stats = NutsStats;
    type Error = DensityRunError;

    fn start(&self, stream: u64) -> Result<Self::Chain, DensityRunError> {
        use rand::SeedableRng;
        let seed = self.config.seed;
        let fatal = Arc::new(Mutex::new(None));
        let target = Target {
            model: Arc::clone(self.model),
            fatal: Arc::clone(&fatal),
        };
        let init = start(self.model, seed, stream)?;
        let stats = NutsStats {
            max_depth: self.config.nuts.max_depth,
            ..Default::default()
        };
        let math = CpuMath::new(target);
        let nuts = nuts_chain(&self.settings, (seed, stream), math, &init, stats)?;
        // The generated quantities' draws: the chain's own stream, apart from NUTS's.
        let mut generated_rng =
            rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6765_6e65_7261_7465);
        generated_rng.set_stream(stream);
        Ok(DensityChain {
            nuts,
            fatal,
            generated_rng,
        })
    }

    fn step(&self, chain: &mut Self::Chain, phase: Phase) -> Result<(), DensityRunError> {
        chain.nuts.draw(phase).map_err(|e| {
            match chain.fatal.lock().ok().and_then(|mut f| f.take()) {
                Some(err) => DensityRunError::Program(err),
                None => {
                    DensityRunError::Runtime(RuntimeError::Numerical(format!("NUTS failed: {e}")))
                }
            }
        })
    }

    fn keep<S: RowSink>(
        &self,
        chain: &mut Self::Chain,
        sink: &mut S,
    ) -> Result<(), DensityRunError> {
        let model = self.model;
        let position = &chain.nuts.position;
        let mut grad = vec![0.0; model.dim()];
        let lp = model
            .log_density_gradient(position, &mut grad)
            .map_err(DensityRunError::Program)?;
        let mut row = vec![lp];
        row.extend(
            model
                .row(position, &mut chain.generated_rng)
                .map_err(DensityRunError::Program)?,
        );
        Ok(sink.push(row)?)
    }

    fn finish(&self, chain: Self::Chain) -> NutsStats {
        chain.nuts.finish()
    }
}
